import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { DEFAULT_SCOPES, FakeSlack, type FakeSlackOptions, type SlackApiCall } from '../fakes/slack.js';
import type { SuiteBot } from '../helpers/bot-per-suite.js';
import { type BotProcess, spawnBot } from '../helpers/bot-process.js';
import {
  appContextChangedEvent,
  appMentionEvent,
  blockActionsPayload,
  channelLifecycleEvent,
  messageEvent,
  nextTs,
  postSignedInteraction,
} from '../helpers/slack-events.js';
import { AGENT_ID, deliver, metric, type RunningBot, SIGNING_SECRET, startBot } from '../helpers/stack.js';
import { type TestStore, testStore } from '../helpers/stores.js';
import { sleep, waitFor } from '../helpers/wait.js';

/**
 * Each test has a channel of its own: Slack takes about one message a second per channel (a short burst more),
 * so tests posting into one channel back to back would be throttled as Slack throttles such a channel, and
 * their answers and notices would come late and out of order. None of them is about that.
 */
let CHANNEL = 'C0AGENTS';
let channelsUsed = 0;
beforeEach(() => {
  CHANNEL = `C0AGENTS${++channelsUsed}`;
});
const ALICE = 'U0ALICE';
const textOf = (call: SlackApiCall) => String(call.args.text);
const prompts = (agent: AgentServiceEmulator) => agent.requestsFor('sendMessage').map((r) => r.prompt ?? '');
/** Every status a session was set to, and the Web API method that set it. */
const transitions = (slack: FakeSlack, channel: string, threadTs: string) =>
  (slack.agentSession(channel, threadTs)?.history ?? []).map(({ status, via }) => `${status} via ${via}`);

/** A bot of one configuration, shared by the describes that ask for that configuration. */
interface SharedBot {
  stack: SuiteBot;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Describes using it that have not finished yet. */
  users: number;
}

const sharedBots = new Map<string, SharedBot>();
// Whatever a filtered run (`-t`) left running.
afterAll(async () => {
  for (const shared of sharedBots.values()) await shared.stop();
});

function sharedBot(env: Record<string, string>, slackOptions: FakeSlackOptions): SharedBot {
  const key = JSON.stringify([env, slackOptions]);
  const known = sharedBots.get(key);
  if (known) return known;
  const stack = {} as SuiteBot;
  let started: Promise<void> | undefined;
  const shared: SharedBot = {
    stack,
    users: 0,
    start: () => {
      started ??= (async () => {
        stack.store = await testStore();
        stack.slack = await FakeSlack.start({
          users: { U0ALICE: { name: 'alice' }, U0BOB: { name: 'bob' } },
          channels: {
            C0PUBLIC: { name: 'design-review' },
            C0ROADMAP: { name: 'roadmap' },
            G0SECRET: { name: 'secret-plans', type: 'group', botIsMember: false },
            G0PRIVATE: { name: 'private-plans', type: 'group' },
            D0ALICE: { type: 'im', user: ALICE },
          },
          ...slackOptions,
        });
        stack.agent = await AgentServiceEmulator.start();
        stack.bot = await startBot({
          slack: stack.slack,
          agent: stack.agent,
          store: stack.store.store,
          env: { AGENT_TIMEOUT_MS: '2000', ...env },
        });
      })();
      return started;
    },
    stop: async () => {
      if (!started) return;
      const starting = started;
      started = undefined;
      await starting.catch(() => {});
      await stack.bot?.stop();
      await Promise.all([stack.slack?.stop(), stack.agent?.stop(), stack.store?.remove()]);
    },
  };
  sharedBots.set(key, shared);
  return shared;
}

/**
 * The bot of the enclosing describe. Describes asking for the same configuration share one (a bot start costs
 * more than most tests here): it starts before the first of them and stops after the last. Each test has a
 * channel and threads of its own, and counts only what it made.
 */
function useStack(env: Record<string, string>, slackOptions: FakeSlackOptions = {}): SuiteBot {
  const shared = sharedBot(env, slackOptions);
  const stack = shared.stack;
  shared.users += 1;
  beforeAll(() => shared.start());
  afterAll(async () => {
    shared.users -= 1;
    if (shared.users === 0) await shared.stop();
  });
  // What these tests prove must not hinge on Slack's rate limits: a throttled call comes late, and out of order.
  let startedAt = 0;
  beforeEach(() => {
    startedAt = Date.now();
  });
  // A test that failed before releasing a hold on the agent leaves none to the next.
  afterEach(() => stack.agent?.releaseHolds());
  afterEach(() => {
    const throttled = stack.slack.calls.filter((call) => call.throttled && call.at >= startedAt);
    expect(
      throttled.map((call) => `${call.method} in ${String(call.args.channel ?? call.args.channel_id)}`),
      'calls throttled by the rate limits: spread the test over channels, or pace it as a person would',
    ).toEqual([]);
  });
  return stack;
}

const mentionIn = (channel: string, text: string, ts: string, threadTs?: string, user = ALICE) =>
  appMentionEvent({ channel, user, text: `<@U0BOT> ${text}`, ts, threadTs });

/** Asks in a new conversation (a channel thread, or a Messages-tab thread) and waits for its answer; its session id. */
async function answered(stack: SuiteBot, channel: string, text: string, root: string): Promise<string> {
  const { slack, bot } = stack;
  await deliver(
    bot,
    channel.startsWith('D')
      ? messageEvent({ channel, channelType: 'im', user: ALICE, text, ts: root })
      : mentionIn(channel, text, root),
  );
  const reply = await slack.waitForCall(
    'chat.postMessage',
    (c) => c.args.thread_ts === root && textOf(c).includes(text),
  );
  await waitFor(() => slack.agentSession(channel, root)?.status === 'active', 'active after the answer');
  return /^echo\[(s-\d+)#/.exec(textOf(reply))?.[1] ?? '';
}

describe('an agent app: channel threads are agent sessions', () => {
  const stack = useStack({ SLACK_AGENT_VIEW: 'true' });

  it('goes processing while the answer comes (stop button), active after it, named after the first prompt, closed on reset', async () => {
    const { slack, agent, bot } = stack;
    agent.setLatency(400, 'sendMessage');
    const root = nextTs();
    try {
      await deliver(bot, mentionIn(CHANNEL, 'Plan the launch', root));
      await waitFor(
        () => slack.agentSession(CHANNEL, root)?.stopButtonVisible,
        'stop button shown while processing',
      );
      await slack.waitForCall(
        'chat.postMessage',
        (c) => c.args.thread_ts === root && textOf(c).includes('Plan the launch'),
      );
    } finally {
      agent.setLatency(0, 'sendMessage');
    }
    await waitFor(() => slack.agentSession(CHANNEL, root)?.status === 'active', 'active after the answer');
    expect(slack.agentSession(CHANNEL, root)).toMatchObject({
      initiatorUserId: ALICE,
      title: 'Plan the launch',
    });
    // No reactions: the session is the indicator.
    expect(slack.callsOf('reactions.add').filter((c) => c.args.timestamp === root)).toEqual([]);

    await deliver(bot, mentionIn(CHANNEL, 'reset', nextTs(), root));
    await waitFor(() => slack.agentSession(CHANNEL, root)?.status === 'closed', 'closed on reset');
    expect(transitions(slack, CHANNEL, root)).toEqual([
      'processing via agents.sessions.setStatus',
      'active via agents.sessions.setStatus',
      'closed via agents.sessions.setStatus',
    ]);
  });

  it('closes every session of a channel when it is archived, and deletes them on the agent service', async () => {
    const { slack, agent, bot } = stack;
    const [first, second] = [nextTs(), nextTs()];
    const sessions = [
      await answered(stack, 'C0DOOMED', 'first topic', first),
      await answered(stack, 'C0DOOMED', 'second topic', second),
    ];
    const archive = channelLifecycleEvent('channel_archive', { channel: 'C0DOOMED' });
    slack.ingestEvent(archive);
    await deliver(bot, archive);
    for (const root of [first, second]) {
      await slack.waitForAgentSessionStatus('C0DOOMED', root, 'closed');
      expect(transitions(slack, 'C0DOOMED', root)).toEqual([
        'processing via agents.sessions.setStatus',
        'active via agents.sessions.setStatus',
        'closed via agents.sessions.setStatus',
      ]);
    }
    await waitFor(
      () => !agent.sessionsOf(AGENT_ID).some((session) => sessions.includes(session.sessionId)),
      'agent sessions deleted',
    );
  });

  it('opens no session where none was: a reset or a stop as the first word of a thread leaves it without one', async () => {
    const { slack, bot } = stack;
    for (const word of ['reset', 'stop']) {
      const root = nextTs();
      await deliver(bot, mentionIn(CHANNEL, word, root));
      await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
      await sleep(300);
      expect(slack.agentSession(CHANNEL, root), word).toBeUndefined();
    }
  });

  it('on archive closes only the sessions it opened: a conversation whose session Slack never took gets none', async () => {
    const { slack, bot } = stack;
    const [opened, never] = [nextTs(), nextTs()];
    await answered(stack, 'C0ARCHIVED', 'with a session', opened);
    // Slack refuses every status call of this thread: it has a conversation, and no session.
    slack.failFor(
      'agents.sessions.setStatus',
      { type: 'error', error: 'internal_error' },
      60_000,
      (args) => args.thread_ts === never,
    );
    await deliver(bot, mentionIn('C0ARCHIVED', 'without one', never));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === never && textOf(c).includes('without one'),
    );
    await sleep(300);
    slack.clearFailures('agents.sessions.setStatus');
    const archive = channelLifecycleEvent('channel_archive', { channel: 'C0ARCHIVED' });
    slack.ingestEvent(archive);
    await deliver(bot, archive);
    await slack.waitForAgentSessionStatus('C0ARCHIVED', opened, 'closed');
    await sleep(300);
    expect(slack.agentSession('C0ARCHIVED', never)).toBeUndefined();
  });

  it('the stop button drops the answer in progress, says so, and the next message goes on in the same session', async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    await deliver(bot, mentionIn(CHANNEL, 'first question', root));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('first question'),
    );
    agent.setLatency(800, 'sendMessage');
    try {
      await deliver(bot, mentionIn(CHANNEL, 'a long job', nextTs(), root));
      await waitFor(() => prompts(agent).includes('a long job'), 'prompt sent');
      // A person presses the button once Slack shows it (the status call may land after the prompt left).
      await waitFor(() => slack.agentSession(CHANNEL, root)?.stopButtonVisible, 'stop button shown');
      // Throws unless Slack would show the button: the session is processing.
      expect((await deliver(bot, slack.pressStopButton(CHANNEL, root, ALICE))).status).toBe(200);
      const notice = await slack.waitForCall(
        'chat.postMessage',
        (c) => c.args.thread_ts === root && textOf(c).includes('Stopped'),
      );
      expect(textOf(notice)).toMatch(
        /dropped the answer I was waiting for\. The agent had already received that message and may have acted on it/,
      );
      await waitFor(() => slack.agentSession(CHANNEL, root)?.status === 'active', 'active again at once');
      expect(slack.agentSession(CHANNEL, root)?.history.at(-1)?.via).toBe('agents.sessions.setStatus');
      await waitFor(
        () => agent.requestsFor('sendMessage').some((r) => r.prompt === 'a long job' && r.status === 200),
        'agent done',
      );
    } finally {
      agent.setLatency(0, 'sendMessage');
    }
    await sleep(300);
    const answers = slack.threadMessages(CHANNEL, root).filter((m) => m.bot_id !== undefined);
    expect(answers.filter((m) => m.text.includes('a long job'))).toEqual([]);
    await deliver(bot, mentionIn(CHANNEL, 'and now?', nextTs(), root));
    const next = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('and now?'),
    );
    expect(textOf(next)).toMatch(/^echo\[s-\d+#3\]: and now\?$/);
  });

  it('the word stop in an agent session does what the button does', async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    // The agent answers once the stop has done its work, however slow the machine.
    const answer = agent.holdAnswerTo('another long job');
    await deliver(bot, mentionIn(CHANNEL, 'another long job', root));
    await waitFor(() => prompts(agent).includes('another long job'), 'prompt sent');
    // The status call goes alongside the prompt, not before it.
    await waitFor(() => slack.agentSession(CHANNEL, root)?.stopButtonVisible, 'stop button shown');
    await deliver(bot, mentionIn(CHANNEL, 'stop', nextTs(), root));
    const notice = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('Stopped'),
    );
    expect(textOf(notice)).toMatch(/^:octagonal_sign: Stopped: dropped the answer I was waiting for\./);
    await waitFor(() => slack.agentSession(CHANNEL, root)?.status === 'active', 'active again at once');
    answer();
    await waitFor(
      () => agent.requestsFor('sendMessage').some((r) => r.prompt === 'another long job' && r.status === 200),
      'agent done',
    );
    await sleep(300);
    const answers = slack.threadMessages(CHANNEL, root).filter((m) => m.bot_id !== undefined);
    expect(answers.filter((m) => m.text.includes('another long job'))).toEqual([]);
    expect(transitions(slack, CHANNEL, root).at(-1)).toBe('active via agents.sessions.setStatus');
    expect(slack.agentSession(CHANNEL, root)?.stopButtonVisible).toBe(false);
  });

  it("someone else's stop cancels only their queued message: the answer in progress stays, and so does processing", async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    // Alice's answer comes once Bob's two stops are done, however slow the machine.
    const answerAlice = agent.holdAnswerTo('alice long job');
    await deliver(bot, mentionIn(CHANNEL, 'alice long job', root));
    await waitFor(() => prompts(agent).includes('alice long job'), 'prompt sent');
    await waitFor(() => slack.agentSession(CHANNEL, root)?.stopButtonVisible, 'stop button shown');
    const bobs = nextTs();
    await deliver(bot, mentionIn(CHANNEL, 'bob waits', bobs, root, 'U0BOB'));
    await slack.waitForCall('reactions.add', (c) => c.args.timestamp === bobs);
    await deliver(bot, slack.pressStopButton(CHANNEL, root, 'U0BOB'));
    const notice = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('Stopped'),
    );
    expect(textOf(notice)).toBe(':octagonal_sign: Stopped: cancelled 1 queued message.');
    // Alice's answer is still coming, so the session still shows it, stop button and all.
    await sleep(200);
    expect(slack.agentSession(CHANNEL, root)).toMatchObject({
      status: 'processing',
      stopButtonVisible: true,
    });
    await deliver(bot, slack.pressStopButton(CHANNEL, root, 'U0BOB'));
    const nothing = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).startsWith('Nothing of yours'),
    );
    expect(textOf(nothing)).toBe(
      'Nothing of yours is waiting for the agent in this conversation, so there is nothing to stop.',
    );
    answerAlice();
    const answer = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('alice long job'),
    );
    expect(textOf(answer)).toMatch(/^echo\[s-\d+#1\]: alice long job$/);
    // Processing until the answer was posted, active after it.
    const history = slack.agentSession(CHANNEL, root)?.history ?? [];
    expect(history.filter((h) => h.at < answer.at).map((h) => h.status)).toEqual(['processing']);
    await waitFor(() => slack.agentSession(CHANNEL, root)?.status === 'active', 'active after the answer');
    expect(prompts(agent)).not.toContain('bob waits');
  });

  /** Slack turns away the thread's next `active` once (HTTP 429): the client sends it again after Retry-After. */
  const holdBackNextActive = (slack: FakeSlack, root: string) =>
    slack.failNext(
      'agents.sessions.setStatus',
      { type: 'rate_limited', retryAfterSeconds: 1 },
      1,
      (args) => args.status === 'active' && args.thread_ts === root,
    );

  it("stop, then a new question at once: the new answer shows processing even when Slack held back the stop's status", async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    agent.setLatency(800, 'sendMessage');
    try {
      await deliver(bot, mentionIn(CHANNEL, 'a slow one', root));
      await waitFor(() => prompts(agent).includes('a slow one'), 'prompt sent');
      await waitFor(() => slack.agentSession(CHANNEL, root)?.stopButtonVisible, 'stop button shown');
      holdBackNextActive(slack, root);
      await deliver(bot, slack.pressStopButton(CHANNEL, root, ALICE));
      // Longer than the held-back call takes to go through again.
      agent.setLatency(1_200, 'sendMessage');
      await deliver(bot, mentionIn(CHANNEL, 'the quick one instead', nextTs(), root));
      const answer = await slack.waitForCall(
        'chat.postMessage',
        (c) => c.args.thread_ts === root && textOf(c).includes('the quick one instead'),
      );
      // Until its answer came, the thread showed the new question in progress, stop button and all.
      const before = (slack.agentSession(CHANNEL, root)?.history ?? []).filter((h) => h.at < answer.at);
      expect(before.at(-1)?.status).toBe('processing');
    } finally {
      agent.setLatency(0, 'sendMessage');
    }
    await waitFor(() => slack.agentSession(CHANNEL, root)?.status === 'active', 'active after the answer');
  });

  it("a reset right after an answer closes the session, even when Slack held back the answer's active", async () => {
    const { slack, bot } = stack;
    const root = nextTs();
    holdBackNextActive(slack, root);
    await deliver(bot, mentionIn(CHANNEL, 'a short talk', root));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('a short talk'),
    );
    await deliver(bot, mentionIn(CHANNEL, 'reset', nextTs(), root));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('Conversation reset'),
    );
    await waitFor(
      () => slack.agentSession(CHANNEL, root)?.history.some((h) => h.status === 'active'),
      'the held-back active taken',
    );
    await sleep(300);
    expect(transitions(slack, CHANNEL, root)).toEqual([
      'processing via agents.sessions.setStatus',
      'active via agents.sessions.setStatus',
      'closed via agents.sessions.setStatus',
    ]);
  });

  it('sends the earlier messages of a thread with a first mention in it, labelled as context; later prompts carry only themselves', async () => {
    const { slack, agent, bot } = stack;
    const root = slack.seedMessage(CHANNEL, {
      user: 'U0BOB',
      text: 'We could ship the new onboarding on Monday',
    });
    slack.seedMessage(CHANNEL, {
      user: ALICE,
      text: 'Or wait for <@U0BOB> to finish the copy?',
      threadTs: root,
    });
    slack.seedMessage(CHANNEL, { botId: 'B0OTHER', text: 'CI is green', threadTs: root });
    const ts = nextTs();
    slack.seedMessage(CHANNEL, {
      user: ALICE,
      text: '<@U0BOT> what do you think of this?',
      ts,
      threadTs: root,
    });
    await deliver(bot, mentionIn(CHANNEL, 'what do you think of this?', ts, root));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('what do you think'),
    );
    expect(prompts(agent).at(-1)).toBe(
      [
        '[Context: the earlier messages of this Slack thread, oldest first]',
        '@bob: We could ship the new onboarding on Monday',
        '@alice: Or wait for @bob to finish the copy?',
        'a bot: CI is green',
        '[End of context. The message for you:]',
        '',
        'what do you think of this?',
      ].join('\n'),
    );
    await deliver(bot, mentionIn(CHANNEL, 'and the risks?', nextTs(), root));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('and the risks?'),
    );
    expect(prompts(agent).at(-1)).toBe('and the risks?');
  });

  it('in a thread longer than THREAD_CONTEXT_MESSAGES, sends its first message and the latest ones before the mention', async () => {
    const { slack, agent, bot } = stack;
    const root = slack.seedMessage(CHANNEL, { user: 'U0BOB', text: 'Release planning for 4.2' });
    // 250 replies: more than one page of conversations.replies, which Slack returns oldest first.
    for (let i = 1; i <= 250; i++)
      slack.seedMessage(CHANNEL, { user: ALICE, text: `note ${i}`, threadTs: root });
    const ts = nextTs();
    slack.seedMessage(CHANNEL, { user: ALICE, text: '<@U0BOT> so, ship it?', ts, threadTs: root });
    await deliver(bot, mentionIn(CHANNEL, 'so, ship it?', ts, root));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('so, ship it?'),
    );
    const notes = Array.from({ length: 19 }, (_, i) => `@alice: note ${232 + i}`);
    expect(prompts(agent).at(-1)).toBe(
      [
        '[Context: the earlier messages of this Slack thread, oldest first]',
        '@bob: Release planning for 4.2',
        ...notes,
        '[End of context. The message for you:]',
        '',
        'so, ship it?',
      ].join('\n'),
    );
  });

  it('posts a Markdown table of the answer as a Slack table block', async () => {
    const { slack, agent, bot } = stack;
    agent.setReplyFn(() => 'Owners:\n\n| Area | Owner |\n|---|---|\n| API | Ada |\n| UI | Bob |');
    const root = nextTs();
    try {
      await deliver(bot, mentionIn(CHANNEL, 'who owns what?', root));
      const reply = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
      const blocks = reply.args.blocks as { type: string; rows?: { text: string }[][] }[];
      expect(blocks.map((block) => block.type)).toEqual(['markdown', 'table', 'context_actions']);
      expect(blocks[1]?.rows?.map((row) => row.map((cell) => cell.text))).toEqual([
        ['Area', 'Owner'],
        ['API', 'Ada'],
        ['UI', 'Bob'],
      ]);
    } finally {
      agent.setReplyFn(({ sessionId, turn, prompt }) => `echo[${sessionId}#${turn}]: ${prompt}`);
    }
  });

  it("aligns the columns of a table as the Markdown says, with a settings object for every column up to the last aligned one (Slack's default spelled out)", async () => {
    const { slack, agent, bot } = stack;
    agent.setReplyFn(() => '| Item | Note | Cost |\n|---|---|--:|\n| Tea | hot | 3 |\n| Cake | - | 4 |');
    const root = nextTs();
    try {
      await deliver(bot, mentionIn(CHANNEL, 'the bill?', root));
      const reply = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
      const blocks = reply.args.blocks as { type: string; column_settings?: unknown }[];
      expect(blocks.map((block) => block.type)).toEqual(['table', 'context_actions']);
      expect(blocks[0]?.column_settings).toEqual([{ align: 'left' }, { align: 'left' }, { align: 'right' }]);
      expect(slack.callsOf('chat.postMessage').filter((c) => c.args.thread_ts === root)).toHaveLength(1);
    } finally {
      agent.setReplyFn(({ sessionId, turn, prompt }) => `echo[${sessionId}#${turn}]: ${prompt}`);
    }
  });

  it('acknowledges feedback privately, counts it per agent, and logs it with the agent session', async () => {
    const { slack, bot } = stack;
    const root = nextTs();
    const body = mentionIn(CHANNEL, 'rate me', root);
    slack.ingestEvent(body); // the thread exists in Slack, as it would
    await deliver(bot, body);
    const reply = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('rate me'),
    );
    const session = /^echo\[(s-\d+)#/.exec(textOf(reply))?.[1];
    const posted = slack.threadMessages(CHANNEL, root).find((m) => m.text === textOf(reply));
    const click = async (feedback: 'positive' | 'negative', id: string) => {
      const result = await postSignedInteraction(
        bot.eventsUrl,
        SIGNING_SECRET,
        blockActionsPayload({
          user: ALICE,
          channel: CHANNEL,
          message: posted ?? { ts: '' },
          actionId: 'reply_feedback',
          feedback,
          responseUrl: slack.responseUrl(id),
        }),
      );
      expect(result.status).toBe(200);
      return slack.waitForCall('response_url', (c) => c.args.responseId === id);
    };
    const thanks = await click('positive', `fb-${root}`);
    expect(thanks.args).toMatchObject({ response_type: 'ephemeral', text: 'Thanks for the feedback!' });
    await click('positive', `fb-again-${root}`);
    expect(await metric(bot, `agent_reply_feedback_total{agent="${AGENT_ID}",value="good"}`)).toBe(1);
    const line = bot.logs.lines.find((candidate) => candidate.includes('feedback on an answer'));
    expect(JSON.parse(line ?? '{}')).toMatchObject({ agentId: AGENT_ID, session, value: 'good' });
  });
});

describe('an agent app: an idle conversation closes its Slack session', () => {
  const stack = useStack({ SLACK_AGENT_VIEW: 'true', SESSION_IDLE_TTL: '2s' });

  it('closes the session of a conversation idle longer than SESSION_IDLE_TTL, in a channel and in the Messages tab', async () => {
    const { slack, agent } = stack;
    const [inChannel, inTab] = [nextTs(), nextTs()];
    await answered(stack, CHANNEL, 'then silence', inChannel);
    await answered(stack, 'D0ALICE', 'quiet now', inTab);
    for (const [channel, root] of [
      [CHANNEL, inChannel],
      ['D0ALICE', inTab],
    ] as const) {
      await slack.waitForAgentSessionStatus(channel, root, 'closed', 8_000);
      expect(transitions(slack, channel, root)).toEqual([
        'processing via agents.sessions.setStatus',
        'active via agents.sessions.setStatus',
        'closed via agents.sessions.setStatus',
      ]);
    }
    await waitFor(() => agent.sessionsOf(AGENT_ID).length === 0, 'agent sessions deleted', 8_000);
  });
});

describe('an agent app: idle conversations close only the sessions the bot opened', () => {
  const stack = useStack({ SLACK_AGENT_VIEW: 'true', SESSION_IDLE_TTL: '2s' });

  it('leaves a conversation whose session Slack never took without one when it expires', async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    slack.failFor(
      'agents.sessions.setStatus',
      { type: 'error', error: 'internal_error' },
      60_000,
      (args) => args.thread_ts === root,
    );
    await deliver(bot, mentionIn(CHANNEL, 'no session here', root));
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    await sleep(300);
    slack.clearFailures('agents.sessions.setStatus');
    await waitFor(() => agent.sessionsOf(AGENT_ID).length === 0, 'idle agent session deleted', 8_000);
    await sleep(300);
    expect(slack.agentSession(CHANNEL, root)).toBeUndefined();
  });
});

describe('an agent app: the working status waits WORKING_INDICATOR_DELAY_MS in a conversation under way', () => {
  const stack = useStack({
    SLACK_AGENT_VIEW: 'true',
    // Long enough that a quick answer is in well within it on a machine the rest of the suite keeps busy.
    WORKING_INDICATOR_DELAY_MS: '2000',
    // The slow answer below is held past the delay.
    AGENT_TIMEOUT_MS: '5000',
  });

  it('opens a quick new conversation named and active in one call; shows processing only for an answer slower than the delay', async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    /** Replies in the conversation (no mention needed there) and waits for the answer. */
    const replyAndWait = async (text: string) => {
      const event = { channel: CHANNEL, channelType: 'channel', user: ALICE, text, threadTs: root } as const;
      await deliver(bot, messageEvent(event));
      await slack.waitForCall(
        'chat.postMessage',
        (c) => c.args.thread_ts === root && textOf(c).includes(text),
      );
    };
    // A new conversation answered within the delay: its session opens with the answer, named, and never shows
    // the stop button.
    await answered(stack, CHANNEL, 'Draft the agenda', root);
    await slack.waitForAgentSessionStatus(CHANNEL, root, 'active');
    expect(slack.agentSession(CHANNEL, root)).toMatchObject({
      title: 'Draft the agenda',
      initiatorUserId: ALICE,
    });
    const opened = ['active via agents.sessions.setStatus'];
    expect(transitions(slack, CHANNEL, root)).toEqual(opened);
    expect(slack.callsOf('agents.sessions.rename').filter((c) => c.args.thread_ts === root)).toEqual([]);

    // A quick answer in the conversation under way: the session stays active, untouched (no stop button flashes).
    await replyAndWait('Add a break');
    // Past the delay: nothing was left to set later.
    await sleep(2_200);
    expect(transitions(slack, CHANNEL, root)).toEqual(opened);

    // A slow one (answered once the session shows it): processing, with the stop button, then active.
    const answerSlow = agent.holdAnswerTo('Now in detail');
    const answering = replyAndWait('Now in detail');
    const processing = await slack.waitForAgentSessionStatus(CHANNEL, root, 'processing');
    expect(processing.stopButtonVisible).toBe(true);
    answerSlow();
    await answering;
    await slack.waitForAgentSessionStatus(CHANNEL, root, 'active');
    expect(transitions(slack, CHANNEL, root)).toEqual([
      ...opened,
      'processing via agents.sessions.setStatus',
      'active via agents.sessions.setStatus',
    ]);
  });

  it('in the Messages tab, a reset right after a quick new conversation closes its session, which no status line reopens', async () => {
    const { slack, bot } = stack;
    const root = nextTs();
    const dm = { channel: 'D0ALICE', channelType: 'im', user: ALICE } as const;
    await deliver(bot, messageEvent({ ...dm, text: 'Quick question', ts: root }));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('Quick question'),
    );
    await deliver(bot, messageEvent({ ...dm, text: 'reset', ts: nextTs(), threadTs: root }));
    await waitFor(() => slack.agentSession('D0ALICE', root)?.status === 'closed', 'closed on reset');
    await sleep(300);
    expect(transitions(slack, 'D0ALICE', root)).toEqual([
      'active via agents.sessions.setStatus',
      'closed via agents.sessions.setStatus',
    ]);
    expect(slack.callsOf('assistant.threads.setStatus').filter((c) => c.args.thread_ts === root)).toEqual([]);
  });
});

describe('a fresh install from manifest.yml (SLACK_AGENT_VIEW at its default)', () => {
  const stack = useStack({ SLACK_AGENT_VIEW: 'auto' });

  it('makes the very first channel mention an agent session: processing with the stop button, then active', async () => {
    const { slack, agent, bot } = stack;
    agent.setLatency(400, 'sendMessage');
    const root = nextTs();
    try {
      await deliver(bot, mentionIn(CHANNEL, 'first ever', root));
      const processing = await slack.waitForAgentSessionStatus(CHANNEL, root, 'processing');
      expect(processing.stopButtonVisible).toBe(true);
    } finally {
      agent.setLatency(0, 'sendMessage');
    }
    await slack.waitForAgentSessionStatus(CHANNEL, root, 'active');
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('first ever'),
    );
    expect(slack.callsOf('reactions.add').filter((c) => c.args.timestamp === root)).toEqual([]);
  });
});

describe('a classic app (no agent_view) left at SLACK_AGENT_VIEW=auto', () => {
  const stack = useStack({ SLACK_AGENT_VIEW: 'auto' }, { agentView: false });

  it("answers every mention, and stops trying agent sessions in the workspace after Slack's not_agent_app", async () => {
    const { slack, bot } = stack;
    const [first, second] = [nextTs(), nextTs()];
    await deliver(bot, mentionIn(CHANNEL, 'first classic', first));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === first && textOf(c).includes('first classic'),
    );
    await deliver(bot, mentionIn('C0OTHER', 'second classic', second));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === second && textOf(c).includes('second classic'),
    );
    // Reactions show the second one's work; the first asked Slack once and was told.
    await waitFor(
      () => slack.callsOf('reactions.add').some((c) => c.args.timestamp === second && c.args.name === 'eyes'),
      'working reaction on the second mention',
    );
    await sleep(300);
    expect(slack.callsOf('agents.sessions.setStatus').map((c) => c.args.thread_ts)).toEqual([first]);
    expect(slack.callsOf('agents.sessions.rename')).toEqual([]);
    expect(slack.agentSessionList()).toEqual([]);
  });
});

describe('thread context within its limits', () => {
  // Installed before groups:history was in the manifest: private channels cannot be read back.
  const stack = useStack(
    { MAX_PROMPT_CHARS: '400' },
    { scopes: DEFAULT_SCOPES.filter((scope) => scope !== 'groups:history') },
  );
  const mentionMidThread = async (channel: string, root: string, text: string) => {
    const ts = nextTs();
    stack.slack.seedMessage(channel, { user: ALICE, text: `<@U0BOT> ${text}`, ts, threadTs: root });
    await deliver(stack.bot, mentionIn(channel, text, ts, root));
    await stack.slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes(text),
    );
    return prompts(stack.agent).at(-1) ?? '';
  };

  it('keeps the first message, cut to fit, and the latest ones whole when MAX_PROMPT_CHARS is tight', async () => {
    const { slack } = stack;
    const opening = `Release plan for 4.2: ${'we freeze on Monday, test all week, and ship on Friday; '.repeat(4)}`;
    const root = slack.seedMessage(CHANNEL, { user: 'U0BOB', text: opening });
    for (let i = 1; i <= 12; i++)
      slack.seedMessage(CHANNEL, { user: ALICE, text: `note ${i}`, threadTs: root });
    const prompt = await mentionMidThread(CHANNEL, root, 'so, ship it?');
    expect(prompt.length).toBeLessThanOrEqual(400);
    const lines = prompt.split('\n');
    expect(lines[0]).toBe('[Context: the earlier messages of this Slack thread, oldest first]');
    expect(lines[1]).toMatch(/^@bob: Release plan for 4\.2: we freeze on Monday, .*…$/);
    expect(lines[1]?.length).toBeLessThan(`@bob: ${opening}`.length);
    const notes = lines.slice(2, -3);
    expect(notes.length).toBeGreaterThanOrEqual(5);
    // The latest ones before the mention, whole and in order.
    expect(notes).toEqual(
      Array.from({ length: notes.length }, (_, i) => `@alice: note ${13 - notes.length + i}`),
    );
    expect(lines.slice(-3)).toEqual(['[End of context. The message for you:]', '', 'so, ship it?']);
  });

  it('sends the message alone when the thread cannot be read', async () => {
    const { slack, bot } = stack;
    const root = slack.seedMessage('G0PRIVATE', { user: 'U0BOB', text: 'Shall we move the offsite?' });
    slack.seedMessage('G0PRIVATE', { user: ALICE, text: 'Maybe to May', threadTs: root });
    expect(await mentionMidThread('G0PRIVATE', root, 'what do you think?')).toBe('what do you think?');
    const read = slack.callsOf('conversations.replies').find((c) => c.args.channel === 'G0PRIVATE');
    expect(read).toBeDefined();
    expect(bot.logs.text).toContain('could not read the thread for context; sending the message alone');
  });
});

/**
 * A classic app with its feedback buttons and its thread context off, for this describe and 'a classic app (no
 * agent_view)', so they share a bot: neither test's outcome depends on the other's setting.
 */
const CLASSIC_WITHOUT_EXTRAS = {
  SLACK_AGENT_VIEW: 'false',
  FEEDBACK_BUTTONS: 'false',
  THREAD_CONTEXT_MESSAGES: '0',
};

describe('thread context turned off', () => {
  const stack = useStack(CLASSIC_WITHOUT_EXTRAS);

  it('sends a first mention mid-thread alone, without reading the thread', async () => {
    const { slack, agent, bot } = stack;
    const root = slack.seedMessage(CHANNEL, { user: 'U0BOB', text: 'We could ship on Monday' });
    slack.seedMessage(CHANNEL, { user: ALICE, text: 'Or Tuesday?', threadTs: root });
    const ts = nextTs();
    slack.seedMessage(CHANNEL, { user: ALICE, text: '<@U0BOT> which day?', ts, threadTs: root });
    await deliver(bot, mentionIn(CHANNEL, 'which day?', ts, root));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('which day?'),
    );
    expect(prompts(agent).at(-1)).toBe('which day?');
    expect(slack.callsOf('conversations.replies')).toEqual([]);
  });
});

describe('an agent app: the Messages tab tells which channel the person looks at', () => {
  const stack = useStack({ SLACK_AGENT_VIEW: 'true' });

  // A person reads an answer before asking again: about one message a second in the DM, as Slack takes them.
  let answeredAt = 0;
  const ask = async (text: string) => {
    const { slack, agent, bot } = stack;
    await sleep(Math.max(0, answeredAt + 1_000 - Date.now()));
    const ts = nextTs();
    await deliver(bot, messageEvent({ channel: 'D0ALICE', channelType: 'im', user: ALICE, text, ts }));
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === ts && textOf(c).includes(text));
    answeredAt = Date.now();
    return prompts(agent).at(-1);
  };

  it('passes a channel the bot can see once, on the next prompt after it changed; never one it cannot see', async () => {
    const { bot } = stack;
    // As Slack documents the event: the viewer only in the envelope's authorizations, no user or channel.
    await deliver(bot, appContextChangedEvent({ viewer: ALICE, viewing: 'C0PUBLIC' }));
    expect(await ask('summarise the discussion')).toBe(
      '[The person is looking at the Slack channel #design-review while writing this.]\n\nsummarise the discussion',
    );
    expect(await ask('anything else?')).toBe('anything else?');
    // A private channel the bot is not in: its name must not reach the agent.
    await deliver(bot, appContextChangedEvent({ viewer: ALICE, viewing: 'G0SECRET' }));
    expect(await ask('what about here?')).toBe('what about here?');
  });

  it('takes the most relevant channel (entities come ordered by relevance); an empty context names none', async () => {
    const { bot } = stack;
    await deliver(
      bot,
      appContextChangedEvent({
        viewer: ALICE,
        entities: [
          { type: 'slack#/types/canvas_id', value: 'F0CANVAS' },
          { type: 'slack#/types/channel_id', value: 'C0ROADMAP' },
          { type: 'slack#/types/channel_id', value: 'C0PUBLIC' },
        ],
      }),
    );
    expect(await ask('what is planned?')).toBe(
      '[The person is looking at the Slack channel #roadmap while writing this.]\n\nwhat is planned?',
    );
    await deliver(bot, appContextChangedEvent({ viewer: ALICE }));
    await deliver(bot, appContextChangedEvent({ viewer: ALICE, viewing: 'C0PUBLIC' }));
    await deliver(bot, appContextChangedEvent({ viewer: ALICE }));
    expect(await ask('and now?')).toBe('and now?');
  });

  it('with no person authorized, reads the user or the DM channel on the event (@slack/types declares them; Slack documents neither)', async () => {
    const { bot } = stack;
    await deliver(bot, appContextChangedEvent({ viewing: 'C0PUBLIC', undocumented: { user: ALICE } }));
    expect(await ask('what changed?')).toBe(
      '[The person is looking at the Slack channel #design-review while writing this.]\n\nwhat changed?',
    );
    await deliver(
      bot,
      appContextChangedEvent({ viewing: 'C0ROADMAP', undocumented: { channel: 'D0ALICE' } }),
    );
    expect(await ask('and here?')).toBe(
      '[The person is looking at the Slack channel #roadmap while writing this.]\n\nand here?',
    );
    // Naming nobody, it is ignored.
    await deliver(bot, appContextChangedEvent({ viewing: 'C0PUBLIC' }));
    expect(await ask('still?')).toBe('still?');
  });
});

describe('a classic app (no agent_view)', () => {
  const stack = useStack(CLASSIC_WITHOUT_EXTRAS);

  it('keeps reactions as before: no agent session calls; and no feedback buttons when they are off', async () => {
    const { slack, bot } = stack;
    const root = nextTs();
    await deliver(bot, mentionIn(CHANNEL, 'classic please', root));
    const reply = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    await waitFor(
      () => slack.callsOf('reactions.remove').some((c) => c.args.timestamp === root),
      'working reaction cleared',
    );
    expect(
      slack
        .callsOf('reactions.add')
        .filter((c) => c.args.timestamp === root)
        .map((c) => c.args.name),
    ).toEqual(['eyes']);
    expect(slack.callsOf('agents.sessions.setStatus')).toEqual([]);
    expect((reply.args.blocks as { type: string }[]).map((block) => block.type)).toEqual(['markdown']);
  });
});

describe('a lost answer can be sent again', () => {
  let slack: FakeSlack;
  let agent: AgentServiceEmulator;
  let prepared: TestStore;
  let victim: BotProcess | undefined;
  let survivor: RunningBot | undefined;
  const ENV = { AGENT_TIMEOUT_MS: '1000', JOB_LEASE_MS: '1000', SLACK_AGENT_VIEW: 'false' };

  beforeAll(async () => {
    slack = await FakeSlack.start({ users: { U0ALICE: { name: 'alice' }, U0BOB: { name: 'bob' } } });
    agent = await AgentServiceEmulator.start();
    prepared = await testStore();
  });
  afterEach(async () => {
    victim?.child.kill('SIGKILL');
    await victim?.exited;
    await survivor?.stop();
  });
  afterAll(async () => {
    await Promise.all([slack.stop(), agent.stop(), prepared.remove()]);
  });

  it('by its author, once: the prompt goes to the agent again in the same session and the button goes', async () => {
    const { store } = prepared;
    // A first answer, so the thread has a session; then a prompt whose answer dies with the process.
    const root = nextTs();
    slack.ingestEvent(mentionIn(CHANNEL, 'hello', root));
    victim = await spawnBot({ slack, agent, store, env: ENV });
    await deliver({ eventsUrl: victim.eventsUrl } as RunningBot, mentionIn(CHANNEL, 'hello', root));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('hello'),
    );
    agent.setLatency(900, 'sendMessage');
    const lostTs = nextTs();
    const lost = mentionIn(CHANNEL, 'deploy the docs', lostTs, root);
    slack.ingestEvent(lost);
    await deliver({ eventsUrl: victim.eventsUrl } as RunningBot, lost);
    await waitFor(() => prompts(agent).includes('deploy the docs'), 'prompt reached the agent');
    victim.child.kill('SIGKILL');
    await victim.exited;
    victim = undefined;
    agent.setLatency(0, 'sendMessage');

    survivor = await startBot({ slack, agent, store, env: ENV });
    const notice = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('answer was lost'),
      15_000,
    );
    expect(prompts(agent).filter((p) => p === 'deploy the docs')).toHaveLength(1);
    const posted = slack.threadMessages(CHANNEL, root).find((m) => m.text === textOf(notice));
    const press = async (user: string) => {
      const id = `again-${user}-${nextTs()}`;
      await postSignedInteraction(
        survivor?.eventsUrl ?? '',
        SIGNING_SECRET,
        blockActionsPayload({
          user,
          channel: CHANNEL,
          message: posted ?? { ts: '' },
          actionId: 'send_again',
          responseUrl: slack.responseUrl(id),
        }),
      );
      return id;
    };
    const bobs = await press('U0BOB');
    const refused = await slack.waitForCall('response_url', (c) => c.args.responseId === bobs);
    expect(textOf(refused)).toBe('Only <@U0ALICE>, who wrote that message, can send it again.');

    await press(ALICE);
    const answer = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).endsWith(': deploy the docs'),
      10_000,
    );
    expect(textOf(answer)).toMatch(/^echo\[s-1#3\]: deploy the docs$/);
    await waitFor(
      () => slack.callsOf('chat.update').some((c) => c.args.ts === posted?.ts),
      'the button replaced by "sent again"',
    );
    const updated = slack.threadMessages(CHANNEL, root).find((m) => m.ts === posted?.ts);
    expect(JSON.stringify(updated?.blocks)).not.toContain('send_again');
    expect(JSON.stringify(updated?.blocks)).toContain('Sent again by <@U0ALICE>');

    const again = await press(ALICE);
    const already = await slack.waitForCall('response_url', (c) => c.args.responseId === again);
    expect(textOf(already)).toBe('That message was already sent again.');
    await sleep(300);
    expect(prompts(agent).filter((p) => p === 'deploy the docs')).toHaveLength(2);
  });
});

describe('an agent app not subscribed to agent_session_stopped', () => {
  const stack = useStack({ SLACK_AGENT_VIEW: 'true' }, { agentSessionStoppedSubscribed: false });

  it("logs Slack's warning once, with the fix, however many answers follow", async () => {
    const { slack, bot } = stack;
    for (const text of ['one', 'two']) {
      const root = nextTs();
      await deliver(bot, mentionIn(CHANNEL, text, root));
      await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
      await waitFor(() => slack.agentSession(CHANNEL, root)?.status === 'active', 'answered');
    }
    const warnings = bot.logs.lines.filter((line) =>
      line.includes('missing_agent_session_stopped_event_subscription'),
    );
    expect(warnings.filter((line) => line.includes('"level":40'))).toHaveLength(1);
    expect(JSON.parse(warnings.find((line) => line.includes('"level":40')) ?? '{}').msg).toMatch(
      /subscribe the app to the agent_session_stopped bot event \(manifest\.yml lists it\) and reinstall/,
    );
  });
});
