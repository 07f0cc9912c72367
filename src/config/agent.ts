import type { EnvReader } from './env-reader.js';
import type { AgentConfig } from './types.js';
import type { EnvVariable } from './variables.js';

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
    channelAgents: readRoutes(reader, 'AGENT_ROUTES', 'CHANNEL_ID'),
    workspaceAgents: readRoutes(reader, 'AGENT_WORKSPACE_ROUTES', 'TEAM_ID'),
    orgAgents: readRoutes(reader, 'AGENT_ORG_ROUTES', 'ENTERPRISE_ID'),
    timeoutMs: reader.integer('AGENT_TIMEOUT_MS', 90_000, 1000, 3_600_000),
  };
}

/**
 * `C0123=agent-b,C0456=agent-c` (channels), `T0123=agent-b` (workspaces) or `E0123=agent-b` (orgs): where the
 * conversations go to another agent than AGENT_ID. Slack ids are upper-case letters and digits.
 */
function readRoutes(reader: EnvReader, name: EnvVariable, idName: string): ReadonlyMap<string, string> {
  const routes = new Map<string, string>();
  for (const entry of (reader.read(name) ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const match = /^([A-Z0-9]+)\s*=\s*(\S+)$/.exec(entry);
    if (!match?.[1] || !match[2]) {
      reader.fail(name, `must be a comma-separated list of ${idName}=AGENT_ID (bad entry "${entry}")`);
      continue;
    }
    routes.set(match[1], match[2]);
  }
  return routes;
}
