import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type SlackApiCall } from '../fakes/slack.js';
import { freshDataDir, type TempDataDir } from '../helpers/embedded-store.js';
import { appMentionEvent, messageEvent, nextTs, postSignedEvent } from '../helpers/slack-events.js';
import { AGENT_ID, mention, type RunningBot, SIGNING_SECRET, startBot } from '../helpers/stack.js';
import { sleep, waitFor } from '../helpers/wait.js';

const CHANNEL = 'C0CONVO';

/** One fake Slack, one agent emulator and one bot for a group of tests; each test uses its own threads. */
function useStack(env: Record<string, string> = {}) {
  const stack = {} as {
    slack: FakeSlack;
    agent: AgentServiceEmulator;
    bot: RunningBot;
    dataDir: TempDataDir;
  };
  beforeAll(async () => {
    stack.dataDir = await freshDataDir();
    stack.slack = await FakeSlack.start({
      users: { U0ALICE: { name: 'alice', realName: 'Alice Liddell' }, U0BOB: { name: 'bob' } },
    });
    stack.agent = await AgentServiceEmulator.start();
    stack.bot = await startBot({
      slack: stack.slack,
      agent: stack.agent,
      store: { kind: 'embedded', dataDir: stack.dataDir.path },
      env,
    });
  });
  afterAll(async () => {
    await stack.bot.stop();
    await Promise.all([stack.slack.stop(), stack.agent.stop(), stack.dataDir.remove()]);
  });
  return stack;
}

function send(bot: RunningBot, body: unknown, options?: { retryNum?: number }) {
  return postSignedEvent(bot.eventsUrl, SIGNING_SECRET, body, options);
}

const postsIn = (slack: FakeSlack, channel: string, threadTs: string | undefined) =>
  slack
    .callsOf('chat.postMessage')
    .filter((c) => c.args.channel === channel && c.args.thread_ts === threadTs);
const textOf = (call: SlackApiCall) => String(call.args.text);
/** A message in the test channel, as Slack's `message.channels` event delivers it. */
const channelMessage = (fields: Omit<Parameters<typeof messageEvent>[0], 'channel' | 'channelType'>) =>
  messageEvent({ channel: CHANNEL, channelType: 'channel', ...fields });

const promptsSent = (agent: AgentServiceEmulator) => agent.requestsFor('sendMessage').map((r) => r.prompt);

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
    const edit = (newText: string, oldText: string) =>
      channelMessage({
        text: '',
        subtype: 'message_changed',
        extra: {
          hidden: true,
          message: {
            type: 'message',
            user: 'U0ALICE',
            text: newText,
            ts: root,
            edited: { user: 'U0ALICE', ts: nextTs() },
          },
          previous_message: { type: 'message', user: 'U0ALICE', text: oldText, ts: root },
        },
      });
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
    agent.setLatency(700, 'sendMessage');
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> long task', ts: root });
    await slack.waitForCall('reactions.add', (c) => c.args.timestamp === root && c.args.name === 'eyes');
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
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> stop', threadTs: root });
    const stopped = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('Stopped'),
    );
    expect(textOf(stopped)).toBe(
      ':octagonal_sign: Stopped: cancelled 2 queued messages and dropped the answer I was waiting for. The agent had already received that message and may have acted on it; the next message here continues the conversation.',
    );
    // The agent answered the prompt it had received; the answer is not posted.
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
      5_000,
    );
    expect(textOf(next)).toMatch(/^echo\[s-\d+#2\]: after the stop$/);
    await sleep(900);
    agent.setLatency(0, 'sendMessage');
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
    agent.setLatency(500, 'sendMessage');
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> busy now', ts: root });
    await slack.waitForCall('reactions.add', (c) => c.args.timestamp === root && c.args.name === 'eyes');
    const waitingTs = nextTs();
    await send(bot, channelMessage({ user: 'U0ALICE', text: 'teh typo', ts: waitingTs, threadTs: root }));
    await send(
      bot,
      channelMessage({
        text: '',
        subtype: 'message_changed',
        extra: {
          hidden: true,
          message: { type: 'message', user: 'U0ALICE', text: 'the fix', ts: waitingTs, thread_ts: root },
          previous_message: {
            type: 'message',
            user: 'U0ALICE',
            text: 'teh typo',
            ts: waitingTs,
            thread_ts: root,
          },
        },
      }),
    );
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).endsWith('the fix'),
    );
    agent.setLatency(0, 'sendMessage');
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

    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> still there?', threadTs: root });
    const notice = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('started a new one'),
    );
    const answer = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('still there?'),
    );
    expect(notice.at).toBeLessThanOrEqual(answer.at);
    expect(textOf(answer)).toMatch(/^echo\[s-\d+#1\]: still there\?$/);
    expect(textOf(answer)).not.toContain(`${lost}#`);

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

  it('answers 20 threads concurrently when the agent is slow', async () => {
    const { slack, agent, bot } = stack;
    agent.setLatency(1_000, 'sendMessage');
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
    expect(elapsed).toBeLessThan(3_000); // 20 sequential answers would take 20 s
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

describe('replies', () => {
  const stack = useStack({ SLOW_NOTICE_MS: '300' });

  it('delivers a 12,000-character Markdown reply with code blocks whole, in order and within Slack limits', async () => {
    const { slack, agent, bot } = stack;
    const sections = Array.from({ length: 16 }, (_, i) =>
      [
        `## Section ${i}`,
        `Some **bold** and _italic_ text with a [link](https://example.com/${i}). ${'Filler words. '.repeat(20)}`,
        '```ts',
        ...Array.from(
          { length: 14 },
          (_, line) => `const value${i}_${line} = compute(${line}); // step ${line}`,
        ),
        '```',
      ].join('\n\n'),
    );
    const markdown = sections.join('\n\n');
    expect(markdown.length).toBeGreaterThan(12_000);
    agent.setReplyFn(() => markdown);
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> write a lot', ts: root });
    await waitFor(
      () => postsIn(slack, CHANNEL, root).length >= 2 && slack.reactionsOn(CHANNEL, root).length === 0,
      'reply delivered',
    );
    agent.setReplyFn(({ sessionId, turn, prompt }) => `echo[${sessionId}#${turn}]: ${prompt}`);
    const parts = postsIn(slack, CHANNEL, root);
    let delivered = '';
    for (const part of parts) {
      const all = part.args.blocks as { type: string; text: string }[];
      // The answer's last message ends with its feedback buttons; the rest is Markdown.
      expect(all.filter((b) => b.type === 'context_actions')).toHaveLength(part === parts.at(-1) ? 1 : 0);
      const blocks = all.filter((b) => b.type === 'markdown');
      const blockChars = blocks.reduce((sum, block) => sum + block.text.length, 0);
      expect(blockChars).toBeLessThanOrEqual(12_000);
      expect(blocks.length).toBeLessThanOrEqual(50);
      expect(textOf(part).length).toBeLessThanOrEqual(40_000);
      expect(
        (
          blocks
            .map((b) => b.text)
            .join('\n')
            .match(/^```/gm) ?? []
        ).length % 2,
      ).toBe(0);
      delivered += `${blocks.map((b) => b.text).join('\n')}\n\n`;
    }
    expect(delivered.replace(/\s+/g, ' ').trim()).toBe(markdown.replace(/\s+/g, ' ').trim());
  });

  it('delivers a long answer with a table as Markdown and a real table, every message taken by Slack', async () => {
    const { slack, agent, bot } = stack;
    const paragraph = (i: number) => `Point ${i} of R&D: ${'the <budget> holds & grows. '.repeat(12)}`.trim();
    const before = Array.from({ length: 24 }, (_, i) => paragraph(i));
    const after = Array.from({ length: 10 }, (_, i) => paragraph(100 + i));
    const header = ['Team', 'Owner', 'Plan for the quarter'];
    const body = Array.from({ length: 40 }, (_, i) => [
      `Team ${i}`,
      `Person ${i}`,
      `Ship part ${i} & ${'review it carefully, '.repeat(5).trim()}`,
    ]);
    const table = [header, header.map(() => '---'), ...body]
      .map((row) => `| ${row.join(' | ')} |`)
      .join('\n');
    const markdown = [...before, table, ...after].join('\n\n');
    agent.setReplyFn(() => markdown);
    const ask = '<@U0BOT> the plan, in full';
    // The question is in the channel, as in Slack, so the thread holds what was posted in it.
    const root = slack.seedMessage(CHANNEL, { user: 'U0ALICE', text: ask, ts: nextTs() });
    const refusals: unknown[] = [];
    const stopListening = slack.onCall((call, response) => {
      const answer = response.body as { ok?: boolean; error?: unknown };
      if (call.method === 'chat.postMessage' && call.args.thread_ts === root && answer.ok === false) {
        refusals.push(answer.error);
      }
    });
    try {
      await mention(bot, { channel: CHANNEL, text: ask, ts: root });
      await waitFor(
        () =>
          slack.reactionsOn(CHANNEL, root).length === 0 &&
          slack.threadMessages(CHANNEL, root).some((m) => JSON.stringify(m).includes('Point 109')) &&
          !slack.threadMessages(CHANNEL, root).some((m) => m.text.includes('taking a while')),
        'answer delivered',
      );
    } finally {
      stopListening();
      agent.setReplyFn(({ sessionId, turn, prompt }) => `echo[${sessionId}#${turn}]: ${prompt}`);
    }
    // Slack took every post of the answer: none was refused and sent again as plain text.
    expect(refusals).toEqual([]);
    const shown = slack.threadMessages(CHANNEL, root).filter((m) => m.bot_id !== undefined);
    expect(shown.length).toBeGreaterThan(1);
    type Block = { type: string; text?: string; rows?: { text: string }[][] };
    const blocks = shown.flatMap((m) => (m.blocks ?? []) as Block[]);
    expect(shown.every((m) => (m.blocks ?? []).length > 0)).toBe(true);
    // The table is one table block with every cell; the prose is in markdown blocks, unescaped.
    const tables = blocks.filter((b) => b.type === 'table');
    expect(tables).toHaveLength(1);
    expect(tables[0]?.rows?.map((row) => row.map((cell) => cell.text))).toEqual([header, ...body]);
    expect(blocks.map((b) => b.type).filter((type) => type !== 'markdown' && type !== 'table')).toEqual([
      'context_actions',
    ]);
    const prose = blocks
      .filter((b) => b.type === 'markdown')
      .map((b) => b.text)
      .join('\n\n');
    expect(prose).not.toContain('&amp;');
    expect(prose).not.toContain('| Team');
    // Everything arrives, in order: the prose before the table, the table, the prose after it.
    const order = blocks.flatMap((b) =>
      b.type === 'table' ? ['[table]'] : b.type === 'markdown' ? (b.text ?? '').split('\n\n') : [],
    );
    expect(order).toEqual([...before, '[table]', ...after]);
  });

  it('shows a plain notice in the thread: help for a bare mention, taken by Slack at the first post', async () => {
    const { slack, bot } = stack;
    const root = slack.seedMessage(CHANNEL, { user: 'U0ALICE', text: '<@U0BOT>', ts: nextTs() });
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT>', ts: root });
    const help = await waitFor(
      () => slack.threadMessages(CHANNEL, root).find((m) => m.text.includes('Mention me with a question')),
      'help shown in the thread',
    );
    expect(help.blocks).toBeUndefined();
    expect(postsIn(slack, CHANNEL, root)).toHaveLength(1);
  });

  it('shows it is working at once, says so when the agent is slow, and clears both with the answer', async () => {
    const { slack, agent, bot } = stack;
    agent.setLatency(900, 'sendMessage');
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> take your time', ts: root });
    const eyes = await slack.waitForCall('reactions.add', (c) => c.args.timestamp === root);
    expect(eyes.args.name).toBe('eyes');
    const slow = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('taking a while'),
    );
    const answer = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('take your time'),
      5_000,
    );
    agent.setLatency(0, 'sendMessage');
    expect(answer.at).toBeGreaterThan(slow.at);
    await waitFor(() => slack.reactionsOn(CHANNEL, root).length === 0, 'working reaction removed');
    await waitFor(
      () => slack.threadMessages(CHANNEL, root).every((m) => !m.text.includes('taking a while')),
      'slow notice deleted',
    );
  });
});

describe('working indicator delay', () => {
  const stack = useStack({ WORKING_INDICATOR_DELAY_MS: '400', SLOW_NOTICE_MS: '0' });

  it('leaves a quick answer without a flickering reaction, and marks a slow one until it lands', async () => {
    const { slack, agent, bot } = stack;
    const quick = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> quick one', ts: quick });
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === quick);
    await sleep(600); // past the delay: a timer left running would add the reaction now
    expect(slack.callsOf('reactions.add').filter((c) => c.args.timestamp === quick)).toEqual([]);

    agent.setLatency(1_200, 'sendMessage');
    const slow = nextTs();
    try {
      await mention(bot, { channel: CHANNEL, text: '<@U0BOT> slow one', ts: slow });
      const eyes = await slack.waitForCall('reactions.add', (c) => c.args.timestamp === slow);
      expect(eyes.args.name).toBe('eyes');
      const answer = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === slow, 5_000);
      expect(answer.at).toBeGreaterThan(eyes.at);
    } finally {
      agent.setLatency(0, 'sendMessage');
    }
    await waitFor(() => slack.reactionsOn(CHANNEL, slow).length === 0, 'working reaction removed');
  });
});

describe('failures', () => {
  const stack = useStack({ AGENT_TIMEOUT_MS: '1000' });

  const cases: [string, (agent: AgentServiceEmulator) => Promise<void> | void, RegExp][] = [
    [
      'unavailable',
      (agent) => agent.injectFailure('sendMessage', { type: 'http', status: 503 }),
      /agent service is unavailable/,
    ],
    [
      'timed out',
      (agent) => agent.injectFailure('sendMessage', { type: 'hang' }),
      /took too long to answer.* It may have received your message/,
    ],
    [
      'cut off',
      (agent) => agent.injectFailure('sendMessage', { type: 'reset' }),
      /connection to the agent service broke after your message was sent/,
    ],
    [
      'failed',
      (agent) => agent.injectFailure('sendMessage', { type: 'http', status: 500 }),
      /agent service failed while handling your message/,
    ],
    [
      'rejected',
      (agent) => agent.injectFailure('sendMessage', { type: 'status-false', message: 'quota exceeded' }),
      /refused this request/,
    ],
    [
      'bad response',
      (agent) => agent.injectFailure('sendMessage', { type: 'malformed' }),
      /reply I could not read/,
    ],
  ];

  it.each(cases)(
    '%s: one readable sentence with a reference, indicator cleared, next message works',
    async (_kind, inject, sentence) => {
      const { slack, bot } = stack;
      const agent = stack.agent;
      const root = nextTs();
      await mention(bot, { channel: CHANNEL, text: '<@U0BOT> warm up', ts: root });
      await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
      await inject(agent);
      const failingTs = nextTs();
      await mention(bot, {
        channel: CHANNEL,
        text: '<@U0BOT> this one fails',
        ts: failingTs,
        threadTs: root,
      });
      await slack.waitForCall(
        'reactions.add',
        (c) => c.args.timestamp === failingTs && c.args.name === 'eyes',
      );
      const notice = await slack.waitForCall(
        'chat.postMessage',
        (c) => c.args.thread_ts === root && textOf(c).startsWith(':warning:'),
        5_000,
      );
      expect(textOf(notice)).toMatch(sentence);
      expect(textOf(notice)).toMatch(/\(ref [0-9A-F]{8}\)$/);
      expect(textOf(notice)).not.toMatch(/Error|at \w+ \(|status code|test-agent-key/);
      await waitFor(
        () => slack.reactionsOn(CHANNEL, failingTs).length === 0,
        'indicator of the failed message cleared',
      );
      await mention(bot, { channel: CHANNEL, text: '<@U0BOT> and after?', threadTs: root });
      await slack.waitForCall(
        'chat.postMessage',
        (c) => c.args.thread_ts === root && textOf(c).endsWith('and after?'),
        5_000,
      );
    },
  );

  it('starts the conversation again when creating it failed once, and sends the prompt once', async () => {
    const { slack, agent, bot } = stack;
    agent.injectFailure('createSession', { type: 'http', status: 500 });
    const creates = agent.requestsFor('createSession').length;
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> first words', ts: root });
    const answer = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root, 8_000);
    expect(textOf(answer)).toMatch(/^echo\[s-\d+#1\]: first words$/);
    expect(agent.requestsFor('createSession').length - creates).toBe(2);
    expect(promptsSent(agent).filter((prompt) => prompt === 'first words')).toHaveLength(1);
    expect(postsIn(slack, CHANNEL, root)).toHaveLength(1);
  });

  it('says the agent service could not start a conversation when creating it keeps failing', async () => {
    const { slack, agent, bot } = stack;
    agent.injectFailure('createSession', { type: 'http', status: 500 }, 10);
    try {
      const root = nextTs();
      await mention(bot, { channel: CHANNEL, text: '<@U0BOT> never sent', ts: root });
      const notice = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root, 8_000);
      expect(textOf(notice)).toMatch(
        /^:warning: The agent service could not start a conversation, so your message was not sent to the agent\. .*\(ref [0-9A-F]{8}\)$/,
      );
      expect(textOf(notice)).not.toMatch(/rephras/);
      expect(promptsSent(agent)).not.toContain('never sent');
      // What the service said is for debug lines only (this bot logs at debug).
      const said = bot.logs.lines.filter((line) => line.includes('the agent service said'));
      expect(said.map((line) => JSON.parse(line))).toContainEqual(
        expect.objectContaining({
          level: 20,
          operation: 'createSession',
          serviceMessage: 'Internal Server Error',
        }),
      );
    } finally {
      agent.clearFailures();
    }
  });

  it('says so when the agent service cannot be reached at all', async () => {
    const { slack, agent, bot } = stack;
    await agent.down();
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> anyone?', ts: root });
    const notice = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root, 8_000);
    await agent.up();
    expect(textOf(notice)).toMatch(/agent service is unavailable/);
  });
});

describe('WORKER_CONCURRENCY', () => {
  const stack = useStack({ WORKER_CONCURRENCY: '3' });

  it('bounds the threads answered at once, and so the prompts in flight to the agent', async () => {
    const { slack, agent, bot } = stack;
    agent.setLatency(300, 'sendMessage');
    const roots = Array.from({ length: 12 }, () => nextTs());
    try {
      await Promise.all(
        roots.map((ts, i) => mention(bot, { channel: CHANNEL, text: `<@U0BOT> bounded ${i}`, ts })),
      );
      await Promise.all(
        roots.map((ts) => slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === ts, 15_000)),
      );
    } finally {
      agent.setLatency(0, 'sendMessage');
    }
    // Every thread was answered, never more than three at a time, and the bound was used.
    expect(agent.maxInFlight).toBe(3);
  });
});
