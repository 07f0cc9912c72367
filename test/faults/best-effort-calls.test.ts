import { describe, expect } from 'vitest';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import type { RunningBot } from '../helpers/stack.js';
import { waitFor } from '../helpers/wait.js';
import { itWithFakes, type PerTestFakes } from './support.js';

/**
 * Slack rate-limits each method on its own (per method and workspace), and Bolt's WebClient pauses its whole
 * queue on a 429 until the Retry-After has passed. A throttled indicator call (a reaction, a status) must not
 * hold up the calls a prompt or an answer waits for, such as reading the thread for context.
 */

const runPostgres = await shouldRunPostgresTests();

const CHANNEL = 'C0THROTTLE';
const ENV = { JOB_LEASE_MS: '3000', SLOW_NOTICE_MS: '0' };
const RETRY_AFTER_SECONDS = 30;
/** Well before the Retry-After: an answer that waited for the throttled calls comes 30 s late. */
const PROMPTLY_MS = 8_000;

// Each suite's case has fakes and a database of its own: the two suites run side by side.
describe.runIf(runPostgres)('an indicator call Slack rate-limits', { concurrent: true }, () => {
  itWithFakes(
    'delays neither the prompt (with its thread context) nor the answer, nor the next message of the thread',
    async ({ fakes }) => {
      const bot = await fakes.startBot(ENV);
      const throttled = { type: 'rate_limited', retryAfterSeconds: RETRY_AFTER_SECONDS } as const;
      fakes.slack.failFor('reactions.add', throttled, 120_000);
      fakes.slack.failFor('reactions.remove', throttled, 120_000);
      // People were talking before the bot was mentioned: the prompt waits for the thread to be read.
      const root = fakes.slack.seedMessage(CHANNEL, { user: 'U0BOB', text: 'the build is red again' });
      const threadTexts = () => fakes.slack.threadMessages(CHANNEL, root).map((m) => m.text);

      const asked = Date.now();
      await fakes.ask(bot.eventsUrl, CHANNEL, 'why?', { root });
      await waitFor(() => threadTexts().some((t) => t.startsWith('echo')), 'the answer', PROMPTLY_MS);
      expect(Date.now() - asked).toBeLessThan(PROMPTLY_MS);
      expect(fakes.slack.callsOf('conversations.replies').length).toBeGreaterThan(0);
      const [prompt] = fakes.prompts();
      expect(prompt).toContain('the build is red again');
      expect(prompt).toContain('why?');
      // Its author's name was looked up on the client the throttled reactions use, past them.
      expect(fakes.slack.callsOf('users.info').length).toBeGreaterThan(0);

      // The next message of the thread waits for the first job to end, which must not wait for Slack either.
      const askedAgain = Date.now();
      await fakes.ask(bot.eventsUrl, CHANNEL, 'and now?', { root });
      await waitFor(
        () => threadTexts().some((t) => t.includes('and now?') && t.startsWith('echo')),
        'the second answer',
        PROMPTLY_MS,
      );
      expect(Date.now() - askedAgain).toBeLessThan(PROMPTLY_MS);
      // The reactions were asked for all the same (and are retried within their own limits).
      expect(fakes.slack.callsOf('reactions.add').length).toBeGreaterThan(0);
    },
  );
});

/**
 * The same holds between the calls a prompt waits for: a thread read Slack throttled (conversations.replies is
 * limited per workspace, so a busy channel's retries can use it up) must not hold up the name lookup of a
 * prompt in another channel.
 */
describe.runIf(runPostgres)('a thread read Slack rate-limits', { concurrent: true }, () => {
  itWithFakes("delays no other thread's prompt", async ({ fakes }) => {
    const bot = await fakes.startBot(ENV);
    const root = fakes.slack.seedMessage(CHANNEL, { user: 'U0BOB', text: 'the build is red again' });
    fakes.slack.failNext(
      'conversations.replies',
      { type: 'rate_limited', retryAfterSeconds: RETRY_AFTER_SECONDS },
      1,
      (args) => args.channel === CHANNEL,
    );
    await fakes.ask(bot.eventsUrl, CHANNEL, 'why?', { root });
    await waitFor(
      () => fakes.slack.calls.some((call) => call.method === 'conversations.replies'),
      'the thread read, throttled',
    );

    // Elsewhere, a prompt that names a person: the bot looks the name up before sending it.
    const elsewhere = 'C0ELSEWHERE';
    const asked = Date.now();
    const ts = await fakes.ask(bot.eventsUrl, elsewhere, 'what does <@U0BOB> think?');
    await waitFor(
      () => fakes.slack.threadMessages(elsewhere, ts).some((m) => m.text.startsWith('echo')),
      'the answer elsewhere',
      PROMPTLY_MS,
    );
    expect(Date.now() - asked).toBeLessThan(PROMPTLY_MS);
    // The throttled thread's own prompt went too, without its context (the case below).
    expect(fakes.prompts()).toEqual(['why?', expect.stringContaining('what does')]);
  });
});

/**
 * Context is a nicety: a thread Slack will not let the bot read for now (an app outside the Slack Marketplace
 * may read threads once a minute, FakeSlackOptions.outsideMarketplace) is not worth a minute of the person's
 * wait.
 */
/**
 * Slack refuses, for a minute, the thread reads `which` picks (Retry-After 60, as for an app outside the
 * Marketplace); the mention asked in the thread must be answered promptly all the same.
 */
async function answeredWhileReadsThrottled(
  fakes: PerTestFakes,
  bot: RunningBot,
  ask: { text: string; root: string },
  which: (args: Record<string, unknown>) => boolean,
): Promise<void> {
  fakes.slack.failNext(
    'conversations.replies',
    { type: 'rate_limited', retryAfterSeconds: 60 },
    1,
    (args) => args.channel === CHANNEL && which(args),
  );
  const asked = Date.now();
  await fakes.ask(bot.eventsUrl, CHANNEL, ask.text, { root: ask.root });
  await waitFor(
    () => fakes.slack.threadMessages(CHANNEL, ask.root).some((m) => m.text.startsWith('echo')),
    'the answer',
    PROMPTLY_MS,
  );
  expect(Date.now() - asked).toBeLessThan(PROMPTLY_MS);
}

describe.runIf(runPostgres)(
  'a thread Slack will not let the bot read for a minute',
  { concurrent: true },
  () => {
    itWithFakes(
      'sends the first mention in it promptly, alone, without waiting to read the thread',
      async ({ fakes }) => {
        const bot = await fakes.startBot(ENV);
        const root = fakes.slack.seedMessage(CHANNEL, { user: 'U0BOB', text: 'the build is red again' });
        await answeredWhileReadsThrottled(fakes, bot, { text: 'why?', root }, () => true);
        expect(fakes.prompts()).toEqual(['why?']);
        expect(bot.logs.text).toMatch(/could not read the thread for context; sending the message alone/);
      },
    );

    itWithFakes(
      'in a long thread whose second page it cannot read now, sends what the first gave: the first message and the latest read',
      async ({ fakes }) => {
        const bot = await fakes.startBot(ENV);
        const root = fakes.slack.seedMessage(CHANNEL, { user: 'U0BOB', text: 'Release planning for 4.2' });
        // More than one page of conversations.replies (the bot asks 200 at a time).
        for (let i = 1; i <= 250; i += 1)
          fakes.slack.seedMessage(CHANNEL, { user: 'U0ALICE', text: `note ${i}`, threadTs: root });
        await answeredWhileReadsThrottled(
          fakes,
          bot,
          { text: 'what is left?', root },
          (args) => args.cursor !== undefined,
        );
        const [prompt] = fakes.prompts();
        expect(prompt).toContain('Release planning for 4.2');
        expect(prompt).toContain('note 199');
        expect(prompt).not.toContain('note 200');
      },
    );
  },
);
