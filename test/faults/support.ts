import pg from 'pg';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type SlackMessage } from '../fakes/slack.js';
import { TcpProxy } from '../fakes/tcp-proxy.js';
import { type BotProcess, spawnBot } from '../helpers/bot-process.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import {
  appMentionEvent,
  messageShortcutPayload,
  nextTs,
  postSignedEvent,
  postSignedInteraction,
  type SignedPostResult,
} from '../helpers/slack-events.js';
import { deliver, type RunningBot, SIGNING_SECRET, type StoreChoice, startBot } from '../helpers/stack.js';

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

export async function startFaultStack(
  env: Record<string, string> = {},
  options: { socketMode?: boolean } = {},
): Promise<FaultStack> {
  const database = await createTestDatabase({ schema: 'current' });
  const proxy = await TcpProxy.start({ target: database.url });
  const slack = await FakeSlack.start();
  const agent = await AgentServiceEmulator.start();
  const bot = await startBot({
    slack,
    agent,
    store: { kind: 'postgres', databaseUrl: proxy.url },
    env,
    socketMode: options.socketMode,
  });
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
): {
  ts: string;
  deliver: (retryNum?: number) => Promise<SignedPostResult>;
  /**
   * Delivered as Slack does until acknowledged: a delivery answered otherwise (503 when the bot could not
   * record it within 2.5 s, on a busy machine) is sent again with its retry number, three times at most.
   */
  deliverUntilAcknowledged: () => Promise<SignedPostResult>;
} {
  const ts = thread?.ts ?? nextTs();
  const body = appMentionEvent({
    channel,
    user: thread?.user ?? 'U0ALICE',
    text: `<@U0BOT> ${text}`,
    ts,
    threadTs: thread?.threadTs,
  });
  const send = (retryNum?: number) => deliver(stack.bot, body, retryNum === undefined ? {} : { retryNum });
  return {
    ts,
    deliver: send,
    deliverUntilAcknowledged: async () => {
      let result = await send();
      for (let retryNum = 1; result.status !== 200 && retryNum <= 3; retryNum++)
        result = await send(retryNum);
      return result;
    },
  };
}

/**
 * U0ALICE uses the "Reset conversation" shortcut on the root of `root`'s thread in `channel`; its private
 * answers go to the response_url named `responseId`. Resolves with the bot's acknowledgement.
 */
export function resetByShortcut(
  stack: FaultStack,
  channel: string,
  root: string,
  responseId: string,
): Promise<SignedPostResult> {
  return postSignedInteraction(
    stack.bot.eventsUrl,
    SIGNING_SECRET,
    messageShortcutPayload({
      callbackId: 'reset_conversation',
      channel,
      user: 'U0ALICE',
      messageTs: root,
      threadTs: root,
      responseUrl: stack.slack.responseUrl(responseId),
    }),
  );
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

/**
 * A fresh fake Slack, agent emulator and PostgreSQL database for each test of the enclosing `describe`, for
 * tests that start, stall and kill bots themselves: the bots started through it are stopped (and the
 * processes killed) after each test.
 */
export function perTestFakes(): PerTestFakes {
  const fakes = new PerTestFakes();
  beforeEach(() => fakes.start());
  afterEach(() => fakes.stop());
  return fakes;
}

/**
 * `it` with a fresh fake Slack, agent emulator and PostgreSQL database of the test's own (`fakes`), as
 * `perTestFakes` gives, stopped after it: cases that each wait seconds on the bot's timers can then run side by
 * side (a `describe` with `{ concurrent: true }`), as none shares anything with another. Their bots keep a
 * few connections each (DATABASE_POOL_SIZE, and one for /readyz): bots × (pool size + 1) must stay under the
 * server's max_connections, which the other files running meanwhile share.
 */
export const itWithFakes = it.extend<{ fakes: PerTestFakes }>({
  // biome-ignore lint/correctness/noEmptyPattern: Vitest reads what a fixture depends on from this pattern.
  fakes: async ({}, use) => {
    const fakes = new PerTestFakes({ DATABASE_POOL_SIZE: '3' });
    await fakes.start();
    try {
      await use(fakes);
    } finally {
      await fakes.stop();
    }
  },
});

export class PerTestFakes {
  slack!: FakeSlack;
  agent!: AgentServiceEmulator;
  database!: TestDatabase;
  private bots: RunningBot[] = [];
  private processes: BotProcess[] = [];

  /** `env`: settings of every bot started through these fakes, which a bot's own settings override. */
  constructor(private readonly env: Record<string, string> = {}) {}

  get store(): StoreChoice {
    return { kind: 'postgres', databaseUrl: this.database.url };
  }

  async start(): Promise<void> {
    this.database = await createTestDatabase({ schema: 'current' });
    this.slack = await FakeSlack.start();
    this.agent = await AgentServiceEmulator.start();
  }

  /** A bot in this process. */
  async startBot(env: Record<string, string>): Promise<RunningBot> {
    const bot = await startBot({
      slack: this.slack,
      agent: this.agent,
      store: this.store,
      env: { ...this.env, ...env },
    });
    this.bots.push(bot);
    return bot;
  }

  /** A bot in its own process, which a test can stop, continue or kill. */
  async spawnBot(env: Record<string, string>): Promise<BotProcess> {
    const bot = await spawnBot({
      slack: this.slack,
      agent: this.agent,
      store: this.store,
      env: { ...this.env, ...env },
    });
    this.processes.push(bot);
    return bot;
  }

  /** The prompts the agent received, in order. */
  prompts(): (string | undefined)[] {
    return this.agent.requestsFor('sendMessage').map((request) => request.prompt);
  }

  /**
   * Alice mentions the bot in `channel` (in the thread `root`, else at the top level), as Slack delivers it;
   * the message is in Slack's store too. Returns the message's ts.
   */
  async ask(
    eventsUrl: string,
    channel: string,
    text: string,
    where: { root?: string; ts?: string } = {},
  ): Promise<string> {
    const ts = where.ts ?? nextTs();
    const body = appMentionEvent({
      channel,
      user: 'U0ALICE',
      text: `<@U0BOT> ${text}`,
      ts,
      threadTs: where.root,
    });
    expect((await postSignedEvent(eventsUrl, SIGNING_SECRET, body, { via: this.slack })).status).toBe(200);
    return ts;
  }

  async stop(): Promise<void> {
    for (const bot of this.processes) {
      bot.child.kill('SIGKILL');
      await bot.exited;
    }
    for (const bot of this.bots) await bot.stop();
    this.processes = [];
    this.bots = [];
    await Promise.all([this.slack.stop(), this.agent.stop()]);
    await this.database.drop();
  }
}
