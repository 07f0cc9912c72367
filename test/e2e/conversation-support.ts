import { afterAll, afterEach, beforeAll } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type SlackApiCall } from '../fakes/slack.js';
import { messageEditedEvent, messageEvent, nextTs } from '../helpers/slack-events.js';
import { deliver, mention, type RunningBot, startBot } from '../helpers/stack.js';
import { type TestStore, testStore } from '../helpers/stores.js';

// What the conversation test files share: conversation.test.ts (threads, DMs, delivery) and
// conversation-replies.test.ts (replies, indicators, failures, concurrency), which run side by side.

export const CHANNEL = 'C0CONVO';

/** One fake Slack, one agent emulator and one bot for a group of tests; each test uses its own threads. */
export function useStack(env: Record<string, string> = {}) {
  const stack = {} as {
    slack: FakeSlack;
    agent: AgentServiceEmulator;
    bot: RunningBot;
    store: TestStore;
  };
  beforeAll(async () => {
    stack.store = await testStore();
    stack.slack = await FakeSlack.start({
      users: { U0ALICE: { name: 'alice', realName: 'Alice Liddell' }, U0BOB: { name: 'bob' } },
    });
    stack.agent = await AgentServiceEmulator.start();
    stack.bot = await startBot({
      slack: stack.slack,
      agent: stack.agent,
      store: stack.store.store,
      env,
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

export const send = deliver;

export const postsIn = (slack: FakeSlack, channel: string, threadTs: string | undefined) =>
  slack
    .callsOf('chat.postMessage')
    .filter((c) => c.args.channel === channel && c.args.thread_ts === threadTs);
export const textOf = (call: SlackApiCall) => String(call.args.text);
/** A message in the test channel, as Slack's `message.channels` event delivers it. */
export const channelMessage = (fields: Omit<Parameters<typeof messageEvent>[0], 'channel' | 'channelType'>) =>
  messageEvent({ channel: CHANNEL, channelType: 'channel', ...fields });

export const promptsSent = (agent: AgentServiceEmulator) =>
  agent.requestsFor('sendMessage').map((r) => r.prompt);

/** Slack's message_changed for Alice's top-level message `ts`: its words went from `oldText` to `newText`. */
export const aliceEdited = (ts: string, newText: string, oldText: string) =>
  messageEditedEvent({ channel: CHANNEL, user: 'U0ALICE', ts, newText, oldText });

/**
 * A new thread whose job has started (the working reaction is on) while its agent session is still being
 * made, so its prompt has not left: `sessionMade()` lets the session, and then the prompt, through.
 */
export async function startedBeforeSession(
  stack: ReturnType<typeof useStack>,
  text: string,
): Promise<{ root: string; sessionMade: () => void }> {
  const sessionMade = stack.agent.holdSessionCreation();
  const root = nextTs();
  await mention(stack.bot, { channel: CHANNEL, text: `<@U0BOT> ${text}`, ts: root });
  await stack.slack.waitForCall('reactions.add', (c) => c.args.timestamp === root && c.args.name === 'eyes');
  return { root, sessionMade };
}
