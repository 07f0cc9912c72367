import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import type { SlackApiCall } from '../fakes/slack.js';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { perTestFakes } from './support.js';

/**
 * Slack refusing the answer's post for a while (503s, a long 429): the answer is kept with its job and
 * posted once Slack takes it again, without asking the agent again; only after REPLY_RETRY_WINDOW does the
 * thread get a notice instead.
 */

const runPostgres = await shouldRunPostgresTests();

const CHANNEL = 'C0OUTAGE';
const ENV = { JOB_LEASE_MS: '3000', SLOW_NOTICE_MS: '0' };
const SLACK_REFUSED = /Slack did not take the answer to this message for too long/;

/** Only the answer's post: other calls (the notice saying Slack refused it, indicators) go through. */
const isAnswerPost = (args: Record<string, unknown>) => String(args.text).startsWith('echo');

describe.runIf(runPostgres)('Slack refusing the answer', () => {
  const fakes = perTestFakes();

  const prompts = () => fakes.prompts();
  const threadTexts = (root: string) => fakes.slack.threadMessages(CHANNEL, root).map((m) => m.text);
  const answerPosts = (root: string): SlackApiCall[] =>
    fakes.slack.callsOf('chat.postMessage').filter((c) => c.args.thread_ts === root && isAnswerPost(c.args));

  /** A new thread the user opens by mentioning the bot. */
  const ask = (eventsUrl: string, text: string) => fakes.ask(eventsUrl, CHANNEL, text);

  /** The job ended: its working reaction was taken off the message. */
  const finished = (root: string) =>
    fakes.slack.waitForCall('reactions.remove', (c) => c.args.timestamp === root, 30_000);

  // Longer than the lease, and than the first few back-offs: the answer is kept and posted on a later try.
  it('posts the answer once Slack is back after 5 s of 503s, asking the agent once and never saying it failed', async () => {
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
  });

  it('leaves no "taking a while" notice behind once the kept answer is posted', async () => {
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
  });

  it('records the thread as active when a kept answer is posted late (idle expiry and /agent sessions count it)', async () => {
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
    const before = await lastActive();
    await sleep(50);

    // Slack refuses the second answer once: it is kept and posted on the next attempt.
    fakes.slack.failNext('chat.postMessage', { type: 'http', status: 503 }, 1, isAnswerPost);
    await fakes.ask(bot.eventsUrl, CHANNEL, 'second', { root });
    await waitFor(() => threadTexts(root).some((t) => t.includes('second')), 'the second answer', 30_000);
    await waitFor(
      async () => (await lastActive()) > before,
      'activity recorded for the second answer',
      5_000,
    );
  });

  it("waits out a long 429's Retry-After each time before posting again, then posts once", async () => {
    const bot = await fakes.startBot(ENV);
    fakes.slack.failFor(
      'chat.postMessage',
      // Longer than the bot's own first back-offs (about 1 and 2 s), so the waits below are Slack's.
      { type: 'rate_limited', retryAfterSeconds: 2 },
      5_000,
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
  });

  it('posts the answer and a notice that Slack refused with HTTP 200 rate_limited, backing off as for a 429', async () => {
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
  });

  it('posts the notice saying Slack refused the answer even when that notice is refused with rate_limited first', async () => {
    const bot = await fakes.startBot({ ...ENV, REPLY_RETRY_WINDOW: '2s' });
    fakes.slack.failFor('chat.postMessage', { type: 'http', status: 503 }, 60_000, isAnswerPost);
    fakes.slack.failNext('chat.postMessage', { type: 'error', error: 'rate_limited' }, 2, (args) =>
      SLACK_REFUSED.test(String(args.text)),
    );
    const root = await ask(bot.eventsUrl, 'refused, then the notice too');

    await waitFor(() => threadTexts(root).length > 1, 'a notice in the thread', 30_000);
    await finished(root);
    const texts = threadTexts(root);
    expect(texts).toHaveLength(2);
    expect(texts[1]).toMatch(SLACK_REFUSED);
  });

  it("says in one log line, without the answer's words, that the workspace's message limit is reached, and tells the author privately", async () => {
    const bot = await fakes.startBot(ENV);
    // Free workspaces have a message limit; chat.postMessage answers `message_limit_exceeded` once it is reached.
    fakes.slack.failFor(
      'chat.postMessage',
      { type: 'error', error: 'message_limit_exceeded' },
      60_000,
      isAnswerPost,
    );
    const root = await ask(bot.eventsUrl, 'over the limit');

    await finished(root);
    // What Alice sees, not merely what was sent: the thread has no reply, so a note there would be hidden.
    const note = await fakes.slack.waitForVisibleEphemeral('U0ALICE', {}, () => true, 10_000);
    expect(note?.text).toMatch(/message limit/i);
    expect(threadTexts(root)).toEqual(['<@U0BOT> over the limit']);
    // Not retried: Slack would refuse it again until the limit resets.
    expect(answerPosts(root)).toHaveLength(1);
    const lines = bot.logs.lines.map((line) => JSON.parse(line) as { level: number; msg?: string });
    const limitLines = lines.filter(
      (line) => line.level > 20 && JSON.stringify(line).includes('message_limit_exceeded'),
    );
    expect(limitLines).toHaveLength(1);
    expect(limitLines[0]?.msg).toMatch(/message limit/i);
    expect(lines.filter((line) => line.level > 20 && JSON.stringify(line).includes('echo['))).toEqual([]);
  });

  it('says once that Slack refused the answer when it does so for longer than REPLY_RETRY_WINDOW', async () => {
    const bot = await fakes.startBot({ ...ENV, REPLY_RETRY_WINDOW: '3s' });
    fakes.slack.failFor('chat.postMessage', { type: 'http', status: 503 }, 60_000, isAnswerPost);
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
  });

  it('does not say Slack refused an answer that its author stopped while the last post was under way', async () => {
    const bot = await fakes.startBot({ ...ENV, REPLY_RETRY_WINDOW: '1s' });
    fakes.slack.failFor('chat.postMessage', { type: 'http', status: 503 }, 60_000, isAnswerPost);
    // Slack takes its time to refuse: the author's stop comes while the post that gives up is under way.
    fakes.slack.setLatency('chat.postMessage', 2_000);
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
    await sleep(2_500);
    expect(threadTexts(root)).toEqual([
      '<@U0BOT> stopped meanwhile',
      '<@U0BOT> stop',
      ':octagonal_sign: Stopped: dropped the answer I was waiting for. The agent had already received that message and may have acted on it; the next message here continues the conversation.',
    ]);
    expect(answerPosts(root)).toHaveLength(2);
  });

  it('keeps the answer across a restart: the bot killed while the post waits is replaced, and the new one posts it', async () => {
    const child = await fakes.spawnBot(ENV);
    fakes.slack.failFor('chat.postMessage', { type: 'http', status: 503 }, 60_000, isAnswerPost);
    const root = await ask(child.eventsUrl, 'kept across a restart');
    await waitFor(
      async () => await waitingForSlack(fakes.database.url),
      'the job put back to wait for Slack',
    );
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
  });
});

/** Whether the one job is put back to wait for Slack (deferred in the store, not in a process). */
async function waitingForSlack(databaseUrl: string): Promise<boolean> {
  const rows = await queryOnce<{ waiting: boolean }>(
    databaseUrl,
    `SELECT state = 'pending' AND slack_failing_since IS NOT NULL AS waiting FROM inbox WHERE kind = 'message'`,
  );
  return rows[0]?.waiting === true;
}

/** One statement on the bot's database, on a connection of its own (the tests poll with it). */
async function queryOnce<Row extends object>(databaseUrl: string, sql: string): Promise<Row[]> {
  const db = await openDatabase({ kind: 'postgres', databaseUrl, poolSize: 1 });
  try {
    return await db.query<Row>(sql);
  } finally {
    await db.close();
  }
}
