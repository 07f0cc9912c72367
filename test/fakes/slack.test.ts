import { readFileSync } from 'node:fs';
import { App, type BlockAction } from '@slack/bolt';
import { SocketModeClient } from '@slack/socket-mode';
import { ErrorCode, retryPolicies, WebClient } from '@slack/web-api';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { parse } from 'yaml';
import { freePort } from '../helpers/free-port.js';
import {
  appContextChangedEvent,
  appMentionEvent,
  blockActionsPayload,
  channelLifecycleEvent,
  nextTs,
  postSignedInteraction,
} from '../helpers/slack-events.js';
import { silentSlackLogger } from '../helpers/slack-logger.js';
import { refusal } from '../helpers/slack-refusal.js';
import { DEFAULT_SCOPES, FakeSlack, type FakeSlackOptions } from './slack.js';
import { loadContracts, undocumentedAnswer } from './slack-contracts.js';

/**
 * A fake whose workspace has the conversations these tests name (C1, C2, D1): an ID it never heard of does not
 * exist for Slack either.
 */
const startFake = (options: FakeSlackOptions = {}) =>
  FakeSlack.start({ ...options, channels: { C1: {}, C2: {}, D1: { type: 'im' }, ...options.channels } });

describe('FakeSlack', () => {
  let slack: FakeSlack;

  beforeEach(async () => {
    slack = await startFake({ users: { U0ALICE: { name: 'alice', realName: 'Alice' } } });
  });

  afterEach(async () => {
    await slack.stop();
  });

  function webClient(token = slack.botToken): WebClient {
    return new WebClient(token, {
      slackApiUrl: slack.apiUrl,
      logger: silentSlackLogger(),
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

  it('reads a conversation only with its history scope, and never a private one the bot is not in', async () => {
    await slack.stop();
    slack = await startFake({
      scopes: DEFAULT_SCOPES.filter((scope) => scope !== 'groups:history'),
      channels: { G0HIDDEN: { type: 'group', botIsMember: false }, G0MINE: { type: 'group' } },
    });
    const client = webClient();
    const root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'public' });
    await expect(client.conversations.replies({ channel: 'C1', ts: root })).resolves.toMatchObject({
      ok: true,
    });
    const mine = slack.seedMessage('G0MINE', { user: 'U0ALICE', text: 'private' });
    for (const read of [
      client.conversations.replies({ channel: 'G0MINE', ts: mine }),
      client.conversations.history({ channel: 'G0MINE' }),
    ]) {
      await expect(read).rejects.toMatchObject({
        data: { error: 'missing_scope', needed: 'groups:history' },
      });
    }
    const hidden = slack.seedMessage('G0HIDDEN', { user: 'U0ALICE', text: 'secret' });
    await expect(client.conversations.replies({ channel: 'G0HIDDEN', ts: hidden })).rejects.toMatchObject({
      data: { error: 'channel_not_found' },
    });
  });

  it("describes a conversation only with its kind's read scope: the manifest's names channels, not DMs", async () => {
    await slack.stop();
    slack = await startFake({ channels: { G0MINE: { type: 'group' }, G0GROUPDM: { type: 'mpim' } } });
    const client = webClient();
    await expect(client.conversations.info({ channel: 'C1' })).resolves.toMatchObject({ ok: true });
    await expect(client.conversations.info({ channel: 'G0MINE' })).resolves.toMatchObject({ ok: true });
    await expect(client.conversations.info({ channel: 'G0GROUPDM' })).rejects.toMatchObject({
      data: { error: 'missing_scope', needed: 'mpim:read' },
    });
    await expect(client.conversations.info({ channel: 'D0ALICE' })).rejects.toMatchObject({
      data: { error: 'missing_scope', needed: 'im:read' },
    });
  });

  it('takes no write into a private channel the bot is not in: it does not exist for the bot', async () => {
    await slack.stop();
    slack = await startFake({
      channels: { G0HIDDEN: { type: 'group', botIsMember: false }, G0MINE: { type: 'group' } },
    });
    const client = webClient();
    const hidden = slack.seedMessage('G0HIDDEN', { user: 'U0ALICE', text: 'secret' });
    const writes = [
      client.chat.postMessage({ channel: 'G0HIDDEN', text: 'hi', thread_ts: hidden }),
      client.chat.postEphemeral({ channel: 'G0HIDDEN', user: 'U0ALICE', text: 'psst' }),
      client.reactions.add({ channel: 'G0HIDDEN', timestamp: hidden, name: 'eyes' }),
    ];
    for (const write of writes) expect((await refusal(write)).error).toBe('channel_not_found');
    expect(slack.channelMessages('G0HIDDEN').map((m) => m.text)).toEqual(['secret']);
    expect(slack.ephemeralMessages).toEqual([]);
    // The control: the same writes where the bot is a member.
    const mine = slack.seedMessage('G0MINE', { user: 'U0ALICE', text: 'mine' });
    const controls = [
      client.chat.postMessage({ channel: 'G0MINE', text: 'hi', thread_ts: mine }),
      client.chat.postEphemeral({ channel: 'G0MINE', user: 'U0ALICE', text: 'psst' }),
      client.reactions.add({ channel: 'G0MINE', timestamp: mine, name: 'eyes' }),
    ];
    for (const control of controls) await expect(control).resolves.toMatchObject({ ok: true });
  });

  it('takes no post into a public channel the bot is not in without chat:write.public, nor reads its history', async () => {
    await slack.stop();
    slack = await startFake({ channels: { C0OUTSIDE: { type: 'channel', botIsMember: false } } });
    const client = webClient();
    const writes = [
      client.chat.postMessage({ channel: 'C0OUTSIDE', text: 'hi' }),
      client.chat.postEphemeral({ channel: 'C0OUTSIDE', user: 'U0ALICE', text: 'psst' }),
      client.conversations.history({ channel: 'C0OUTSIDE' }),
    ];
    for (const write of writes) expect((await refusal(write)).error).toBe('not_in_channel');
    expect(slack.channelMessages('C0OUTSIDE')).toEqual([]);
    // The control: with chat:write.public, a post there is taken.
    await slack.stop();
    slack = await startFake({
      scopes: [...DEFAULT_SCOPES, 'chat:write.public'],
      channels: { C0OUTSIDE: { type: 'channel', botIsMember: false } },
    });
    await expect(webClient().chat.postMessage({ channel: 'C0OUTSIDE', text: 'hi' })).resolves.toMatchObject({
      ok: true,
    });
  });

  it('takes no message without content, an empty text being none: posts, ephemerals and edits', async () => {
    const client = webClient();
    const root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'question' });
    const posted = await client.chat.postMessage({ channel: 'C1', text: 'answer', thread_ts: root });
    const empty = [
      () => client.chat.postMessage({ channel: 'C1', text: '', thread_ts: root }),
      () => client.chat.postEphemeral({ channel: 'C1', user: 'U0ALICE', text: '' }),
      () => client.chat.update({ channel: 'C1', ts: String(posted.ts), text: '' }),
    ];
    for (const call of empty) expect((await refusal(call())).error).toBe('no_text');
    expect(slack.threadMessages('C1', root).map((m) => m.text)).toEqual(['question', 'answer']);
    // The control: blocks alone are content.
    const blocks = [{ type: 'section', text: { type: 'mrkdwn', text: 'edited' } }];
    await expect(client.chat.update({ channel: 'C1', ts: String(posted.ts), blocks })).resolves.toMatchObject(
      {
        ok: true,
      },
    );
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
      logger: silentSlackLogger(),
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

/** A real WebClient against the fake; `retries: 0` and `rejectRateLimitedCalls` surface every failure. */
function clientFor(
  slack: FakeSlack,
  options: { retries?: number; rejectRateLimitedCalls?: boolean } = {},
): WebClient {
  return new WebClient(slack.botToken, {
    slackApiUrl: slack.apiUrl,
    logger: silentSlackLogger(),
    retryConfig:
      options.retries === undefined ? retryPolicies.rapidRetryPolicy : { retries: options.retries },
    rejectRateLimitedCalls: options.rejectRateLimitedCalls ?? false,
  });
}

const rawText = (text: string) => ({ type: 'raw_text', text });

describe('FakeSlack agent sessions', () => {
  let slack: FakeSlack;
  let client: WebClient;
  let root: string;

  beforeEach(async () => {
    slack = await startFake({ users: { U0ALICE: { name: 'alice' } } });
    client = clientFor(slack);
    root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'plan my trip' });
  });

  afterEach(async () => {
    await slack.stop();
  });

  it('sets no session in a public channel the bot is not in, so none is there to rename', async () => {
    await slack.stop();
    slack = await startFake({ channels: { C0OUTSIDE: { type: 'channel', botIsMember: false } } });
    client = clientFor(slack);
    const outside = slack.seedMessage('C0OUTSIDE', { user: 'U0ALICE', text: 'plan my trip' });
    await expect(
      client.agents.sessions.setStatus({ channel_id: 'C0OUTSIDE', thread_ts: outside, status: 'processing' }),
    ).rejects.toMatchObject({ data: { error: 'not_authorized' } });
    await expect(
      client.agents.sessions.rename({ channel_id: 'C0OUTSIDE', thread_ts: outside, title: 'Trip' }),
    ).rejects.toMatchObject({ data: { error: 'session_not_found' } });
    expect(slack.agentSession('C0OUTSIDE', outside)).toBeUndefined();
    // The control: where the bot is a member.
    const inside = slack.seedMessage('C1', { user: 'U0ALICE', text: 'plan my trip' });
    await expect(
      client.agents.sessions.setStatus({ channel_id: 'C1', thread_ts: inside, status: 'processing' }),
    ).resolves.toMatchObject({ ok: true });
    await expect(
      client.agents.sessions.rename({ channel_id: 'C1', thread_ts: inside, title: 'Trip' }),
    ).resolves.toMatchObject({ ok: true });
  });

  it('creates the session on the first setStatus, takes title and initiator only then, and keeps every status', async () => {
    const created = await client.agents.sessions.setStatus({
      channel_id: 'C1',
      thread_ts: root,
      status: 'processing',
      title: 'Trip planning',
      initiator_user_id: 'U0ALICE',
    });
    expect(created).toMatchObject({
      ok: true,
      status: 'processing',
      agent_status: 'processing',
      title: 'Trip planning',
    });
    expect(slack.agentSession('C1', root)?.stopButtonVisible).toBe(true);

    await client.agents.sessions.setStatus({
      channel_id: 'C1',
      thread_ts: root,
      status: 'active',
      title: 'Ignored',
    });
    await client.agents.sessions.setStatus({
      channel_id: 'C1',
      thread_ts: root,
      status: 'closed',
      initiator_user_id: 'U0BOB',
    });

    const session = slack.agentSession('C1', root);
    expect(session).toMatchObject({
      status: 'closed',
      title: 'Trip planning',
      initiatorUserId: 'U0ALICE',
      stopButtonVisible: false,
    });
    expect(session?.history.map((h) => [h.status, h.via])).toEqual([
      ['processing', 'agents.sessions.setStatus'],
      ['active', 'agents.sessions.setStatus'],
      ['closed', 'agents.sessions.setStatus'],
    ]);
    // Another thread is another session.
    expect(slack.agentSession('C1', slack.seedMessage('C1', { user: 'U0ALICE', text: 'x' }))).toBeUndefined();
  });

  it('refuses, as user_not_found, an initiator the channel does not list as a member', async () => {
    await slack.stop();
    slack = await startFake({ channels: { C2: { name: 'shared', members: ['U0ALICE', 'U0BOT'] } } });
    client = clientFor(slack);
    const ts = slack.seedMessage('C2', { user: 'U0ALICE', text: 'numbers?' });
    const refused = await refusal(
      client.agents.sessions.setStatus({
        channel_id: 'C2',
        thread_ts: ts,
        status: 'processing',
        initiator_user_id: 'U0GUEST',
      }),
    );
    expect(refused.error).toBe('user_not_found');
    expect(slack.agentSession('C2', ts)).toBeUndefined();
    await client.agents.sessions.setStatus({ channel_id: 'C2', thread_ts: ts, status: 'processing' });
    expect(slack.agentSession('C2', ts)?.status).toBe('processing');
  });

  it.each([
    // Documented for a status outside the enum, and for a thread-based session without its thread.
    ['an unknown status', { status: 'done' }, 'invalid_status'],
    ['no status', { status: undefined }, 'invalid_arguments'],
    ['no thread_ts', { status: 'processing', thread_ts: undefined }, 'thread_ts_required'],
    // A required argument without an error of its own: Slack's generic answer.
    ['no channel_id', { status: 'processing', channel_id: undefined }, 'invalid_arguments'],
    ['a title over 200 characters', { status: 'processing', title: 't'.repeat(201) }, 'invalid_arguments'],
    [
      'an icon without chat:write.customize',
      { status: 'processing', icon_emoji: ':robot_face:' },
      'missing_scope',
    ],
  ])('refuses setStatus with %s and creates nothing', async (_name, override, error) => {
    const args = { channel_id: 'C1', thread_ts: root, ...override };
    const refused = await refusal(
      client.agents.sessions.setStatus(args as Parameters<WebClient['agents']['sessions']['setStatus']>[0]),
    );
    expect(refused.error).toBe(error);
    expect(slack.agentSession('C1', root)).toBeUndefined();
  });

  it('applies icon and username overrides as one set when chat:write.customize is granted', async () => {
    await slack.stop();
    slack = await startFake({ scopes: ['chat:write', 'chat:write.customize'] });
    client = clientFor(slack);
    await client.agents.sessions.setStatus({
      channel_id: 'C1',
      thread_ts: '1.000001',
      status: 'processing',
      icon_emoji: ':robot_face:',
      username: 'Helper',
    });
    await client.agents.sessions.setStatus({ channel_id: 'C1', thread_ts: '1.000001', status: 'active' });
    expect(slack.agentSession('C1', '1.000001')?.appearance).toEqual({
      icon_emoji: ':robot_face:',
      username: 'Helper',
    });
    await client.agents.sessions.setStatus({
      channel_id: 'C1',
      thread_ts: '1.000001',
      status: 'active',
      icon_url: 'https://example.com/a.png',
    });
    expect(slack.agentSession('C1', '1.000001')?.appearance).toEqual({
      icon_url: 'https://example.com/a.png',
    });
  });

  it('renames only existing sessions, to 1-200 characters, and none in an archived channel', async () => {
    expect(
      (await refusal(client.agents.sessions.rename({ channel_id: 'C1', thread_ts: root, title: 'Early' })))
        .error,
    ).toBe('session_not_found');

    await client.agents.sessions.setStatus({
      channel_id: 'C1',
      thread_ts: root,
      status: 'processing',
      title: 'First',
    });
    const renamed = await client.agents.sessions.rename({
      channel_id: 'C1',
      thread_ts: root,
      title: 'Second',
    });
    expect(renamed).toMatchObject({ ok: true, title: 'Second' });
    for (const title of ['', 'x'.repeat(201)]) {
      expect(
        (await refusal(client.agents.sessions.rename({ channel_id: 'C1', thread_ts: root, title }))).error,
      ).toBe('invalid_arguments');
    }

    slack.archiveChannel('C1');
    expect(
      (await refusal(client.agents.sessions.rename({ channel_id: 'C1', thread_ts: root, title: 'Late' })))
        .error,
    ).toBe('is_archived');

    const session = slack.agentSession('C1', root);
    expect(session?.title).toBe('Second');
    expect(session?.titles.map((t) => [t.title, t.via])).toEqual([
      ['First', 'agents.sessions.setStatus'],
      ['Second', 'agents.sessions.rename'],
    ]);
  });

  it('warns and shows no stop button while the app does not subscribe to agent_session_stopped', async () => {
    slack.setAgentSessionStoppedSubscribed(false);
    const answer = await client.agents.sessions.setStatus({
      channel_id: 'C1',
      thread_ts: root,
      status: 'processing',
    });
    expect(answer.ok).toBe(true);
    expect(answer.response_metadata?.warnings).toEqual(['missing_agent_session_stopped_event_subscription']);
    expect(slack.agentSession('C1', root)?.stopButtonVisible).toBe(false);
    expect(() => slack.pressStopButton('C1', root, 'U0ALICE')).toThrow(/no stop button/);

    slack.setAgentSessionStoppedSubscribed(true);
    const quiet = await client.agents.sessions.setStatus({
      channel_id: 'C1',
      thread_ts: root,
      status: 'processing',
    });
    expect(quiet.response_metadata?.warnings).toBeUndefined();
  });

  it('stop stops the open streams of the thread and leaves the status to the app', async () => {
    const stream = await client.chat.startStream({
      channel: 'C1',
      thread_ts: root,
      markdown_text: 'Thinking',
    });
    const session = slack.agentSession('C1', root);
    expect(session).toMatchObject({
      status: 'processing',
      initiatorUserId: 'U0ALICE',
      stopButtonVisible: true,
    });

    const stopped = slack.pressStopButton('C1', root, 'U0ALICE');

    expect(stopped.event).toEqual({
      type: 'agent_session_stopped',
      channel: 'C1',
      user: 'U0ALICE',
      thread_ts: root,
      streaming_message_ts: [stream.ts],
      event_ts: expect.stringMatching(/^\d+\.\d{6}$/),
    });
    expect(stopped.team_id).toBe(slack.teamId);
    expect(slack.agentSession('C1', root)?.status).toBe('processing');
    expect(
      (await refusal(client.chat.appendStream({ channel: 'C1', ts: stream.ts!, markdown_text: 'more' })))
        .error,
    ).toBe('message_not_in_streaming_state');
    // With no stream open, the event still comes, with an empty list.
    expect(slack.pressStopButton('C1', root, 'U0ALICE').event.streaming_message_ts).toEqual([]);
  });

  it('moves the session with chat.stopStream session_status, and with assistant.threads calls (the compatibility bridge)', async () => {
    const stream = await client.chat.startStream({
      channel: 'C1',
      thread_ts: root,
      markdown_text: 'Let me see',
    });
    await client.chat.stopStream({ channel: 'C1', ts: stream.ts!, session_status: 'suspended' } as Parameters<
      WebClient['chat']['stopStream']
    >[0]);
    await client.assistant.threads.setStatus({ channel_id: 'C1', thread_ts: root, status: 'is thinking…' });
    await client.assistant.threads.setStatus({ channel_id: 'C1', thread_ts: root, status: '' });
    await client.assistant.threads.setTitle({ channel_id: 'C1', thread_ts: root, title: 'A session title' });

    const session = slack.agentSession('C1', root);
    // A non-empty status line sets processing, an empty one active, and the title is the session's.
    expect(session?.history.map((h) => `${h.status} by ${h.via}`)).toEqual([
      'processing by chat.startStream',
      'suspended by chat.stopStream',
      'processing by assistant.threads.setStatus',
      'active by assistant.threads.setStatus',
    ]);
    expect(session?.title).toBe('A session title');
    expect(slack.assistantThread('C1', root)).toMatchObject({ status: '', title: 'A session title' });
    // A status line in a thread with no session opens one, untitled and with no initiator.
    await client.assistant.threads.setStatus({
      channel_id: 'C1',
      thread_ts: '8.000001',
      status: 'is thinking…',
    });
    expect(slack.agentSession('C1', '8.000001')).toMatchObject({ status: 'processing', titles: [] });
    expect(slack.agentSession('C1', '8.000001')?.initiatorUserId).toBeUndefined();
  });

  it('refuses a stopStream session_status Slack does not know, and leaves the stream open', async () => {
    const stream = await client.chat.startStream({ channel: 'C1', thread_ts: root, markdown_text: 'Hm' });
    const stop = { channel: 'C1', ts: stream.ts!, session_status: 'paused' };
    expect(
      (await refusal(client.chat.stopStream(stop as Parameters<WebClient['chat']['stopStream']>[0]))).error,
    ).toBe('invalid_arguments');
    await expect(
      client.chat.appendStream({ channel: 'C1', ts: stream.ts!, markdown_text: '…' }),
    ).resolves.toMatchObject({ ok: true });
    expect(slack.agentSession('C1', root)?.status).toBe('processing');
  });

  it('waits for a status reached by a later call', async () => {
    const reached = slack.waitForAgentSessionStatus('C1', root, 'closed', 2000);
    await client.agents.sessions.setStatus({ channel_id: 'C1', thread_ts: root, status: 'processing' });
    await client.agents.sessions.setStatus({ channel_id: 'C1', thread_ts: root, status: 'closed' });
    expect((await reached).history.map((h) => h.status)).toEqual(['processing', 'closed']);
    await expect(slack.waitForAgentSessionStatus('C1', root, 'suspended', 50)).rejects.toThrow(
      /did not reach suspended.*processing → closed/,
    );
  });

  it('renames a session as a person would, for the title-changed event', async () => {
    await client.agents.sessions.setStatus({
      channel_id: 'C1',
      thread_ts: root,
      status: 'active',
      title: 'Old',
    });
    const changed = slack.renameAgentSessionAsUser('C1', root, 'U0ALICE', 'New');
    expect(changed.event).toMatchObject({
      type: 'agent_session_title_changed',
      channel: 'C1',
      user: 'U0ALICE',
      thread_ts: root,
      title: 'New',
      previous_title: 'Old',
      team_id: slack.teamId,
    });
    expect(slack.agentSession('C1', root)?.titles.at(-1)).toMatchObject({ title: 'New', via: 'user' });
  });

  it('takes up to four suggested prompts, each with a title and a message', async () => {
    const prompt = (n: number) => ({ title: `Prompt ${n}`, message: `Ask ${n}` });
    await expect(
      client.assistant.threads.setSuggestedPrompts({
        channel_id: 'D1',
        prompts: [1, 2, 3, 4].map(prompt) as never,
      }),
    ).resolves.toMatchObject({ ok: true });
    for (const prompts of [
      [1, 2, 3, 4, 5].map(prompt),
      [{ title: 'No message' }],
      [{ message: 'No title' }],
    ]) {
      const set = client.assistant.threads.setSuggestedPrompts({
        channel_id: 'D1',
        prompts: prompts as never,
      });
      expect((await refusal(set)).error).toBe('invalid_arguments');
    }
    expect(slack.assistantThread('D1', undefined)?.prompts).toHaveLength(4);
  });

  it('refuses agent-only methods to an app without features.agent_view (each with its documented code), and creates nothing', async () => {
    await slack.stop();
    slack = await startFake({ agentView: false });
    client = clientFor(slack);
    const calls = [
      client.agents.sessions.setStatus({ channel_id: 'C1', thread_ts: root, status: 'processing' }),
      client.agents.sessions.rename({ channel_id: 'C1', thread_ts: root, title: 'Trip' }),
      client.assistant.threads.setSuggestedPrompts({
        channel_id: 'D1',
        prompts: [{ title: 'Hi', message: 'Hi' }],
      }),
    ];
    const errors = [];
    for (const call of calls) errors.push((await refusal(call)).error);
    expect(errors).toEqual(['feature_disabled', 'feature_disabled', 'not_agent_app']);
    expect(slack.agentSessionList()).toEqual([]);
    expect(slack.assistantThread('D1', undefined)).toBeUndefined();
    // The thread's status line is an assistant feature, not an agent-only one.
    await expect(
      client.assistant.threads.setStatus({ channel_id: 'C1', thread_ts: root, status: 'is thinking…' }),
    ).resolves.toMatchObject({ ok: true });
  });
});

describe('FakeSlack ephemeral messages: what a person sees', () => {
  let slack: FakeSlack;
  let client: WebClient;

  beforeEach(async () => {
    slack = await startFake({
      channels: {
        C1: { name: 'general' },
        C2: { name: 'small', members: ['U0ALICE'] },
        D1: { type: 'im', user: 'U0ALICE' },
      },
    });
    client = clientFor(slack);
  });

  afterEach(async () => {
    await slack.stop();
  });

  it('accepts a note into a thread without replies but never shows it; shows it once the thread has one', async () => {
    const root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'question' });
    const hidden = await client.chat.postEphemeral({
      channel: 'C1',
      user: 'U0ALICE',
      thread_ts: root,
      text: 'lost',
    });
    expect(hidden.ok).toBe(true);
    expect(slack.visibleEphemerals('U0ALICE')).toEqual([]);
    expect(slack.ephemeralMessages).toEqual([expect.objectContaining({ text: 'lost', visible: false })]);

    await client.chat.postEphemeral({ channel: 'C1', user: 'U0ALICE', text: 'in the channel' });
    slack.seedMessage('C1', { user: 'U0BOB', text: 'a reply', threadTs: root });
    await client.chat.postEphemeral({
      channel: 'C1',
      user: 'U0ALICE',
      thread_ts: root,
      text: 'in the thread',
    });
    expect(slack.visibleEphemerals('U0ALICE').map((m) => m.text)).toEqual([
      'in the channel',
      'in the thread',
    ]);
    expect(slack.visibleEphemerals('U0ALICE', { channel: 'C1', threadTs: root }).map((m) => m.text)).toEqual([
      'in the thread',
    ]);
    expect(slack.visibleEphemerals('U0BOB')).toEqual([]);
    await expect(slack.waitForVisibleEphemeral('U0ALICE', {}, (m) => m.text === 'lost', 50)).rejects.toThrow(
      /sent but never shown: C1\/\d+\.\d+ "lost"/,
    );
  });

  it('refuses a note to someone who is not in the channel', async () => {
    for (const [channel, user] of [
      ['C2', 'U0BOB'],
      ['D1', 'U0BOB'],
    ] as const) {
      expect((await refusal(client.chat.postEphemeral({ channel, user, text: 'psst' }))).error).toBe(
        'user_not_in_channel',
      );
    }
    await client.chat.postEphemeral({ channel: 'D1', user: 'U0ALICE', text: 'hello' });
    expect(slack.visibleEphemerals('U0ALICE', { channel: 'D1' })).toHaveLength(1);
  });

  it('shows a response_url answer to whoever interacted: in a thread with replies, else in the channel', async () => {
    const lone = slack.seedMessage('C1', { user: 'U0ALICE', text: 'no replies' });
    const answer = (id: string, threadTs: string) =>
      fetch(slack.responseUrl(id, { channel: 'C1', user: 'U0ALICE', threadTs }), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: id }),
      });
    await answer('lone', lone);
    const busy = slack.seedMessage('C1', { user: 'U0ALICE', text: 'replied' });
    slack.seedMessage('C1', { user: 'U0BOB', text: 'yes', threadTs: busy });
    await answer('busy', busy);
    expect(slack.visibleEphemerals('U0ALICE').map((m) => [m.text, m.threadTs])).toEqual([
      ['lone', undefined],
      ['busy', busy],
    ]);
  });
});

describe('FakeSlack block checks', () => {
  let slack: FakeSlack;
  let client: WebClient;

  beforeEach(async () => {
    slack = await startFake();
    client = clientFor(slack);
  });

  afterEach(async () => {
    await slack.stop();
  });

  const table = (rows: unknown[][], extra: Record<string, unknown> = {}) => ({
    type: 'table',
    rows,
    ...extra,
  });
  const feedback = (positive: Record<string, unknown> = {}) => ({
    type: 'feedback_buttons',
    action_id: 'feedback',
    positive_button: { text: { type: 'plain_text', text: '👍' }, value: 'good', ...positive },
    negative_button: { text: { type: 'plain_text', text: '👎' }, value: 'bad' },
  });

  it('stores documented tables and feedback buttons and returns them from conversations.replies', async () => {
    const root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'numbers please' });
    const blocks = [
      table(
        [
          [rawText('Region'), rawText('Revenue')],
          [
            {
              type: 'rich_text',
              elements: [{ type: 'rich_text_section', elements: [{ type: 'text', text: 'EMEA' }] }],
            },
            { type: 'raw_number', value: 1.2, text: '1.2M' },
          ],
        ],
        { column_settings: [null, { align: 'right', is_wrapped: true }] },
      ),
      {
        type: 'context_actions',
        block_id: 'answer-actions',
        elements: [
          feedback({ accessibility_label: 'Good answer' }),
          {
            type: 'icon_button',
            icon: 'trash',
            text: { type: 'plain_text', text: 'Delete' },
            action_id: 'delete',
          },
        ],
      },
    ];

    await client.chat.postMessage({
      channel: 'C1',
      thread_ts: root,
      text: 'Revenue',
      blocks: blocks as never,
    });

    const replies = await client.conversations.replies({ channel: 'C1', ts: root });
    expect(replies.messages?.[1]?.blocks).toEqual(blocks);
  });

  const rows = (count: number, cells = 1) =>
    Array.from({ length: count }, (_, r) => Array.from({ length: cells }, (_, c) => rawText(`${r}/${c}`)));

  it.each([
    ['101 rows', [table(rows(101))], 'invalid_blocks', '/blocks/0/rows'],
    ['21 cells in a row', [table(rows(1, 21))], 'invalid_blocks', '/blocks/0/rows/0'],
    [
      'an unknown cell type',
      [table([[{ type: 'mrkdwn', text: 'x' }]])],
      'invalid_blocks',
      '/blocks/0/rows/0/0/type',
    ],
    [
      'a raw_number without value',
      [table([[{ type: 'raw_number', text: '1' }]])],
      'invalid_blocks',
      '/rows/0/0/value',
    ],
    [
      '10,001 characters of cells',
      [table([[rawText('x'.repeat(10_001))]])],
      'invalid_blocks',
      '/blocks/0/rows',
    ],
    [
      '21 column settings',
      [table(rows(1), { column_settings: Array.from({ length: 21 }, () => null) })],
      'invalid_blocks',
      '/blocks/0/column_settings',
    ],
    [
      'a column setting that is neither an object nor null',
      [table(rows(1, 2), { column_settings: ['left', { align: 'right' }] })],
      'invalid_blocks',
      '/blocks/0/column_settings/0',
    ],
    [
      'an unknown alignment',
      [table(rows(1), { column_settings: [{ align: 'middle' }] })],
      'invalid_blocks',
      '/column_settings/0/align',
    ],
    // The table page names this breach under invalid_attachments, which chat.postMessage does not document.
    ['two tables', [table(rows(1)), table(rows(1))], 'invalid_blocks', 'only_one_table_allowed'],
    [
      'a 6,000-character table (the control: within limits)',
      [table([[rawText('x'.repeat(6000))]]), { type: 'section', text: { type: 'mrkdwn', text: 'between' } }],
      undefined,
      undefined,
    ],
    [
      'six context actions',
      [{ type: 'context_actions', elements: Array.from({ length: 6 }, () => feedback()) }],
      'invalid_blocks',
      '/blocks/0/elements',
    ],
    [
      'a 76-character button text',
      [
        {
          type: 'context_actions',
          elements: [feedback({ text: { type: 'plain_text', text: 'x'.repeat(76) } })],
        },
      ],
      'invalid_blocks',
      '/positive_button/text/text',
    ],
    [
      'a 2,001-character value',
      [{ type: 'context_actions', elements: [feedback({ value: 'v'.repeat(2001) })] }],
      'invalid_blocks',
      '/positive_button/value',
    ],
    [
      'feedback buttons outside context_actions',
      [{ type: 'actions', elements: [feedback()] }],
      'invalid_blocks',
      '/blocks/0/elements/0/type',
    ],
  ])('with %s', async (_name, blocks, error, pointer) => {
    const posting = client.chat.postMessage({ channel: 'C1', text: 'fallback', blocks: blocks as never });
    if (error === undefined) {
      await expect(posting).resolves.toMatchObject({ ok: true });
      return;
    }
    const refused = await refusal(posting);
    expect(refused.error).toBe(error);
    expect(refused.messages).toEqual([expect.stringContaining(String(pointer))]);
    expect(slack.channelMessages('C1')).toEqual([]);
  });

  it('counts tables in attachments and checks chat.update too', async () => {
    const refused = await refusal(
      client.chat.postMessage({
        channel: 'C1',
        text: 'x',
        blocks: [table(rows(1))] as never,
        attachments: [{ blocks: [table(rows(1))] as never }],
      }),
    );
    expect(refused.error).toBe('invalid_blocks');

    const posted = await client.chat.postMessage({
      channel: 'C1',
      text: 'x',
      blocks: [table(rows(2))] as never,
    });
    expect(
      (
        await refusal(
          client.chat.update({ channel: 'C1', ts: posted.ts!, blocks: [table(rows(101))] as never }),
        )
      ).error,
    ).toBe('invalid_blocks');
    expect(slack.channelMessages('C1')[0]?.blocks).toEqual([table(rows(2))]);
  });
});

describe('FakeSlack outages', () => {
  let slack: FakeSlack;

  beforeEach(async () => {
    slack = await startFake();
  });

  afterEach(async () => {
    vi.useRealTimers();
    await slack.stop();
  });

  it('answers 503 to a method for a duration, then normally again', async () => {
    const client = clientFor(slack, { retries: 0 });
    // The fake reads its failure windows from the clock, which the test moves on.
    vi.useFakeTimers({ toFake: ['Date'] });
    slack.failFor('chat.postMessage', { type: 'http', status: 503 }, 300);

    for (const text of ['first', 'second']) {
      await expect(client.chat.postMessage({ channel: 'C1', text })).rejects.toMatchObject({
        code: ErrorCode.HTTPError,
        statusCode: 503,
      });
    }
    // Other methods are untouched.
    await expect(client.auth.test()).resolves.toMatchObject({ ok: true });
    vi.advanceTimersByTime(299);
    await expect(client.chat.postMessage({ channel: 'C1', text: 'still' })).rejects.toMatchObject({
      statusCode: 503,
    });
    vi.advanceTimersByTime(1);

    await expect(client.chat.postMessage({ channel: 'C1', text: 'after' })).resolves.toMatchObject({
      ok: true,
    });
    expect(slack.channelMessages('C1').map((m) => m.text)).toEqual(['after']);
  });

  it('fails every method under `*`, rate limits with Retry-After, and clearFailures ends it early', async () => {
    const client = clientFor(slack, { retries: 0, rejectRateLimitedCalls: true });
    slack.failFor('*', { type: 'rate_limited', retryAfterSeconds: 7 }, 60_000);

    await expect(client.auth.test()).rejects.toMatchObject({
      code: ErrorCode.RateLimitedError,
      retryAfter: 7,
    });
    await expect(
      client.reactions.add({ channel: 'C1', timestamp: '1.000001', name: 'eyes' }),
    ).rejects.toMatchObject({
      code: ErrorCode.RateLimitedError,
    });

    slack.clearFailures('*');
    await expect(client.auth.test()).resolves.toMatchObject({ ok: true });
  });

  it('cuts the connection without an answer, after taking the post or before, and after the latency', async () => {
    const client = clientFor(slack, { retries: 0 });
    slack.failNext('chat.postMessage', { type: 'reset', taken: false });
    slack.failNext('chat.postMessage', { type: 'reset', taken: true });
    slack.setLatency('chat.postMessage', 300);

    for (const text of ['not taken', 'taken']) {
      const started = Date.now();
      await expect(client.chat.postMessage({ channel: 'C1', text })).rejects.toMatchObject({
        code: ErrorCode.RequestError,
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    }
    // The client saw the same failure twice; only Slack knows the second post is in the channel.
    expect(slack.channelMessages('C1').map((m) => m.text)).toEqual(['taken']);
    expect(slack.callsOf('chat.postMessage').map((c) => c.args.text)).toEqual(['not taken', 'taken']);
    await expect(client.chat.postMessage({ channel: 'C1', text: 'answered' })).resolves.toMatchObject({
      ok: true,
    });
  });
});

describe('FakeSlack interactions', () => {
  const SIGNING_SECRET = 'interaction-test-secret';
  let slack: FakeSlack;
  let client: WebClient;

  beforeEach(async () => {
    slack = await startFake({
      users: { U0ALICE: { name: 'alice' } },
      // Alice's DM with the bot (the Messages tab), which Slack has whether or not an event named it.
      channels: { D0BOT: { type: 'im', user: 'U0ALICE' } },
    });
    client = clientFor(slack);
  });

  afterEach(async () => {
    await slack.stop();
  });

  async function postAnswer(root: string): Promise<string> {
    const posted = await client.chat.postMessage({
      channel: 'C1',
      thread_ts: root,
      text: 'The answer',
      blocks: [
        { type: 'section', block_id: 'body', text: { type: 'mrkdwn', text: 'The answer' } },
        {
          type: 'actions',
          block_id: 'more',
          elements: [
            {
              type: 'button',
              action_id: 'retry',
              value: 'turn-7',
              text: { type: 'plain_text', text: 'Retry' },
            },
          ],
        },
        {
          type: 'context_actions',
          block_id: 'rate',
          elements: [
            {
              type: 'feedback_buttons',
              action_id: 'feedback',
              positive_button: { text: { type: 'plain_text', text: '👍' }, value: 'good:turn-7' },
              negative_button: { text: { type: 'plain_text', text: '👎' }, value: 'bad:turn-7' },
            },
          ],
        },
      ],
    });
    return posted.ts!;
  }

  it('a feedback click reaches a Bolt app with the clicked value, and its ephemeral answer lands in the thread', async () => {
    const root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'question' });
    const answerTs = await postAnswer(root);
    const message = slack.threadMessages('C1', root).find((m) => m.ts === answerTs)!;

    const received: BlockAction[] = [];
    const app = new App({
      token: slack.botToken,
      signingSecret: SIGNING_SECRET,
      logger: silentSlackLogger(),
      clientOptions: { slackApiUrl: slack.apiUrl },
    });
    app.action<BlockAction>('feedback', async ({ ack, body, respond }) => {
      await ack();
      received.push(body);
      await respond({ text: 'Thanks for the feedback' });
    });
    const port = await freePort();
    await app.start(port);
    try {
      const payload = blockActionsPayload({
        user: 'U0ALICE',
        channel: 'C1',
        message,
        actionId: 'feedback',
        feedback: 'negative',
        responseUrl: slack.responseUrl('click-1', {
          channel: 'C1',
          user: 'U0ALICE',
          messageTs: answerTs,
          threadTs: root,
        }),
      });
      const delivered = await postSignedInteraction(
        `http://127.0.0.1:${port}/slack/events`,
        SIGNING_SECRET,
        payload,
      );
      expect(delivered.status).toBe(200);
      await slack.waitForCall('response_url', (c) => c.args.responseId === 'click-1');
    } finally {
      await app.stop();
    }

    expect(received).toHaveLength(1);
    expect(received[0]?.actions[0]).toEqual({
      type: 'feedback_buttons',
      block_id: 'rate',
      action_id: 'feedback',
      value: 'bad:turn-7',
      text: { type: 'plain_text', text: '👎' },
      action_ts: expect.stringMatching(/^\d+\.\d{6}$/),
    });
    expect(received[0]).toMatchObject({
      user: { id: 'U0ALICE' },
      container: {
        type: 'message',
        message_ts: answerTs,
        channel_id: 'C1',
        thread_ts: root,
        is_ephemeral: false,
      },
      message: { ts: answerTs, thread_ts: root, user: 'U0BOT' },
    });
    expect(slack.visibleEphemerals('U0ALICE')).toEqual([
      expect.objectContaining({
        channel: 'C1',
        user: 'U0ALICE',
        text: 'Thanks for the feedback',
        threadTs: root,
        via: 'response_url',
      }),
    ]);
  });

  it('builds a plain button click from the message, and refuses elements the message lacks', async () => {
    const root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'question' });
    const answerTs = await postAnswer(root);
    const answer = slack.threadMessages('C1', root).find((m) => m.ts === answerTs)!;

    const click = blockActionsPayload({
      user: 'U0ALICE',
      channel: 'C1',
      message: answer,
      actionId: 'retry',
      responseUrl: slack.responseUrl('click-2'),
    });

    expect(click.actions).toEqual([
      {
        type: 'button',
        block_id: 'more',
        action_id: 'retry',
        value: 'turn-7',
        text: { type: 'plain_text', text: 'Retry' },
        action_ts: expect.any(String),
      },
    ]);
    expect(() =>
      blockActionsPayload({
        user: 'U0ALICE',
        channel: 'C1',
        message: answer,
        actionId: 'nope',
        responseUrl: '',
      }),
    ).toThrow(/no element with action_id nope/);
    expect(() =>
      blockActionsPayload({
        user: 'U0ALICE',
        channel: 'C1',
        message: answer,
        actionId: 'feedback',
        responseUrl: '',
      }),
    ).toThrow(/which feedback button/);
  });

  it('applies response_url answers: replace_original, in_channel in a thread, delete_original', async () => {
    const root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'question' });
    const answerTs = await postAnswer(root);
    const url = slack.responseUrl('click-3', {
      channel: 'C1',
      user: 'U0ALICE',
      messageTs: answerTs,
      threadTs: root,
    });
    const answer = (body: Record<string, unknown>) =>
      fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });

    await answer({ replace_original: 'true', text: 'Retrying…' });
    expect(slack.threadMessages('C1', root).find((m) => m.ts === answerTs)?.text).toBe('Retrying…');

    await answer({
      response_type: 'in_channel',
      replace_original: false,
      thread_ts: root,
      text: 'Done again',
    });
    expect(slack.threadMessages('C1', root).map((m) => m.text)).toEqual([
      'question',
      'Retrying…',
      'Done again',
    ]);

    await answer({ delete_original: true });
    expect(slack.threadMessages('C1', root).map((m) => m.text)).toEqual(['question', 'Done again']);
    expect(slack.ephemeralMessages).toEqual([]);
    expect(slack.visibleEphemerals('U0ALICE')).toEqual([]);
    expect(slack.callsOf('response_url')).toHaveLength(3);
  });

  it('takes five answers at one response_url, and refuses a sixth without showing it', async () => {
    const url = slack.responseUrl('command-5', { channel: 'C1', user: 'U0ALICE' });
    const statuses: number[] = [];
    for (let answer = 1; answer <= 6; answer++) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: `answer ${answer}` }),
      });
      statuses.push(response.status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 404]);
    expect(slack.visibleEphemerals('U0ALICE').map((m) => m.text)).toEqual([
      'answer 1',
      'answer 2',
      'answer 3',
      'answer 4',
      'answer 5',
    ]);
  });

  it('delivers app_context_changed and a stop over Socket Mode as Slack shapes them', async () => {
    const socket = new SocketModeClient({
      appToken: slack.appToken,
      logger: silentSlackLogger(),
      clientOptions: { slackApiUrl: slack.apiUrl },
    });
    const events: unknown[] = [];
    const authorizations: unknown[] = [];
    for (const type of ['app_context_changed', 'agent_session_stopped']) {
      socket.on(
        type,
        async ({
          ack,
          event,
          body,
        }: {
          ack: () => Promise<void>;
          event: unknown;
          body: { authorizations?: unknown };
        }) => {
          events.push(event);
          if (type === 'app_context_changed') authorizations.push(body.authorizations);
          await ack();
        },
      );
    }
    try {
      await socket.start();
      await slack.sendSocketEvent(appContextChangedEvent({ viewer: 'U0ALICE', viewing: 'C0VIEWED' }));
      await slack.sendSocketEvent(appContextChangedEvent({ viewer: 'U0ALICE' }));
      await client.agents.sessions.setStatus({
        channel_id: 'D0BOT',
        thread_ts: '9.000001',
        status: 'processing',
      });
      await slack.sendSocketEvent(slack.pressStopButton('D0BOT', '9.000001', 'U0ALICE'));
    } finally {
      await socket.disconnect();
    }

    expect(events).toEqual([
      // Slack's documented payload: no user, channel or event_ts on the event.
      {
        type: 'app_context_changed',
        context: { entities: [{ type: 'slack#/types/channel_id', value: 'C0VIEWED', team_id: 'T0TEAM' }] },
      },
      { type: 'app_context_changed', context: {} },
      expect.objectContaining({
        type: 'agent_session_stopped',
        thread_ts: '9.000001',
        streaming_message_ts: [],
      }),
    ]);
    // The viewer is the envelope's one authorization, a person's.
    const viewer = { team_id: 'T0TEAM', user_id: 'U0ALICE', is_bot: false, is_enterprise_install: false };
    expect(authorizations).toEqual([[expect.objectContaining(viewer)], [expect.objectContaining(viewer)]]);
  });
});

describe('FakeSlack method contracts', () => {
  let slack: FakeSlack;

  afterEach(async () => {
    // The first test starts none.
    await slack?.stop();
  });

  /** Slack's answer to a raw call, whatever it is (WebClient's typed methods would refuse some calls first). */
  async function answer(method: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const response = await fetch(`${slack.apiUrl}${method}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${slack.botToken}`, 'content-type': 'application/json' },
      body: JSON.stringify(args),
    });
    return (await response.json()) as Record<string, unknown>;
  }

  it('are taken from the method reference, whose source and version they name', () => {
    const contracts = loadContracts();
    expect(contracts.source).toMatchObject({
      repository: 'slack-ruby/slack-api-ref',
      commit: 'f4837c0cb6dba1b1122ce66a5b69195ce47213f8',
    });
    expect(contracts.methods['chat.postMessage']).toMatchObject({
      tier: 'special',
      botScopes: ['chat:write'],
    });
    expect(contracts.methods['chat.postMessage']?.errors).toEqual(
      expect.arrayContaining(['rate_limited', 'message_limit_exceeded', 'msg_blocks_too_long']),
    );
    expect(contracts.methods['reactions.remove']).toMatchObject({ tier: 't2', required: ['name'] });
  });

  it('refuse a call without a required argument, with the error the method documents for it, else invalid_arguments', async () => {
    slack = await startFake();
    const root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'hi' });
    const cases: [string, Record<string, unknown>, string, string][] = [
      ['chat.postMessage', { text: 'hi' }, 'channel_not_found', 'channel'],
      [
        'assistant.threads.setStatus',
        { channel_id: 'D1', status: 'thinking' },
        'invalid_thread_ts',
        'thread_ts',
      ],
      ['chat.getPermalink', { channel: 'C1' }, 'invalid_arguments', 'message_ts'],
      ['assistant.threads.setTitle', { channel_id: 'D1', thread_ts: root }, 'invalid_arguments', 'title'],
    ];
    for (const [method, args, error, field] of cases) {
      expect(await answer(method, args), method).toEqual({
        ok: false,
        error,
        response_metadata: { messages: [`[ERROR] missing required field: ${field}`] },
      });
    }
    // An empty status is present: it clears the status line.
    expect(
      await answer('assistant.threads.setStatus', { channel_id: 'D1', thread_ts: root, status: '' }),
    ).toEqual({
      ok: true,
    });
  });

  it('refuse posts where an admin restricted posting: a read-only channel, a locked thread', async () => {
    slack = await startFake();
    const root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'hi' });
    const outcome = async (method: string, args: Record<string, unknown>) =>
      (await answer(method, { text: 'x', ...args })).error ?? 'ok';
    slack.lockThread('C1', root);
    expect(await outcome('chat.postMessage', { channel: 'C1', thread_ts: root })).toBe(
      'restricted_action_thread_locked',
    );
    expect(await outcome('chat.postEphemeral', { channel: 'C1', user: 'U0ALICE', thread_ts: root })).toBe(
      'restricted_action',
    );
    // The channel itself still takes posts.
    expect(await outcome('chat.postMessage', { channel: 'C1' })).toBe('ok');
    expect(await outcome('chat.postEphemeral', { channel: 'C1', user: 'U0ALICE' })).toBe('ok');
    slack.makeReadOnly('C1');
    expect(await outcome('chat.postMessage', { channel: 'C1' })).toBe('restricted_action_read_only_channel');
    expect(await outcome('chat.postEphemeral', { channel: 'C1', user: 'U0ALICE' })).toBe('restricted_action');
    slack.makeReadOnly('C1', false);
    expect(await outcome('chat.postMessage', { channel: 'C1' })).toBe('ok');
  });

  it('refuse every post and change of a message once the workspace reaches its message limit', async () => {
    slack = await startFake();
    const posted = await answer('chat.postMessage', { channel: 'C1', text: 'before' });
    slack.reachMessageLimit();
    const calls: [string, Record<string, unknown>][] = [
      ['chat.postMessage', { channel: 'C1', text: 'x' }],
      ['chat.postEphemeral', { channel: 'C1', user: 'U0ALICE', text: 'x' }],
      ['chat.update', { channel: 'C1', ts: posted.ts, text: 'x' }],
    ];
    for (const [method, args] of calls)
      expect((await answer(method, args)).error, method).toBe('message_limit_exceeded');
    slack.reachMessageLimit(false);
    expect((await answer('chat.postMessage', { channel: 'C1', text: 'after' })).ok).toBe(true);
  });

  it('refuse values outside the limits the reference states', async () => {
    slack = await startFake();
    const root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'hi' });
    const posted = await answer('chat.postMessage', { channel: 'C1', text: 'short' });
    expect(
      await answer('chat.update', { channel: 'C1', ts: posted.ts, text: 'x'.repeat(4001) }),
    ).toMatchObject({
      ok: false,
      error: 'msg_too_long',
    });
    expect(
      await answer('assistant.threads.setStatus', {
        channel_id: 'D1',
        thread_ts: root,
        status: 'thinking',
        loading_messages: Array.from({ length: 11 }, (_, i) => `step ${i}`),
      }),
    ).toMatchObject({ ok: false, error: 'invalid_arguments' });
    expect(await answer('conversations.replies', { channel: 'C1', ts: root, limit: 1001 })).toMatchObject({
      ok: false,
      error: 'invalid_arguments',
    });
    expect(
      await answer('chat.postMessage', { channel: 'C1', markdown_text: 'x'.repeat(12_001) }),
    ).toMatchObject({
      ok: false,
      error: 'invalid_arguments',
    });
    expect(slack.channelMessages('C1').map((m) => m.text)).toEqual(['hi', 'short']);
  });

  it('grant exactly the bot scopes of manifest.yml', async () => {
    slack = await startFake();
    const manifest = parse(readFileSync(new URL('../../manifest.yml', import.meta.url), 'utf8')) as {
      oauth_config: { scopes: { bot: string[] } };
    };
    const auth = await clientFor(slack).auth.test();
    expect([...(auth.response_metadata?.scopes ?? [])].sort()).toEqual(
      [...manifest.oauth_config.scopes.bot].sort(),
    );
    // The bot reads no reactions, so its manifest does not ask for reactions:read.
    expect(DEFAULT_SCOPES).not.toContain('reactions:read');
  });

  it('answer missing_scope with needed and provided for a scope the installed manifest lacks', async () => {
    slack = await startFake({ manifest: new URL('../../manifest.classic.yml', import.meta.url) });
    const root = slack.seedMessage('D1', { user: 'U0ALICE', text: 'hi' });
    expect(
      await answer('assistant.threads.setTitle', { channel_id: 'D1', thread_ts: root, title: 'Trip' }),
    ).toEqual({
      ok: false,
      error: 'missing_scope',
      needed: 'assistant:write',
      provided: slack.grantedScopes.join(','),
    });
    expect(slack.grantedScopes).not.toContain('assistant:write');
    expect(slack.assistantThread('D1', root)).toBeUndefined();
  });

  it('pick the scope a conversation method needs by the kind of conversation', async () => {
    slack = await startFake({
      channels: { G1: { type: 'group' }, D1: { type: 'im', user: 'U0ALICE' } },
    });
    expect(await answer('conversations.info', { channel: 'C1' })).toMatchObject({ ok: true });
    expect(await answer('conversations.info', { channel: 'G1' })).toMatchObject({ ok: true });
    // manifest.yml asks for channels:read and groups:read only.
    expect(await answer('conversations.info', { channel: 'D1' })).toMatchObject({
      ok: false,
      error: 'missing_scope',
      needed: 'im:read',
    });
    await slack.stop();
    slack = await startFake({ scopes: DEFAULT_SCOPES.filter((scope) => scope !== 'users:read') });
    expect(await answer('users.info', { user: 'U0BOT' })).toMatchObject({
      ok: false,
      error: 'missing_scope',
      needed: 'users:read',
    });
  });

  it('let a test inject only errors Slack documents for the method, such as HTTP 200 rate_limited', async () => {
    slack = await startFake();
    const client = clientFor(slack, { retries: 0 });
    expect(() => slack.failNext('chat.postMessage', { type: 'error', error: 'no_such_thing' })).toThrow(
      /documents no error no_such_thing for chat.postMessage/,
    );
    expect(() => slack.failFor('reactions.add', { type: 'error', error: 'rate_limited' }, 1000)).toThrow(
      /documents no error/,
    );
    expect(() => slack.failFor('*', { type: 'error', error: 'message_limit_exceeded' }, 1000)).toThrow(
      /documents no error/,
    );
    slack.failFor('*', { type: 'error', error: 'service_unavailable' }, 1);

    slack.failNextWith('chat.postMessage', 'rate_limited');
    slack.failNextWith('chat.postMessage', 'message_limit_exceeded');
    // HTTP 200 errors: WebClient neither waits nor retries; the caller sees them.
    await expect(client.chat.postMessage({ channel: 'C1', text: 'a' })).rejects.toMatchObject({
      code: ErrorCode.PlatformError,
      data: { ok: false, error: 'rate_limited' },
    });
    await expect(client.chat.postMessage({ channel: 'C1', text: 'b' })).rejects.toMatchObject({
      data: { ok: false, error: 'message_limit_exceeded' },
    });
    expect(slack.channelMessages('C1')).toEqual([]);
  });

  it('call an answer with an error the method does not document a contract violation', () => {
    const contracts = loadContracts();
    expect(undocumentedAnswer(contracts, 'reactions.remove', { ok: false, error: 'is_archived' })).toMatch(
      /reactions.remove answered is_archived/,
    );
    expect(
      undocumentedAnswer(contracts, 'reactions.add', { ok: false, error: 'is_archived' }),
    ).toBeUndefined();
    expect(
      undocumentedAnswer(contracts, 'reactions.remove', { ok: false, error: 'invalid_auth' }),
    ).toBeUndefined();
    expect(undocumentedAnswer(contracts, 'reactions.remove', { ok: true })).toBeUndefined();
  });
});

describe('FakeSlack rate limits', () => {
  let slack: FakeSlack;

  afterEach(async () => {
    vi.useRealTimers();
    await slack.stop();
  });

  it('answer 429 with Retry-After once a method is over its tier in the workspace', async () => {
    slack = await startFake();
    const client = clientFor(slack, { retries: 0, rejectRateLimitedCalls: true });
    const root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'hi' });
    // reactions.remove is Tier 2: 20 a minute.
    for (let i = 0; i < 20; i += 1) {
      await expect(
        client.reactions.remove({ channel: 'C1', timestamp: root, name: 'eyes' }),
      ).rejects.toMatchObject({
        data: { error: 'no_reaction' },
      });
    }
    await expect(
      client.reactions.remove({ channel: 'C1', timestamp: root, name: 'eyes' }),
    ).rejects.toMatchObject({
      code: ErrorCode.RateLimitedError,
      retryAfter: 3,
    });
    // The refused call is recorded as throttled; callsOf and waitForCall/s count what Slack took in.
    expect(slack.calls.filter((c) => c.method === 'reactions.remove')).toHaveLength(21);
    expect(slack.calls.at(-1)?.throttled).toBe(true);
    expect(slack.callsOf('reactions.remove')).toHaveLength(20);
    // Other methods have their own allowance.
    await expect(
      client.reactions.add({ channel: 'C1', timestamp: root, name: 'eyes' }),
    ).resolves.toMatchObject({
      ok: true,
    });
  });

  it('let chat.postMessage post about once a second per channel after a short burst', async () => {
    slack = await startFake();
    // The fake refills its allowances by the clock, which the test moves on.
    vi.useFakeTimers({ toFake: ['Date'] });
    const client = clientFor(slack, { retries: 0, rejectRateLimitedCalls: true });
    const seen: { status: number; retryAfter?: string; body: unknown }[] = [];
    slack.onCall((call, response) => {
      if (call.method === 'chat.postMessage')
        seen.push({
          status: response.status,
          retryAfter: response.headers['retry-after'],
          body: response.body,
        });
    });
    for (let i = 0; i < 4; i += 1) await client.chat.postMessage({ channel: 'C1', text: `burst ${i}` });
    await expect(client.chat.postMessage({ channel: 'C1', text: 'one too many' })).rejects.toMatchObject({
      code: ErrorCode.RateLimitedError,
      retryAfter: 1,
    });
    expect(seen.at(-1)).toEqual({ status: 429, retryAfter: '1', body: { ok: false, error: 'ratelimited' } });
    // Another channel is not affected, and a second later the first takes a post again.
    await client.chat.postMessage({ channel: 'C2', text: 'elsewhere' });
    vi.advanceTimersByTime(900);
    await expect(client.chat.postMessage({ channel: 'C1', text: 'too soon' })).rejects.toMatchObject({
      code: ErrorCode.RateLimitedError,
    });
    vi.advanceTimersByTime(100);
    await client.chat.postMessage({ channel: 'C1', text: 'later' });
    expect(slack.channelMessages('C1').map((m) => m.text)).toEqual([
      'burst 0',
      'burst 1',
      'burst 2',
      'burst 3',
      'later',
    ]);
  });

  it('reads threads once a minute, 15 messages a page, for an app outside the Slack Marketplace', async () => {
    slack = await startFake({ outsideMarketplace: true });
    const client = clientFor(slack, { retries: 0, rejectRateLimitedCalls: true });
    const root = slack.seedMessage('C1', { user: 'U0ALICE', text: 'a long thread' });
    for (let i = 0; i < 20; i += 1) slack.seedMessage('C1', { user: 'U0BOB', text: `${i}`, threadTs: root });
    const page = await client.conversations.replies({ channel: 'C1', ts: root, limit: 200 });
    expect(page.messages).toHaveLength(15);
    expect(page.has_more).toBe(true);
    await expect(client.conversations.replies({ channel: 'C1', ts: root })).rejects.toMatchObject({
      code: ErrorCode.RateLimitedError,
      retryAfter: 60,
    });
    // conversations.history has its own minute; other methods keep their tiers.
    expect((await client.conversations.history({ channel: 'C1', limit: 200 })).messages).toHaveLength(1);
    await client.reactions.add({ channel: 'C1', timestamp: root, name: 'eyes' });
  });

  it('take a per-method override for a test that must exceed Slack', async () => {
    slack = await startFake({
      rateLimits: {
        'chat.postMessage': { perMinute: 6000, burst: 20 },
        'reactions.remove': { perMinute: Number.POSITIVE_INFINITY },
      },
    });
    const client = clientFor(slack, { retries: 0, rejectRateLimitedCalls: true });
    for (let i = 0; i < 20; i += 1) await client.chat.postMessage({ channel: 'C1', text: `${i}` });
    expect(slack.channelMessages('C1')).toHaveLength(20);
    const posted = slack.seedMessage('C1', { text: 'no reactions here', user: 'U0ALICE' });
    for (let i = 0; i < 30; i += 1) {
      await expect(
        client.reactions.remove({ channel: 'C1', timestamp: posted, name: 'eyes' }),
      ).rejects.toMatchObject({ data: { error: 'no_reaction' } });
    }
  });
});

describe('FakeSlack conversations and messages that exist', () => {
  let slack: FakeSlack | undefined;

  afterEach(async () => {
    await slack?.stop();
    slack = undefined;
  });

  // slack-api-ref: chat.postMessage.json and reactions.add.json document channel_not_found ("Value passed for
  // `channel` was invalid."), reactions.add.json and reactions.remove.json message_not_found ("Message
  // specified does not exist.").
  it('knows a conversation once configured or named by an event, and a message once it was posted', async () => {
    slack = await FakeSlack.start({ channels: { C0SET: { name: 'configured' } } });
    slack.allowUnknownTargets();
    const client = clientFor(slack, { retries: 0 });
    const said = async (call: Promise<unknown>) => (await refusal(call)).error;
    expect(await said(client.chat.postMessage({ channel: 'C9', text: 'hello?' }))).toBe('channel_not_found');
    expect(await said(client.reactions.add({ channel: 'C9', timestamp: '1.000001', name: 'eyes' }))).toBe(
      'channel_not_found',
    );
    expect(await said(client.chat.postMessage({ channel: 'U0ALICE', text: 'a DM by user ID' }))).toBe(
      'channel_not_found',
    );
    const { ts: posted } = await client.chat.postMessage({ channel: 'C0SET', text: 'configured' });
    expect(
      await said(client.reactions.remove({ channel: 'C0SET', timestamp: '1.000001', name: 'eyes' })),
    ).toBe('message_not_found');
    expect(await said(client.chat.update({ channel: 'C0SET', ts: '1.000002', text: 'edited' }))).toBe(
      'message_not_found',
    );
    expect(await said(client.chat.delete({ channel: 'C0SET', ts: '1.000003' }))).toBe('message_not_found');
    expect(await said(client.chat.getPermalink({ channel: 'C0SET', message_ts: '1.000004' }))).toBe(
      'message_not_found',
    );

    const mention = appMentionEvent({ channel: 'C9', user: 'U0ALICE', text: '<@U0BOT> hi' });
    slack.ingestEvent(mention);
    await client.reactions.add({ channel: 'C9', timestamp: mention.event.ts, name: 'eyes' });
    expect(await said(client.reactions.add({ channel: 'C9', timestamp: '1.000001', name: 'eyes' }))).toBe(
      'message_not_found',
    );
    const { ts } = await client.chat.postMessage({
      channel: 'C9',
      text: 'hello',
      thread_ts: mention.event.ts,
    });
    await client.reactions.add({ channel: 'C9', timestamp: String(ts), name: 'white_check_mark' });
    await client.reactions.add({ channel: 'C0SET', timestamp: String(posted), name: 'eyes' });

    slack.ingestEvent(channelLifecycleEvent('channel_deleted', { channel: 'C9' }));
    expect(await said(client.chat.postMessage({ channel: 'C9', text: 'anyone?' }))).toBe('channel_not_found');
    // Refused for a missing argument first, as Slack checks arguments before the method runs.
    expect(await said(client.apiCall('reactions.add', { channel: 'C8', timestamp: '1.000001' }))).not.toBe(
      'channel_not_found',
    );
    // What stop() would fail on: neither the deleted channel (the bot may race its deletion) nor the call
    // refused for another reason.
    expect(slack.unknownTargets).toEqual([
      'chat.postMessage C9',
      'reactions.add C9',
      'chat.postMessage U0ALICE',
      'reactions.remove C0SET 1.000001',
      'chat.update C0SET 1.000002',
      'chat.delete C0SET 1.000003',
      'chat.getPermalink C0SET 1.000004',
      'reactions.add C9 1.000001',
    ]);
  });

  it('keeps a deleted message deleted when Slack delivers its event again', async () => {
    slack = await FakeSlack.start({ channels: { C1: {} } });
    const deletion = (deletedTs: string) => ({
      type: 'event_callback',
      event: {
        type: 'message',
        subtype: 'message_deleted',
        channel: 'C1',
        deleted_ts: deletedTs,
        ts: nextTs(),
      },
    });
    const mention = appMentionEvent({ channel: 'C1', user: 'U0ALICE', text: '<@U0BOT> oops' });
    slack.ingestEvent(mention);
    slack.ingestEvent(deletion(mention.event.ts));
    slack.ingestEvent(mention); // a retry of the first delivery
    // A deletion of a message the fake never held, then a delivery of that message: it stays deleted.
    const early = appMentionEvent({ channel: 'C1', user: 'U0ALICE', text: '<@U0BOT> never mind' });
    slack.ingestEvent(deletion(early.event.ts));
    slack.ingestEvent(early);
    expect(slack.channelMessages('C1')).toEqual([]);
    const client = clientFor(slack, { retries: 0 });
    expect(
      (await refusal(client.reactions.add({ channel: 'C1', timestamp: mention.event.ts, name: 'eyes' })))
        .error,
    ).toBe('message_not_found');
  });

  it('fails its stop when asked about what it was never told of, as when an event went past it', async () => {
    const fake = await FakeSlack.start();
    await refusal(clientFor(fake, { retries: 0 }).chat.postMessage({ channel: 'C0NEVER', text: 'hello?' }));
    await expect(fake.stop()).rejects.toThrow(/never told of[\s\S]*chat\.postMessage C0NEVER/);
  });
});
