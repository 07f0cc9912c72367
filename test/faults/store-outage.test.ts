import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { botPostsIn, type FaultStack, mentionIn, readiness, startFaultStack } from './support.js';

const runPostgres = await shouldRunPostgresTests();

const CHANNEL = 'C0OUTAGE';
const THREADS = 40;
const OUTAGE_MS = 8_000;
/** A short lease, so work this process lost track of comes back quickly. */
const ENV = { JOB_LEASE_MS: '3000', SLOW_NOTICE_MS: '0', AGENT_TIMEOUT_MS: '20000' };

/**
 * PostgreSQL goes away for 8 s while 40 threads wait for the agent's answers (which arrive during the
 * outage). The outage is shorter than the time the bot rides out a store failure, so nobody may notice
 * more than a delay: every thread gets its answer once (not an apology), the next message in each thread
 * is answered, and the bot says it is not ready only while the store is gone.
 */
describe.runIf(runPostgres)('PostgreSQL outage with answers in flight', () => {
  let stack: FaultStack;

  beforeEach(async () => {
    stack = await startFaultStack(ENV);
    stack.agent.setLatency(2_000, 'sendMessage');
  });
  afterEach(async () => {
    await stack.stop();
  });

  async function rideOut(outage: { start(): void; end(): void }): Promise<void> {
    const { slack, agent, bot } = stack;
    const roots: string[] = [];
    for (let i = 0; i < THREADS; i++) {
      const message = mentionIn(stack, CHANNEL, `question ${i}`);
      expect((await message.deliver()).status).toBe(200);
      roots.push(message.ts);
    }
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
      () => roots.every((root) => botPostsIn(slack, CHANNEL, root).length > 0),
      'an answer in every thread',
      25_000,
    ).catch((error: unknown) => {
      const silent = roots.filter((root) => botPostsIn(slack, CHANNEL, root).length === 0);
      throw new Error(`${String(error)}; ${silent.length} thread(s) silent`);
    });
    for (const [i, root] of roots.entries()) {
      expect(botPostsIn(slack, CHANNEL, root).map((post) => post.text)).toEqual([
        expect.stringMatching(new RegExp(`^echo\\[s-\\d+#1\\]: question ${i}$`)),
      ]);
    }

    // Nothing is frozen: a follow-up in every thread is answered.
    agent.setLatency(0, 'sendMessage');
    for (const [i, root] of roots.entries()) {
      expect((await mentionIn(stack, CHANNEL, `follow-up ${i}`, { threadTs: root }).deliver()).status).toBe(
        200,
      );
    }
    await waitFor(
      () => roots.every((root) => botPostsIn(slack, CHANNEL, root).length >= 2),
      'every follow-up answered',
      15_000,
    );
    await sleep(500);
    for (const [i, root] of roots.entries()) {
      expect(botPostsIn(slack, CHANNEL, root).map((post) => post.text)).toEqual([
        expect.stringMatching(new RegExp(`: question ${i}$`)),
        expect.stringMatching(new RegExp(`^echo\\[s-\\d+#2\\]: follow-up ${i}$`)),
      ]);
    }
    // No prompt reached the agent twice.
    const prompts = agent.requestsFor('sendMessage').map((request) => request.prompt);
    expect(prompts).toHaveLength(2 * THREADS);
    expect(new Set(prompts).size).toBe(2 * THREADS);
  }

  it('rides out an 8 s outage (connections reset, new ones refused) without losing or repeating an answer', async () => {
    await rideOut({ start: () => stack.proxy.down(), end: () => stack.proxy.restore() });
  });

  it('rides out an 8 s blackhole (connections silent) without losing or repeating an answer', async () => {
    await rideOut({ start: () => stack.proxy.blackhole(), end: () => stack.proxy.restore() });
  });
});
