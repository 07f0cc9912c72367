import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { TAKEOVER_GRACE_MS } from '../../src/conversation/answer-job.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack } from '../fakes/slack.js';
import { TcpProxy } from '../fakes/tcp-proxy.js';
import {
  type PrivatePostgres,
  privatePostgresAvailable,
  startPrivatePostgres,
} from '../helpers/private-postgres.js';
import { appMentionEvent, nextTs, type SignedPostResult } from '../helpers/slack-events.js';
import { deliver, type RunningBot, startBot } from '../helpers/stack.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { botPostsIn, readiness } from './support.js';

const available = await privatePostgresAvailable();

const CHANNEL = 'C0RESTART';
/**
 * A short lease, so it lapses while PostgreSQL is down (nobody can renew it then), and a short agent
 * timeout, so a job taken over after the outage no longer waits for the agent before calling an answer lost.
 */
const ENV = {
  JOB_LEASE_MS: '3000',
  AGENT_TIMEOUT_MS: '5000',
  SLOW_NOTICE_MS: '0',
  // Other store writes retried for 2 s instead of 20 s, so an outage of a few seconds outlasts them.
  STORE_WRITE_RETRY_MS: '2000',
};
/**
 * The long outage runs with ENV's store write retry and lease halved (1 s, 1.5 s): it lasts four times as
 * long as a store write is retried (how long the bot used to hold an answer before dropping it: as 35 s
 * against the default 20 s) and over two leases, as 8 s did with ENV's, but sooner.
 */
const LONG_OUTAGE_ENV = { STORE_WRITE_RETRY_MS: '1000', JOB_LEASE_MS: '1500' };
const LONG_OUTAGE_MS = 4 * Number(LONG_OUTAGE_ENV.STORE_WRITE_RETRY_MS);
const LOST = /restarted|lost/;
const DROPPED_NOTICE =
  /^:warning: The agent answered this message, but my database was unreachable for more than 2 seconds/;

/** A throwaway PostgreSQL cluster of one test, with fakes, and the bots the test starts on it. */
class Restarts {
  private readonly bots: RunningBot[] = [];
  private readonly proxies: TcpProxy[] = [];

  private constructor(
    readonly cluster: PrivatePostgres,
    readonly databaseUrl: string,
    readonly slack: FakeSlack,
    readonly agent: AgentServiceEmulator,
  ) {}

  static async start(): Promise<Restarts> {
    const cluster = await startPrivatePostgres();
    return new Restarts(
      cluster,
      await cluster.createDatabase(),
      await FakeSlack.start(),
      await AgentServiceEmulator.start(),
    );
  }

  async stop(): Promise<void> {
    // A test that failed mid-outage leaves the bots waiting for the store: give it back before stopping them.
    await this.cluster.start();
    for (const proxy of this.proxies) proxy.restore();
    for (const bot of this.bots) await bot.stop();
    await Promise.all(this.proxies.map((proxy) => proxy.stop()));
    await Promise.all([this.slack.stop(), this.agent.stop()]);
    await this.cluster.remove();
  }

  async bot(env: Record<string, string> = {}, storeUrl = this.databaseUrl): Promise<RunningBot> {
    const started = await startBot({
      slack: this.slack,
      agent: this.agent,
      store: { kind: 'postgres', databaseUrl: storeUrl },
      env: { ...ENV, ...env },
    });
    this.bots.push(started);
    return started;
  }

  /** A proxy to the test's database that the test can break, stopped with the rest. */
  async proxy(): Promise<TcpProxy> {
    const proxy = await TcpProxy.start({ target: this.databaseUrl });
    this.proxies.push(proxy);
    return proxy;
  }

  /** Alice mentions the bot (in `root`'s thread, else at the top level), as Slack delivers it. */
  mention(
    to: RunningBot,
    text: string,
    root?: string,
  ): { ts: string; deliver: (retryNum?: number) => Promise<SignedPostResult> } {
    const ts = nextTs();
    const body = appMentionEvent({
      channel: CHANNEL,
      user: 'U0ALICE',
      text: `<@U0BOT> ${text}`,
      ts,
      threadTs: root,
    });
    return { ts, deliver: (retryNum) => deliver(to, body, retryNum === undefined ? {} : { retryNum }) };
  }

  async ask(to: RunningBot, text: string, root?: string): Promise<string> {
    const message = this.mention(to, text, root);
    expect((await message.deliver()).status).toBe(200);
    return message.ts;
  }

  prompts(): (string | undefined)[] {
    return this.agent.requestsFor('sendMessage').map((request) => request.prompt);
  }

  answered(prompt: string): boolean {
    return this.agent
      .requestsFor('sendMessage')
      .some((request) => request.prompt === prompt && request.status === 200);
  }

  posts(root: string): string[] {
    return botPostsIn(this.slack, CHANNEL, root).map((post) => post.text);
  }

  /** PostgreSQL goes down once the prompt is at the agent, which answers while it is down. */
  async stopWhileAnswering(prompt: string, mode: 'fast' | 'immediate'): Promise<number> {
    // Held before the prompt reaches the agent's reply (after the case's agent latency), and released once
    // PostgreSQL is down, however long the stop takes here.
    const answer = this.agent.holdAnswerTo(prompt);
    await waitFor(() => this.prompts().includes(prompt), 'the prompt at the agent', 10_000);
    await this.cluster.stop(mode);
    const down = Date.now();
    expect(this.answered(prompt)).toBe(false);
    answer();
    await waitFor(() => this.answered(prompt), 'the agent answering while PostgreSQL is down', 10_000);
    return down;
  }

  async sql<Row extends object>(text: string): Promise<Row[]> {
    const client = new pg.Client({ connectionString: this.databaseUrl });
    await client.connect();
    try {
      return (await client.query<Row>(text)).rows;
    } finally {
      await client.end();
    }
  }
}

/** `it` with a PostgreSQL cluster, fakes and bots of the test's own (`stack`), stopped and removed after it. */
const itWithCluster = it.extend<{ stack: Restarts }>({
  // biome-ignore lint/correctness/noEmptyPattern: Vitest reads what a fixture depends on from this pattern.
  stack: async ({}, use) => {
    const restarts = await Restarts.start();
    try {
      await use(restarts);
    } finally {
      await restarts.stop();
    }
  },
});

/**
 * PostgreSQL itself is stopped and started again (a restart, a minor upgrade, a failover, a crash) while
 * the agent is answering. Each case has a throwaway cluster of its own (the server other test files share
 * stays up), so the cases wait out their outages side by side.
 */
describe.runIf(available)(
  'PostgreSQL stopped and started while the agent answers',
  { concurrent: true },
  () => {
    itWithCluster(
      `posts the answer the agent gave during an outage of ${LONG_OUTAGE_MS / 1000} s, once, and answers what Slack retried`,
      async ({ stack }) => {
        const replica = await stack.bot(LONG_OUTAGE_ENV);
        stack.agent.setLatency(2_000, 'sendMessage');
        const root = await stack.ask(replica, 'what changed in the release?');
        const down = await stack.stopWhileAnswering('what changed in the release?', 'fast');

        // A message sent during the outage may be refused; Slack then delivers it again.
        const during = stack.mention(replica, 'and during the outage?');
        const first = await during.deliver();
        await sleep(down + LONG_OUTAGE_MS - Date.now());
        expect(stack.posts(root)).toEqual([]);
        await stack.cluster.start();
        await waitFor(
          async () => (await readiness(replica)).every((status) => status === 200),
          'ready again',
          10_000,
        );
        if (first.status !== 200) expect((await during.deliver(1)).status).toBe(200);

        await waitFor(() => stack.posts(root).length > 0, 'the answer in the thread', 15_000);
        await waitFor(() => stack.posts(during.ts).length > 0, "the answer to Slack's retry", 15_000);
        await sleep(1_000);
        expect(stack.posts(root)).toEqual([
          expect.stringMatching(/^echo\[s-1#1\]: what changed in the release\?$/),
        ]);
        expect(stack.posts(during.ts)).toEqual([expect.stringMatching(/: and during the outage\?$/)]);
        expect(replica.logs.text).not.toMatch(/its answer is lost/);

        // Nothing is frozen: the conversation goes on.
        stack.agent.setLatency(0, 'sendMessage');
        await stack.ask(replica, 'thanks', root);
        await waitFor(() => stack.posts(root).length >= 2, 'the follow-up answered', 10_000);
        expect(stack.posts(root)).toEqual([
          'echo[s-1#1]: what changed in the release?',
          'echo[s-1#2]: thanks',
        ]);
        expect(stack.prompts().filter((prompt) => prompt === 'what changed in the release?')).toHaveLength(1);
      },
      90_000,
    );

    itWithCluster(
      'posts the answer once when another replica, back on the store first, finds the lapsed lease',
      async ({ stack }) => {
        // The replica holding the answer reaches PostgreSQL through a proxy, so it can come back later.
        const proxy = await stack.proxy();
        const holder = await stack.bot({}, proxy.url);
        stack.agent.setLatency(3_000, 'sendMessage');
        const root = await stack.ask(holder, 'summarise the incident');
        await waitFor(
          () => stack.prompts().includes('summarise the incident'),
          'the prompt at the agent',
          10_000,
        );
        // The prompt went out before the agent had it.
        const sent = Date.now();
        // Started now, so the job is the holder's.
        const other = await stack.bot();
        proxy.down();
        await stack.stopWhileAnswering('summarise the incident', 'fast');
        // Longer than the lease, and past the agent's timeout and the takeover grace after the prompt went out
        // (by a second, for the cluster's start): the other replica, which finds the lapsed lease, would call
        // the answer lost at once, were it not still held.
        await sleep(sent + Number(ENV.AGENT_TIMEOUT_MS) + TAKEOVER_GRACE_MS + 1_000 - Date.now());
        await stack.cluster.start();
        // The holder is back within the takeover handshake (half a lease after the other replica asks for it),
        // answers that question with its heartbeat, and so keeps its answer. A holder cut off for longer cannot be
        // told from a crashed one: its answer is then called lost, and never posted after that notice.
        await sleep(1_000);
        proxy.restore();

        await waitFor(() => stack.posts(root).length > 0, 'the answer in the thread', 20_000);
        await sleep(3_000);
        expect(stack.posts(root)).toEqual(['echo[s-1#1]: summarise the incident']);
        expect(stack.prompts()).toEqual(['summarise the incident']);
        for (const replica of [holder, other]) expect(replica.logs.text).not.toMatch(/its answer is lost/);
        // The other replica did take the job over meanwhile.
        const [job] = await stack.sql<{ attempts: number }>('SELECT attempts FROM inbox');
        expect(job?.attempts).toBeGreaterThan(1);
      },
      60_000,
    );

    itWithCluster(
      'says once, honestly, that an answer held longer than STORE_RETRY_WINDOW was dropped',
      async ({ stack }) => {
        const replica = await stack.bot({ STORE_RETRY_WINDOW: '2s', AGENT_TIMEOUT_MS: '3000' });
        stack.agent.setLatency(1_500, 'sendMessage');
        const root = await stack.ask(replica, 'rotate the keys');
        await stack.stopWhileAnswering('rotate the keys', 'fast');

        await waitFor(() => stack.posts(root).length > 0, 'a notice while PostgreSQL is still down', 20_000);
        await sleep(1_000);
        await stack.cluster.start();
        // The job, which could not be closed during the outage, runs again now, and must not say more.
        await waitFor(
          async () =>
            (await stack.sql<{ state: string }>('SELECT state FROM inbox')).every(
              (row) => row.state === 'done',
            ),
          'the job closed after the outage',
          20_000,
        );
        stack.agent.setLatency(0, 'sendMessage');
        await stack.ask(replica, 'still there?', root);
        await waitFor(() => stack.posts(root).length >= 2, 'the follow-up answered', 10_000);
        await sleep(500);
        const [notice, ...rest] = stack.posts(root);
        expect(notice).toMatch(DROPPED_NOTICE);
        expect(notice).not.toMatch(LOST);
        expect(rest).toEqual(['echo[s-1#2]: still there?']);
        expect(stack.prompts()).toEqual(['rotate the keys', 'still there?']);
      },
      60_000,
    );

    for (const [what, mode, downMs] of [
      ['a 120 ms restart', 'fast', 120],
      ['a crash', 'immediate', 3_000],
    ] as const) {
      itWithCluster(
        `posts the answer once through ${what}`,
        async ({ stack }) => {
          const replica = await stack.bot();
          stack.agent.setLatency(1_500, 'sendMessage');
          const root = await stack.ask(replica, `through ${what}`);
          await waitFor(() => stack.prompts().includes(`through ${what}`), 'the prompt at the agent', 10_000);
          await stack.cluster.stop(mode);
          await sleep(downMs);
          await stack.cluster.start();
          await waitFor(() => stack.posts(root).length > 0, 'the answer in the thread', 20_000);
          await sleep(1_000);
          expect(stack.posts(root)).toEqual([`echo[s-1#1]: through ${what}`]);
          expect(stack.prompts()).toEqual([`through ${what}`]);
        },
        45_000,
      );
    }
  },
);
