import type { EnvReader } from './env-reader.js';
import type { AgentConfig } from './types.js';

export function readAgentConfig(reader: EnvReader): AgentConfig {
  const baseUrl = reader.httpUrl(
    'AGENT_BASE_URL',
    reader.required('AGENT_BASE_URL', 'e.g. https://host/v1') || undefined,
  );
  reader.placeholder('AGENT_API_KEY');
  reader.placeholder('AGENT_ID');
  return {
    baseUrl: (baseUrl ?? '').replace(/\/+$/, ''),
    apiKey: reader.required('AGENT_API_KEY', 'the agent service API key'),
    agentId: reader.required('AGENT_ID', 'the default agent id'),
    channelAgents: readChannelAgents(reader),
    timeoutMs: reader.integer('AGENT_TIMEOUT_MS', 90_000, 1000, 3_600_000),
  };
}

/** `C0123=agent-b,C0456=agent-c`: channels whose threads go to another agent than AGENT_ID. */
function readChannelAgents(reader: EnvReader): ReadonlyMap<string, string> {
  const routes = new Map<string, string>();
  for (const entry of (reader.read('AGENT_ROUTES') ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const match = /^([A-Z0-9]+)\s*=\s*(\S+)$/.exec(entry);
    if (!match?.[1] || !match[2]) {
      reader.fail(
        'AGENT_ROUTES',
        `must be a comma-separated list of CHANNEL_ID=AGENT_ID (bad entry "${entry}")`,
      );
      continue;
    }
    routes.set(match[1], match[2]);
  }
  return routes;
}
