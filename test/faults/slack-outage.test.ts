import { describe, expect } from 'vitest';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { CHANNEL, ENV, isAnswerPost, outageViews, queryOnce } from './slack-outage-support.js';
import { itWithFakes } from './support.js';

/**
 * Slack refusing the answer's post for a while (503s, a long 429): the answer is kept with its job and
 * posted once Slack takes it again, without asking the agent again; only after REPLY_RETRY_WINDOW does the
 * thread get a notice instead.
 */
// Rate-limited answers, giving up, stops and restarts: slack-outage-notices.test.ts, beside this one.

const runPostgres = await shouldRunPostgresTests();

// Each case has fakes and a database of its own, so the cases wait out the bot's back-offs side by side.
describe.runIf(runPostgres)('Slack refusing the answer', { concurrent: true }, () => {
  itWithFakes(
    'posts the answer once Slack is back after 5 s of 503s, asking the agent once and never saying it failed',
    async ({ fakes }) => {
      const { prompts, threadTexts, answerPosts, ask, finished } = outageViews(fakes);
      const bot = await fakes.startBot(ENV);
      fakes.slack.failFor('chat.postMessage', { type: 'http', status: 503 }, 5_000);
      const asked = Date.now();
      const root = await ask(bot.eventsUrl, 'through the outage');

      await waitFor(() => threadTexts(root).length > 1, 'the answer in the thread', 30_000);
      expect(Date.now() - asked).toBeGreaterThanOrEqual(5_000);
      await finished(root);
      await sleep(300);
      expect(threadTexts(root)).toEqual(['<@U0BOT> through the outage', 'echo[s-1#1]: through the outage']);
      expect(prompts()).toEqual(['through the outage']);
      // Backed off, not hammered: a handful of attempts in the 5 s (back-offs of about 1, 2 and 4 s).
      expect(answerPosts(root).length).toBeLessThanOrEqual(6);
    },
  );

  itWithFakes(
    'leaves no "taking a while" notice behind once the kept answer is posted',
    async ({ fakes }) => {
      const { threadTexts, ask, finished } = outageViews(fakes);
      const bot = await fakes.startBot({ ...ENV, SLOW_NOTICE_MS: '1500' });
      fakes.slack.failFor('chat.postMessage', { type: 'http', status: 503 }, 4_000, isAnswerPost);
      const root = await ask(bot.eventsUrl, 'slow because of Slack');

      await waitFor(() => threadTexts(root).some((t) => t?.startsWith('echo')), 'the answer', 30_000);
      await finished(root);
      await sleep(2_000);
      expect(threadTexts(root)).toEqual([
        '<@U0BOT> slow because of Slack',
        'echo[s-1#1]: slow because of Slack',
      ]);
    },
  );

  itWithFakes(
    'records the thread as active when a kept answer is posted late (idle expiry and /agent sessions count it)',
    async ({ fakes }) => {
      const { threadTexts, answerPosts, ask, finished } = outageViews(fakes);
      const bot = await fakes.startBot(ENV);
      const root = await ask(bot.eventsUrl, 'first');
      await waitFor(() => threadTexts(root).length > 1, 'the first answer', 10_000);
      await finished(root);
      const lastActive = async () => {
        const [row] = await queryOnce<{ at: Date | null }>(
          fakes.database.url,
          'SELECT max(last_active_at) AS at FROM session_activity',
        );
        return row?.at ? new Date(row.at).getTime() : 0;
      };
      // Slack refuses the second answer once: it is kept and posted on the next attempt.
      fakes.slack.failNext('chat.postMessage', { type: 'http', status: 503 }, 1, isAnswerPost);
      await fakes.ask(bot.eventsUrl, CHANNEL, 'second', { root });
      // Its prompt's "sent" recorded activity already; the late post records it again.
      await waitFor(() => answerPosts(root).length >= 2, 'the refused post of the second answer', 30_000);
      const refusedAt = await lastActive();
      await waitFor(() => threadTexts(root).some((t) => t.includes('second')), 'the second answer', 30_000);
      await waitFor(
        async () => (await lastActive()) > refusedAt,
        'activity recorded for the second answer',
        5_000,
      );
    },
  );

  itWithFakes(
    "waits out a long 429's Retry-After each time before posting again, then posts once",
    async ({ fakes }) => {
      const { prompts, threadTexts, answerPosts, ask, finished } = outageViews(fakes);
      const bot = await fakes.startBot(ENV);
      // The answer's first two posts (counted, not timed: a loaded machine may take seconds to get there).
      fakes.slack.failNext(
        'chat.postMessage',
        // Longer than the bot's own first back-offs (about 1 and 2 s), so the waits below are Slack's.
        { type: 'rate_limited', retryAfterSeconds: 2 },
        2,
        isAnswerPost,
      );
      const root = await ask(bot.eventsUrl, 'rate limited');

      await waitFor(() => threadTexts(root).length > 1, 'the answer in the thread', 30_000);
      await finished(root);
      expect(threadTexts(root)).toEqual(['<@U0BOT> rate limited', 'echo[s-1#1]: rate limited']);
      expect(prompts()).toEqual(['rate limited']);
      const attempts = answerPosts(root).map((c) => c.at);
      expect(attempts.length).toBeGreaterThanOrEqual(3);
      for (let i = 1; i < attempts.length; i++)
        expect(attempts[i]! - attempts[i - 1]!).toBeGreaterThanOrEqual(1_950);
    },
  );
});
