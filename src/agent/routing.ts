import type { AgentConfig } from '../config/index.js';

/** Where a conversation is, as far as choosing its agent goes (a ThreadKey is one). */
export interface AgentScope {
  teamId: string;
  channelId: string;
  /** The workspace's org (Enterprise Grid), when Slack named one. */
  enterpriseId?: string;
}

/** Which agent answers a conversation: decided here alone (see agentRouter). */
export type AgentFor = (where: AgentScope) => string;

type Routes = Pick<AgentConfig, 'agentId' | 'channelAgents' | 'workspaceAgents' | 'orgAgents'>;

/**
 * Which agent answers where: the channel's route, else the workspace's, else the org's, else AGENT_ID. Sessions
 * are kept per agent, so a conversation stays with the agent that holds its session only while the routes stay.
 */
export function agentRouter(config: Routes): AgentFor {
  return ({ channelId, teamId, enterpriseId }) =>
    config.channelAgents.get(channelId) ??
    config.workspaceAgents.get(teamId) ??
    (enterpriseId === undefined ? undefined : config.orgAgents.get(enterpriseId)) ??
    config.agentId;
}

/** Every agent the bot may talk to, each with the variable that names it first. */
export function configuredAgents(config: Routes): Map<string, string> {
  const agents = new Map<string, string>([[config.agentId, 'AGENT_ID']]);
  const routes: [ReadonlyMap<string, string>, string][] = [
    [config.channelAgents, 'AGENT_ROUTES'],
    [config.workspaceAgents, 'AGENT_WORKSPACE_ROUTES'],
    [config.orgAgents, 'AGENT_ORG_ROUTES'],
  ];
  for (const [routed, variable] of routes)
    for (const agentId of routed.values()) if (!agents.has(agentId)) agents.set(agentId, variable);
  return agents;
}

/** Every agent the bot may talk to. */
export function allAgents(config: Routes): string[] {
  return [...configuredAgents(config).keys()];
}
