import { type Logger, LogLevel, WebAPIPlatformError, WebClient } from '@slack/web-api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AnswerWebClient } from '../../src/slack/answer-web-client.js';
import { webApiTransport } from '../../src/slack/web-api-transport.js';
import { FakeSlack } from '../fakes/slack.js';
import { freePort } from '../helpers/free-port.js';

const RETRY = { retries: 2, factor: 2, minTimeout: 20, maxTimeout: 40 };

/** WebClient's debug lines, to tell which calls went through its pipeline. */
function recordingLogger(lines: string[]): Logger {
  return {
    debug: (...parts: unknown[]) => lines.push(parts.map(String).join(' ')),
    info: () => {},
    warn: () => {},
    error: () => {},
    setLevel: () => {},
    getLevel: () => LogLevel.DEBUG,
    setName: () => {},
  };
}

describe('the answer client (short path for replies and indicators)', () => {
  let slack: FakeSlack;
  let client: AnswerWebClient;
  let reference: WebClient;
  const debugLines: string[] = [];

  beforeAll(async () => {
    slack = await FakeSlack.start();
    const transport = webApiTransport({ maxSockets: 4, timeoutMs: 2_000 });
    client = new AnswerWebClient(slack.botToken, {
      slackApiUrl: slack.apiUrl,
      fetch: transport,
      retryConfig: RETRY,
      logger: recordingLogger(debugLines),
      logLevel: LogLevel.DEBUG,
    });
    reference = new WebClient(slack.botToken, {
      slackApiUrl: slack.apiUrl,
      fetch: transport as unknown as typeof fetch,
      retryConfig: RETRY,
    });
  });
  afterAll(() => slack.stop());
  beforeEach(() => {
    debugLines.length = 0;
  });

  it('sends a reply exactly as WebClient does, without going through its pipeline', async () => {
    const args = {
      channel: 'C0ANSWER',
      thread_ts: '1700000000.000100',
      text: 'héllo & <b> 100% + more',
      blocks: [{ type: 'section', text: { type: 'mrkdwn', text: '*bold* & `code`' } }],
      unfurl_links: false,
    };
    const ours = await client.chat.postMessage(args);
    const theirs = await reference.chat.postMessage(args);
    expect(ours.ok).toBe(true);
    expect(typeof ours.ts).toBe('string');
    const [first, second] = slack.callsOf('chat.postMessage').slice(-2);
    expect(first?.args).toEqual(second?.args);
    expect(first?.tokenKind).toBe('bot');
    expect(second?.tokenKind).toBe('bot');
    expect(theirs.ok).toBe(true);
    expect(debugLines.some((line) => line.includes("apiCall('chat.postMessage')"))).toBe(false);
  });

  it('adds and removes a reaction, and leaves other methods to WebClient', async () => {
    const posted = await client.chat.postMessage({ channel: 'C0ANSWER', text: 'react to me' });
    const ts = String(posted.ts);
    await client.reactions.add({ channel: 'C0ANSWER', timestamp: ts, name: 'eyes' });
    expect(slack.reactionsOn('C0ANSWER', ts).map((reaction) => reaction.name)).toEqual(['eyes']);
    await client.reactions.remove({ channel: 'C0ANSWER', timestamp: ts, name: 'eyes' });
    expect(slack.reactionsOn('C0ANSWER', ts)).toEqual([]);
    expect(debugLines.some((line) => line.includes("apiCall('reactions"))).toBe(false);

    const replies = await client.conversations.replies({ channel: 'C0ANSWER', ts });
    expect(replies.ok).toBe(true);
    expect(debugLines.some((line) => line.includes("apiCall('conversations.replies')"))).toBe(true);
  });

  it("throws Slack's ok:false as WebClient's platform error, not retried", async () => {
    const before = slack.callsOf('reactions.add').length;
    slack.failNext('reactions.add', { type: 'error', error: 'already_reacted' });
    const error = await client.reactions
      .add({ channel: 'C0ANSWER', timestamp: '1.2', name: 'eyes' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WebAPIPlatformError);
    expect(error).toMatchObject({ code: 'slack_webapi_platform_error', data: { error: 'already_reacted' } });
    expect(slack.callsOf('reactions.add').length).toBe(before + 1);
  });

  it('waits out a rate limit for its Retry-After, then succeeds', async () => {
    slack.failNext('chat.postMessage', { type: 'rate_limited', retryAfterSeconds: 1 });
    const started = Date.now();
    const posted = await client.chat.postMessage({ channel: 'C0ANSWER', text: 'after the limit' });
    expect(posted.ok).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('retries an HTTP error with backoff and gives up after the configured retries', async () => {
    slack.failNext('assistant.threads.setStatus', { type: 'http', status: 503 });
    const before = slack.callsOf('assistant.threads.setStatus').length;
    const set = await client.assistant.threads.setStatus({
      channel_id: 'D0ANSWER',
      thread_ts: '1.2',
      status: 'is thinking…',
    });
    expect(set.ok).toBe(true);
    expect(slack.callsOf('assistant.threads.setStatus').length).toBe(before + 2);

    slack.failNext('chat.postMessage', { type: 'http', status: 500 }, 5);
    const posts = slack.callsOf('chat.postMessage').length;
    const error = await client.chat
      .postMessage({ channel: 'C0ANSWER', text: 'never' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'slack_webapi_http_error', statusCode: 500 });
    // One attempt and RETRY.retries more, as WebClient's retry policy counts them.
    expect(slack.callsOf('chat.postMessage').length).toBe(posts + 1 + RETRY.retries);
    slack.clearFailures('chat.postMessage');
  });

  it('reports an unreachable Slack as a request error after its retries, without the token', async () => {
    const port = await freePort();
    const unreachable = new AnswerWebClient('xoxb-secret-token-123', {
      slackApiUrl: `http://127.0.0.1:${port}/api/`,
      fetch: webApiTransport({ maxSockets: 1, timeoutMs: 500 }),
      retryConfig: RETRY,
    });
    const started = Date.now();
    const error = await unreachable.chat
      .postMessage({ channel: 'C0ANSWER', text: 'x' })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'slack_webapi_request_error' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(RETRY.minTimeout + RETRY.minTimeout * RETRY.factor);
    expect(String((error as Error).stack)).not.toContain('xoxb-secret-token-123');
    expect(JSON.stringify(error)).not.toContain('xoxb-secret-token-123');
  });
});
