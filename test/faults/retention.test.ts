import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MessageClaims } from '../../src/inbox/claims.js';
import { Inbox } from '../../src/inbox/inbox.js';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/schema.js';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { channelLifecycleEvent } from '../helpers/slack-events.js';
import { deliver } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { botPostsIn, type FaultStack, mentionIn, perTestFakes, startFaultStack } from './support.js';

const runPostgres = await shouldRunPostgresTests();

const ENV = { SLOW_NOTICE_MS: '0' };

/** Rows of every table of the bot's store whose text contains any of `needles`, by table. */
async function rowsMentioning(
  stack: FaultStack,
  needles: readonly string[],
): Promise<Record<string, number>> {
  const tables = await stack.sql<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1`,
  );
  const found: Record<string, number> = {};
  for (const { name } of tables) {
    const [row] = await stack.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM public."${name}" t WHERE t::text LIKE ANY($1)`,
      [needles.map((needle) => `%${needle}%`)],
    );
    if (row && row.n > 0) found[name] = row.n;
  }
  return found;
}

/** What the store keeps of people's conversations, and for how long (see "What is stored" in docs/operations.md). */
describe.runIf(runPostgres)('what the store keeps', () => {
  let stack: FaultStack;

  beforeEach(async () => {
    stack = await startFaultStack(ENV);
  });
  afterEach(async () => {
    await stack.stop();
  });

  const send = (body: unknown) => deliver(stack.bot, body);
  const openJobs = async () =>
    (await stack.sql(`SELECT 1 FROM inbox WHERE state IN ('pending', 'running')`)).length;

  it("keeps none of a conversation's words once its messages are answered, failed, stopped or cancelled", async () => {
    const { slack, agent } = stack;
    const word = `quokka${randomBytes(4).toString('hex')}`;

    // Answered.
    const answered = mentionIn(stack, 'C0KEEP', `tell me about ${word} answered`);
    await answered.deliver();
    // Failed: the agent service refuses, the thread gets a notice.
    agent.injectFailure('sendMessage', { type: 'http', status: 503 }, 10);
    const failed = mentionIn(stack, 'C0KEEP', `tell me about ${word} failed`);
    await failed.deliver();
    await waitFor(() => botPostsIn(slack, 'C0KEEP', failed.ts).length > 0, 'the failure notice', 10_000);
    agent.clearFailures();

    // Stopped while running, with two messages waiting behind it. The three answers in progress below come once
    // the stop, the reset and the archive are all in, however slow the machine.
    const answers = [`${word} running`, `${word} before reset`, `${word} before archive`].map((prompt) =>
      agent.holdAnswerTo(prompt),
    );
    const running = mentionIn(stack, 'C0KEEP', `${word} running`);
    await running.deliver();
    await waitFor(() => agent.requestsFor('sendMessage').some((r) => r.prompt?.includes('running')), 'sent');
    for (const i of [1, 2])
      await mentionIn(stack, 'C0KEEP', `${word} waiting ${i}`, { threadTs: running.ts }).deliver();
    await mentionIn(stack, 'C0KEEP', 'stop', { threadTs: running.ts }).deliver();

    // Cancelled by a reset, and by the channel being archived.
    const reset = mentionIn(stack, 'C0KEEP', `${word} before reset`);
    await reset.deliver();
    await waitFor(() => agent.requestsFor('sendMessage').some((r) => r.prompt?.includes('reset')), 'sent');
    await mentionIn(stack, 'C0KEEP', `${word} cancelled by reset`, { threadTs: reset.ts }).deliver();
    await mentionIn(stack, 'C0KEEP', 'reset', { threadTs: reset.ts }).deliver();
    const archived = mentionIn(stack, 'C0GONE', `${word} before archive`);
    await archived.deliver();
    await waitFor(() => agent.requestsFor('sendMessage').some((r) => r.prompt?.includes('archive')), 'sent');
    await mentionIn(stack, 'C0GONE', `${word} cancelled by archive`, { threadTs: archived.ts }).deliver();
    expect((await send(channelLifecycleEvent('channel_archive', { channel: 'C0GONE' }))).status).toBe(200);
    for (const answer of answers) answer();

    await waitFor(async () => (await openJobs()) === 0, 'every job finished', 15_000);
    expect(await stack.sql(`SELECT state, count(*)::int AS n FROM inbox GROUP BY 1 ORDER BY 1`)).toEqual([
      { state: 'cancelled', n: 5 },
      { state: 'done', n: 5 },
    ]);
    // The words were in the store while they were needed; none is left now.
    expect(await rowsMentioning(stack, [word])).toEqual({});
  });

  it('forgets a thread once its jobs are past the retry horizon and its conversation ended', async () => {
    const { slack } = stack;
    // Ten channels, three threads in each: Slack takes about one post a second per channel (a burst of a
    // few), and 30 answers in one channel would measure that pacing, not what the store keeps.
    const channels = Array.from({ length: 10 }, (_, i) => `C0MANY${i}`);
    const roots = Array.from({ length: 30 }, (_, i) => {
      const channel = channels[i % channels.length] ?? 'C0MANY';
      return { channel, ...mentionIn(stack, channel, `thread ${i}`) };
    });
    for (const root of roots) expect((await root.deliver()).status).toBe(200);
    await waitFor(
      () => roots.every((root) => botPostsIn(slack, root.channel, root.ts).length > 0),
      'every thread answered',
      15_000,
    );
    await waitFor(async () => (await openJobs()) === 0, 'every job finished');
    const threads = roots.map((root) => root.ts);
    // A row per message (kept to recognise Slack's retries) and per conversation (its agent session).
    expect(await rowsMentioning(stack, threads)).toEqual({
      inbox: 30,
      session_activity: 30,
      thread_sessions: 30,
    });

    // A week on, housekeeping forgets the jobs; no row per thread is left behind by them.
    await stack.sql(`UPDATE inbox SET finished_at = finished_at - interval '8 days'`);
    const db = await openDatabase({ kind: 'postgres', databaseUrl: stack.database.url, poolSize: 1 });
    try {
      await new Inbox(db, 'housekeeping', 30_000).prune();
      await new MessageClaims(db).prune();
    } finally {
      await db.close();
    }
    expect(await rowsMentioning(stack, threads)).toEqual({ session_activity: 30, thread_sessions: 30 });

    // The conversations end (here: the channels are archived); their sessions are deleted on the service.
    for (const channel of channels)
      expect((await send(channelLifecycleEvent('channel_archive', { channel }))).status).toBe(200);
    await waitFor(
      async () => (await stack.sql('SELECT 1 FROM pending_session_deletions')).length === 0,
      'sessions deleted on the agent service',
    );
    expect(await rowsMentioning(stack, threads)).toEqual({});
  });
});

/** Housekeeping runs hourly, and at start-up: a process restarted more often than that still forgets old rows. */
describe.runIf(runPostgres)('clean-up at start-up', () => {
  const fakes = perTestFakes();

  it('forgets what is past its retention as soon as a bot starts, and keeps what is not', async () => {
    const db = await openDatabase({ kind: 'postgres', databaseUrl: fakes.database.url, poolSize: 1 });
    try {
      await migrate(db);
      // A finished job and a claim from eight days ago, and the same from yesterday.
      for (const [tag, age] of [
        ['old', '8 days'],
        ['recent', '1 day'],
      ] as const) {
        await db.query(
          `INSERT INTO inbox (thread_key, dedupe_key, kind, payload, state, finished_at)
           VALUES ($1, $1 || ':message', 'message', '{}', 'done', now() - $2::interval)`,
          [`T0TEAM:C0KEEP:${tag}`, age],
        );
        await db.query(
          `INSERT INTO handled_messages (team_id, channel_id, message_ts, purpose, handled_at)
           VALUES ('T0TEAM', 'C0KEEP', $1, 'refusal', now() - $2::interval)`,
          [tag, age],
        );
      }
    } finally {
      await db.close();
    }
    const remaining = async () => {
      const check = await openDatabase({ kind: 'postgres', databaseUrl: fakes.database.url, poolSize: 1 });
      try {
        const jobs = await check.query<{ key: string }>('SELECT dedupe_key AS key FROM inbox ORDER BY 1');
        const claims = await check.query<{ key: string }>(
          'SELECT message_ts AS key FROM handled_messages ORDER BY 1',
        );
        return { jobs: jobs.map((row) => row.key), claims: claims.map((row) => row.key) };
      } finally {
        await check.close();
      }
    };

    await fakes.startBot({});
    // The pass forgets jobs first, then claims: wait for both.
    await waitFor(
      async () => {
        const { jobs, claims } = await remaining();
        return jobs.length === 1 && claims.length === 1;
      },
      'the old rows forgotten',
      10_000,
    );
    expect(await remaining()).toEqual({ jobs: ['T0TEAM:C0KEEP:recent:message'], claims: ['recent'] });
  });
});
