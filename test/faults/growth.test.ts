import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/schema.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { createTestDatabase, shouldRunPostgresTests, type TestDatabase } from '../helpers/postgres.js';
import {
  appMentionEvent,
  channelLifecycleEvent,
  messageEditedEvent,
  messageEvent,
  nextTs,
  postSignedForm,
  slashCommandFields,
} from '../helpers/slack-events.js';
import { deliver, type RunningBot, SIGNING_SECRET, startBot } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';

const runPostgres = await shouldRunPostgresTests();

/**
 * Days of a busy workspace, finished and not yet forgotten. What is checked is that every lookup uses an
 * index; at this size an index is already PostgreSQL's cheaper plan for each of them, a table scan reads 40
 * times the bound below, and a missing index shows as scans as it would at a week's million rows (dropping
 * the two on open jobs: 15 scans), for a fifth of the seeding's CPU.
 */
const SEEDED_ROWS = 200_000;
/** The tables that grow with every message and are read before Slack is acknowledged. */
const GROWING_TABLES = ['inbox', 'handled_messages'] as const;
/** Far above what the test's events touch, far below a scan of the seeded rows. */
const ROWS_READ_BOUND = 5_000;

/**
 * Finished jobs and claims of many old threads, as days of traffic leave them (finished within the
 * retention, so nothing is pruned), then fresh planner statistics, as autovacuum would have them. The two
 * tables are filled at once, each on a connection of its own.
 */
async function seed(url: string): Promise<void> {
  const [jobs, claims] = [new pg.Client({ connectionString: url }), new pg.Client({ connectionString: url })];
  await Promise.all([jobs.connect(), claims.connect()]);
  try {
    await Promise.all([seedJobs(jobs), seedClaims(claims)]);
  } finally {
    await Promise.all([jobs.end(), claims.end()]);
  }
}

async function seedJobs(sql: pg.Client): Promise<void> {
  await sql.query(
    `INSERT INTO inbox (thread_key, dedupe_key, kind, payload, state, user_id, attempts, created_at, finished_at)
     SELECT 'T0TEAM:C0OLD' || (i % 200) || ':' || (1700000000 + i / 5) || '.000000',
            'T0TEAM:C0OLD' || (i % 200) || ':' || (1700000000 + i) || '.000000:message',
            'message', '{}', 'done', 'U' || (i % 2000), 1,
            now() - (i % 500000) * interval '1 second', now() - (i % 500000) * interval '1 second'
     FROM generate_series(1, $1::int) AS i`,
    [SEEDED_ROWS],
  );
  await sql.query('ANALYZE inbox');
}

async function seedClaims(sql: pg.Client): Promise<void> {
  await sql.query(
    `INSERT INTO handled_messages (team_id, channel_id, message_ts, purpose, handled_at)
     SELECT 'T0TEAM', 'C0OLD' || (i % 200), (1700000000 + i) || '.000000', 'refusal',
            now() - (i % 500000) * interval '1 second'
     FROM generate_series(1, $1::int) AS i`,
    [SEEDED_ROWS],
  );
  await sql.query('ANALYZE handled_messages');
}

/**
 * What PostgreSQL counted on each growing table: sequential scans, and rows read by any scan (an index scan
 * that filters the whole table is as slow as a sequential one). A bot's counts land once its connections end.
 */
async function reads(sql: pg.Client): Promise<Record<string, { scans: number; rowsRead: number }>> {
  await sql.query('SELECT pg_stat_clear_snapshot()');
  const rows = await sql.query<{ relname: string; scans: string; rows_read: string }>(
    `SELECT t.relname, t.seq_scan AS scans,
            t.seq_tup_read + (SELECT coalesce(sum(i.idx_tup_read), 0) FROM pg_stat_user_indexes i
                              WHERE i.relid = t.relid) AS rows_read
     FROM pg_stat_user_tables t WHERE t.relname = ANY($1)`,
    [GROWING_TABLES],
  );
  return Object.fromEntries(
    rows.rows.map((row) => [row.relname, { scans: Number(row.scans), rowsRead: Number(row.rows_read) }]),
  );
}

/**
 * With 200,000 finished jobs in the store, everything the bot reads before acknowledging Slack (and while
 * answering) goes through an index: a table scan there costs every event of every channel ~100 ms.
 * PostgreSQL itself counts the scans, so every statement the bot runs is covered, wherever it is written.
 */
describe.runIf(runPostgres)('a store holding 200,000 finished messages', () => {
  let database: TestDatabase;
  let admin: pg.Client;
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let bot: RunningBot | undefined;

  beforeAll(async () => {
    database = await createTestDatabase();
    const db = await openDatabase({ kind: 'postgres', databaseUrl: database.url, poolSize: 1 });
    await migrate(db);
    await db.close();
    await seed(database.url);
    admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    // Whatever the seeding and the migration counted is not the bot's.
    for (const table of GROWING_TABLES)
      await admin.query('SELECT pg_stat_reset_single_table_counters($1::regclass)', [table]);
    slack = await FakeSlack.start();
    agent = await AgentServiceEmulator.start();
  }, 180_000);

  afterAll(async () => {
    await bot?.stop();
    await admin?.end();
    await Promise.all([slack?.stop(), agent?.stop()]);
    await database?.drop();
  });

  it('acknowledges every kind of event, and answers, without a table scan', async () => {
    bot = await startBot({
      slack,
      agent,
      store: { kind: 'postgres', databaseUrl: database.url },
      env: { USER_RATE_LIMIT: '30' },
    });
    const running = bot;
    const send = async (body: unknown) => expect((await deliver(running, body)).status).toBe(200);
    const answered = (threadTs: string) =>
      waitFor(
        () => slack.threadMessages('C0NEW', threadTs).some((message) => message.bot_id !== undefined),
        'an answer in the thread',
        15_000,
      );

    // A thread reply in a channel where the bot has no conversation: the case every busy channel sends.
    for (let i = 0; i < 5; i++) {
      const root = nextTs();
      await send(
        messageEvent({
          channel: 'C0ELSE',
          channelType: 'channel',
          user: 'U0BOB',
          text: 'hi',
          threadTs: root,
        }),
      );
    }
    // A conversation: a mention, a reply without a mention, an edit, `stop`, `reset`, `/agent reset`, and the
    // channel archived.
    const root = nextTs();
    const ask = appMentionEvent({ channel: 'C0NEW', user: 'U0ALICE', text: '<@U0BOT> first', ts: root });
    await send(ask);
    await answered(root);
    const reply = messageEvent({
      channel: 'C0NEW',
      channelType: 'channel',
      user: 'U0ALICE',
      text: 'and more',
      threadTs: root,
    });
    await send(reply);
    await send(
      messageEditedEvent({
        channel: 'C0NEW',
        user: 'U0ALICE',
        ts: root,
        newText: '<@U0BOT> first!',
        oldText: '<@U0BOT> first',
      }),
    );
    await send(appMentionEvent({ channel: 'C0NEW', user: 'U0ALICE', text: '<@U0BOT> stop', threadTs: root }));
    await send(
      appMentionEvent({ channel: 'C0NEW', user: 'U0ALICE', text: '<@U0BOT> reset', threadTs: root }),
    );
    // `/agent reset` in the channel: the caller's conversations there, and their messages still open.
    const answeredReset = await postSignedForm(
      running.eventsUrl,
      SIGNING_SECRET,
      slashCommandFields({
        text: 'reset',
        channel: 'C0NEW',
        user: 'U0ALICE',
        responseUrl: slack.responseUrl('growth-reset'),
      }),
    );
    expect(answeredReset.status).toBe(200);
    await slack.waitForCall('response_url', (c) => c.args.responseId === 'growth-reset');
    await send(channelLifecycleEvent('channel_archive', { channel: 'C0NEW' }));
    await waitFor(
      async () =>
        (await admin.query(`SELECT 1 FROM inbox WHERE state IN ('pending', 'running')`)).rowCount === 0,
      'every job finished',
      15_000,
    );

    // Its connections closed, each backend has handed its counts to PostgreSQL's statistics.
    await running.stop();
    bot = undefined;
    await waitFor(
      async () =>
        (
          await admin.query(
            'SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
          )
        ).rowCount === 0,
      "the bot's connections gone",
    );
    const counted = await reads(admin);
    expect(counted).toEqual({
      inbox: { scans: 0, rowsRead: expect.any(Number) },
      handled_messages: { scans: 0, rowsRead: expect.any(Number) },
    });
    // A few dozen events read a few hundred rows at most, not a part of the store.
    expect(counted.inbox?.rowsRead).toBeLessThan(ROWS_READ_BOUND);
    expect(counted.handled_messages?.rowsRead).toBeLessThan(ROWS_READ_BOUND);
  });
});
