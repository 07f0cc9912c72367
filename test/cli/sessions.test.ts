import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentClient } from '../../src/agent/client.js';
import { parseSessionsArgs, runSessionsCommand } from '../../src/cli/sessions-command.js';
import { SessionStore, type ThreadSession } from '../../src/sessions/store.js';
import { createSessionKeyv } from '../../src/store/keyv.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { embeddedStorePerSuite } from '../helpers/embedded-store.js';
import { type EntryPointOptions, startEntryPoint } from '../helpers/entry-point.js';
import { storeVariables } from '../helpers/stack.js';
import { testStore } from '../helpers/stores.js';

/**
 * Runs the real entry point in a child process without blocking this process's servers, by default in an
 * empty directory (no `.env`).
 */
async function run_(
  args: string[],
  env: Record<string, string>,
  options: EntryPointOptions = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = startEntryPoint('src/cli/sessions.ts', args, env, { timeoutMs: 60_000, ...options });
  const { code } = await run.exited;
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

describe('npm run sessions (orphan prune)', () => {
  let agent: AgentServiceEmulator;
  let client: AgentClient;
  // One store for the file, emptied before each test.
  const shared = embeddedStorePerSuite();
  let store: SessionStore;
  let output: string[];

  beforeEach(async () => {
    agent = await AgentServiceEmulator.start();
    client = new AgentClient({ baseUrl: agent.baseUrl, apiKey: agent.apiKey, timeoutMs: 5_000 });
    store = new SessionStore(createSessionKeyv<ThreadSession>(shared.db, SessionStore.namespace), shared.db);
    output = [];
  });
  afterEach(async () => {
    client.close();
    await agent.stop();
  });

  async function mapped(sessionId: string, threadTs: string): Promise<void> {
    await store.create({
      teamId: 'T1',
      channelId: 'C1',
      threadTs,
      agentId: 'agent-main',
      sessionId,
      startedBy: 'U1',
      createdAt: new Date().toISOString(),
    });
  }

  const run = (action: 'list' | 'prune', apply: boolean | number = false, minAgeMs = 0) =>
    runSessionsCommand(
      { agent: client, store, agents: ['agent-main'], write: (line) => output.push(line) },
      { action, apply, minAgeMs },
    );

  it('lists sessions with their Slack conversation, and prunes only unmapped ones (dry run first)', async () => {
    const kept = [agent.addSession('agent-main'), agent.addSession('agent-main')];
    const orphans = [agent.addSession('agent-main'), agent.addSession('agent-main')];
    await mapped(kept[0]!, '1.1');
    await mapped(kept[1]!, '1.2');

    expect(await run('list')).toBe(0);
    expect(output.at(-1)).toBe('4 sessions, 2 mapped to Slack conversations, 2 orphaned.');
    expect(output.find((line) => line.includes(kept[0]!))).toContain('T1/C1/1.1');

    output = [];
    expect(await run('prune')).toBe(0);
    expect(output[0]).toBe('Would delete 2 orphaned sessions (dry run):');
    expect(output.at(-1)).toBe('To delete them, run again with --apply=2');
    expect(agent.requestsFor('deleteSession')).toHaveLength(0);

    // --apply without the count, or with a count that is not the current one, deletes nothing.
    output = [];
    expect(await run('prune', true)).toBe(2);
    expect(output.at(-1)).toBe('To delete them, run again with --apply=2');
    output = [];
    expect(await run('prune', 3)).toBe(2);
    expect(output.at(-1)).toMatch(
      /^--apply=3 does not match the 2 orphaned sessions found now; nothing was deleted/,
    );
    expect(agent.requestsFor('deleteSession')).toHaveLength(0);

    expect(await run('prune', 2)).toBe(0);
    expect(
      agent
        .sessionsOf('agent-main')
        .map((s) => s.uuid)
        .sort(),
    ).toEqual([...kept].sort());
    expect(
      agent
        .requestsFor('deleteSession')
        .map((r) => r.sessionId)
        .sort(),
    ).toEqual([...orphans].sort());
  });

  it('takes an orphan deleted meanwhile (by the bot, by another prune) as done, not as a failure', async () => {
    await mapped(agent.addSession('agent-main'), '1.1');
    const orphan = agent.addSession('agent-main');
    agent.injectFailure('deleteSession', {
      type: 'http',
      status: 404,
      body: { status: false, message: 'Session not found' },
    });
    expect(await run('prune', 1)).toBe(0);
    expect(output).toContain(`gone    agent-main ${orphan} (deleted meanwhile)`);
    expect(output.at(-1)).toBe('Deleted 1 of 1 orphaned session.');
  });

  it('keeps sessions younger than --min-age: the bot may be about to record them', async () => {
    agent.addSession('agent-main');
    await mapped(agent.addSession('agent-main'), '1.1');
    expect(await run('prune', 1, 10 * 60_000)).toBe(0);
    expect(output).toEqual(['No orphaned sessions to prune.']);
    expect(agent.sessionsOf('agent-main')).toHaveLength(2);
  });

  it('keeps young sessions whose creation time the service gives in seconds since the epoch', async () => {
    agent.setCreatedAtFormat('epoch-seconds');
    agent.addSession('agent-main');
    await mapped(agent.addSession('agent-main'), '1.1');
    expect(await run('prune', 1, 10 * 60_000)).toBe(0);
    expect(output).toEqual(['No orphaned sessions to prune.']);
    expect(agent.sessionsOf('agent-main')).toHaveLength(2);
  });

  it('keeps young sessions whose creation time the service gives in UTC without an offset, wherever it runs', async () => {
    agent.setCreatedAtFormat('utc-without-offset');
    // Read as local time, 09:00 in Tokyo would be nine hours ago in UTC.
    const zone = process.env.TZ;
    process.env.TZ = 'Asia/Tokyo';
    try {
      agent.addSession('agent-main');
      await mapped(agent.addSession('agent-main'), '1.1');
      expect(await run('prune', 1, 10 * 60_000)).toBe(0);
      expect(output).toEqual(['No orphaned sessions to prune.']);
      expect(agent.sessionsOf('agent-main')).toHaveLength(2);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it('lists and prunes the other agents when one routed agent cannot be listed, names it, and does not exit 0', async () => {
    await agent.stop();
    agent = await AgentServiceEmulator.start({ agents: ['agent-main'] });
    client.close();
    client = new AgentClient({ baseUrl: agent.baseUrl, apiKey: agent.apiKey, timeoutMs: 5_000 });
    const kept = agent.addSession('agent-main');
    const orphan = agent.addSession('agent-main');
    await mapped(kept, '1.1');
    const runFor = (action: 'list' | 'prune', apply: boolean | number) =>
      runSessionsCommand(
        { agent: client, store, agents: ['agent-main', 'gone-agent'], write: (line) => output.push(line) },
        { action, apply, minAgeMs: 0 },
      );
    expect(await runFor('list', false)).toBe(1);
    expect(output).toContain('2 sessions, 1 mapped to Slack conversations, 1 orphaned.');
    expect(output.at(-1)).toMatch(/^warning: gone-agent: its sessions could not be listed \(.*not found/);
    output = [];
    expect(await runFor('prune', 1)).toBe(1);
    expect(output).toContain(`deleted agent-main ${orphan}`);
    expect(agent.sessionsOf('agent-main').map((s) => s.uuid)).toEqual([kept]);
  });

  it('refuses to prune an agent this store maps nothing of: a wrong store or an agent shared with others', async () => {
    agent.addSession('agent-main');
    agent.addSession('agent-main');
    expect(await run('prune', 2)).toBe(2);
    expect(output[0]).toMatch(/^warning: agent-main: this store maps no session of this agent/);
    expect(agent.requestsFor('deleteSession')).toHaveLength(0);
    expect(agent.sessionsOf('agent-main')).toHaveLength(2);
  });

  it('refuses to prune an agent whose id has a colon in it just the same', async () => {
    agent.addSession('team:agent');
    agent.addSession('team:agent');
    const code = await runSessionsCommand(
      { agent: client, store, agents: ['team:agent'], write: (line) => output.push(line) },
      { action: 'prune', apply: 2, minAgeMs: 0 },
    );
    expect(code).toBe(2);
    expect(output[0]).toMatch(/^warning: team:agent: this store maps no session of this agent/);
    expect(agent.requestsFor('deleteSession')).toHaveLength(0);
    expect(agent.sessionsOf('team:agent')).toHaveLength(2);
  });

  it('refuses to prune when listed ids cannot be matched to recorded ones', async () => {
    agent.addSession('agent-main');
    await mapped('some-other-id-scheme', '1.1');
    expect(await run('prune', 1)).toBe(2);
    expect(output[0]).toMatch(/^warning: agent-main: none of the 1 listed session ids matches/);
    expect(agent.requestsFor('deleteSession')).toHaveLength(0);
  });

  it('says why a workspace lists no sessions when listed ids cannot be matched to recorded ones', async () => {
    agent.addSession('agent-main');
    await mapped('some-other-id-scheme', '1.1');
    const code = await runSessionsCommand(
      { agent: client, store, agents: ['agent-main'], write: (line) => output.push(line) },
      { action: 'list', apply: false, minAgeMs: 0, workspace: { teamId: 'T1' } },
    );
    expect(code).toBe(0);
    expect(output.at(-1)).toMatch(/^warning: agent-main: none of the 1 listed session ids matches/);
  });

  it('lists one workspace, or one org, of a bridge serving several, with --team or --enterprise', async () => {
    const inWorkspace = async (teamId: string, threadTs: string, enterpriseId?: string) => {
      const sessionId = agent.addSession('agent-main');
      await store.create({
        teamId,
        ...(enterpriseId ? { enterpriseId } : {}),
        channelId: 'C1',
        threadTs,
        agentId: 'agent-main',
        sessionId,
        startedBy: 'U1',
        createdAt: new Date().toISOString(),
      });
      return sessionId;
    };
    const first = await inWorkspace('T1', '1.1');
    const second = await inWorkspace('T2', '2.1');
    const east = await inWorkspace('T3', '3.1', 'E1');
    const west = await inWorkspace('T4', '4.1', 'E1');
    agent.addSession('agent-main');
    const listed = async (workspace: { teamId?: string; enterpriseId?: string }) => {
      output = [];
      const code = await runSessionsCommand(
        { agent: client, store, agents: ['agent-main'], write: (line) => output.push(line) },
        { action: 'list', apply: false, minAgeMs: 0, workspace },
      );
      expect(code).toBe(0);
      return output;
    };

    const ofT2 = await listed({ teamId: 'T2' });
    expect(ofT2.filter((line) => line.startsWith('agent-main\t'))).toEqual([
      expect.stringContaining(`${second}\t`),
    ]);
    expect(ofT2.join('\n')).not.toContain(first);
    expect(ofT2.at(-1)).toBe(
      '1 session of workspace T2 (orphans belong to no workspace: list them without --team).',
    );

    const ofOrg = (await listed({ enterpriseId: 'E1' })).join('\n');
    for (const id of [east, west]) expect(ofOrg).toContain(id);
    for (const id of [first, second]) expect(ofOrg).not.toContain(id);
    expect(ofOrg).toContain('2 sessions of org E1');

    expect(parseSessionsArgs(['list', '--team', 'T2'])).toMatchObject({ workspace: { teamId: 'T2' } });
    expect(parseSessionsArgs(['list', '--enterprise', 'E1'])).toMatchObject({
      workspace: { enterpriseId: 'E1' },
    });
    // Orphans are sessions no conversation maps to: nothing says whose workspace they were.
    expect(() => parseSessionsArgs(['prune', '--team', 'T2'])).toThrow(/prune takes no --team/);
    expect(() => parseSessionsArgs(['list', '--team', ''])).toThrow(/--team/);
  });

  it('refuses an empty --agent, which would mean every agent, and prune flags given to list', () => {
    expect(() => parseSessionsArgs(['prune', '--agent='])).toThrow(/^--agent takes an agent id/);
    expect(() => parseSessionsArgs(['list', '--apply=3'])).toThrow(/^list takes no --apply/);
    expect(() => parseSessionsArgs(['list', '--min-age', '5m'])).toThrow(/^list takes no --min-age/);
    expect(parseSessionsArgs(['prune', '--agent', 'agent-b', '--min-age', '5m'])).toMatchObject({
      agent: 'agent-b',
      minAgeMs: 5 * 60_000,
    });
  });

  it('lists through the real entry point with the settings the bot uses, .env included', async () => {
    const session = agent.addSession('agent-main');
    // The command opens the store itself (an embedded one, one process at a time): a store of its own, on
    // PostgreSQL when the run has it, which the command opens for a fraction of the embedded store's CPU.
    const store = await testStore();
    // Asynchronously: the emulator in this process must keep answering while the command runs.
    // Settings from `.env` in the working directory, as `npm start` reads them; the environment wins.
    const workdir = await mkdtemp(path.join(tmpdir(), 'bridge-sessions-'));
    // The same store's variable in `.env`, naming another store.
    const elsewhere =
      store.store.kind === 'embedded'
        ? 'DATA_DIR=/nonexistent'
        : 'DATABASE_URL=postgres://nobody@127.0.0.1:9/nonexistent';
    await writeFile(
      path.join(workdir, '.env'),
      `AGENT_BASE_URL=${agent.baseUrl}\nAGENT_API_KEY=${agent.apiKey}\nAGENT_ID=agent-main\n${elsewhere}\n`,
    );
    const result = await run_(['list'], storeVariables(store.store), {
      cwd: workdir,
      dotEnv: 'read',
    }).finally(() => Promise.all([rm(workdir, { recursive: true, force: true }), store.remove()]));
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`agent-main\t${session}`);
    expect(result.stdout).toContain('1 session, 0 mapped to Slack conversations, 1 orphaned.');
  });
});

// Neither opens a store nor needs the agent service: the command refuses before it would.
describe('npm run sessions, its arguments and settings', () => {
  it('reads --apply=N as the count to confirm, a bare --apply as a request for it, and refuses anything else', () => {
    expect(parseSessionsArgs(['prune', '--apply=2'])).toMatchObject({ action: 'prune', apply: 2 });
    expect(parseSessionsArgs(['prune', '--apply'])).toMatchObject({ action: 'prune', apply: true });
    expect(parseSessionsArgs(['prune'])).toMatchObject({ action: 'prune', apply: false });
    expect(() => parseSessionsArgs(['prune', '--apply=all'])).toThrow();
  });

  it('runs as a command: usage errors and configuration errors are one clear line', async () => {
    const [usage, config] = await Promise.all([run_(['explode'], {}), run_(['list'], {})]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^Usage: npm run sessions -- <list\|prune>/);
    expect(config.code).toBe(2);
    // Every missing variable, one line each.
    expect(config.stderr.trim().split('\n')).toEqual([
      'Configuration error: AGENT_BASE_URL is required (e.g. https://host/v1)',
      'Configuration error: AGENT_API_KEY is required (the agent service API key)',
      'Configuration error: AGENT_ID is required (the default agent id)',
    ]);
  });
});
