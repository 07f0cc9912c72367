import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { blockActionsPayload, postSignedInteraction } from '../helpers/slack-events.js';
import { SIGNING_SECRET } from '../helpers/stack.js';
import { sleep, waitFor } from '../helpers/wait.js';
import {
  botPostsIn,
  type FaultStack,
  failWrites,
  itWithFakes,
  mentionIn,
  resetByShortcut,
  startFaultStack,
} from './support.js';

const runPostgres = await shouldRunPostgresTests();

const CHANNEL = 'C0WRITES';
/**
 * A short lease, so work this process lost track of comes back quickly, and a store write retried for 1 s
 * instead of 20 s before the bot gives up on it: the same giving up, sooner.
 */
const ENV = {
  JOB_LEASE_MS: '1500',
  SLOW_NOTICE_MS: '0',
  AGENT_TIMEOUT_MS: '20000',
  STORE_WRITE_RETRY_MS: '1000',
};

const promptsOf = (stack: FaultStack) => stack.agent.requestsFor('sendMessage').map((r) => r.prompt);

/**
 * `it` with a bot and store of the test's own (`stack`, with ENV and the test's `env`), stopped after it: the
 * cases, which mostly wait on the bot's retries and leases, then wait side by side in a concurrent describe.
 * A few connections per bot, as `itWithFakes` gives: several bots run at once beside other files' databases.
 */
const itWithStack = it.extend<{ env: Record<string, string>; stack: FaultStack }>({
  env: {},
  stack: async ({ env }, use) => {
    const stack = await startFaultStack({ ...ENV, DATABASE_POOL_SIZE: '3', ...env });
    try {
      await use(stack);
    } finally {
      await stack.stop();
    }
  },
});

// First, as the longest: the cases of all the describes share Vitest's few concurrent slots.
/** Slack refused an answer for too long: the bot says so once, however often its job runs again. */
describe.runIf(runPostgres)(
  'giving up on an answer Slack refused, when marking that job done fails',
  { concurrent: true },
  () => {
    // Slack's refusals outlast the window: a second, so the bot gives up by the second retry of the answer
    // whatever the jitter of its back-off (with 2 s, a third retry, seconds later, could be needed).
    itWithStack.override({ env: { REPLY_RETRY_WINDOW: '1s' } });

    itWithStack(
      'says once that Slack refused the answer, and posts no answer after saying so',
      async ({ stack }) => {
        const { slack } = stack;
        const isAnswer = (args: Record<string, unknown>) => String(args.text).startsWith('echo');
        slack.failFor('chat.postMessage', { type: 'http', status: 503 }, 120_000, isAnswer);
        // Every attempt to mark the job done fails until the test lifts the fault: it runs again meanwhile.
        const finishFails = await failWrites(stack, 'finish_gave_up', {
          on: 'UPDATE',
          table: 'inbox',
          when: `NEW.state = 'done' AND OLD.state = 'running'`,
          times: 1_000,
        });
        const message = mentionIn(stack, CHANNEL, 'never taken');
        expect((await message.deliverUntilAcknowledged()).status).toBe(200);

        await waitFor(() => botPostsIn(slack, CHANNEL, message.ts).length > 0, 'the notice', 30_000);
        await waitFor(
          () => stack.bot.logs.text.includes('could not record how a job ended'),
          'the bot giving up on recording the job done',
          30_000,
        );
        // The job comes back once its lease lapses (1.5 s), and fails to finish again.
        await waitFor(
          () => stack.bot.logs.text.split('could not record how a job ended').length > 2,
          'the job run again and the bot giving up on recording it done again',
          15_000,
        );
        // Slack takes answers again, and the store records the job done.
        slack.clearFailures('chat.postMessage');
        await finishFails.remove();
        await waitFor(
          async () => (await stack.sql(`SELECT id FROM inbox WHERE state = 'done'`)).length === 1,
          'the job done',
          15_000,
        );
        await sleep(500);
        const posts = botPostsIn(slack, CHANNEL, message.ts).map((post) => post.text);
        expect(posts).toHaveLength(1);
        expect(posts[0]).toMatch(/Slack did not take the answer to this message for too long/);
      },
    );
  },
);

/** The store refuses one specific write; the bot, alone (one process), must neither freeze nor forget. */
describe.runIf(runPostgres)('a store write that fails', { concurrent: true }, () => {
  itWithStack(
    'does not freeze a thread when marking an answered job done keeps failing',
    async ({ stack }) => {
      const { slack } = stack;
      // Every attempt to mark a job done fails until the test lifts the fault: longer than the bot retries.
      const finishFails = await failWrites(stack, 'finish', {
        on: 'UPDATE',
        table: 'inbox',
        when: `NEW.state = 'done' AND OLD.state = 'running'`,
        times: 1_000,
      });
      const first = mentionIn(stack, CHANNEL, 'first');
      expect((await first.deliverUntilAcknowledged()).status).toBe(200);
      await waitFor(() => botPostsIn(slack, CHANNEL, first.ts).length > 0, 'the first answer');
      const second = mentionIn(stack, CHANNEL, 'second', { threadTs: first.ts });
      expect((await second.deliverUntilAcknowledged()).status).toBe(200);

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
    },
  );

  itWithStack(
    'keeps showing that a message is being worked on while its job waits to be retried after a store error',
    async ({ stack }) => {
      const { slack, agent } = stack;
      // The session is created slowly, so the message shows it is being worked on before the store fails.
      agent.setLatency(1_500, 'createSession');
      const sessionWriteFails = await failWrites(stack, 'session', {
        on: 'INSERT',
        table: 'thread_sessions',
        when: 'true',
        times: 1,
      });
      const message = mentionIn(stack, CHANNEL, 'hello');
      expect((await message.deliverUntilAcknowledged()).status).toBe(200);

      await waitFor(() => botPostsIn(slack, CHANNEL, message.ts).length > 0, 'the answer', 15_000);
      await slack.waitForCall(
        'reactions.remove',
        (c) => c.args.timestamp === message.ts && c.args.name === 'eyes',
      );
      // The first mapping refused, the retry's stored.
      expect(await sessionWriteFails.attempts()).toBe(2);
      // The session whose mapping could not be stored was deleted; the retry answered in a new one.
      expect(botPostsIn(slack, CHANNEL, message.ts).map((post) => post.text)).toEqual(['echo[s-2#1]: hello']);
      expect(promptsOf(stack)).toEqual(['hello']);
      const posted = slack.callsOf('chat.postMessage').find((c) => c.args.thread_ts === message.ts);
      const removals = slack
        .callsOf('reactions.remove')
        .filter((c) => c.args.timestamp === message.ts && c.args.name === 'eyes');
      expect(
        removals.every((c) => c.at >= (posted?.at ?? Number.POSITIVE_INFINITY)),
        'the working reaction stays until the answer is posted',
      ).toBe(true);
    },
  );

  itWithStack(
    'answers a reset once, in the thread or privately, when its job runs again because marking it done failed',
    async ({ stack }) => {
      const { slack } = stack;
      const RESET =
        ':broom: Conversation reset. The next message starts a fresh conversation with the agent.';
      const threads: string[] = [];
      for (const text of ['reset by mention', 'reset by shortcut']) {
        const root = mentionIn(stack, CHANNEL, text);
        expect((await root.deliverUntilAcknowledged()).status).toBe(200);
        await waitFor(() => botPostsIn(slack, CHANNEL, root.ts).length > 0, 'the first answer');
        threads.push(root.ts);
      }
      const [byMention = '', byShortcut = ''] = threads;
      // Every attempt to mark a reset done fails until the test lifts the fault: longer than the bot retries.
      const finishFails = await failWrites(stack, 'finish_reset', {
        on: 'UPDATE',
        table: 'inbox',
        when: `NEW.state = 'done' AND OLD.state = 'running' AND NEW.kind = 'reset'`,
        times: 1_000,
      });

      const reset = mentionIn(stack, CHANNEL, 'reset', { threadTs: byMention });
      expect((await reset.deliverUntilAcknowledged()).status).toBe(200);
      const responseId = `reset-${byShortcut}`;
      const shortcut = await resetByShortcut(stack, CHANNEL, byShortcut, responseId);
      expect(shortcut.status).toBe(200);
      await waitFor(
        () => stack.bot.logs.text.split('could not record how a job ended').length > 2,
        'the bot giving up on recording both resets done',
        30_000,
      );
      await finishFails.remove();

      // Both resets ran again once their leases lapsed; now they are done.
      await waitFor(
        async () =>
          (await stack.sql(`SELECT id FROM inbox WHERE kind = 'reset' AND state = 'done' AND attempts > 1`))
            .length === 2,
        'both resets run again and done',
        10_000,
      );
      await sleep(500);
      expect(botPostsIn(slack, CHANNEL, byMention).map((post) => post.text)).toEqual([
        'echo[s-1#1]: reset by mention',
        RESET,
      ]);
      const answers = slack.callsOf('response_url').filter((c) => c.args.responseId === responseId);
      expect(answers.map((c) => c.args.text)).toEqual([RESET]);
      expect(botPostsIn(slack, CHANNEL, byShortcut).map((post) => post.text)).toEqual([
        'echo[s-2#1]: reset by shortcut',
      ]);
    },
  );

  /**
   * Says `word` in the thread `root` while the store refuses the first cancellation: the delivery is not
   * acknowledged (Slack will deliver it again) and Slack's retry is.
   */
  async function deliverPastFailedCancel(
    stack: FaultStack,
    word: 'stop' | 'reset',
    root: string,
  ): Promise<void> {
    const cancelFails = await failWrites(stack, 'cancel', {
      on: 'UPDATE',
      table: 'inbox',
      when: `NEW.state = 'cancelled'`,
      times: 1,
    });
    const said = mentionIn(stack, CHANNEL, word, { threadTs: root });
    expect((await said.deliver()).status).toBe(500);
    expect(await cancelFails.attempts()).toBe(1);
    expect((await said.deliver(1)).status).toBe(200);
  }

  /**
   * A thread with an answer in progress and three messages waiting behind it. The agent answers the first
   * only once `answer` is called, after the stop or reset came in, however slow the machine.
   */
  async function busyThread(
    stack: FaultStack,
  ): Promise<{ root: string; waiting: string[]; answer: () => void }> {
    const { slack, agent } = stack;
    let answer = () => {};
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    agent.setReplyFn(async ({ sessionId, turn, prompt }) => {
      if (prompt === 'long task') await answered;
      return `echo[${sessionId}#${turn}]: ${prompt}`;
    });
    const root = mentionIn(stack, CHANNEL, 'long task');
    expect((await root.deliverUntilAcknowledged()).status).toBe(200);
    await waitFor(() => promptsOf(stack).includes('long task'), 'the first prompt sent');
    const waiting: string[] = [];
    for (const i of [1, 2, 3]) {
      const message = mentionIn(stack, CHANNEL, `queued ${i}`, { threadTs: root.ts });
      expect((await message.deliverUntilAcknowledged()).status).toBe(200);
      waiting.push(message.ts);
    }
    for (const ts of waiting) {
      await slack.waitForCall(
        'reactions.add',
        (c) => c.args.timestamp === ts && c.args.name === 'hourglass_flowing_sand',
      );
    }
    return { root: root.ts, waiting, answer };
  }

  itWithStack(
    "keeps a stop that failed on a store error for Slack's retry: the queued messages are cancelled and the notice posted",
    async ({ stack }) => {
      const { slack } = stack;
      const { root, waiting, answer } = await busyThread(stack);
      await deliverPastFailedCancel(stack, 'stop', root);
      answer();

      await waitFor(
        () => botPostsIn(slack, CHANNEL, root).some((post) => post.text.includes('Stopped')),
        'the stop notice',
      );
      // The answer in progress is dropped, the queued messages never reach the agent, their hourglasses go.
      await waitFor(
        () =>
          stack.agent.requestsFor('sendMessage').some((r) => r.prompt === 'long task' && r.status === 200),
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
    },
  );

  itWithStack(
    "keeps a reset that failed on a store error for Slack's retry: the queued messages are cancelled and the thread starts over",
    async ({ stack }) => {
      const { slack } = stack;
      const { root, waiting, answer } = await busyThread(stack);
      await deliverPastFailedCancel(stack, 'reset', root);
      answer();

      // The answer in progress is posted, then the reset; the queued messages were for the old conversation.
      await waitFor(
        () => botPostsIn(slack, CHANNEL, root).some((post) => post.text.includes('Conversation reset')),
        'the reset notice',
      );
      await waitFor(
        () => waiting.every((ts) => slack.reactionsOn(CHANNEL, ts).length === 0),
        'queued indicators cleared',
      );
      const after = mentionIn(stack, CHANNEL, 'fresh start', { threadTs: root });
      expect((await after.deliverUntilAcknowledged()).status).toBe(200);
      await waitFor(() => botPostsIn(slack, CHANNEL, root).length >= 3, 'the answer after the reset');
      await sleep(500);
      expect(botPostsIn(slack, CHANNEL, root).map((post) => post.text)).toEqual([
        'echo[s-1#1]: long task',
        ':broom: Conversation reset. The next message starts a fresh conversation with the agent.',
        'echo[s-2#1]: fresh start',
      ]);
      expect(promptsOf(stack)).toEqual(['long task', 'fresh start']);
    },
  );
});

/** A lost answer's Send again button, pressed while the store refuses to record the message once more. */
describe.runIf(runPostgres)('Send again, when the store fails to record it', { concurrent: true }, () => {
  const ENV = { AGENT_TIMEOUT_MS: '1000', JOB_LEASE_MS: '1000', SLACK_AGENT_VIEW: 'false' };

  itWithFakes('works on the next press after a press the store could not record', async ({ fakes }) => {
    const { slack, agent } = fakes;
    // An answer lost with the process that was waiting for it: the thread gets a Send again button.
    agent.setLatency(900, 'sendMessage');
    const victim = await fakes.spawnBot(ENV);
    const root = await fakes.ask(victim.eventsUrl, CHANNEL, 'deploy the docs');
    await waitFor(() => fakes.prompts().includes('deploy the docs'), 'the prompt at the agent');
    victim.child.kill('SIGKILL');
    await victim.exited;
    agent.setLatency(0, 'sendMessage');
    const survivor = await fakes.startBot(ENV);
    await waitFor(
      () => botPostsIn(slack, CHANNEL, root).some((post) => post.text.includes('answer was lost')),
      'the "answer lost" notice',
      15_000,
    );
    const notice = botPostsIn(slack, CHANNEL, root).find((post) => post.text.includes('answer was lost'));

    const client = new pg.Client({ connectionString: fakes.database.url });
    await client.connect();
    try {
      const recordFails = await failWrites(
        { sql: async (text, params) => (await client.query(text, params)).rows },
        'send_again',
        { on: 'INSERT', table: 'inbox', when: `NEW.payload LIKE '%"resend":true%'`, times: 1 },
      );
      const press = async () => {
        const id = `again-${Date.now()}-${Math.random()}`;
        await postSignedInteraction(
          survivor.eventsUrl,
          SIGNING_SECRET,
          blockActionsPayload({
            user: 'U0ALICE',
            channel: CHANNEL,
            message: notice ?? { ts: '' },
            actionId: 'send_again',
            responseUrl: slack.responseUrl(id),
          }),
        );
        return id;
      };
      const first = await press();
      const failed = await slack.waitForCall('response_url', (c) => c.args.responseId === first);
      expect(failed.args.text).toBe(
        ':warning: I could not send that message again right now. Please try again shortly.',
      );
      expect(await recordFails.attempts()).toBe(1);

      const second = await press();
      // Whatever comes first: a private note to the second press, or the answer in the thread.
      const outcome = await waitFor(
        () =>
          slack.callsOf('response_url').find((c) => c.args.responseId === second)?.args.text ??
          botPostsIn(slack, CHANNEL, root).find((post) => post.text.endsWith(': deploy the docs'))?.text,
        'an answer to the second press',
        10_000,
      );
      expect(outcome).toBe('echo[s-1#2]: deploy the docs');
      await sleep(300);
      expect(slack.callsOf('response_url').filter((c) => c.args.responseId === second)).toEqual([]);
      expect(fakes.prompts()).toEqual(['deploy the docs', 'deploy the docs']);
    } finally {
      await client.end();
    }
  });
});
