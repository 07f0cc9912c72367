import { describe, expect, it } from 'vitest';
import { EDIT_WHILE_SENDING_NOTICE } from '../../src/conversation/notices.js';
import { appMentionEvent, messageEditedEvent, messageEvent, nextTs } from '../helpers/slack-events.js';
import { AGENT_ID, mention } from '../helpers/stack.js';
import { sleep, waitFor } from '../helpers/wait.js';
import {
  aliceEdited,
  CHANNEL,
  channelMessage,
  postsIn,
  promptsSent,
  send,
  startedBeforeSession,
  textOf,
  useStack,
} from './conversation-support.js';

describe('threads, DMs and what is relayed', () => {
  const stack = useStack();

  it('relays later replies in a thread the bot is part of without a new mention', async () => {
    const { slack, bot } = stack;
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> start', ts: root });
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    await send(bot, channelMessage({ user: 'U0ALICE', text: 'follow up', threadTs: root }));
    const reply = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('follow up'),
    );
    expect(textOf(reply)).toMatch(/^echo\[(s-\d+)#2\]: follow up$/);
  });

  it('ignores threads it is not part of and top-level messages without a mention', async () => {
    const { slack, agent, bot } = stack;
    const before = agent.requests.length;
    const strangers = nextTs();
    await send(bot, channelMessage({ user: 'U0BOB', text: 'not for you', threadTs: strangers }));
    await send(bot, channelMessage({ user: 'U0BOB', text: 'top level chatter' }));
    await sleep(300);
    expect(agent.requests.length).toBe(before);
    expect(postsIn(slack, CHANNEL, strangers)).toHaveLength(0);
  });

  it('treats a 1:1 DM as one continuing conversation at the top level, and a DM thread as its own', async () => {
    const { slack, agent, bot } = stack;
    const dm = 'D0ALICE';
    await send(bot, messageEvent({ channel: dm, channelType: 'im', user: 'U0ALICE', text: 'hi in dm' }));
    const first = await slack.waitForCall('chat.postMessage', (c) => c.args.channel === dm);
    expect(first.args.thread_ts).toBeUndefined();
    const dmSession = /^echo\[(s-\d+)#1\]/.exec(textOf(first))?.[1];
    expect(dmSession).toBeDefined();
    await send(bot, messageEvent({ channel: dm, channelType: 'im', user: 'U0ALICE', text: 'second dm' }));
    const second = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.channel === dm && textOf(c).includes('second'),
    );
    expect(textOf(second)).toBe(`echo[${dmSession}#2]: second dm`);

    const dmThread = first.args.thread_ts ?? nextTs();
    await send(
      bot,
      messageEvent({
        channel: dm,
        channelType: 'im',
        user: 'U0ALICE',
        text: 'in a dm thread',
        threadTs: String(dmThread),
      }),
    );
    const threaded = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.channel === dm && textOf(c).includes('dm thread'),
    );
    expect(threaded.args.thread_ts).toBe(dmThread);
    expect(textOf(threaded)).not.toContain(dmSession);
    expect(textOf(threaded)).toMatch(/#1\]: in a dm thread$/);
    expect(agent.sessionsOf(AGENT_ID).length).toBeGreaterThanOrEqual(2);
  });

  it('treats a group DM like a channel: a mention starts, chatter without one is ignored', async () => {
    const { slack, agent, bot } = stack;
    const mpim = 'G0GROUPDM';
    const before = agent.requests.length;
    await send(
      bot,
      messageEvent({ channel: mpim, channelType: 'mpim', user: 'U0BOB', text: 'just us humans' }),
    );
    await sleep(200);
    expect(agent.requests.length).toBe(before);
    const root = nextTs();
    await send(
      bot,
      appMentionEvent({ channel: mpim, user: 'U0BOB', text: '<@U0BOT> hello group', ts: root }),
    );
    const reply = await slack.waitForCall('chat.postMessage', (c) => c.args.channel === mpim);
    expect(reply.args.thread_ts).toBe(root);
  });

  it('never relays bot messages, its own messages or non-message subtypes', async () => {
    const { agent, bot } = stack;
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> thread for noise', ts: root });
    await waitFor(() => promptsSent(agent).includes('thread for noise'), 'first prompt');
    const before = agent.requests.length;
    const noise = [
      channelMessage({ text: 'beep', botId: 'B0OTHER', subtype: 'bot_message', threadTs: root }),
      channelMessage({ user: 'U0OTHERBOT', text: 'robot', botId: 'B0OTHER', threadTs: root }),
      channelMessage({ user: 'U0BOT', text: 'my own words', threadTs: root }),
      channelMessage({ user: 'U0BOB', text: '<@U0BOB> has joined', subtype: 'channel_join', threadTs: root }),
      channelMessage({ text: '', subtype: 'message_deleted', threadTs: root, extra: { deleted_ts: root } }),
      appMentionEvent({
        channel: CHANNEL,
        user: 'U0OTHERBOT',
        text: '<@U0BOT> bots talking',
        threadTs: root,
      }),
      channelMessage({
        user: 'U0OTHERBOT',
        text: 'broadcast by a bot',
        subtype: 'thread_broadcast',
        botId: 'B0OTHER',
        threadTs: root,
      }),
      channelMessage({
        user: 'U0OTHERBOT',
        text: 'a file from a bot',
        subtype: 'file_share',
        botId: 'B0OTHER',
        threadTs: root,
      }),
    ];
    (noise[5]?.event as Record<string, unknown>).bot_id = 'B0OTHER';
    for (const body of noise) expect((await send(bot, body)).status).toBe(200);
    await sleep(300);
    expect(agent.requests.length).toBe(before);
  });

  it('tells the author once that an edit of a relayed prompt is not re-sent, and ignores unfurls', async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> original words', ts: root });
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    const edit = (newText: string, oldText: string) => aliceEdited(root, newText, oldText);
    await send(bot, edit('<@U0BOT> original words', '<@U0BOT> original words')); // unfurl: same text
    await send(bot, edit('<@U0BOT> better words', '<@U0BOT> original words'));
    await send(bot, edit('<@U0BOT> best words', '<@U0BOT> better words'));
    await slack.waitForCall('chat.postEphemeral', (c) =>
      String(c.args.text).includes('edits are not re-sent'),
    );
    await sleep(300);
    const notices = slack
      .callsOf('chat.postEphemeral')
      .filter((c) => String(c.args.text).includes('edits are not re-sent'));
    expect(notices).toHaveLength(1);
    expect(notices[0]?.args).toMatchObject({ user: 'U0ALICE', channel: CHANNEL });
    const seen = slack.visibleEphemerals('U0ALICE', { channel: CHANNEL });
    expect(seen.filter((m) => m.text?.includes('edits are not re-sent'))).toHaveLength(1);
    expect(promptsSent(agent).filter((p) => p?.includes('words'))).toEqual(['original words']);
  });

  it('tells the author that an edit made while their message was being passed on is not sent either', async () => {
    const { slack, agent, bot } = stack;
    // The thread's session is still being made when the edit comes: the job has started, the prompt not left.
    const { root, sessionMade } = await startedBeforeSession(stack, 'first draft');
    await send(bot, aliceEdited(root, '<@U0BOT> final draft', '<@U0BOT> first draft'));
    const notice = await slack.waitForCall(
      'chat.postEphemeral',
      (c) => c.args.user === 'U0ALICE' && String(c.args.text).includes('edits are not sent'),
    );
    sessionMade();
    expect(String(notice.args.text)).toBe(EDIT_WHILE_SENDING_NOTICE);
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('draft'),
    );
    expect(promptsSent(agent).filter((p) => p?.includes('draft'))).toEqual(['first draft']);
  });

  it('relays the text of a message with files and says attachments are not forwarded', async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    const body = appMentionEvent({
      channel: CHANNEL,
      user: 'U0ALICE',
      text: '<@U0BOT> see attached',
      ts: root,
    });
    (body.event as Record<string, unknown>).files = [
      { id: 'F1', name: 'report.pdf', mimetype: 'application/pdf' },
    ];
    await send(bot, body);
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    // Said before the answer, while the thread has no replies: Alice must see it all the same.
    await slack.waitForVisibleEphemeral('U0ALICE', { channel: CHANNEL }, (m) =>
      Boolean(m.text?.includes('attachments are not forwarded')),
    );
    expect(promptsSent(agent)).toContain('see attached');
  });

  it('sends prompts as people wrote them: names, links and entities resolved', async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    await mention(bot, {
      channel: CHANNEL,
      text: '<@U0BOT> ask <@U0ALICE> about <https://example.com/x|the doc> &amp; &lt;this&gt;',
      ts: root,
    });
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    expect(promptsSent(agent)).toContain('ask @alice about the doc (https://example.com/x) & <this>');
  });

  it('answers an over-long prompt with a clear reply instead of cutting it', async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    const before = agent.requests.length;
    await mention(bot, { channel: CHANNEL, text: `<@U0BOT> ${'x'.repeat(8_001)}`, ts: root });
    const reply = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    expect(textOf(reply)).toMatch(/8,001 characters long; I can pass on at most 8,000/);
    expect(agent.requests.length).toBe(before);
  });
});

describe('correctness under real Slack delivery', () => {
  const stack = useStack();
  /** Mentions the bot with `stop` in the thread; its notice there. */
  const sayStop = async (root: string) => {
    await mention(stack.bot, { channel: CHANNEL, text: '<@U0BOT> stop', threadTs: root });
    return stack.slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('Stopped'),
    );
  };

  it('relays a message once across retries and its double delivery as app_mention and message', async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> first', ts: root });
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);

    const ts = nextTs();
    const asMention = appMentionEvent({
      channel: CHANNEL,
      user: 'U0ALICE',
      text: '<@U0BOT> only once',
      ts,
      threadTs: root,
    });
    const asMessage = channelMessage({ user: 'U0ALICE', text: '<@U0BOT> only once', ts, threadTs: root });
    await Promise.all([
      send(bot, asMention),
      send(bot, asMessage),
      send(bot, asMention, { retryNum: 1 }),
      send(bot, asMention, { retryNum: 2 }),
    ]);
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('only once'),
    );
    await sleep(300);
    expect(promptsSent(agent).filter((p) => p === 'only once')).toHaveLength(1);
    expect(postsIn(slack, CHANNEL, root).filter((c) => textOf(c).includes('only once'))).toHaveLength(1);
  });

  it('creates one session when two messages of a new thread arrive at once, and answers them in order', async () => {
    const { slack, agent, bot } = stack;
    agent.setLatency(150, 'sendMessage');
    const root = nextTs();
    const sessionsBefore = agent.requestsFor('createSession').length;
    await Promise.all([
      mention(bot, { channel: CHANNEL, text: '<@U0BOT> one', ts: root }),
      mention(bot, { channel: CHANNEL, text: '<@U0BOT> two', threadTs: root }),
    ]);
    const replies = await slack.waitForCalls('chat.postMessage', 2, (c) => c.args.thread_ts === root, 5_000);
    agent.setLatency(0, 'sendMessage');
    expect(agent.requestsFor('createSession').length - sessionsBefore).toBe(1);
    const session = /^echo\[(s-\d+)#1\]/.exec(textOf(replies[0]!))?.[1];
    expect(textOf(replies[1]!)).toMatch(new RegExp(`^echo\\[${session}#2\\]`));
    // Replies come back in the order the prompts reached the agent, never interleaved.
    const sent = agent
      .requestsFor('sendMessage')
      .filter((r) => r.sessionId === session)
      .map((r) => r.prompt);
    expect(replies.map((reply) => textOf(reply).replace(/^echo\[s-\d+#\d\]: /, ''))).toEqual(sent);
    expect(agent.maxConcurrentSends(session)).toBe(1);
  });

  it('queues a message sent while the thread is busy, shows it is queued, and answers it after', async () => {
    const { slack, agent, bot } = stack;
    agent.setLatency(600, 'sendMessage');
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> slow question', ts: root });
    await slack.waitForCall('reactions.add', (c) => c.args.timestamp === root && c.args.name === 'eyes');
    const queuedTs = nextTs();
    await send(
      bot,
      channelMessage({ user: 'U0ALICE', text: 'while you think', ts: queuedTs, threadTs: root }),
    );
    await slack.waitForCall(
      'reactions.add',
      (c) => c.args.timestamp === queuedTs && c.args.name === 'hourglass_flowing_sand',
    );
    const replies = await slack.waitForCalls('chat.postMessage', 2, (c) => c.args.thread_ts === root, 5_000);
    agent.setLatency(0, 'sendMessage');
    expect(replies.map(textOf).map((t) => t.replace(/^echo\[s-\d+#\d\]: /, ''))).toEqual([
      'slow question',
      'while you think',
    ]);
    await waitFor(
      () =>
        slack.reactionsOn(CHANNEL, queuedTs).length === 0 && slack.reactionsOn(CHANNEL, root).length === 0,
      'indicators cleared',
    );
  });

  it('"stop" cancels the queued messages of a thread and drops the answer in progress; the next message goes on', async () => {
    const { slack, agent, bot } = stack;
    const answer = agent.holdAnswerTo('long task');
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> long task', ts: root });
    await slack.waitForCall('reactions.add', (c) => c.args.timestamp === root && c.args.name === 'eyes');
    // The stop comes while the agent computes: the prompt has reached it, its answer waits for the stop.
    await waitFor(() => promptsSent(agent).includes('long task'), 'prompt received');
    const queued = [nextTs(), nextTs()];
    for (const [i, ts] of queued.entries()) {
      await send(bot, channelMessage({ user: 'U0ALICE', text: `queued ${i}`, ts, threadTs: root }));
    }
    for (const ts of queued) {
      await slack.waitForCall(
        'reactions.add',
        (c) => c.args.timestamp === ts && c.args.name === 'hourglass_flowing_sand',
      );
    }
    const stopped = await sayStop(root);
    expect(textOf(stopped)).toBe(
      ':octagonal_sign: Stopped: cancelled 2 queued messages and dropped the answer I was waiting for. The agent had already received that message and may have acted on it; the next message here continues the conversation.',
    );
    // The agent answers the prompt it had received; the answer is not posted.
    answer();
    await waitFor(
      () => agent.requestsFor('sendMessage').some((r) => r.prompt === 'long task' && r.status === 200),
      'agent answered',
    );
    await waitFor(() => slack.reactionsOn(CHANNEL, root).length === 0, 'working indicator cleared');
    expect(postsIn(slack, CHANNEL, root).filter((c) => textOf(c).includes('long task'))).toEqual([]);
    // The next message is answered as usual, in the same session.
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> after the stop', threadTs: root });
    const next = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('after the stop'),
    );
    expect(textOf(next)).toMatch(/^echo\[s-\d+#2\]: after the stop$/);
    await sleep(300);
    expect(promptsSent(agent)).not.toContain('queued 0');
    expect(promptsSent(agent)).not.toContain('queued 1');
    expect(promptsSent(agent)).not.toContain('stop');
    await waitFor(
      () => queued.every((ts) => slack.reactionsOn(CHANNEL, ts).length === 0),
      'queued indicators cleared',
    );

    // A Slack retry of a cancelled message does not bring it back.
    await send(bot, channelMessage({ user: 'U0ALICE', text: 'queued 0', ts: queued[0], threadTs: root }), {
      retryNum: 1,
    });
    await sleep(300);
    expect(promptsSent(agent)).not.toContain('queued 0');
  });

  it('"stop" before the prompt has left cancels it: the agent never gets it, and the notice says so', async () => {
    const { slack, agent, bot } = stack;
    // The thread's session is still being made when the stop comes, so the prompt has not been sent.
    const { root, sessionMade } = await startedBeforeSession(stack, 'never mind this');
    const stopped = await sayStop(root);
    sessionMade();
    expect(textOf(stopped)).toBe(
      ':octagonal_sign: Stopped: cancelled the message I was about to send. The agent never received it.',
    );
    await waitFor(() => slack.reactionsOn(CHANNEL, root).length === 0, 'working indicator cleared');
    expect(promptsSent(agent)).not.toContain('never mind this');
    // The next message is the conversation's first prompt.
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> the real question', threadTs: root });
    const next = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('the real question'),
    );
    expect(textOf(next)).toMatch(/^echo\[s-\d+#1\]: the real question$/);
  });

  it('takes "stop" and "reset" said in its thread without a mention as words for the agent, not commands', async () => {
    const { slack, agent, bot } = stack;
    agent.setLatency(400, 'sendMessage');
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> long task', ts: root });
    await slack.waitForCall('reactions.add', (c) => c.args.timestamp === root && c.args.name === 'eyes');
    const queuedTs = nextTs();
    await send(bot, channelMessage({ user: 'U0ALICE', text: 'still queued', ts: queuedTs, threadTs: root }));
    for (const text of ['stop', 'reset']) {
      await send(bot, channelMessage({ user: 'U0ALICE', text, threadTs: root }));
    }
    const replies = await slack.waitForCalls('chat.postMessage', 4, (c) => c.args.thread_ts === root, 8_000);
    agent.setLatency(0, 'sendMessage');
    // Nothing was cancelled or reset: every message reached the agent, in order, in one session.
    const texts = replies.map(textOf);
    expect(texts.map((t) => t.replace(/^echo\[s-\d+#(\d+)\]: /, '#$1 '))).toEqual([
      '#1 long task',
      '#2 still queued',
      '#3 stop',
      '#4 reset',
    ]);
    expect(new Set(texts.map((t) => /^echo\[(s-\d+)#/.exec(t)?.[1])).size).toBe(1);
  });

  it('sends the edited words of a message that was still waiting in its queue', async () => {
    const { slack, agent, bot } = stack;
    // The first message is answered once the second was edited, however slow the machine.
    const answer = agent.holdAnswerTo('busy now');
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> busy now', ts: root });
    await slack.waitForCall('reactions.add', (c) => c.args.timestamp === root && c.args.name === 'eyes');
    const waitingTs = nextTs();
    await send(bot, channelMessage({ user: 'U0ALICE', text: 'teh typo', ts: waitingTs, threadTs: root }));
    await send(
      bot,
      messageEditedEvent({
        channel: CHANNEL,
        user: 'U0ALICE',
        ts: waitingTs,
        threadTs: root,
        newText: 'the fix',
        oldText: 'teh typo',
      }),
    );
    answer();
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).endsWith('the fix'),
    );
    expect(promptsSent(agent)).not.toContain('teh typo');
  });

  it('starts a new session once when the service lost the old one, says so, and answers', async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> remember', ts: root });
    const first = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    const lost = /^echo\[(s-\d+)#1\]/.exec(textOf(first))?.[1] ?? '';
    const deleted = await fetch(`${agent.baseUrl}/session/${AGENT_ID}/${lost}`, {
      method: 'DELETE',
      headers: { private_key: agent.apiKey },
    });
    expect(deleted.status).toBe(200);
    // Slack holds the notice back once (a channel's posts are limited to about one a second): the answer,
    // which the agent gives at once, still comes after the notice that explains it.
    slack.failNext('chat.postMessage', { type: 'rate_limited', retryAfterSeconds: 1 }, 1, (args) =>
      String(args.text).includes('started a new one'),
    );

    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> still there?', threadTs: root });
    // In the order Slack shows them in the thread, not the order of attempts.
    const shown = await waitFor(() => {
      const texts = slack
        .channelMessages(CHANNEL)
        .filter((m) => m.thread_ts === root)
        .map((m) => m.text);
      const notice = texts.findIndex((text) => text.includes('started a new one'));
      const answer = texts.findIndex((text) => text.includes('still there?') && text.startsWith('echo'));
      return notice >= 0 && answer >= 0 && { notice, answer, answerText: texts[answer] ?? '' };
    }, 'the notice and the answer in the thread');
    expect(shown.notice).toBeLessThan(shown.answer);
    expect(shown.answerText).toMatch(/^echo\[s-\d+#1\]: still there\?$/);
    expect(shown.answerText).not.toContain(`${lost}#`);

    // A service that keeps losing sessions gets one retry, then a readable failure, not a loop.
    agent.injectFailure(
      'sendMessage',
      { type: 'http', status: 404, body: { status: false, message: 'Session not found' } },
      2,
    );
    const creates = agent.requestsFor('createSession').length;
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> again', threadTs: root });
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('refused this request'),
    );
    expect(agent.requestsFor('createSession').length - creates).toBe(1);
  });

  it('a stop while a lost session is being replaced says the agent never received the message, which is never sent', async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> hello', ts: root });
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    // The service lost the session: the next prompt is refused unrun, and a new session is made for it.
    agent.injectFailure('sendMessage', {
      type: 'http',
      status: 404,
      body: { status: false, message: 'Session not found' },
    });
    const replacementMade = agent.holdSessionCreation();
    const creates = agent.requestsFor('createSession').length;
    const lost = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> lost then stopped', ts: lost, threadTs: root });
    await waitFor(() => agent.requestsFor('createSession').length > creates, 'the replacement being made');
    const stopped = await sayStop(root);
    replacementMade();
    expect(textOf(stopped)).toBe(
      ':octagonal_sign: Stopped: cancelled the message I was about to send. The agent never received it.',
    );
    // The new session is made; the stopped message is not sent to it: once, to the lost session, refused unrun.
    await waitFor(
      () =>
        agent
          .requestsFor('createSession')
          .slice(creates)
          .every((r) => r.status !== null),
      'the replacement made',
    );
    await sleep(500);
    expect(promptsSent(agent).filter((p) => p === 'lost then stopped')).toHaveLength(1);
  });

  it('answers 20 threads concurrently when the agent is slow', async () => {
    const { slack, agent, bot } = stack;
    // Two seconds each, so the 20 prompts overlap even when a busy machine spreads their arrival.
    agent.setLatency(2_000, 'sendMessage');
    const roots = Array.from({ length: 20 }, () => nextTs());
    // One thread per channel: Slack takes about one post a second per channel, so 20 answers in one channel
    // would measure Slack's pacing, not the bot's concurrency.
    const channelOf = (i: number) => `${CHANNEL}${String(i).padStart(2, '0')}`;
    const started = Date.now();
    await Promise.all(
      roots.map((ts, i) => mention(bot, { channel: channelOf(i), text: `<@U0BOT> parallel ${i}`, ts })),
    );
    await Promise.all(
      roots.map((ts, i) =>
        slack.waitForCall(
          'chat.postMessage',
          (c) => c.args.channel === channelOf(i) && c.args.thread_ts === ts,
          10_000,
        ),
      ),
    );
    const elapsed = Date.now() - started;
    agent.setLatency(0, 'sendMessage');
    // 20 sequential answers would take 40 s, two at a time 20 s, four at a time 10 s; about 2.7 s alone.
    expect(elapsed).toBeLessThan(10_000);
    expect(agent.maxInFlight).toBeGreaterThanOrEqual(10);
  });

  it('waits out Slack rate limits instead of dropping the reply', async () => {
    const { slack, bot } = stack;
    const root = nextTs();
    // Only this thread's post is refused: posts other tests still make must not use up the failure.
    slack.failNext(
      'chat.postMessage',
      { type: 'rate_limited', retryAfterSeconds: 1 },
      1,
      (args) => args.thread_ts === root,
    );
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> rate limited', ts: root });
    // The fake records the refused attempt too: wait for the attempt after it.
    const [refused, accepted] = await slack.waitForCalls(
      'chat.postMessage',
      2,
      (c) => c.args.thread_ts === root,
      10_000,
    );
    expect(accepted && textOf(accepted)).toMatch(/: rate limited$/);
    // Retried once Retry-After had passed, not at once.
    expect((accepted?.at ?? 0) - (refused?.at ?? 0)).toBeGreaterThanOrEqual(950);
  });
});
