import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { botPostsIn, type FaultStack, failWrites, mentionIn, startFaultStack } from './support.js';

const runPostgres = await shouldRunPostgresTests();

const CHANNEL = 'C0WRITES';
/** A short lease, so work this process lost track of comes back quickly. */
const ENV = { JOB_LEASE_MS: '3000', SLOW_NOTICE_MS: '0', AGENT_TIMEOUT_MS: '20000' };

const promptsOf = (stack: FaultStack) => stack.agent.requestsFor('sendMessage').map((r) => r.prompt);

/** The store refuses one specific write; the bot, alone (one process), must neither freeze nor forget. */
describe.runIf(runPostgres)('a store write that fails', () => {
  let stack: FaultStack;

  beforeEach(async () => {
    stack = await startFaultStack(ENV);
  });
  afterEach(async () => {
    await stack.stop();
  });

  it('does not freeze a thread when marking an answered job done keeps failing', async () => {
    const { slack } = stack;
    // Every attempt to mark a job done fails until the test lifts the fault: longer than the bot retries.
    const finishFails = await failWrites(stack, 'finish', {
      on: 'UPDATE',
      table: 'inbox',
      when: `NEW.state = 'done' AND OLD.state = 'running'`,
      times: 1_000,
    });
    const first = mentionIn(stack, CHANNEL, 'first');
    expect((await first.deliver()).status).toBe(200);
    await waitFor(() => botPostsIn(slack, CHANNEL, first.ts).length > 0, 'the first answer');
    const second = mentionIn(stack, CHANNEL, 'second', { threadTs: first.ts });
    expect((await second.deliver()).status).toBe(200);

    await waitFor(
      () => stack.bot.logs.text.includes('could not record how a job ended'),
      'the bot giving up on recording the first job done',
      30_000,
    );
    expect(await finishFails.attempts()).toBeGreaterThan(1);
    await finishFails.remove();

    // The job this process could not close comes back to it once its lease lapses; the thread goes on.
    await waitFor(() => botPostsIn(slack, CHANNEL, first.ts).length >= 2, 'the second answer', 10_000);
    await sleep(500);
    expect(botPostsIn(slack, CHANNEL, first.ts).map((post) => post.text)).toEqual([
      'echo[s-1#1]: first',
      'echo[s-1#2]: second',
    ]);
    expect(promptsOf(stack)).toEqual(['first', 'second']);
    const open = await stack.sql(`SELECT id FROM inbox WHERE state IN ('pending', 'running')`);
    expect(open).toEqual([]);
  });

  /** A thread with an answer in progress and three messages waiting behind it. */
  async function busyThread(): Promise<{ root: string; waiting: string[] }> {
    const { slack, agent } = stack;
    agent.setLatency(1_500, 'sendMessage');
    const root = mentionIn(stack, CHANNEL, 'long task');
    expect((await root.deliver()).status).toBe(200);
    await waitFor(() => promptsOf(stack).includes('long task'), 'the first prompt sent');
    const waiting: string[] = [];
    for (const i of [1, 2, 3]) {
      const message = mentionIn(stack, CHANNEL, `queued ${i}`, { threadTs: root.ts });
      expect((await message.deliver()).status).toBe(200);
      waiting.push(message.ts);
    }
    for (const ts of waiting) {
      await slack.waitForCall(
        'reactions.add',
        (c) => c.args.timestamp === ts && c.args.name === 'hourglass_flowing_sand',
      );
    }
    return { root: root.ts, waiting };
  }

  it("keeps a stop that failed on a store error for Slack's retry: the queued messages are cancelled and the notice posted", async () => {
    const { slack } = stack;
    const { root, waiting } = await busyThread();
    const cancelFails = await failWrites(stack, 'cancel', {
      on: 'UPDATE',
      table: 'inbox',
      when: `NEW.state = 'cancelled'`,
      times: 1,
    });

    const stop = mentionIn(stack, CHANNEL, 'stop', { threadTs: root });
    // Not acknowledged: Slack will deliver it again.
    expect((await stop.deliver()).status).toBe(500);
    expect(await cancelFails.attempts()).toBe(1);
    expect((await stop.deliver(1)).status).toBe(200);

    await waitFor(
      () => botPostsIn(slack, CHANNEL, root).some((post) => post.text.includes('Stopped')),
      'the stop notice',
    );
    // The answer in progress is dropped, the queued messages never reach the agent, their hourglasses go.
    await waitFor(
      () => stack.agent.requestsFor('sendMessage').some((r) => r.prompt === 'long task' && r.status === 200),
      'the agent answering the first prompt',
    );
    await waitFor(
      () => waiting.every((ts) => slack.reactionsOn(CHANNEL, ts).length === 0),
      'queued indicators cleared',
    );
    await sleep(500);
    expect(botPostsIn(slack, CHANNEL, root).map((post) => post.text)).toEqual([
      ':octagonal_sign: Stopped: cancelled 3 queued messages and dropped the answer I was waiting for. The agent had already received that message and may have acted on it; the next message here continues the conversation.',
    ]);
    expect(promptsOf(stack)).toEqual(['long task']);
  });

  it("keeps a reset that failed on a store error for Slack's retry: the queued messages are cancelled and the thread starts over", async () => {
    const { slack } = stack;
    const { root, waiting } = await busyThread();
    const cancelFails = await failWrites(stack, 'cancel', {
      on: 'UPDATE',
      table: 'inbox',
      when: `NEW.state = 'cancelled'`,
      times: 1,
    });

    const reset = mentionIn(stack, CHANNEL, 'reset', { threadTs: root });
    expect((await reset.deliver()).status).toBe(500);
    expect(await cancelFails.attempts()).toBe(1);
    expect((await reset.deliver(1)).status).toBe(200);

    // The answer in progress is posted, then the reset; the queued messages were for the old conversation.
    await waitFor(
      () => botPostsIn(slack, CHANNEL, root).some((post) => post.text.includes('Conversation reset')),
      'the reset notice',
    );
    await waitFor(
      () => waiting.every((ts) => slack.reactionsOn(CHANNEL, ts).length === 0),
      'queued indicators cleared',
    );
    stack.agent.setLatency(0, 'sendMessage');
    const after = mentionIn(stack, CHANNEL, 'fresh start', { threadTs: root });
    expect((await after.deliver()).status).toBe(200);
    await waitFor(() => botPostsIn(slack, CHANNEL, root).length >= 3, 'the answer after the reset');
    await sleep(500);
    expect(botPostsIn(slack, CHANNEL, root).map((post) => post.text)).toEqual([
      'echo[s-1#1]: long task',
      ':broom: Conversation reset. The next message starts a fresh conversation with the agent.',
      'echo[s-2#1]: fresh start',
    ]);
    expect(promptsOf(stack)).toEqual(['long task', 'fresh start']);
  });
});
