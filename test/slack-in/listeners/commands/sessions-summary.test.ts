import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AgentClient } from '../../../../src/agent/client.js';
import { createLogger } from '../../../../src/observability/logger.js';
import type { SessionWithActivity } from '../../../../src/sessions/store.js';
import {
  sessionsSummary,
  slackDate,
  threadLabel,
} from '../../../../src/slack-in/listeners/commands/sessions-summary.js';
import { AgentServiceEmulator } from '../../../fakes/agent-service.js';
import { LogCapture } from '../../../helpers/stack.js';

const session = (overrides: Partial<SessionWithActivity> = {}): SessionWithActivity => ({
  teamId: 'T1',
  channelId: 'C1',
  threadTs: '1700000000.000100',
  agentId: 'agent',
  sessionId: 'not-on-the-service',
  startedBy: 'U1',
  createdAt: '2024-01-02T03:04:05.000Z',
  lastActiveAt: '2024-01-03T00:00:00.000Z',
  ...overrides,
});

describe('threadLabel', () => {
  it("links a thread in the workspace's archive, with or without the URL's last slash", () => {
    const link = '<https://acme.slack.com/archives/C1/p1700000000000100|thread>';
    expect(threadLabel('https://acme.slack.com/', session())).toBe(link);
    expect(threadLabel('https://acme.slack.com', session())).toBe(link);
  });

  it("names a thread by its ts when the workspace's URL is unknown, and a DM's main line as this one", () => {
    expect(threadLabel(undefined, session())).toBe('thread 1700000000.000100');
    expect(threadLabel('https://acme.slack.com/', session({ channelId: 'D1', threadTs: 'dm' }))).toBe(
      'this conversation',
    );
  });
});

describe('slackDate', () => {
  it('is a date token each reader sees in their own time zone, the UTC time as the fallback', () => {
    expect(slackDate('2024-01-02T03:04:05.678Z')).toBe(
      '<!date^1704164645^{date_short_pretty} {time}|2024-01-02T03:04:05.678Z>',
    );
    expect(slackDate('2024-01-02T04:04:05+01:00')).toBe(
      '<!date^1704164645^{date_short_pretty} {time}|2024-01-02T03:04:05.000Z>',
    );
  });

  it('shows a time it cannot read as it was recorded', () => {
    expect(slackDate('yesterday')).toBe('yesterday');
  });
});

describe('sessionsSummary', () => {
  let agent: AgentServiceEmulator;
  let client: AgentClient;
  let logs: LogCapture;
  const deps = () => ({
    agent: client,
    workspaceUrl: 'https://acme.slack.com/',
    logger: createLogger({ level: 'info', secrets: [], destination: logs }),
  });
  beforeAll(async () => {
    agent = await AgentServiceEmulator.start({ apiKey: 'key' });
    client = new AgentClient({
      baseUrl: agent.baseUrl,
      apiKey: 'key',
      timeoutMs: 2_000,
      retry: { attempts: 1, baseDelayMs: 5, maxDelayMs: 5 },
    });
  });
  beforeEach(() => {
    logs = new LogCapture();
  });
  afterAll(() => agent.stop());

  it('says so when there is none', async () => {
    expect(await sessionsSummary(deps(), [])).toBe('You have no conversations with the agent here yet.');
  });

  it("shows the service's creation time where it knows the session, the recorded one elsewhere", async () => {
    const known = agent.addSession('agent');
    const created = agent.sessionsOf('agent').find((s) => s.uuid === known)?.createdAt ?? '';
    const text = await sessionsSummary(deps(), [
      session({ sessionId: known }),
      session({ threadTs: '1700000001.000200' }),
    ]);
    expect(text.split('\n')).toEqual([
      'You have 2 conversations with the agent here:',
      `• <https://acme.slack.com/archives/C1/p1700000000000100|thread>: started ${slackDate(created)}, last active ${slackDate('2024-01-03T00:00:00.000Z')}`,
      `• <https://acme.slack.com/archives/C1/p1700000001000200|thread>: started ${slackDate('2024-01-02T03:04:05.000Z')}, last active ${slackDate('2024-01-03T00:00:00.000Z')}`,
    ]);
  });

  it("lists the most recently active conversations within Slack's 40,000 characters, and counts the rest", async () => {
    // A heavy user of the Messages tab: every top-level message there is a conversation, kept 30 days.
    const many = Array.from({ length: 300 }, (_, i) =>
      session({
        threadTs: `${1_700_000_000 + i}.000100`,
        lastActiveAt: new Date(Date.UTC(2024, 0, 1) + i * 60_000).toISOString(),
      }),
    );
    const text = await sessionsSummary(deps(), many);
    expect(text.length).toBeLessThan(40_000);
    const lines = text.split('\n');
    expect(lines[0]).toBe('You have 300 conversations with the agent here; the 50 most recently active:');
    expect(lines.filter((line) => line.startsWith('• '))).toHaveLength(50);
    expect(text).toContain('p1700000299000100');
    expect(text).not.toContain('p1700000249000100');
    expect(lines.at(-1)).toBe('…and 250 less recently active.');
  });

  it('shows the recorded times, and logs why, when the service cannot list its sessions', async () => {
    agent.injectFailure('listSessions', { type: 'http', status: 500 });
    const text = await sessionsSummary(deps(), [session()]);
    expect(text).toBe(
      `You have 1 conversation with the agent here:\n• <https://acme.slack.com/archives/C1/p1700000000000100|thread>: started ${slackDate('2024-01-02T03:04:05.000Z')}, last active ${slackDate('2024-01-03T00:00:00.000Z')}`,
    );
    expect(
      logs.lines.filter((line) => line.includes('could not list sessions; showing recorded times')),
    ).toHaveLength(1);
  });
});
