import { beforeAll, describe, expect, it } from 'vitest';
import type { FakeSlack, SlackApiCall } from '../fakes/slack.js';
import { botPerSuite, type SuiteBot } from '../helpers/bot-per-suite.js';
import {
  messageShortcutPayload,
  nextTs,
  postSignedForm,
  postSignedInteraction,
  slashCommandFields,
} from '../helpers/slack-events.js';
import { AGENT_ID, mention, SIGNING_SECRET } from '../helpers/stack.js';
import { sleep, waitFor } from '../helpers/wait.js';

/**
 * What one person (or an agent steered by one) can make the bot do at once: Slack calls per message, Slack
 * messages per reply, who a reply pings, and agent calls per command. Each is bounded.
 */

const CHANNEL = 'C0FLOOD';

const useStack = (env: Record<string, string> = {}): SuiteBot =>
  botPerSuite({ slack: { users: { U0ALICE: { name: 'alice' }, U0BOB: { name: 'bob' } } }, env });

const textOf = (call: SlackApiCall) => String(call.args.text);
const postsIn = (slack: FakeSlack, threadTs: string) =>
  slack
    .callsOf('chat.postMessage')
    .filter((c) => c.args.channel === CHANNEL && c.args.thread_ts === threadTs);
/** The markdown of a posted message's blocks, as Slack renders it. */
/** The text of a post's markdown blocks (not of its feedback buttons). */
const blockTextOf = (call: SlackApiCall) =>
  ((call.args.blocks ?? []) as { type?: string; text?: string }[])
    .filter((block) => block.type === 'markdown')
    .map((block) => block.text ?? '')
    .join('\n');
/** `<@U…>` for made-up people Slack does not know (users.info answers user_not_found). */
const strangers = (count: number, from: number) =>
  Array.from({ length: count }, (_, i) => `<@U${String(from + i).padStart(8, '0')}>`);

/** The thread's posts once more than `after` have come and then none for half a second. */
async function settledPosts(slack: FakeSlack, threadTs: string, after: number): Promise<SlackApiCall[]> {
  let seen = -1;
  await waitFor(
    async () => {
      const now = postsIn(slack, threadTs).length;
      if (now > after && now === seen) return true;
      seen = now;
      // Longer than a Retry-After: Slack paces posts in one channel to about one a second.
      await sleep(1_500);
      return false;
    },
    'the thread to settle',
    20_000,
  );
  return postsIn(slack, threadTs);
}

/** Starts a thread and waits for the agent's first answer in it. */
async function startThread(stack: SuiteBot, user = 'U0ALICE'): Promise<string> {
  const root = nextTs();
  await mention(stack.bot, { channel: CHANNEL, user, text: '<@U0BOT> hello', ts: root });
  await stack.slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
  return root;
}

describe('one message, one reply, one command: bounded', () => {
  const stack = useStack();
  const MILLION = 'A paragraph of the agent going on and on. '.repeat(24).trim();
  beforeAll(() => {
    stack.agent.setReplyFn(({ sessionId, turn, prompt }) => {
      // About 1,000,000 characters in paragraphs, as a runaway answer would come.
      if (prompt === 'write a million characters')
        return Array.from({ length: Math.ceil(1_000_000 / (MILLION.length + 2)) }, () => MILLION).join(
          '\n\n',
        );
      if (prompt === 'write sixteen megabytes') return 'x'.repeat(16 * 1024 * 1024);
      if (prompt === 'ping everyone')
        return [
          'Attention <!here> and <!channel>, also <!everyone>!',
          'Labelled: <!here|here> <!channel|channel> <!everyone|everyone>',
          'Groups: <!subteam^S0DEVS|@devs> and <!subteam^S0OPS>',
          'Plain: @here @channel @everyone, shouting @HERE',
          'Emphasised: _@channel_ and *@here*; the old private-channel form <!group> and <!group|group>',
          // A table: its cells are posted in a table block, emphasis markers dropped.
          '| Who | What |\n|---|---|\n| <!here> | __@everyone__ |\n| _@channel_ | @**here** |',
          'Ask <@U0BOB> about it.',
        ].join('\n\n');
      return `echo[${sessionId}#${turn}]: ${prompt}`;
    });
  });

  it('refuses a 39,000-character message with 3,000 mentions before looking anyone up', async () => {
    const { slack, agent, bot } = stack;
    const text = `<@U0BOT> ${strangers(3_000, 1).join(' ')}`;
    expect(text.length).toBeGreaterThan(38_000);
    const lookups = slack.callsOf('users.info').length;
    const prompts = agent.requestsFor('sendMessage').length;
    const root = nextTs();
    await mention(bot, { channel: CHANNEL, text, ts: root });
    const notice = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    expect(slack.callsOf('users.info')).toHaveLength(lookups);
    expect(textOf(notice)).toBe(
      `:warning: That message is ${text.length.toLocaleString('en-US')} characters long; I can pass on at most 8,000. Please shorten it or split it into several messages.`,
    );
    expect(agent.requestsFor('sendMessage')).toHaveLength(prompts);
  });

  it('looks up at most 20 people of a message, 4 at a time, and asks about unknown ones only once', async () => {
    const { slack, agent, bot } = stack;
    const LATENCY_MS = 100;
    slack.setLatency('users.info', LATENCY_MS);
    try {
      const text = `<@U0BOT> who are ${strangers(300, 100_000).join(' ')}?`;
      const before = slack.callsOf('users.info').length;
      const root = nextTs();
      await mention(bot, { channel: CHANNEL, text, ts: root });
      await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root, 10_000);
      const lookups = slack.callsOf('users.info').slice(before);
      expect(lookups).toHaveLength(20);
      // users.info answers after LATENCY_MS: a lookup is in flight from its arrival until then.
      const inFlight = lookups.map(
        (call) =>
          lookups.filter((other) => other.at <= call.at && other.at > call.at - LATENCY_MS / 2).length,
      );
      expect(Math.max(...inFlight)).toBeLessThanOrEqual(4);
      // The prompt went on, with the people it did not look up as their ids.
      const prompt = agent.requestsFor('sendMessage').at(-1)?.prompt ?? '';
      expect(prompt).toMatch(/^who are @U00100000 @U00100001 .* @U00100299\?$/);

      // The same mentions again (Slack said it knows none of them): no new lookup.
      await mention(bot, { channel: CHANNEL, text, threadTs: root });
      await slack.waitForCalls('chat.postMessage', 2, (c) => c.args.thread_ts === root, 10_000);
      expect(slack.callsOf('users.info').slice(before)).toHaveLength(20);
    } finally {
      slack.setLatency('users.info', undefined);
    }
  });

  it('posts at most 40,000 characters of a 1,000,000-character reply, in 4 messages, the last saying it was cut', async () => {
    const { slack, bot } = stack;
    const root = await startThread(stack);
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> write a million characters', threadTs: root });
    // The parts may be paced by Slack's per-channel limit: wait for the one saying the reply was cut.
    await waitFor(
      () => postsIn(slack, root).some((post) => blockTextOf(post).includes(':scissors:')),
      'the part saying the reply was cut',
      20_000,
    );
    const parts = (await settledPosts(slack, root, 1)).slice(1);
    expect(parts.length).toBeLessThanOrEqual(4);
    expect(blockTextOf(parts.at(-1) as SlackApiCall)).toMatch(
      /_:scissors: The reply was cut: it was [\d,]+ characters long, and at most 40,000 are posted\._$/,
    );
    const posted = parts.map(blockTextOf).join('');
    expect(posted.length).toBeLessThan(41_000);
    expect(posted).toContain(MILLION);
  });

  it('answers a 16 MB reply with a sentence saying it could not be read, and posts none of it', async () => {
    const { slack, agent, bot } = stack;
    const root = await startThread(stack);
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> write sixteen megabytes', threadTs: root });
    const posts = await settledPosts(slack, root, 1);
    expect(posts).toHaveLength(2); // the first answer and a notice
    expect(textOf(posts[1] as SlackApiCall)).toMatch(
      /^:warning: The agent service sent a reply I could not read, so I have no answer\. .*\(ref [0-9A-F]{8}\)$/,
    );
    expect(JSON.stringify(posts.map((c) => c.args))).not.toContain('xxxxxxxx');
    // Refused once: a prompt is never sent twice.
    expect(
      agent.requestsFor('sendMessage').filter((r) => r.prompt === 'write sixteen megabytes'),
    ).toHaveLength(1);
  });

  it('makes every broadcast in a reply inert in the text and blocks it posts; a mention of one person stays', async () => {
    const { slack, bot } = stack;
    const root = await startThread(stack);
    await mention(bot, { channel: CHANNEL, text: '<@U0BOT> ping everyone', threadTs: root });
    const reply = await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && blockTextOf(c).includes('Attention'),
    );
    for (const posted of [textOf(reply), blockTextOf(reply), JSON.stringify(reply.args)]) {
      for (const token of ['<!here', '<!channel', '<!everyone', '<!subteam', '<!group', '&lt;!'])
        expect(posted).not.toContain(token);
      // A bare @here (not part of a word or an email address) is what Slack would turn into a ping.
      expect(posted).not.toMatch(/(^|[^\w@])@(here|channel|everyone)\b/i);
      // Emphasis is no word: `_@here_` pings as well.
      expect(posted).not.toMatch(/(?<![\p{L}\p{N}@])@(here|channel|everyone)(?![\p{L}\p{N}])/iu);
    }
    // The words are still there to read, and the group shows by its name.
    expect(blockTextOf(reply)).toContain('Attention @\u200Bhere and @\u200Bchannel, also @\u200Beveryone!');
    expect(blockTextOf(reply)).toContain('Groups: @\u200Bdevs and @\u200Bgroup');
    expect(blockTextOf(reply)).toContain('shouting @\u200BHERE');
    expect(blockTextOf(reply)).toContain('Emphasised: _@\u200Bchannel_ and *@\u200Bhere*');
    expect(blockTextOf(reply)).toContain('form @\u200Bgroup and @\u200Bgroup');
    // The table's cells as Slack shows them, each inert.
    const table = ((reply.args.blocks ?? []) as { type?: string; rows?: { text?: string }[][] }[]).find(
      (block) => block.type === 'table',
    );
    expect(table?.rows?.map((row) => row.map((cell) => cell.text))).toEqual([
      ['Who', 'What'],
      ['@\u200Bhere', '@\u200Beveryone'],
      ['_@\u200Bchannel_', '@\u200Bhere'],
    ]);
    // Anyone in the thread could mention Bob too: the agent may.
    expect(blockTextOf(reply)).toContain('Ask <@U0BOB> about it.');
  });

  it('/agent sessions reads at most 3 pages of the agent list, however long it is', async () => {
    const { slack, agent, bot } = stack;
    await startThread(stack, 'U0CAROL');
    agent.setListShape('array', 1);
    for (let i = 0; i < 300; i++) agent.addSession(AGENT_ID);
    try {
      const lists = agent.requestsFor('listSessions').length;
      const responseId = `sessions-${nextTs()}`;
      await postSignedForm(
        bot.eventsUrl,
        SIGNING_SECRET,
        slashCommandFields({
          text: 'sessions',
          channel: CHANNEL,
          user: 'U0CAROL',
          responseUrl: slack.responseUrl(responseId),
        }),
      );
      const answer = await slack.waitForCall('response_url', (c) => c.args.responseId === responseId);
      expect(textOf(answer)).toMatch(
        /^You have 1 conversation with the agent here:\n• <[^>]+\|thread>: started /,
      );
      expect(agent.requestsFor('listSessions').length - lists).toBe(3);
    } finally {
      agent.setListShape('array');
    }
  });
});

describe('the per-user limit on commands and shortcuts', () => {
  const stack = useStack({ USER_RATE_LIMIT: '2' });

  async function slash(user: string, text: string): Promise<string> {
    const { slack, bot } = stack;
    const responseId = `slash-${nextTs()}`;
    await postSignedForm(
      bot.eventsUrl,
      SIGNING_SECRET,
      slashCommandFields({ text, channel: CHANNEL, user, responseUrl: slack.responseUrl(responseId) }),
    );
    return textOf(await stack.slack.waitForCall('response_url', (c) => c.args.responseId === responseId));
  }

  const LIMITED =
    "You're sending requests faster than I can take them (at most 2 a minute), so I skipped this one. Please wait a moment and try again.";

  it('answers a third command within a minute with the limit sentence, and does not run it', async () => {
    const { agent } = stack;
    await startThread(stack, 'U0DAVE'); // one
    expect(await slash('U0DAVE', 'sessions')).toMatch(/^You have 1 conversation/); // two
    const lists = agent.requestsFor('listSessions').length;
    expect(await slash('U0DAVE', 'reset')).toBe(LIMITED);
    expect(await slash('U0DAVE', 'sessions')).toBe(LIMITED);
    await sleep(300);
    expect(agent.requestsFor('deleteSession')).toHaveLength(0);
    expect(agent.requestsFor('listSessions')).toHaveLength(lists);
    expect(await slash('U0ERIN', 'help')).toMatch(/^\*\/agent\*/); // others are not held back
  });

  it('answers a shortcut over the limit with the limit sentence, and does not reset the thread', async () => {
    const { slack, agent, bot } = stack;
    const root = await startThread(stack, 'U0FRANK'); // one
    expect(await slash('U0FRANK', 'help')).toMatch(/^\*\/agent\*/); // two
    const responseId = `shortcut-${nextTs()}`;
    await postSignedInteraction(
      bot.eventsUrl,
      SIGNING_SECRET,
      messageShortcutPayload({
        callbackId: 'reset_conversation',
        channel: CHANNEL,
        user: 'U0FRANK',
        messageTs: root,
        threadTs: root,
        responseUrl: slack.responseUrl(responseId),
      }),
    );
    const answer = await slack.waitForCall('response_url', (c) => c.args.responseId === responseId);
    expect(textOf(answer)).toBe(LIMITED);
    await sleep(500);
    expect(agent.requestsFor('deleteSession')).toHaveLength(0);
    expect(slack.callsOf('response_url').filter((c) => c.args.responseId === responseId)).toHaveLength(1);
  });
});
