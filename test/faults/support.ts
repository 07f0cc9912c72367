import pg from 'pg';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type SlackMessage } from '../fakes/slack.js';
import { TcpProxy } from '../fakes/tcp-proxy.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { appMentionEvent, nextTs, postSignedEvent, type SignedPostResult } from '../helpers/slack-events.js';
import { type RunningBot, SIGNING_SECRET, startBot } from '../helpers/stack.js';

/** The real bot on its own PostgreSQL database, reached through a TcpProxy the test can break. */
export interface FaultStack {
  slack: FakeSlack;
  agent: AgentServiceEmulator;
  database: TestDatabase;
  proxy: TcpProxy;
  bot: RunningBot;
  /** A direct connection to the bot's database (not through the proxy), for faults and inspection. */
  sql<Row extends object = Record<string, unknown>>(text: string, params?: unknown[]): Promise<Row[]>;
  stop(): Promise<void>;
}

export async function startFaultStack(env: Record<string, string> = {}): Promise<FaultStack> {
  const database = await createTestDatabase();
  const proxy = await TcpProxy.start({ target: database.url });
  const slack = await FakeSlack.start();
  const agent = await AgentServiceEmulator.start();
  const bot = await startBot({ slack, agent, store: { kind: 'postgres', databaseUrl: proxy.url }, env });
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  return {
    slack,
    agent,
    database,
    proxy,
    bot,
    sql: async <Row extends object>(text: string, params?: unknown[]) =>
      (await admin.query(text, params)).rows as Row[],
    async stop() {
      proxy.restore();
      await bot.stop();
      await admin.end();
      await Promise.all([slack.stop(), agent.stop(), proxy.stop()]);
      await database.drop();
    },
  };
}

/** A mention in a channel, delivered as Slack does (the message also exists in FakeSlack, as in Slack). */
export function mentionIn(
  stack: FaultStack,
  channel: string,
  text: string,
  thread?: { ts?: string; threadTs?: string; retryNum?: number; user?: string },
): { ts: string; deliver: (retryNum?: number) => Promise<SignedPostResult> } {
  const ts = thread?.ts ?? nextTs();
  const body = appMentionEvent({
    channel,
    user: thread?.user ?? 'U0ALICE',
    text: `<@U0BOT> ${text}`,
    ts,
    threadTs: thread?.threadTs,
  });
  stack.slack.ingestEvent(body);
  return {
    ts,
    deliver: (retryNum) =>
      postSignedEvent(stack.bot.eventsUrl, SIGNING_SECRET, body, retryNum === undefined ? {} : { retryNum }),
  };
}

/** What the bot posted in a thread, as its readers see it. */
export function botPostsIn(slack: FakeSlack, channel: string, threadTs: string): SlackMessage[] {
  return slack.threadMessages(channel, threadTs).filter((message) => message.bot_id !== undefined);
}

/** The HTTP status of /readyz at a base URL (0 when it does not answer). */
export async function readyStatus(baseUrl: string): Promise<number> {
  const response = await fetch(`${baseUrl}/readyz`, { signal: AbortSignal.timeout(4_000) }).catch(
    () => undefined,
  );
  return response?.status ?? 0;
}

/** /readyz on both ports the bot serves it on: the admin port and the public one. */
export async function readiness(bot: RunningBot): Promise<[number, number]> {
  return Promise.all([readyStatus(bot.adminUrl), readyStatus(bot.baseUrl)]);
}

export interface InjectedWriteFailure {
  /** How many matching writes were attempted so far (failed or not). */
  attempts(): Promise<number>;
  /** Lets every write through again. */
  remove(): Promise<void>;
}

/**
 * Makes the store refuse one specific write, as a full disk or a broken replica would: a test-only trigger
 * raises an error on the rows `on` writes to `table` that match `when` (SQL over NEW, and OLD for an
 * update), for the first `times` attempts.
 * The count lives in a sequence, which a rolled-back transaction does not undo.
 */
export async function failWrites(
  stack: Pick<FaultStack, 'sql'>,
  name: string,
  fault: { on: 'INSERT' | 'UPDATE'; table: string; when: string; times: number; message?: string },
): Promise<InjectedWriteFailure> {
  const sequence = `fault_${name}`;
  const message = (fault.message ?? `injected fault: ${name}`).replaceAll("'", "''");
  await stack.sql(`CREATE SEQUENCE ${sequence}`);
  await stack.sql(
    `CREATE FUNCTION ${sequence}() RETURNS trigger LANGUAGE plpgsql AS $$
     BEGIN
       IF nextval('${sequence}') <= ${fault.times} THEN RAISE EXCEPTION '%', '${message}'; END IF;
       RETURN NEW;
     END $$`,
  );
  await stack.sql(
    `CREATE TRIGGER ${sequence} BEFORE ${fault.on} ON ${fault.table}
     FOR EACH ROW WHEN (${fault.when}) EXECUTE FUNCTION ${sequence}()`,
  );
  return {
    attempts: async () => {
      const [row] = await stack.sql<{ n: number }>(
        `SELECT CASE WHEN is_called THEN last_value ELSE 0 END::int AS n FROM ${sequence}`,
      );
      return row?.n ?? 0;
    },
    remove: async () => {
      await stack.sql(`DROP TRIGGER ${sequence} ON ${fault.table}`);
    },
  };
}
