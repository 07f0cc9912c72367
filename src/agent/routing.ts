import type { AgentConfig } from '../config/index.js';

/** Which agent answers in a channel: a per-channel route, else the default AGENT_ID. */
export function agentRouter(
  config: Pick<AgentConfig, 'agentId' | 'channelAgents'>,
): (channelId: string) => string {
  return (channelId) => config.channelAgents.get(channelId) ?? config.agentId;
}

/** Every agent the bot may talk to. */
export function allAgents(config: Pick<AgentConfig, 'agentId' | 'channelAgents'>): string[] {
  return [...new Set([config.agentId, ...config.channelAgents.values()])];
}
