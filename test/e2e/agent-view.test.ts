import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type FakeSlackOptions, type SlackApiCall } from '../fakes/slack.js';
import { appHomeOpenedEvent, messageEvent, nextTs } from '../helpers/slack-events.js';
import { deliver, type RunningBot, startBot } from '../helpers/stack.js';
import { type TestStore, testStore } from '../helpers/stores.js';
import { sleep, waitFor } from '../helpers/wait.js';

/** The bot's DM with Alice, i.e. its Messages tab for her. */
const DM = 'D0ALICE';
const ALICE = 'U0ALICE';

function useStack(env: Record<string, string>, slackOptions: FakeSlackOptions = {}) {
  const stack = {} as {
    slack: FakeSlack;
    agent: AgentServiceEmulator;
    bot: RunningBot;
    store: TestStore;
  };
  beforeAll(async () => {
    stack.store = await testStore();
    stack.slack = await FakeSlack.start({ channels: { [DM]: { type: 'im', user: ALICE } }, ...slackOptions });
    stack.agent = await AgentServiceEmulator.start();
    stack.bot = await startBot({
      slack: stack.slack,
      agent: stack.agent,
      store: stack.store.store,
      env: { AGENT_TIMEOUT_MS: '1000', ...env },
    });
  });
  // A test that failed before releasing a hold on the agent leaves none to the next.
  afterEach(() => stack.agent?.releaseHolds());
  afterAll(async () => {
    await stack.bot.stop();
    await Promise.all([stack.slack.stop(), stack.agent.stop(), stack.store.remove()]);
  });
  return stack;
}

const dmMessage = (text: string, ts = nextTs(), threadTs?: string) =>
  messageEvent({ channel: DM, channelType: 'im', user: ALICE, text, ts, threadTs });
const statusCalls = (slack: FakeSlack, threadTs: string) =>
  slack.callsOf('assistant.threads.setStatus').filter((call) => call.args.thread_ts === threadTs);
const textOf = (call: SlackApiCall) => String(call.args.text);

describe('agent experience (Messages tab)', () => {
  // SLACK_AGENT_VIEW at its default (auto), installed from manifest.yml (features.agent_view).
  const stack = useStack({
    SLACK_AGENT_VIEW: 'auto',
    SUGGESTED_PROMPTS: 'Plan::Plan my week|Explain::Explain this error to me',
    AGENT_VIEW_GREETING: 'Hello! Ask me anything.',
  });

  it('opening the Messages tab shows the suggested prompts every time and the greeting once', async () => {
    const { slack, bot } = stack;
    expect((await deliver(bot, appHomeOpenedEvent({ channel: DM, user: ALICE }))).status).toBe(200);
    const prompts = await slack.waitForCall('assistant.threads.setSuggestedPrompts');
    expect(prompts.args).toMatchObject({
      channel_id: DM,
      title: 'Try asking me',
      prompts: [
        { title: 'Plan', message: 'Plan my week' },
        { title: 'Explain', message: 'Explain this error to me' },
      ],
    });
    // An agent app's prompts belong to the tab: with a thread_ts Slack would silently ignore them.
    expect(prompts.args.thread_ts).toBeUndefined();
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.channel === DM && textOf(c) === 'Hello! Ask me anything.',
    );

    await deliver(bot, appHomeOpenedEvent({ channel: DM, user: ALICE }));
    await slack.waitForCalls('assistant.threads.setSuggestedPrompts', 2);
    // The Home tab is not a conversation: nothing happens.
    await deliver(bot, appHomeOpenedEvent({ channel: DM, user: ALICE, tab: 'home' }));
    await sleep(300);
    expect(slack.callsOf('assistant.threads.setSuggestedPrompts')).toHaveLength(2);
    expect(
      slack.callsOf('chat.postMessage').filter((c) => textOf(c) === 'Hello! Ask me anything.'),
    ).toHaveLength(1);
  });

  it('greets on a later opening when the first greeting could not be posted', async () => {
    const { slack, bot } = stack;
    const bobDm = 'D0BOB';
    const greetings = () =>
      slack
        .callsOf('chat.postMessage')
        .filter((c) => c.args.channel === bobDm && textOf(c) === 'Hello! Ask me anything.');
    slack.failNext('chat.postMessage', { type: 'error', error: 'internal_error' });
    await deliver(bot, appHomeOpenedEvent({ channel: bobDm, user: 'U0BOB' }));
    await waitFor(() => greetings().length >= 1, 'greeting attempted');
    // The claim is given back just after the failed post; Bob opens the tab again until he is greeted.
    await waitFor(async () => {
      await deliver(bot, appHomeOpenedEvent({ channel: bobDm, user: 'U0BOB' }));
      await sleep(200);
      return slack.channelMessages(bobDm).some((m) => m.text === 'Hello! Ask me anything.');
    }, 'greeted');
    await deliver(bot, appHomeOpenedEvent({ channel: bobDm, user: 'U0BOB' }));
    await sleep(300);
    expect(slack.channelMessages(bobDm).filter((m) => m.text === 'Hello! Ask me anything.')).toHaveLength(1);
  });

  it('makes a DM a Messages-tab conversation from its first message, whether or not the tab event came', async () => {
    const { slack, bot } = stack;
    const carolDm = 'D0CAROL';
    const first = messageEvent({
      channel: carolDm,
      channelType: 'im',
      user: 'U0CAROL',
      text: 'hi',
      ts: nextTs(),
    });
    await deliver(bot, first);
    const threaded = await slack.waitForCall('chat.postMessage', (c) => c.args.channel === carolDm);
    expect(threaded.args.thread_ts).toBe(first.event.ts);
    await slack.waitForAgentSessionStatus(carolDm, first.event.ts, 'active');
  });

  it('gives each conversation thread its own session, with status while working and a title set once', async () => {
    const { slack, agent, bot } = stack;
    await deliver(bot, appHomeOpenedEvent({ channel: DM, user: ALICE }));
    const sessionsBefore = agent.requestsFor('createSession').length;
    const first = nextTs();
    const second = nextTs();
    await deliver(bot, dmMessage('Plan my week please', first));
    await deliver(bot, dmMessage('Explain closures in JavaScript', second));
    const firstReply = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === first);
    const secondReply = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === second);
    expect(textOf(firstReply)).toMatch(/^echo\[(s-\d+)#1\]: Plan my week please/);
    expect(textOf(secondReply)).toMatch(/^echo\[(s-\d+)#1\]: Explain closures in JavaScript/);
    expect(agent.requestsFor('createSession').length - sessionsBefore).toBe(2);
    const sessionOf = (call: SlackApiCall) => /^echo\[(s-\d+)#/.exec(textOf(call))?.[1];
    expect(sessionOf(firstReply)).not.toBe(sessionOf(secondReply));

    // A follow-up in the first thread reuses its session and does not rename the conversation.
    await deliver(bot, dmMessage('and next week?', nextTs(), first));
    const followUp = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === first && textOf(c).includes('next week'),
    );
    expect(sessionOf(followUp)).toBe(sessionOf(firstReply));
    expect(textOf(followUp)).toMatch(/#2\]: and next week\?/);

    // The conversation is an agent session: named once after its first prompt, processing while answered.
    const titles = slack.callsOf('agents.sessions.rename').filter((c) => c.args.thread_ts === first);
    expect(titles.map((c) => c.args.title)).toEqual(['Plan my week please']);
    // Each status through agents.sessions.setStatus: the thread's status line does not move the session.
    const transitions = () =>
      (slack.agentSession(DM, first)?.history ?? []).map(({ status, via }) => `${status} via ${via}`);
    await waitFor(() => transitions().length === 4, 'session set twice');
    expect(transitions()).toEqual([
      'processing via agents.sessions.setStatus',
      'active via agents.sessions.setStatus',
      'processing via agents.sessions.setStatus',
      'active via agents.sessions.setStatus',
    ]);
    const session = slack.agentSession(DM, first);
    expect(session).toMatchObject({ initiatorUserId: ALICE, title: 'Plan my week please', status: 'active' });

    // No "is thinking…" line: Slack would make it the session's status, stop button and all, at once.
    expect(statusCalls(slack, first)).toEqual([]);
    // No reactions in the Messages tab: the session's status is the indicator.
    expect(slack.callsOf('reactions.add').filter((c) => c.args.timestamp === first)).toEqual([]);
  });

  it.each([
    [
      'unavailable',
      (agent: AgentServiceEmulator) => agent.injectFailure('sendMessage', { type: 'http', status: 503 }),
    ],
    ['timed out', (agent: AgentServiceEmulator) => agent.injectFailure('sendMessage', { type: 'hang' })],
    [
      'rejected',
      (agent: AgentServiceEmulator) =>
        agent.injectFailure('sendMessage', { type: 'status-false', message: 'quota exceeded' }),
    ],
    [
      'bad response',
      (agent: AgentServiceEmulator) => agent.injectFailure('sendMessage', { type: 'malformed' }),
    ],
  ])('leaves the session active, its stop button gone, when the agent fails (%s)', async (_kind, inject) => {
    const { slack, agent, bot } = stack;
    await deliver(bot, appHomeOpenedEvent({ channel: DM, user: ALICE }));
    inject(agent);
    const ts = nextTs();
    await deliver(bot, dmMessage('this one fails', ts));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === ts && textOf(c).startsWith(':warning:'),
      5_000,
    );
    await waitFor(() => slack.agentSession(DM, ts)?.status === 'active', 'the session active again');
    expect(slack.agentSession(DM, ts)?.stopButtonVisible).toBe(false);
    expect(statusCalls(slack, ts)).toEqual([]);
  });

  it('stop pressed in Slack cancels the queued prompts of that conversation and drops the answer in progress', async () => {
    const { slack, agent, bot } = stack;
    await deliver(bot, appHomeOpenedEvent({ channel: DM, user: ALICE }));
    // Answered once the stop is recorded (before its ack), well within this stack's 1 s agent timeout.
    const answer = agent.holdAnswerTo('a long question');
    const root = nextTs();
    await deliver(bot, dmMessage('a long question', root));
    await waitFor(
      () => agent.requestsFor('sendMessage').some((r) => r.prompt === 'a long question'),
      'first sent',
    );
    await waitFor(() => slack.agentSession(DM, root)?.stopButtonVisible, 'stop button shown');
    await deliver(bot, dmMessage('queued one', nextTs(), root));
    await deliver(bot, dmMessage('queued two', nextTs(), root));
    // Throws unless Slack would show the button: the session is processing.
    expect((await deliver(bot, slack.pressStopButton(DM, root, ALICE))).status).toBe(200);
    answer();
    const notice = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && /stop|cancel/i.test(textOf(c)),
    );
    expect(textOf(notice)).toMatch(/cancelled 2 queued messages and dropped the answer I was waiting for/);
    // The agent's answer came, after the stop: it is not posted.
    await waitFor(
      () => agent.requestsFor('sendMessage').some((r) => r.prompt === 'a long question' && r.status === 200),
      'the agent answered',
    );
    await sleep(500);
    const prompts = agent.requestsFor('sendMessage').map((r) => r.prompt);
    expect(prompts).not.toContain('queued one');
    expect(prompts).not.toContain('queued two');
    await waitFor(() => slack.agentSession(DM, root)?.status === 'active', 'the session active again');
    expect(slack.agentSession(DM, root)).toMatchObject({ status: 'active', stopButtonVisible: false });
    // The answer in progress was dropped, not posted.
    expect(slack.callsOf('chat.postMessage').filter((c) => textOf(c).includes('a long question'))).toEqual(
      [],
    );
  });
});

describe('classic DM (agent experience off)', () => {
  const stack = useStack({ SLACK_AGENT_VIEW: 'false' });

  it('keeps one continuing DM conversation answered at the top level, without tab prompts', async () => {
    const { slack, agent, bot } = stack;
    await deliver(bot, appHomeOpenedEvent({ channel: DM, user: ALICE }));
    await deliver(bot, dmMessage('first'));
    await deliver(bot, dmMessage('second'));
    const replies = await slack.waitForCalls('chat.postMessage', 2, (c) => c.args.channel === DM);
    expect(replies.map((c) => c.args.thread_ts)).toEqual([undefined, undefined]);
    expect(replies.map(textOf)).toEqual(['echo[s-1#1]: first', 'echo[s-1#2]: second']);
    expect(agent.requestsFor('createSession')).toHaveLength(1);
    expect(slack.callsOf('assistant.threads.setSuggestedPrompts')).toEqual([]);
    expect(slack.callsOf('assistant.threads.setStatus')).toEqual([]);
  });
});

describe('a classic app (manifest.classic.yml) left at SLACK_AGENT_VIEW=auto', () => {
  const stack = useStack(
    { SLACK_AGENT_VIEW: 'auto', AGENT_VIEW_GREETING: 'Hello! Ask me anything.' },
    { agentView: false },
  );

  it('hears the Messages tab opened (Slack sends it to classic apps too), greets nobody, and keeps its DMs classic once Slack said so', async () => {
    const { slack, bot } = stack;
    expect((await deliver(bot, appHomeOpenedEvent({ channel: DM, user: ALICE }))).status).toBe(200);
    // Slack's answer to the tab's prompts tells the bot what the app is.
    await slack.waitForCall('assistant.threads.setSuggestedPrompts');
    await deliver(bot, dmMessage('first'));
    await deliver(bot, dmMessage('second'));
    const replies = await slack.waitForCalls('chat.postMessage', 2, (c) => c.args.channel === DM);
    expect(replies.map((c) => c.args.thread_ts)).toEqual([undefined, undefined]);
    expect(replies.map(textOf)).toEqual(['echo[s-1#1]: first', 'echo[s-1#2]: second']);
    await deliver(bot, appHomeOpenedEvent({ channel: DM, user: ALICE }));
    await sleep(300);
    expect(slack.channelMessages(DM).filter((m) => m.text === 'Hello! Ask me anything.')).toEqual([]);
    // Asked once; after Slack's not_agent_app nothing agent-only is tried again.
    expect(slack.callsOf('assistant.threads.setSuggestedPrompts')).toHaveLength(1);
    expect(slack.callsOf('agents.sessions.setStatus')).toEqual([]);
  });
});
