import pg from 'pg';
import { describe, expect, it, type TestContext } from 'vitest';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { appMentionEvent, messageEvent, nextTs } from '../helpers/slack-events.js';
import { deliver } from '../helpers/stack.js';
import { sleep, waitFor } from '../helpers/wait.js';
import {
  botPostsIn,
  type FaultStack,
  mentionIn,
  readiness,
  resetByShortcut,
  startFaultStack,
} from './support.js';

const runPostgres = await shouldRunPostgresTests();

const CHANNEL = 'C0OUTAGE';
const THREADS = 40;
/**
 * The threads are spread over channels, two in each: Slack takes about one post a second per channel (a
 * burst of a few), so 40 answers in one channel would measure Slack's pacing rather than the outage.
 */
const channelOf = (i: number) => `${CHANNEL}${String(i % 20).padStart(2, '0')}`;
/**
 * Not shorter: the bot must not take back its own jobs still in flight once their leases lapsed (what
 * `claim` leaves out), and a 5 s outage often let a bot that did pass.
 */
const OUTAGE_MS = 8_000;
/** A short lease, so work this process lost track of comes back quickly. */
const ENV = { JOB_LEASE_MS: '3000', SLOW_NOTICE_MS: '0', AGENT_TIMEOUT_MS: '20000' };

/** A bot and store of the test's own, stopped after it: the cases wait out their outages side by side. */
async function startStack(
  onTestFinished: TestContext['onTestFinished'],
  env: Record<string, string>,
  options: { socketMode?: boolean } = {},
): Promise<FaultStack> {
  const stack = await startFaultStack(env, options);
  onTestFinished(() => stack.stop());
  return stack;
}

/**
 * PostgreSQL goes away for 8 s while 40 threads wait for the agent's answers (which arrive during the
 * outage). The outage is shorter than the time the bot rides out a store failure, so nobody may notice
 * more than a delay: every thread gets its answer once (not an apology), the next message in each thread
 * is answered, and the bot says it is not ready only while the store is gone.
 */
describe.runIf(runPostgres)('PostgreSQL outage with answers in flight', { concurrent: true }, () => {
  async function rideOut(stack: FaultStack, outage: { start(): void; end(): void }): Promise<void> {
    const { slack, agent, bot } = stack;
    agent.setLatency(2_000, 'sendMessage');
    const roots: { channel: string; ts: string }[] = [];
    for (let i = 0; i < THREADS; i++) {
      const message = mentionIn(stack, channelOf(i), `question ${i}`);
      expect((await message.deliver()).status).toBe(200);
      roots.push({ channel: channelOf(i), ts: message.ts });
    }
    const postsIn = (root: { channel: string; ts: string }) => botPostsIn(slack, root.channel, root.ts);
    await waitFor(
      () => agent.requestsFor('sendMessage').length === THREADS,
      'every prompt on its way to the agent',
      10_000,
    );
    expect(await readiness(bot)).toEqual([200, 200]);

    outage.start();
    const started = Date.now();
    // Readiness is cached for a second and the store check gives up after two.
    await waitFor(
      async () => (await readiness(bot)).every((status) => status === 503),
      'not ready during the outage',
      4_000,
    );
    await sleep(started + OUTAGE_MS - Date.now());
    expect(await readiness(bot)).toEqual([503, 503]);
    outage.end();
    const restored = Date.now();
    await waitFor(async () => (await readiness(bot)).every((status) => status === 200), 'ready again', 5_000);
    expect(Date.now() - restored).toBeLessThan(4_000);

    // Every thread gets the agent's answer, once.
    await waitFor(
      () => roots.every((root) => postsIn(root).length > 0),
      'an answer in every thread',
      25_000,
    ).catch((error: unknown) => {
      const silent = roots.filter((root) => postsIn(root).length === 0);
      throw new Error(`${String(error)}; ${silent.length} thread(s) silent`);
    });
    for (const [i, root] of roots.entries()) {
      expect(postsIn(root).map((post) => post.text)).toEqual([
        expect.stringMatching(new RegExp(`^echo\\[s-\\d+#1\\]: question ${i}$`)),
      ]);
    }

    // Nothing is frozen: a follow-up in every thread is answered.
    agent.setLatency(0, 'sendMessage');
    for (const [i, root] of roots.entries()) {
      const followUp = mentionIn(stack, root.channel, `follow-up ${i}`, { threadTs: root.ts });
      expect((await followUp.deliver()).status).toBe(200);
    }
    await waitFor(() => roots.every((root) => postsIn(root).length >= 2), 'every follow-up answered', 15_000);
    await sleep(500);
    for (const [i, root] of roots.entries()) {
      expect(postsIn(root).map((post) => post.text)).toEqual([
        expect.stringMatching(new RegExp(`: question ${i}$`)),
        expect.stringMatching(new RegExp(`^echo\\[s-\\d+#2\\]: follow-up ${i}$`)),
      ]);
    }
    // No prompt reached the agent twice.
    const prompts = agent.requestsFor('sendMessage').map((request) => request.prompt);
    expect(prompts).toHaveLength(2 * THREADS);
    expect(new Set(prompts).size).toBe(2 * THREADS);
  }

  it('rides out an 8 s outage (connections reset, new ones refused) without losing or repeating an answer', async ({
    onTestFinished,
  }) => {
    const stack = await startStack(onTestFinished, ENV);
    await rideOut(stack, { start: () => stack.proxy.down(), end: () => stack.proxy.restore() });
  });

  it('rides out an 8 s blackhole (connections silent) without losing or repeating an answer', async ({
    onTestFinished,
  }) => {
    const stack = await startStack(onTestFinished, ENV);
    await rideOut(stack, { start: () => stack.proxy.blackhole(), end: () => stack.proxy.restore() });
  });
});

/**
 * An outage longer than STORE_OUTAGE_ACK_MS (3 s here): Slack must keep getting 200s, or it disables the
 * app's event subscriptions, so a message that cannot be recorded is acknowledged and its author told, in
 * its thread, to send it again. Before the bound, events are refused so Slack's retries bring them in.
 */
describe.runIf(runPostgres)('PostgreSQL outage longer than STORE_OUTAGE_ACK_MS', { concurrent: true }, () => {
  const BOUND_MS = 3_000;
  const NOT_TAKEN = /could not take your message/;
  const BOUND_ENV = { ...ENV, STORE_OUTAGE_ACK_MS: String(BOUND_MS) };

  const notesIn = (stack: FaultStack, channel: string, root: string) =>
    botPostsIn(stack.slack, channel, root).filter((post) => NOT_TAKEN.test(post.text));

  // Each case starts its own stack: over HTTP, or in Socket Mode (a bot start the other would not use).
  it('refuses events until the bound, then acknowledges them and tells each author to send again', async ({
    onTestFinished,
  }) => {
    const stack = await startStack(onTestFinished, BOUND_ENV);
    const { slack, agent } = stack;
    const notes = (channel: string, root: string) => notesIn(stack, channel, root);
    // A thread the bot answers in before the outage: a reply there without a mention is for it too.
    const earlier = mentionIn(stack, CHANNEL, 'before the outage');
    expect((await earlier.deliver()).status).toBe(200);
    await waitFor(() => botPostsIn(slack, CHANNEL, earlier.ts).length === 1, 'the answer before the outage');

    stack.proxy.down();
    const early = mentionIn(stack, CHANNEL, 'too early');
    expect((await early.deliver()).status).not.toBe(200);
    await sleep(BOUND_MS + 500);

    const late = mentionIn(stack, CHANNEL, 'after the bound');
    const followUp = messageEvent({
      channel: CHANNEL,
      channelType: 'channel',
      user: 'U0BOB',
      text: 'a reply in the bot thread',
      threadTs: earlier.ts,
    });
    const elsewhere = messageEvent({
      channel: CHANNEL,
      channelType: 'channel',
      user: 'U0BOB',
      text: 'people talking in their own thread',
      threadTs: nextTs(),
    });
    const dm = messageEvent({ channel: 'D0ALICE', channelType: 'im', user: 'U0ALICE', text: 'in a DM' });
    const statuses = [
      (await late.deliver()).status,
      ...(await Promise.all(
        [followUp, elsewhere, dm].map(async (body) => (await deliver(stack.bot, body)).status),
      )),
    ];
    expect(statuses).toEqual([200, 200, 200, 200]);
    // Ready again for a load balancer: Slack's deliveries must keep reaching a replica that answers them.
    expect(await readiness(stack.bot)).toEqual([200, 200]);

    await waitFor(() => notes(CHANNEL, late.ts).length > 0, 'a note in the mention thread');
    await waitFor(() => notes(CHANNEL, earlier.ts).length > 0, 'a note in the bot thread');
    // The bots here have classic DMs, answered at the top level: the note goes there too, not into a thread.
    const dmNotes = () =>
      slack
        .channelMessages('D0ALICE')
        .filter(
          (post) => post.bot_id !== undefined && NOT_TAKEN.test(post.text) && post.thread_ts === undefined,
        );
    await waitFor(() => dmNotes().length > 0, 'a note at the top level of the DM');
    expect(notes(CHANNEL, late.ts)[0]?.text).toContain('<@U0ALICE>');
    expect(notes(CHANNEL, earlier.ts)[0]?.text).toContain('<@U0BOB>');
    await sleep(500);
    // Nobody else's thread hears from the bot, and each author is told once.
    expect(botPostsIn(slack, CHANNEL, elsewhere.event.thread_ts ?? '')).toEqual([]);
    for (const root of [late.ts, earlier.ts]) expect(notes(CHANNEL, root)).toHaveLength(1);
    expect(slack.channelMessages('D0ALICE').filter((post) => post.bot_id !== undefined)).toHaveLength(1);

    // A blackholed store: the answer still goes to Slack in time, and the note follows once the write fails.
    stack.proxy.restore();
    stack.proxy.blackhole();
    const silent = mentionIn(stack, CHANNEL, 'into the blackhole');
    const started = Date.now();
    expect((await silent.deliver()).status).toBe(200);
    expect(Date.now() - started).toBeLessThan(2_500);
    await waitFor(() => notes(CHANNEL, silent.ts).length > 0, 'a note after the blackholed write', 15_000);

    // Once the store is back, messages are taken as usual; the ones refused early arrive with Slack's retry.
    stack.proxy.restore();
    expect((await early.deliver(1)).status).toBe(200);
    await waitFor(
      () => botPostsIn(slack, CHANNEL, early.ts).length === 1,
      'the early message answered',
      15_000,
    );
    expect(botPostsIn(slack, CHANNEL, early.ts)[0]?.text).toMatch(/: too early$/);
    expect(agent.requestsFor('sendMessage').map((request) => request.prompt)).toEqual([
      'before the outage',
      'too early',
    ]);
  }, 60_000);

  it('in Socket Mode, leaves envelopes unacknowledged until the bound, then acknowledges them with the note', async ({
    onTestFinished,
  }) => {
    const stack = await startStack(onTestFinished, BOUND_ENV, { socketMode: true });
    const { slack } = stack;
    const notes = (channel: string, root: string) => notesIn(stack, channel, root);
    await slack.waitForSocketConnection();
    stack.proxy.down();
    const mention = (text: string) =>
      appMentionEvent({ channel: CHANNEL, user: 'U0ALICE', text: `<@U0BOT> ${text}`, ts: nextTs() });
    const outage = Date.now();
    await expect(slack.sendSocketEvent(mention('too early'))).rejects.toThrow(/not acked/);
    // Past the bound, as over HTTP; the unacknowledged envelope above already took Slack's 3 s.
    await sleep(outage + BOUND_MS + 500 - Date.now());
    const late = mention('after the bound');
    // Acknowledged after waiting at most 1.5 s for the store; a machine kept busy by the rest of the suite can
    // push that past Slack's 3 s, and then Slack sends the envelope again (three times at most), as here.
    for (let attempt = 0; ; attempt++) {
      const retry = attempt > 0 ? { retryAttempt: attempt, retryReason: 'timeout' } : {};
      const acked = await slack.sendSocketEvent(late, retry).then(
        () => true,
        (error: unknown) => {
          if (attempt === 3) throw error;
          return false;
        },
      );
      if (acked) break;
    }
    await waitFor(() => notes(CHANNEL, late.event.ts).length > 0, 'a note in the mention thread');
    await sleep(500);
    expect(notes(CHANNEL, late.event.ts)).toHaveLength(1);
  }, 60_000);
});

/**
 * Readiness asks whether the store answers, not whether this replica has a connection free: a replica whose
 * connections all wait (a burst, a lock held elsewhere) would otherwise leave the balancer's rotation
 * exactly when it has work, and with every replica busy, Slack would find no one to deliver to.
 */
describe.runIf(runPostgres)('PostgreSQL busy, not gone', () => {
  it('stays ready while every store connection waits on a lock past a lease, then answers each waiting message once', async ({
    onTestFinished,
  }) => {
    const stack = await startStack(onTestFinished, { ...ENV, DATABASE_POOL_SIZE: '2' });
    const { slack, bot } = stack;
    expect(await readiness(bot)).toEqual([200, 200]);

    // Another client holds the inbox: every event the bot records waits on it, each holding a connection.
    const locker = new pg.Client({ connectionString: stack.database.url });
    await locker.connect();
    onTestFinished(() => locker.end());
    await locker.query('BEGIN; LOCK TABLE inbox IN ACCESS EXCLUSIVE MODE');
    const locked = Date.now();
    const mentions = [0, 1, 2, 3].map((i) => mentionIn(stack, channelOf(i), `while busy ${i}`));
    const deliveries = mentions.map((mention) => ({ mention, first: mention.deliver() }));
    // Awaited below; a failed assertion before then must not leave them rejecting unheard once the stack stops.
    for (const { first } of deliveries) first.catch(() => {});
    // Long enough for a readiness check stuck behind those connections to have given up (2 s).
    await sleep(2_500);
    const asked = Date.now();
    expect(await readiness(bot)).toEqual([200, 200]);
    expect(Date.now() - asked).toBeLessThan(1_000);

    // Held past a job's lease (JOB_LEASE_MS): a message recorded as the lock goes must still be run once.
    await sleep(locked + Number(ENV.JOB_LEASE_MS) + 1_000 - Date.now());
    await locker.query('COMMIT');
    // Those refused while the lock was held come back with Slack's retries.
    await Promise.all(
      deliveries.map(async ({ mention, first }) => {
        let status = (await first).status;
        for (let retryNum = 1; status !== 200 && retryNum <= 3; retryNum++)
          status = (await mention.deliver(retryNum)).status;
        expect(status).toBe(200);
      }),
    );
    await waitFor(
      () => mentions.every((mention, i) => botPostsIn(slack, channelOf(i), mention.ts).length > 0),
      'every waiting message answered',
      15_000,
    );
    await sleep(500);
    for (const [i, mention] of mentions.entries())
      expect(botPostsIn(slack, channelOf(i), mention.ts).map((post) => post.text)).toEqual([
        expect.stringMatching(new RegExp(`: while busy ${i}$`)),
      ]);
    // Each prompt reached the agent once.
    expect(
      stack.agent
        .requestsFor('sendMessage')
        .map((request) => request.prompt)
        .sort(),
    ).toEqual(mentions.map((_, i) => `while busy ${i}`));
  }, 30_000);
});

describe.runIf(runPostgres)('PostgreSQL not answering a scrape', () => {
  it("answers /metrics at once, with the queue's figures as last read when the store cannot say in time", async ({
    onTestFinished,
  }) => {
    const stack = await startStack(onTestFinished, ENV);
    const scrape = async () => {
      const asked = Date.now();
      const response = await fetch(`${stack.bot.adminUrl}/metrics`);
      return { status: response.status, text: await response.text(), ms: Date.now() - asked };
    };
    expect((await scrape()).text).toMatch(/^jobs_in_flight 0$/m);
    // A message whose answer is on its way, then another client holds the inbox: the queue's figures cannot
    // be read, the process's own can.
    const release = stack.agent.holdAnswerTo('still thinking');
    onTestFinished(release);
    const mention = mentionIn(stack, CHANNEL, 'still thinking');
    expect((await mention.deliver()).status).toBe(200);
    await waitFor(() => stack.agent.requestsFor('sendMessage').length > 0, 'the prompt at the agent');
    const locker = new pg.Client({ connectionString: stack.database.url });
    await locker.connect();
    onTestFinished(() => locker.end());
    await locker.query('BEGIN; LOCK TABLE inbox IN ACCESS EXCLUSIVE MODE');
    const during = await scrape();
    expect(during.status).toBe(200);
    expect(during.ms).toBeLessThan(2_500);
    expect(during.text).toMatch(/^process_cpu_seconds_total /m);
    expect(during.text).toMatch(/^jobs_in_flight 1$/m);
    await locker.query('COMMIT');
    release();
    await waitFor(() => botPostsIn(stack.slack, CHANNEL, mention.ts).length > 0, 'the answer');
  }, 30_000);
});

describe.runIf(runPostgres)('PostgreSQL silent while a reset shortcut comes in', () => {
  for (const [limited, env] of [
    ['', {}],
    // The per-person limit is counted in the store too, before the reset is recorded.
    [', its author counted against a per-minute limit', { USER_RATE_LIMIT: '30' }],
  ] as const)
    it(`acknowledges the shortcut within Slack's 3 s (Slack never sends it again), then resets and says so once the store answers${limited}`, async ({
      onTestFinished,
    }) => {
      const stack = await startStack(onTestFinished, { ...ENV, ...env });
      const { slack } = stack;
      const root = mentionIn(stack, CHANNEL, 'reset me while the store is silent');
      expect((await root.deliver()).status).toBe(200);
      await waitFor(() => botPostsIn(slack, CHANNEL, root.ts).length > 0, 'the first answer');
      stack.proxy.blackhole();
      const responseId = `reset-${root.ts}`;
      const started = Date.now();
      const shortcut = await resetByShortcut(stack, CHANNEL, root.ts, responseId);
      expect(shortcut.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(3_000);
      await sleep(1_000);
      stack.proxy.restore();
      const confirmed = () =>
        slack.callsOf('response_url').filter((call) => call.args.responseId === responseId);
      await waitFor(() => confirmed().length > 0, 'the reset confirmed privately', 15_000);
      expect(confirmed().map((call) => call.args.text)).toEqual([
        ':broom: Conversation reset. The next message starts a fresh conversation with the agent.',
      ]);
      expect(stack.bot.logs.text).not.toContain('could not record a conversation reset');
    }, 30_000);
});
