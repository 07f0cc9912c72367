import { LogLevel, WebClient } from '@slack/web-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SlackPostError, slackFailureKind, slackPostError } from '../../src/slack-out/failures.js';
import { FakeSlack, type SlackFailure } from '../fakes/slack.js';

/** How each way a post can fail is read, from the errors the WebClient really throws against the fake. */
describe('Slack failure kinds', () => {
  let slack: FakeSlack;
  let client: WebClient;
  beforeAll(async () => {
    slack = await FakeSlack.start();
    // As the bot posts: no retries of its own, a 429 thrown rather than waited out.
    client = new WebClient(slack.botToken, {
      slackApiUrl: slack.apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      // The failures are the cases under test, not news for the run's output.
      logLevel: LogLevel.ERROR,
    });
  });
  afterAll(() => slack.stop());

  async function failedPost(failure: SlackFailure): Promise<unknown> {
    slack.failNext('chat.postMessage', failure);
    try {
      await client.chat.postMessage({ channel: 'C0FAIL', text: 'hello' });
    } catch (error) {
      return error;
    }
    throw new Error('the post did not fail');
  }

  it.each([
    [
      'a 429',
      { type: 'rate_limited', retryAfterSeconds: 3 },
      { temporary: true, uncertain: false, code: 'ratelimited', retryAfterMs: 3_000 },
    ],
    [
      "chat.postMessage's own rate_limited",
      { type: 'error', error: 'rate_limited' },
      { temporary: true, uncertain: false, code: 'rate_limited' },
    ],
    [
      'a 503: not taken in',
      { type: 'http', status: 503 },
      { temporary: true, uncertain: false, code: 'http_503' },
    ],
    [
      "a gateway's 504: maybe taken",
      { type: 'http', status: 504 },
      { temporary: true, uncertain: true, code: 'http_504' },
    ],
    [
      "Slack's internal_error: maybe taken",
      { type: 'error', error: 'internal_error' },
      { temporary: true, uncertain: true, code: 'internal_error' },
    ],
    [
      'a cut connection',
      { type: 'reset', taken: false },
      { temporary: true, uncertain: true, code: 'request_failed' },
    ],
    [
      'an archived channel: never',
      { type: 'error', error: 'is_archived' },
      { temporary: false, uncertain: false, code: 'is_archived' },
    ],
  ] as const)('reads %s', async (_name, failure, kind) => {
    expect(slackFailureKind(await failedPost(failure))).toEqual(kind);
  });

  it('turns a failure into a SlackPostError once, keeping the original as its cause', async () => {
    const error = await failedPost({ type: 'error', error: 'channel_not_found' });
    const posted = slackPostError(error);
    expect(posted).toBeInstanceOf(SlackPostError);
    expect(posted).toMatchObject({ transient: false, uncertain: false, code: 'channel_not_found' });
    expect(posted.cause).toBe(error);
    expect(slackPostError(posted)).toBe(posted);
  });
});
