import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { botPostsIn, type FaultStack, mentionIn, readiness, startFaultStack } from './support.js';

const runPostgres = await shouldRunPostgresTests();

const CHANNEL = 'C0HALFOPEN';
/**
 * Messages are spread over ten channels: Slack takes about one post a second per channel (a burst of a few),
 * and these tests are about the store, not Slack's pacing of one channel.
 */
const channelOf = (i: number) => `${CHANNEL}${i % 10}`;
/** A short lease, so work this process lost track of comes back quickly. */
const ENV = { JOB_LEASE_MS: '3000', SLOW_NOTICE_MS: '0', AGENT_TIMEOUT_MS: '20000' };

/**
 * The network to PostgreSQL half works: statements arrive and commit but their answers never come back, or
 * connections go silent for good after a failover. One bot process alone must notice and recover its own
 * work; no other replica is there to take it over.
 */
describe.runIf(runPostgres)('PostgreSQL behind a half-open network', () => {
  let stack: FaultStack;

  beforeEach(async () => {
    stack = await startFaultStack(ENV);
    // First answers, several at once, so the bot holds a few open connections to the store when the fault
    // starts (a connection cannot be opened while replies are lost).
    const warmUp = Array.from({ length: 8 }, (_, i) => ({
      channel: channelOf(i),
      ...mentionIn(stack, channelOf(i), `warm up ${i}`),
    }));
    await Promise.all(warmUp.map((message) => message.deliver()));
    await waitFor(
      () => warmUp.every((message) => botPostsIn(stack.slack, message.channel, message.ts).length > 0),
      'warm-up answered',
    );
    await waitFor(
      async () => (await stack.sql(`SELECT 1 FROM inbox WHERE state <> 'done'`)).length === 0,
      'warm-up jobs finished',
    );
  });
  afterEach(async () => {
    await stack.stop();
  });

  it('answers messages whose recording and claiming committed while their replies were lost, in one process', async () => {
    const { slack, agent, bot, proxy } = stack;
    const messages = Array.from({ length: 4 }, (_, i) => ({
      channel: channelOf(i),
      ...mentionIn(stack, channelOf(i), `unseen ${i}`),
    }));

    proxy.loseReplies();
    // The inserts land although the bot never hears so, and so do the worker's claims of those jobs.
    const firstTries = Promise.all(messages.map((message) => message.deliver()));
    await waitFor(
      async () =>
        (
          await stack.sql(
            `SELECT 1 FROM inbox WHERE state = 'running' AND split_part(dedupe_key, ':', 3) = ANY($1)`,
            [messages.map((message) => message.ts)],
          )
        ).length > 0,
      'a claim of the new jobs committed in the store',
      9_000,
    );
    expect(await readiness(bot)).toEqual([503, 503]);
    // The answers never arrive: the connections drop, and then the store is reachable again.
    proxy.cut();
    proxy.restore();
    const restored = Date.now();
    // Each first delivery failed or was recorded late; a retry of any of them is acknowledged, and an event
    // already recorded is not recorded twice.
    await firstTries;
    const retries = await Promise.all(messages.map((message) => message.deliver(1)));
    expect(retries.map((result) => result.status)).toEqual(messages.map(() => 200));
    await waitFor(async () => (await readiness(bot)).every((status) => status === 200), 'ready again', 4_000);

    // The jobs the store has as this process's, though it never knew, come back to it when their lease lapses.
    await waitFor(
      () => messages.every((message) => botPostsIn(slack, message.channel, message.ts).length > 0),
      'every message answered',
      15_000,
    ).catch((error: unknown) => {
      const silent = messages.filter(
        (message) => botPostsIn(slack, message.channel, message.ts).length === 0,
      );
      throw new Error(`${String(error)}; ${silent.length} of ${messages.length} thread(s) frozen`);
    });
    expect(Date.now() - restored).toBeLessThan(10_000);
    await sleep(500);
    for (const [i, message] of messages.entries()) {
      expect(botPostsIn(slack, message.channel, message.ts).map((post) => post.text)).toEqual([
        expect.stringMatching(new RegExp(`^echo\\[s-\\d+#1\\]: unseen ${i}$`)),
      ]);
    }
    const prompts = agent.requestsFor('sendMessage').map((request) => request.prompt);
    for (const [i] of messages.entries()) expect(prompts.filter((p) => p === `unseen ${i}`)).toHaveLength(1);
  });

  it('gives up on connections a failover left silent within seconds, and answers every thread', async () => {
    const { slack, agent, bot, proxy } = stack;
    agent.setLatency(2_000, 'sendMessage');
    const messages = Array.from({ length: 20 }, (_, i) => ({
      channel: channelOf(i),
      ...mentionIn(stack, channelOf(i), `stranded ${i}`),
    }));
    for (const message of messages) expect((await message.deliver()).status).toBe(200);
    await waitFor(
      () => agent.requestsFor('sendMessage').length === 8 + messages.length,
      'every prompt on its way to the agent',
      10_000,
    );

    // The bot's connections go silent for good; new ones work at once.
    proxy.strand();
    const strandedAt = Date.now();
    await waitFor(
      () => messages.every((message) => botPostsIn(slack, message.channel, message.ts).length > 0),
      'every thread answered',
      20_000,
    );
    // A query on a silent connection is given up after the query timeout (6 s), not waited on for ever.
    expect(Date.now() - strandedAt).toBeLessThan(15_000);
    await waitFor(async () => (await readiness(bot)).every((status) => status === 200), 'ready again', 4_000);
    for (const [i, message] of messages.entries()) {
      expect(botPostsIn(slack, message.channel, message.ts).map((post) => post.text)).toEqual([
        expect.stringMatching(new RegExp(`^echo\\[s-\\d+#1\\]: stranded ${i}$`)),
      ]);
    }

    agent.setLatency(0, 'sendMessage');
    const followUps = messages.map((message, i) =>
      mentionIn(stack, message.channel, `after ${i}`, { threadTs: message.ts }),
    );
    for (const followUp of followUps) expect((await followUp.deliver()).status).toBe(200);
    await waitFor(
      () => messages.every((message) => botPostsIn(slack, message.channel, message.ts).length === 2),
      'every follow-up answered',
      10_000,
    );
  });
});
