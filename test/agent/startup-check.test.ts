import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient } from '../../src/agent/client.js';
import { checkAgentService } from '../../src/agent/startup-check.js';
import type { AgentConfig } from '../../src/config/index.js';
import { createLogger } from '../../src/observability/logger.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';

/**
 * What the start-up check of the agent service says for each answer, against the emulator. A definite
 * misconfiguration is one sentence naming the variable to fix (test/e2e/startup.test.ts checks that the bot
 * prints it once and exits 1); anything else is logged, and start-up goes on.
 */
describe('the start-up check of the agent service', () => {
  let agent: AgentServiceEmulator;
  const clients: AgentClient[] = [];
  beforeAll(async () => {
    agent = await AgentServiceEmulator.start({ agents: ['agent-main', 'agent-support'] });
  });
  afterEach(() => {
    agent.reset();
    for (const client of clients.splice(0)) client.close();
  });
  afterAll(async () => {
    await agent.stop();
  });

  function check(overrides: Partial<AgentConfig> = {}): { done: Promise<void>; logs: () => string[] } {
    const config: AgentConfig = {
      baseUrl: agent.baseUrl,
      apiKey: agent.apiKey,
      agentId: 'agent-main',
      channelAgents: new Map(),
      workspaceAgents: new Map(),
      orgAgents: new Map(),
      timeoutMs: 10_000,
      ...overrides,
    };
    // One try each: a failing service is then reported well within the check's 3 s bound, however slow the
    // machine.
    const client = new AgentClient({
      baseUrl: config.baseUrl,
      apiKey: config.apiKey,
      timeoutMs: config.timeoutMs,
      retry: { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 },
    });
    clients.push(client);
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString());
        callback();
      },
    });
    const logger = createLogger({ level: 'info', secrets: [config.apiKey], destination });
    return { done: checkAgentService(client, config, logger), logs: () => lines };
  }

  it('passes when every configured agent answers', async () => {
    const { done, logs } = check({ channelAgents: new Map([['C0SUPPORT', 'agent-support']]) });
    await expect(done).resolves.toBeUndefined();
    expect(logs()).toEqual([]);
    expect(
      agent
        .requestsFor('listSessions')
        .map((request) => request.agentId)
        .sort(),
    ).toEqual(['agent-main', 'agent-support']);
  });

  it('names AGENT_API_KEY when the key is refused, without the key', async () => {
    const { done } = check({ apiKey: 'not-the-key' });
    const error = await done.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(String(error)).toMatch(
      /AGENT_API_KEY was refused by the agent service \(HTTP 401 for agent "agent-main"\)/,
    );
    expect(String(error)).not.toContain('not-the-key');
  });

  it('names the variable that routes to an agent the service does not know', async () => {
    await expect(check({ agentId: 'no-such-agent' }).done).rejects.toThrow(
      'the agent service answered 404 for agent "no-such-agent": check AGENT_ID ("no-such-agent") and AGENT_BASE_URL',
    );
    await expect(check({ workspaceAgents: new Map([['T1', 'agent-gone']]) }).done).rejects.toThrow(
      'the agent service answered 404 for agent "agent-gone": check AGENT_WORKSPACE_ROUTES ("agent-gone") and AGENT_BASE_URL',
    );
  });

  it('says AGENT_BASE_URL needs its version when a 404 comes from a base URL without one', async () => {
    const { done } = check({ baseUrl: agent.baseUrl.replace(/\/v1$/, '') });
    await expect(done).rejects.toThrow(
      'the agent service answered 404 for agent "agent-main": AGENT_BASE_URL must include the version, e.g. https://host/v1',
    );
  });

  it('names AGENT_BASE_URL when the service redirects elsewhere (an http:// address for an https:// service)', async () => {
    agent.injectFailure('listSessions', {
      type: 'http',
      status: 301,
      rawBody: '',
      headers: { location: 'https://elsewhere.example/v1/session/agent-main' },
    });
    await expect(check().done).rejects.toThrow(
      'the agent service redirects its requests elsewhere (HTTP 301 for agent "agent-main"): set AGENT_BASE_URL to the address it redirects to',
    );
  });

  it('reads a list that says there are no sessions (with a 404) as empty, and lets start-up go on', async () => {
    agent.injectFailure('listSessions', {
      type: 'http',
      status: 404,
      body: { status: false, message: 'No sessions found' },
    });
    const { done, logs } = check();
    await expect(done).resolves.toBeUndefined();
    expect(logs()).toEqual([]);
  });

  it('logs a failing service and lets start-up go on', async () => {
    agent.injectFailure(
      'listSessions',
      { type: 'http', status: 503, body: { status: false, message: 'down' } },
      10,
    );
    const { done, logs } = check();
    await expect(done).resolves.toBeUndefined();
    expect(logs().join('')).toContain('the agent service could not be checked at start-up; starting anyway');
  });
});
