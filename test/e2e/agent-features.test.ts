import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type SlackApiCall } from '../fakes/slack.js';
import { type BotProcess, spawnBot } from '../helpers/bot-process.js';
import { freshDataDir, type TempDataDir } from '../helpers/embedded-store.js';
import {
  agentSessionStoppedEvent,
  appContextChangedEvent,
  appMentionEvent,
  blockActionsPayload,
  messageEvent,
  nextTs,
  postSignedEvent,
  postSignedInteraction,
} from '../helpers/slack-events.js';
import { AGENT_ID, metric, type RunningBot, SIGNING_SECRET, startBot } from '../helpers/stack.js';
import { sleep, waitFor } from '../helpers/wait.js';

const CHANNEL = 'C0AGENTS';
const ALICE = 'U0ALICE';
const textOf = (call: SlackApiCall) => String(call.args.text);
const prompts = (agent: AgentServiceEmulator) => agent.requestsFor('sendMessage').map((r) => r.prompt ?? '');
/** Session statuses with Slack's repeats folded (the thread status line moves a session too). */
const transitions = (slack: FakeSlack, channel: string, threadTs: string) =>
  (slack.agentSession(channel, threadTs)?.history ?? [])
    .map((transition) => transition.status)
    .filter((status, i, all) => status !== all[i - 1]);

function useStack(env: Record<string, string>, slackOptions: Parameters<typeof FakeSlack.start>[0] = {}) {
  const stack = {} as { slack: FakeSlack; agent: AgentServiceEmulator; bot: RunningBot; dir: TempDataDir };
  beforeAll(async () => {
    stack.dir = await freshDataDir();
    stack.slack = await FakeSlack.start({
      users: { U0ALICE: { name: 'alice' }, U0BOB: { name: 'bob' } },
      channels: {
        C0PUBLIC: { name: 'design-review' },
        G0SECRET: { name: 'secret-plans', type: 'group', botIsMember: false },
        D0ALICE: { type: 'im', user: ALICE },
      },
      ...slackOptions,
    });
    stack.agent = await AgentServiceEmulator.start();
    stack.bot = await startBot({
      slack: stack.slack,
      agent: stack.agent,
      store: { kind: 'embedded', dataDir: stack.dir.path },
      env: { AGENT_TIMEOUT_MS: '2000', ...env },
    });
  });
  afterAll(async () => {
    await stack.bot.stop();
    await Promise.all([stack.slack.stop(), stack.agent.stop(), stack.dir.remove()]);
  });
  return stack;
}

const send = (bot: RunningBot, body: unknown) => postSignedEvent(bot.eventsUrl, SIGNING_SECRET, body);
const mentionIn = (channel: string, text: string, ts: string, threadTs?: string, user = ALICE) =>
  appMentionEvent({ channel, user, text: `<@U0BOT> ${text}`, ts, threadTs });

describe('an agent app: channel threads are agent sessions', () => {
  const stack = useStack({ SLACK_AGENT_VIEW: 'true' });

  it('goes processing while the answer comes (stop button), active after it, named after the first prompt, closed on reset', async () => {
    const { slack, agent, bot } = stack;
    agent.setLatency(400, 'sendMessage');
    const root = nextTs();
    try {
      await send(bot, mentionIn(CHANNEL, 'Plan the launch', root));
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

    await send(bot, mentionIn(CHANNEL, 'reset', nextTs(), root));
    await waitFor(() => slack.agentSession(CHANNEL, root)?.status === 'closed', 'closed on reset');
    expect(transitions(slack, CHANNEL, root)).toEqual(['processing', 'active', 'closed']);
  });

  it('stop (the button, or the word) drops the answer in progress, says so, and the next message goes on in the same session', async () => {
    const { slack, agent, bot } = stack;
    const root = nextTs();
    await send(bot, mentionIn(CHANNEL, 'first question', root));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('first question'),
    );
    agent.setLatency(800, 'sendMessage');
    try {
      await send(bot, mentionIn(CHANNEL, 'a long job', nextTs(), root));
      await waitFor(() => prompts(agent).includes('a long job'), 'prompt sent');
      expect(
        (await send(bot, agentSessionStoppedEvent({ channel: CHANNEL, user: ALICE, threadTs: root }))).status,
      ).toBe(200);
      const notice = await slack.waitForCall(
        'chat.postMessage',
        (c) => c.args.thread_ts === root && textOf(c).includes('Stopped'),
      );
      expect(textOf(notice)).toMatch(
        /dropped the answer I was waiting for\. The agent had already received that message and may have acted on it/,
      );
      await waitFor(() => slack.agentSession(CHANNEL, root)?.status === 'active', 'active again at once');
      await waitFor(
        () => agent.requestsFor('sendMessage').some((r) => r.prompt === 'a long job' && r.status === 200),
        'agent done',
      );
    } finally {
      agent.setLatency(0, 'sendMessage');
    }
    await sleep(300);
    expect(slack.threadMessages(CHANNEL, root).filter((m) => m.text.includes('a long job'))).toEqual([]);
    await send(bot, mentionIn(CHANNEL, 'and now?', nextTs(), root));
    const next = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('and now?'),
    );
    expect(textOf(next)).toMatch(/^echo\[s-\d+#3\]: and now\?$/);
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
    await send(bot, mentionIn(CHANNEL, 'what do you think of this?', ts, root));
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
    await send(bot, mentionIn(CHANNEL, 'and the risks?', nextTs(), root));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('and the risks?'),
    );
    expect(prompts(agent).at(-1)).toBe('and the risks?');
  });

  it('posts a Markdown table of the answer as a Slack table block', async () => {
    const { slack, agent, bot } = stack;
    agent.setReplyFn(() => 'Owners:\n\n| Area | Owner |\n|---|---|\n| API | Ada |\n| UI | Bob |');
    const root = nextTs();
    try {
      await send(bot, mentionIn(CHANNEL, 'who owns what?', root));
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

  it('acknowledges feedback privately, counts it per agent, and logs it with the agent session', async () => {
    const { slack, bot } = stack;
    const root = nextTs();
    const body = mentionIn(CHANNEL, 'rate me', root);
    slack.ingestEvent(body); // the thread exists in Slack, as it would
    await send(bot, body);
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

describe('an agent app: the Messages tab tells which channel the person looks at', () => {
  const stack = useStack({ SLACK_AGENT_VIEW: 'true' });

  it('passes a channel the bot can see once, on the next prompt after it changed; never one it cannot see', async () => {
    const { slack, agent, bot } = stack;
    const ask = async (text: string) => {
      const ts = nextTs();
      await send(bot, messageEvent({ channel: 'D0ALICE', channelType: 'im', user: ALICE, text, ts }));
      await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === ts && textOf(c).includes(text));
      return prompts(agent).at(-1);
    };
    await send(bot, appContextChangedEvent({ user: ALICE, channel: 'D0ALICE', viewing: 'C0PUBLIC' }));
    expect(await ask('summarise the discussion')).toBe(
      '[The person is looking at the Slack channel #design-review while writing this.]\n\nsummarise the discussion',
    );
    expect(await ask('anything else?')).toBe('anything else?');
    // A private channel the bot is not in: its name must not reach the agent.
    await send(bot, appContextChangedEvent({ user: ALICE, channel: 'D0ALICE', viewing: 'G0SECRET' }));
    expect(await ask('what about here?')).toBe('what about here?');
  });
});

describe('a classic app (no agent_view)', () => {
  const stack = useStack({ SLACK_AGENT_VIEW: 'false', FEEDBACK_BUTTONS: 'false' });

  it('keeps reactions as before: no agent session calls; and no feedback buttons when they are off', async () => {
    const { slack, bot } = stack;
    const root = nextTs();
    await send(bot, mentionIn(CHANNEL, 'classic please', root));
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
  let dir: TempDataDir;
  let victim: BotProcess | undefined;
  let survivor: RunningBot | undefined;
  const ENV = { AGENT_TIMEOUT_MS: '1000', JOB_LEASE_MS: '1000', SLACK_AGENT_VIEW: 'false' };

  beforeAll(async () => {
    slack = await FakeSlack.start({ users: { U0ALICE: { name: 'alice' }, U0BOB: { name: 'bob' } } });
    agent = await AgentServiceEmulator.start();
    dir = await freshDataDir();
  });
  afterEach(async () => {
    victim?.child.kill('SIGKILL');
    await victim?.exited;
    await survivor?.stop();
  });
  afterAll(async () => {
    await Promise.all([slack.stop(), agent.stop(), dir.remove()]);
  });

  it('by its author, once: the prompt goes to the agent again in the same session and the button goes', async () => {
    const store = { kind: 'embedded' as const, dataDir: dir.path };
    // A first answer, so the thread has a session; then a prompt whose answer dies with the process.
    const root = nextTs();
    slack.ingestEvent(mentionIn(CHANNEL, 'hello', root));
    victim = await spawnBot({ slack, agent, store, env: ENV });
    await send({ eventsUrl: victim.eventsUrl } as RunningBot, mentionIn(CHANNEL, 'hello', root));
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('hello'),
    );
    agent.setLatency(900, 'sendMessage');
    const lostTs = nextTs();
    const lost = mentionIn(CHANNEL, 'deploy the docs', lostTs, root);
    slack.ingestEvent(lost);
    await send({ eventsUrl: victim.eventsUrl } as RunningBot, lost);
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
      await send(bot, mentionIn(CHANNEL, text, root));
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
