import { describe, expect } from 'vitest';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { CHANNEL, ENV, isAnswerPost, outageViews, SLACK_REFUSED } from './slack-outage-support.js';
import { itWithFakes } from './support.js';

/**
 * Slack refusing the answer with rate_limited, or for longer than REPLY_RETRY_WINDOW, and a bot stopped or
 * replaced meanwhile: the thread hears once, never twice. (Refused for a while, then taken: slack-outage.test.ts.)
 */

const runPostgres = await shouldRunPostgresTests();

// Each case has fakes and a database of its own, so the cases wait out the bot's back-offs side by side.
describe.runIf(runPostgres)('Slack refusing the answer', { concurrent: true }, () => {
  itWithFakes(
    'posts the answer and a notice that Slack refused with HTTP 200 rate_limited, backing off as for a 429',
    async ({ fakes }) => {
      const { prompts, threadTexts, answerPosts, ask, finished } = outageViews(fakes);
      const bot = await fakes.startBot(ENV);
      // chat.postMessage documents `rate_limited` ("posted too many messages"): a refusal for now, not for good.
      fakes.slack.failNext('chat.postMessage', { type: 'error', error: 'rate_limited' }, 3, isAnswerPost);
      const root = await ask(bot.eventsUrl, 'posted too fast');

      await waitFor(() => threadTexts(root).length > 1, 'the answer in the thread', 30_000);
      await finished(root);
      expect(threadTexts(root)).toEqual(['<@U0BOT> posted too fast', 'echo[s-1#1]: posted too fast']);
      expect(prompts()).toEqual(['posted too fast']);
      const attempts = answerPosts(root).map((c) => c.at);
      expect(attempts).toHaveLength(4);
      for (let i = 1; i < attempts.length; i++)
        expect(attempts[i]! - attempts[i - 1]!, 'backed off between tries').toBeGreaterThanOrEqual(400);

      // A notice in place of an answer (here: the help for an empty mention) is kept and posted the same way.
      fakes.slack.failNext('chat.postMessage', { type: 'error', error: 'rate_limited' }, 2);
      const empty = await ask(bot.eventsUrl, '');
      await waitFor(() => threadTexts(empty).length > 1, 'the help notice in the thread', 30_000);
      expect(threadTexts(empty)[1]).toMatch(/^Hi! Mention me with a question/);

      // And a reset's notice.
      fakes.slack.failNext('chat.postMessage', { type: 'error', error: 'rate_limited' }, 2, (args) =>
        String(args.text).startsWith(':broom:'),
      );
      await fakes.ask(bot.eventsUrl, CHANNEL, 'reset', { root });
      await waitFor(
        () => threadTexts(root).some((t) => t.startsWith(':broom: Conversation reset')),
        'the reset notice in the thread',
        30_000,
      );
    },
  );

  itWithFakes(
    'posts the notice saying Slack refused the answer even when that notice is refused with rate_limited first',
    async ({ fakes }) => {
      const { refuseAnswers, threadTexts, ask, finished } = outageViews(fakes);
      const bot = await fakes.startBot({ ...ENV, REPLY_RETRY_WINDOW: '2s' });
      refuseAnswers();
      fakes.slack.failNext('chat.postMessage', { type: 'error', error: 'rate_limited' }, 2, (args) =>
        SLACK_REFUSED.test(String(args.text)),
      );
      const root = await ask(bot.eventsUrl, 'refused, then the notice too');

      await waitFor(() => threadTexts(root).length > 1, 'a notice in the thread', 30_000);
      await finished(root);
      const texts = threadTexts(root);
      expect(texts).toHaveLength(2);
      expect(texts[1]).toMatch(SLACK_REFUSED);
    },
  );

  itWithFakes(
    "says in one error line, without the answer's words, that the workspace's message limit is reached, and does not retry",
    async ({ fakes }) => {
      const { threadTexts, answerPosts, askWhile } = outageViews(fakes);
      const bot = await fakes.startBot(ENV);
      // Free workspaces have a message limit; once it is reached every post is refused, the note about it too.
      const root = await askWhile(bot.eventsUrl, 'over the limit', () => fakes.slack.reachMessageLimit());
      expect(threadTexts(root)).toEqual(['<@U0BOT> over the limit']);
      // Not retried: Slack would refuse it again until the limit resets.
      expect(answerPosts(root)).toHaveLength(1);
      // The private note is tried (a workspace where Slack shows it hears why) and refused here.
      await fakes.slack.waitForCall('chat.postEphemeral', (c) => c.args.user === 'U0ALICE', 10_000);
      expect(fakes.slack.visibleEphemerals('U0ALICE')).toEqual([]);
      const lines = bot.logs.lines.map((line) => JSON.parse(line) as { level: number; msg?: string });
      const limitErrors = lines.filter(
        (line) => line.level >= 50 && JSON.stringify(line).includes('message_limit_exceeded'),
      );
      expect(limitErrors).toHaveLength(1);
      expect(limitErrors[0]?.msg).toMatch(/message limit/i);
      expect(lines.filter((line) => line.level > 20 && JSON.stringify(line).includes('echo['))).toEqual([]);
    },
  );

  itWithFakes(
    'says once that Slack refused the answer when it does so for longer than REPLY_RETRY_WINDOW',
    async ({ fakes }) => {
      const { refuseAnswers, prompts, threadTexts, ask, finished } = outageViews(fakes);
      const bot = await fakes.startBot({ ...ENV, REPLY_RETRY_WINDOW: '3s' });
      refuseAnswers();
      // The notice itself is refused once too: a 503 says it was not taken in, so it is posted again.
      fakes.slack.failNext('chat.postMessage', { type: 'http', status: 503 }, 1, (args) =>
        SLACK_REFUSED.test(String(args.text)),
      );
      const asked = Date.now();
      const root = await ask(bot.eventsUrl, 'never taken');

      await waitFor(() => threadTexts(root).length > 1, 'a notice in the thread', 30_000);
      expect(Date.now() - asked).toBeGreaterThanOrEqual(3_000);
      await finished(root);
      // Slack would take the answer now: the job is over, so it stays unposted and the notice is alone.
      fakes.slack.clearFailures('chat.postMessage');
      await sleep(1_500);
      const texts = threadTexts(root);
      expect(texts).toHaveLength(2);
      expect(texts[1]).toMatch(SLACK_REFUSED);
      expect(prompts()).toEqual(['never taken']);
    },
  );

  itWithFakes(
    'does not say Slack refused an answer that its author stopped while the last post was under way',
    async ({ fakes }) => {
      const { refuseAnswers, threadTexts, answerPosts, ask, finished } = outageViews(fakes);
      const bot = await fakes.startBot({ ...ENV, REPLY_RETRY_WINDOW: '1s' });
      refuseAnswers();
      // Slack takes its time to refuse: the author's stop comes while the post that gives up is under way (a
      // loaded machine has taken 1.7 s to take an event in).
      fakes.slack.setLatency('chat.postMessage', 4_000);
      const root = await ask(bot.eventsUrl, 'stopped meanwhile');
      // The second try is the last (REPLY_RETRY_WINDOW has passed when it fails).
      await fakes.slack.waitForCalls(
        'chat.postMessage',
        2,
        (c) => c.args.thread_ts === root && isAnswerPost(c.args),
        20_000,
      );
      await fakes.ask(bot.eventsUrl, CHANNEL, 'stop', { root });

      await waitFor(
        () => threadTexts(root).some((t) => t.startsWith(':octagonal_sign: Stopped')),
        'the stop notice',
        10_000,
      );
      await finished(root);
      // Longer than a notice saying Slack refused the answer would take to land (one post's latency).
      await sleep(5_000);
      expect(threadTexts(root)).toEqual([
        '<@U0BOT> stopped meanwhile',
        '<@U0BOT> stop',
        ':octagonal_sign: Stopped: dropped the answer I was waiting for. The agent had already received that message and may have acted on it; the next message here continues the conversation.',
      ]);
      expect(answerPosts(root)).toHaveLength(2);
    },
  );

  itWithFakes(
    'tells the author privately, beside a thread an admin locked while the agent answered, why no answer came',
    async ({ fakes }) => {
      const { threadTexts, answerPosts, askWhile } = outageViews(fakes);
      const bot = await fakes.startBot(ENV);
      const root = await askWhile(bot.eventsUrl, 'locked meanwhile', (thread) =>
        fakes.slack.lockThread(CHANNEL, thread),
      );
      // Not in the locked thread, where nothing may be posted: in the channel, where Alice sees it.
      const note = await fakes.slack.waitForVisibleEphemeral(
        'U0ALICE',
        { channel: CHANNEL },
        (m) => /thread is locked/.test(m.text ?? ''),
        10_000,
      );
      expect(note.threadTs).toBeUndefined();
      expect(threadTexts(root)).toEqual(['<@U0BOT> locked meanwhile']);
      // Not retried: Slack refuses replies to a locked thread for good.
      expect(answerPosts(root)).toHaveLength(1);
    },
  );

  itWithFakes(
    'tells the author privately, with a reference, when Slack refuses the answer itself, and does not retry it',
    async ({ fakes }) => {
      const { threadTexts, answerPosts, ask, finished } = outageViews(fakes);
      const bot = await fakes.startBot(ENV);
      // A refusal of the post's content (chat.postMessage documents `invalid_arguments`): the bot's own fault.
      fakes.slack.failFor(
        'chat.postMessage',
        { type: 'error', error: 'invalid_arguments' },
        60_000,
        isAnswerPost,
      );
      const root = await ask(bot.eventsUrl, 'refused as it is');

      await finished(root);
      const note = await fakes.slack.waitForVisibleEphemeral('U0ALICE', {}, () => true, 10_000);
      const ref = /\(ref ([A-Z0-9-]+)\)/.exec(note.text ?? '')?.[1];
      expect(note.text).toMatch(/^:warning: Slack refused the answer to your message/);
      expect(threadTexts(root)).toEqual(['<@U0BOT> refused as it is']);
      expect(answerPosts(root)).toHaveLength(1);
      // The reference finds the one log line (above debug) that says why, without the answer's words.
      const lines = bot.logs.lines.filter(
        (line) => !line.startsWith('{"level":20') && ref !== undefined && line.includes(ref),
      );
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('invalid_arguments');
      expect(lines[0]).not.toContain('echo[');
    },
  );

  itWithFakes(
    'stops at once in a channel made read-only while the agent answered, saying why in its log',
    async ({ fakes }) => {
      const { threadTexts, answerPosts, askWhile } = outageViews(fakes);
      const bot = await fakes.startBot(ENV);
      const root = await askWhile(bot.eventsUrl, 'read-only meanwhile', () =>
        fakes.slack.makeReadOnly(CHANNEL),
      );
      expect(threadTexts(root)).toEqual(['<@U0BOT> read-only meanwhile']);
      expect(answerPosts(root)).toHaveLength(1);
      // The note is tried; whether Slack shows an app's private note in a read-only channel it does not say,
      // and the fake refuses it (the stricter reading), so the log is where an admin finds why.
      await fakes.slack.waitForCall('chat.postEphemeral', (c) => c.args.user === 'U0ALICE', 10_000);
      expect(fakes.slack.visibleEphemerals('U0ALICE')).toEqual([]);
      const why = bot.logs.lines.filter(
        (line) => !line.startsWith('{"level":20') && line.includes('restricted_action_read_only_channel'),
      );
      expect(why, why.join('\n')).toHaveLength(1);
    },
  );

  itWithFakes(
    'a stop while the answer waits for Slack drops it: once Slack takes posts again, it is not posted',
    async ({ fakes }) => {
      const { threadTexts, answerPosts, askRefused, finished } = outageViews(fakes);
      const bot = await fakes.startBot(ENV);
      const root = await askRefused(bot.eventsUrl, 'refused for now');
      await fakes.ask(bot.eventsUrl, CHANNEL, 'stop', { root });
      await waitFor(
        () => threadTexts(root).some((t) => t.startsWith(':octagonal_sign: Stopped')),
        'the stop notice',
        10_000,
      );
      const refused = answerPosts(root).length;
      fakes.slack.clearFailures('chat.postMessage');
      // The stopped job ends, and takes its working indicator down.
      await finished(root);
      await sleep(2_500);
      expect(threadTexts(root)).toEqual([
        '<@U0BOT> refused for now',
        '<@U0BOT> stop',
        ':octagonal_sign: Stopped: dropped the answer I was waiting for. The agent had already received that message and may have acted on it; the next message here continues the conversation.',
      ]);
      expect(answerPosts(root)).toHaveLength(refused);
    },
  );

  itWithFakes(
    'keeps the answer across a restart: the bot killed while the post waits is replaced, and the new one posts it',
    async ({ fakes }) => {
      const { prompts, threadTexts, askRefused, finished } = outageViews(fakes);
      const child = await fakes.spawnBot(ENV);
      const root = await askRefused(child.eventsUrl, 'kept across a restart');
      child.child.kill('SIGKILL');
      await child.exited;
      fakes.slack.clearFailures('chat.postMessage');

      await fakes.startBot(ENV);
      await waitFor(() => threadTexts(root).length > 1, 'the kept answer in the thread', 30_000);
      await finished(root);
      expect(threadTexts(root)).toEqual([
        '<@U0BOT> kept across a restart',
        'echo[s-1#1]: kept across a restart',
      ]);
      expect(prompts()).toEqual(['kept across a restart']);
    },
  );
});
