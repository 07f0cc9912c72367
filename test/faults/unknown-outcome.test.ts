import { describe, expect } from 'vitest';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { nextTs } from '../helpers/slack-events.js';
import { sleep } from '../helpers/wait.js';
import { itWithFakes, type PerTestFakes } from './support.js';

/**
 * A post whose outcome the bot cannot know (the connection reset, or no answer within the bot's Slack
 * timeout) may be in the thread already: it is looked up there, by the reply's message metadata, before it
 * is sent again, however long the thread.
 */

const runPostgres = await shouldRunPostgresTests();

const CHANNEL = 'C0UNKNOWN';
const ENV = { JOB_LEASE_MS: '3000', SLOW_NOTICE_MS: '0' };
const SLACK_CALL_TIMEOUT_MS = 3_000;

const SLACK_REFUSED = /Slack did not take the answer/;

const isAnswerPost = (args: Record<string, unknown>) => String(args.text).startsWith('echo');

/** Views of a case's fakes. */
function views(fakes: PerTestFakes) {
  return {
    prompts: () => fakes.prompts(),
    /** Copies of the answer to `text` in the thread, as people see it. */
    answers: (root: string, text: string) =>
      fakes.slack.threadMessages(CHANNEL, root).filter((m) => m.text === `echo[s-1#1]: ${text}`),
    answerPosts: (root: string) =>
      fakes.slack
        .callsOf('chat.postMessage')
        .filter((c) => c.args.thread_ts === root && isAnswerPost(c.args)),
    /** The job ended: its working reaction was taken off the message. */
    finished: (ts: string) =>
      fakes.slack.waitForCall('reactions.remove', (c) => c.args.timestamp === ts, 30_000),
    /** The user mentions the bot (in a thread when `root` is given). */
    ask: (eventsUrl: string, text: string, root?: string, ts?: string) =>
      fakes.ask(eventsUrl, CHANNEL, text, { root, ts }),
  };
}

// Each case has fakes and a database of its own, so the cases wait out the bot's timers side by side.
describe.runIf(runPostgres)('a post whose outcome is unknown', { concurrent: true }, () => {
  itWithFakes(
    'does not post again when Slack took the answer but the connection was reset before its answer',
    async ({ fakes }) => {
      const { prompts, answers, answerPosts, finished, ask } = views(fakes);
      const bot = await fakes.startBot(ENV);
      fakes.slack.failNext('chat.postMessage', { type: 'reset', taken: true }, 1, isAnswerPost);
      const root = await ask(bot.eventsUrl, 'reset after taken');

      await finished(root);
      await sleep(500);
      expect(answers(root, 'reset after taken')).toHaveLength(1);
      // Looked up, not sent again.
      expect(answerPosts(root)).toHaveLength(1);
      expect(fakes.slack.callsOf('conversations.replies').length).toBeGreaterThan(0);
      expect(prompts()).toEqual(['reset after taken']);
    },
  );

  itWithFakes('posts again when the reset post was not taken', async ({ fakes }) => {
    const { answers, answerPosts, finished, ask } = views(fakes);
    const bot = await fakes.startBot(ENV);
    fakes.slack.failNext('chat.postMessage', { type: 'reset', taken: false }, 1, isAnswerPost);
    const root = await ask(bot.eventsUrl, 'reset before taken');

    await finished(root);
    await sleep(300);
    expect(answers(root, 'reset before taken')).toHaveLength(1);
    expect(answerPosts(root)).toHaveLength(2);
  });

  itWithFakes.for([
    ['the connection was reset before its answer', { type: 'reset', taken: true }],
    ['a gateway answered 504', { type: 'http', status: 504, taken: true }],
  ] as const)('does not post a notice again when Slack took it but %s', async ([, failure], { fakes }) => {
    const { finished, ask } = views(fakes);
    const bot = await fakes.startBot({ ...ENV, REPLY_RETRY_WINDOW: '2s' });
    // The answer is refused until the bot gives up on it; its notice saying so is taken, then fails.
    fakes.slack.failFor('chat.postMessage', { type: 'http', status: 503 }, 60_000, isAnswerPost);
    fakes.slack.failNext('chat.postMessage', failure, 1, (args) => SLACK_REFUSED.test(String(args.text)));
    const root = await ask(bot.eventsUrl, 'refused');

    await finished(root);
    await sleep(1_500);
    const texts = fakes.slack.threadMessages(CHANNEL, root).map((m) => m.text);
    expect(texts).toHaveLength(2);
    expect(texts[1]).toMatch(SLACK_REFUSED);
  });

  itWithFakes(
    'posts once when Slack answers the post 1 s after the bot’s Slack timeout',
    async ({ fakes }) => {
      const { prompts, answers, answerPosts, finished, ask } = views(fakes);
      // 3 s instead of the default 20 s: the same timeout and look-up, sooner.
      const bot = await fakes.startBot({ ...ENV, SLACK_CALL_TIMEOUT_MS: String(SLACK_CALL_TIMEOUT_MS) });
      fakes.slack.setLatency('chat.postMessage', SLACK_CALL_TIMEOUT_MS + 1_000);
      const root = await ask(bot.eventsUrl, 'slow to answer');
      await fakes.slack.waitForCall('chat.postMessage', (c) => isAnswerPost(c.args), 5_000);
      // Only that answer is late: Slack is fine again for whatever comes next.
      fakes.slack.setLatency('chat.postMessage', undefined);

      await finished(root);
      await sleep(300);
      expect(answers(root, 'slow to answer')).toHaveLength(1);
      expect(answerPosts(root)).toHaveLength(1);
      // The bot stopped waiting and looked the post up.
      expect(fakes.slack.callsOf('conversations.replies').length).toBeGreaterThan(0);
      expect(prompts()).toEqual(['slow to answer']);
    },
  );

  itWithFakes(
    'finds its reply beyond the first page of a long thread when resumed after a crash',
    async ({ fakes }) => {
      const { prompts, answers, answerPosts, finished, ask } = views(fakes);
      // A long thread: the question comes after 50 replies, and 250 more follow it before the answer.
      const root = fakes.slack.seedMessage(CHANNEL, { user: 'U0BOB', text: 'a long discussion' });
      for (let i = 0; i < 50; i++)
        fakes.slack.seedMessage(CHANNEL, { user: 'U0BOB', text: `before ${i}`, threadTs: root });
      const question = nextTs();
      for (let i = 0; i < 250; i++)
        fakes.slack.seedMessage(CHANNEL, { user: 'U0BOB', text: `after ${i}`, threadTs: root });
      // The earlier replies are not sent along as context: the prompt stays the message alone.
      const env = { ...ENV, THREAD_CONTEXT_MESSAGES: '0' };
      const child = await fakes.spawnBot(env);
      fakes.slack.setLatency('chat.postMessage', 3_000);
      await ask(child.eventsUrl, 'long thread', root, question);
      await fakes.slack.waitForCall('chat.postMessage', (c) => isAnswerPost(c.args), 5_000);
      // Posted (the fake stores it on arrival), not recorded: killed while Slack's answer is on its way.
      child.child.kill('SIGKILL');
      await child.exited;
      fakes.slack.setLatency('chat.postMessage', undefined);
      const thread = fakes.slack.threadMessages(CHANNEL, root).map((m) => m.ts);
      // Beyond the first page (200, the parent included) of the replies from the question on.
      expect(thread.length - thread.indexOf(question)).toBeGreaterThan(200);
      expect(thread.at(-1)).toBe(answers(root, 'long thread')[0]?.ts);

      await fakes.startBot(env);
      await finished(question);
      await sleep(300);
      expect(answers(root, 'long thread')).toHaveLength(1);
      expect(answerPosts(root)).toHaveLength(1);
      expect(prompts()).toEqual(['long thread']);
    },
  );
});
