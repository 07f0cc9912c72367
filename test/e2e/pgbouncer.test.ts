import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from '../../src/store/schema.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type SlackApiCall } from '../fakes/slack.js';
import { pgBouncerAvailable, type RunningPgBouncer, startPgBouncer } from '../helpers/pgbouncer.js';
import { createTestDatabase, shouldRunPostgresTests, type TestDatabase } from '../helpers/postgres.js';
import { nextTs } from '../helpers/slack-events.js';
import { mention, type RunningBot, startBot } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const runPostgres = await shouldRunPostgresTests();
const runPgBouncer = await pgBouncerAvailable();

const CHANNEL = 'C0POOLED';
const textOf = (call: SlackApiCall) => String(call.args.text);
/** The agent emulator answers `echo[<session>#<turn>]: <prompt>`. */
const ECHO = /^echo\[(?<session>[^#\]]+)#(?<turn>\d+)\]: (?<prompt>.*)$/;

/**
 * The real bot with PgBouncer between it and PostgreSQL, in transaction pooling mode: each transaction
 * (or single statement) may run on a different server connection, shared with other clients, so nothing
 * may rely on the state of a session (start-up parameters, SET, session advisory locks, named prepared
 * statements, LISTEN, temporary tables).
 */
describe.runIf(runPostgres && runPgBouncer)('through PgBouncer in transaction pooling mode', () => {
  let bouncer: RunningPgBouncer | undefined;
  let database: TestDatabase | undefined;
  let direct: pg.Client | undefined;
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  /** Two replicas, so two pools of clients share PgBouncer's two server connections. */
  let bots: RunningBot[] = [];

  beforeAll(async () => {
    // Two server connections for every client of the database: clients really share them.
    bouncer = await startPgBouncer({ defaultPoolSize: 2 });
    database = await createTestDatabase();
    direct = new pg.Client({ connectionString: database.url });
    await direct.connect();
    slack = await FakeSlack.start();
    agent = await AgentServiceEmulator.start();
    const databaseUrl = bouncer.urlFor(database.url);
    // Both replicas start together on a fresh database: both migrate, one after the other.
    bots = await Promise.all(
      [1, 2].map(() =>
        startBot({
          slack,
          agent,
          store: { kind: 'postgres', databaseUrl },
          env: { DATABASE_POOL_SIZE: '5', SLOW_NOTICE_MS: '0' },
        }),
      ),
    );
  }, 30_000);

  afterAll(async () => {
    await Promise.all(bots.map((bot) => bot.stop()));
    await direct?.end();
    await Promise.all([slack?.stop(), agent?.stop(), bouncer?.stop()]);
    await database?.drop();
  });

  const replica = (index: number): RunningBot => {
    const bot = bots[index % bots.length];
    if (!bot) throw new Error('the bots did not start');
    return bot;
  };
  const answersIn = (root: string) =>
    slack
      .callsOf('chat.postMessage')
      .filter((call) => String(call.args.channel).startsWith(CHANNEL) && call.args.thread_ts === root)
      .map(textOf)
      .filter((text) => ECHO.test(text));
  const answer = (root: string, prompt: string, timeoutMs = 15_000) =>
    waitFor(
      () => answersIn(root).find((text) => text.endsWith(`]: ${prompt}`)),
      `the answer to "${prompt}"`,
      timeoutMs,
    );
  const sessionOf = (text: string) => ECHO.exec(text)?.groups?.session;

  it('migrates the schema at start-up and reports ready', async () => {
    const rows = await direct?.query<{ version: number }>(
      'SELECT max(version) AS version FROM schema_version',
    );
    expect(rows?.rows).toEqual([{ version: SCHEMA_VERSION }]);
    for (const bot of bots) expect((await fetch(`${bot.adminUrl}/readyz`)).status).toBe(200);
  });

  it('answers a mention, and a follow-up in its thread continues the same session', async () => {
    const root = nextTs();
    await mention(replica(0), { channel: CHANNEL, text: '<@U0BOT> hello through the pooler', ts: root });
    const first = await answer(root, 'hello through the pooler');
    expect(first).toMatch(/#1\]: hello through the pooler$/);
    // The follow-up reaches the other replica: the session is found in the store, not in memory.
    await mention(replica(1), { channel: CHANNEL, text: '<@U0BOT> and again', threadTs: root });
    const second = await answer(root, 'and again');
    expect(second).toBe(`echo[${sessionOf(first)}#2]: and again`);
  });

  it('resets a thread: its session is deleted and the next message starts a fresh one', async () => {
    const root = nextTs();
    await mention(replica(0), { channel: CHANNEL, text: '<@U0BOT> remember this', ts: root });
    const session = sessionOf(await answer(root, 'remember this'));
    await mention(replica(1), { channel: CHANNEL, text: '<@U0BOT> reset', threadTs: root });
    await slack.waitForCall(
      'chat.postMessage',
      (call) => call.args.thread_ts === root && textOf(call).includes('Conversation reset'),
    );
    await mention(replica(0), { channel: CHANNEL, text: '<@U0BOT> fresh start', threadTs: root });
    const fresh = await answer(root, 'fresh start');
    expect(fresh).toMatch(/#1\]: fresh start$/);
    expect(sessionOf(fresh)).not.toBe(session);
  });

  it('answers concurrent messages in several threads, each in order in its own session, on shared server connections', async () => {
    agent.setLatency(150, 'sendMessage');
    try {
      const roots = Array.from({ length: 6 }, () => nextTs());
      // Each thread in a channel of its own: Slack takes about one post a second per channel, and 18 answers
      // in one channel would test Slack's pace, not the pooler.
      const channelOf = (i: number) => `${CHANNEL}${i}`;
      // Every thread's first message, all at once, on both replicas.
      await Promise.all(
        roots.map((root, i) =>
          mention(replica(i), { channel: channelOf(i), text: `<@U0BOT> t${i} m1`, ts: root }),
        ),
      );
      // Two follow-ups each, sent while the first answers are still being written, again on both replicas.
      for (const message of ['m2', 'm3']) {
        await Promise.all(
          roots.map((root, i) =>
            mention(replica(i + 1), {
              channel: channelOf(i),
              text: `<@U0BOT> t${i} ${message}`,
              threadTs: root,
            }),
          ),
        );
      }
      for (const [i, root] of roots.entries()) {
        await answer(root, `t${i} m3`, 30_000);
        const answers = answersIn(root);
        const session = sessionOf(answers[0] ?? '');
        expect(answers).toEqual([
          `echo[${session}#1]: t${i} m1`,
          `echo[${session}#2]: t${i} m2`,
          `echo[${session}#3]: t${i} m3`,
        ]);
      }
      // More clients than server connections: the replicas' connections really were shared.
      const pool = (await bouncer?.pools())?.find((row) => row.database === database?.url.split('/').pop());
      const clients = Number(pool?.cl_active) + Number(pool?.cl_waiting);
      const servers = ['sv_active', 'sv_idle', 'sv_used', 'sv_tested', 'sv_login'].reduce(
        (sum, column) => sum + Number(pool?.[column] ?? 0),
        0,
      );
      expect(clients).toBeGreaterThan(2);
      expect(servers).toBeLessThanOrEqual(2);
    } finally {
      agent.setLatency(0, 'sendMessage');
    }
  }, 60_000);

  it('keeps answering after PgBouncer restarts, in the threads it already had', async () => {
    const root = nextTs();
    await mention(replica(0), { channel: CHANNEL, text: '<@U0BOT> before the restart', ts: root });
    const before = await answer(root, 'before the restart');
    await bouncer?.kill();
    await bouncer?.start();
    await mention(replica(1), { channel: CHANNEL, text: '<@U0BOT> after the restart', threadTs: root });
    expect(await answer(root, 'after the restart')).toBe(`echo[${sessionOf(before)}#2]: after the restart`);
    for (const bot of bots) expect((await fetch(`${bot.adminUrl}/readyz`)).status).toBe(200);
  }, 30_000);
});
