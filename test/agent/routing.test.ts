import { describe, expect, it } from 'vitest';
import { agentRouter, allAgents } from '../../src/agent/routing.js';

const routes = {
  agentId: 'default',
  channelAgents: new Map([['C1', 'channel-agent']]),
  workspaceAgents: new Map([['T1', 'workspace-agent']]),
  orgAgents: new Map([['E1', 'org-agent']]),
};

describe('agentRouter', () => {
  const agentFor = agentRouter(routes);

  it('prefers the channel, then the workspace, then the org, then AGENT_ID', () => {
    expect(agentFor({ teamId: 'T1', enterpriseId: 'E1', channelId: 'C1' })).toBe('channel-agent');
    expect(agentFor({ teamId: 'T1', enterpriseId: 'E1', channelId: 'C2' })).toBe('workspace-agent');
    expect(agentFor({ teamId: 'T2', enterpriseId: 'E1', channelId: 'C2' })).toBe('org-agent');
    expect(agentFor({ teamId: 'T2', enterpriseId: 'E2', channelId: 'C2' })).toBe('default');
    expect(agentFor({ teamId: 'T2', channelId: 'C2' })).toBe('default');
  });

  it('lists every configured agent once', () => {
    expect(allAgents({ ...routes, orgAgents: new Map([['E1', 'default']]) })).toEqual([
      'default',
      'channel-agent',
      'workspace-agent',
    ]);
  });
});
