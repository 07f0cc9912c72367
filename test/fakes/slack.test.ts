import { SocketModeClient } from '@slack/socket-mode';
import { LogLevel, retryPolicies, WebClient } from '@slack/web-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appMentionEvent } from '../helpers/slack-events.js';
import { FakeSlack } from './slack.js';

describe('FakeSlack', () => {
  let slack: FakeSlack;

  beforeEach(async () => {
    slack = await FakeSlack.start({ users: { U0ALICE: { name: 'alice', realName: 'Alice' } } });
  });

  afterEach(async () => {
    await slack.stop();
  });

  function webClient(token = slack.botToken): WebClient {
    return new WebClient(token, {
      slackApiUrl: slack.apiUrl,
      logLevel: LogLevel.ERROR,
      retryConfig: retryPolicies.rapidRetryPolicy,
    });
  }

  it('answers a real WebClient and records structured args', async () => {
    const client = webClient();

    const auth = await client.auth.test();
    expect(auth).toMatchObject({ ok: true, team_id: 'T0TEAM', user_id: 'U0BOT', bot_id: 'B0BOT' });
    expect(auth.response_metadata?.scopes).toContain('chat:write');

    const blocks = [{ type: 'section', text: { type: 'mrkdwn', text: '*hi*' } }];
    const parent = slack.seedMessage('C1', { user: 'U0ALICE', text: 'question' });
    const posted = await client.chat.postMessage({ channel: 'C1', thread_ts: parent, text: 'hi', blocks });
    expect(posted.message).toMatchObject({ thread_ts: parent, text: 'hi', blocks, user: 'U0BOT' });

    const call = await slack.waitForCall('chat.postMessage');
    expect(call.tokenKind).toBe('bot');
    expect(call.args).toMatchObject({ channel: 'C1', thread_ts: parent, text: 'hi', blocks });
    expect(call.args).not.toHaveProperty('token');

    await client.chat.update({ channel: 'C1', ts: posted.ts!, text: 'edited' });
    await client.reactions.add({ channel: 'C1', timestamp: parent, name: 'eyes' });
    await expect(
      client.reactions.add({ channel: 'C1', timestamp: parent, name: 'eyes' }),
    ).rejects.toMatchObject({
      data: { error: 'already_reacted' },
    });
    expect(slack.threadMessages('C1', parent).map((m) => m.text)).toEqual(['question', 'edited']);
    expect(slack.threadMessages('C1', parent)[1]?.blocks).toEqual(blocks);
    expect(slack.reactionsOn('C1', parent)).toEqual([{ name: 'eyes', users: ['U0BOT'], count: 1 }]);

    await expect(webClient('xoxb-wrong').auth.test()).rejects.toMatchObject({
      data: { error: 'invalid_auth' },
    });
    expect(slack.calls.at(-1)?.tokenKind).toBe('invalid');
  });

  it('rate limits with Retry-After, which WebClient waits out before retrying', async () => {
    slack.failNext('chat.postMessage', { type: 'rate_limited', retryAfterSeconds: 1 });

    const result = await webClient().chat.postMessage({ channel: 'C1', text: 'eventually' });

    expect(result.ok).toBe(true);
    const [first, second] = slack.callsOf('chat.postMessage');
    expect(slack.callsOf('chat.postMessage')).toHaveLength(2);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
    expect(slack.channelMessages('C1').map((m) => m.text)).toEqual(['eventually']);
  });

  it('serves Socket Mode to a real SocketModeClient and resolves on its ack', async () => {
    const client = new SocketModeClient({
      appToken: slack.appToken,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: slack.apiUrl },
    });
    const received: unknown[] = [];
    client.on('app_mention', async ({ ack, event }: { ack: () => Promise<void>; event: unknown }) => {
      received.push(event);
      await ack();
    });
    try {
      await client.start();
      expect(slack.socketConnectionCount).toBe(1);
      expect((await slack.waitForCall('apps.connections.open')).tokenKind).toBe('app');

      const body = appMentionEvent({ channel: 'C1', user: 'U0ALICE', text: '<@U0BOT> hello' });
      const result = await slack.sendSocketEvent(body);

      expect(result.envelopeId).toMatch(/[0-9a-f-]{36}/);
      expect(result.ackPayload).toBeUndefined();
      expect(received).toEqual([body.event]);
      // Socket-delivered messages become part of history, as they would on Slack.
      expect(slack.threadMessages('C1', body.event.ts)[0]?.text).toBe('<@U0BOT> hello');
    } finally {
      await client.disconnect();
    }
  });
});
