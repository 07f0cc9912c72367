import type { EnvReader } from './env-reader.js';
import type { AgentConfig } from './types.js';
import type { EnvVariable } from './variables.js';

export function readAgentConfig(reader: EnvReader): AgentConfig {
  const baseUrl = reader.httpUrl(
    'AGENT_BASE_URL',
    reader.required('AGENT_BASE_URL', 'e.g. https://host/v1') || undefined,
  );
  reader.placeholderUrl('AGENT_BASE_URL', baseUrl);
  reader.placeholder('AGENT_API_KEY');
  reader.placeholder('AGENT_ID');
  return {
    baseUrl: (baseUrl ?? '').replace(/\/+$/, ''),
    apiKey: reader.required('AGENT_API_KEY', 'the agent service API key'),
    agentId: reader.required('AGENT_ID', 'the default agent id'),
    channelAgents: readRoutes(reader, 'AGENT_ROUTES', CHANNEL_IDS),
    workspaceAgents: readRoutes(reader, 'AGENT_WORKSPACE_ROUTES', TEAM_IDS),
    orgAgents: readRoutes(reader, 'AGENT_ORG_ROUTES', ENTERPRISE_IDS),
    timeoutMs: reader.integer('AGENT_TIMEOUT_MS', 90_000, 1000, 3_600_000),
  };
}

/** The ids a route may name: Slack's id prefixes (channels C, private channels G, DMs D; workspaces T; orgs E). */
interface RouteIds {
  readonly name: string;
  readonly pattern: RegExp;
}
const CHANNEL_IDS: RouteIds = { name: 'CHANNEL_ID', pattern: /^[CGD][A-Z0-9]+$/ };
const TEAM_IDS: RouteIds = { name: 'TEAM_ID', pattern: /^T[A-Z0-9]+$/ };
const ENTERPRISE_IDS: RouteIds = { name: 'ENTERPRISE_ID', pattern: /^E[A-Z0-9]+$/ };

/**
 * `C0123=agent-b,C0456=agent-c` (channels), `T0123=agent-b` (workspaces) or `E0123=agent-b` (orgs): where the
 * conversations go to another agent than AGENT_ID. An id of the wrong kind, or named twice, is refused: it
 * would route nothing, or route by whichever entry came last.
 */
function readRoutes(reader: EnvReader, name: EnvVariable, ids: RouteIds): ReadonlyMap<string, string> {
  const routes = new Map<string, string>();
  for (const entry of (reader.read(name) ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const match = /^([A-Za-z0-9]+)\s*=\s*(\S+)$/.exec(entry);
    const id = match?.[1];
    if (!id || !match[2] || !ids.pattern.test(id)) {
      reader.fail(name, `must be a comma-separated list of ${ids.name}=AGENT_ID (bad entry "${entry}")`);
      continue;
    }
    if (routes.has(id)) {
      reader.fail(name, `names ${id} twice; give each ${ids.name} one agent`);
      continue;
    }
    routes.set(id, match[2]);
  }
  return routes;
}
