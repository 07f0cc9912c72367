import { describe, expect, it } from 'vitest';
import type { SlackApiCall } from '../fakes/slack.js';
import { botPerSuite } from '../helpers/bot-per-suite.js';
import {
  appMentionEvent,
  channelLifecycleEvent,
  messageEvent,
  messageShortcutPayload,
  nextTs,
  postSignedInteraction,
} from '../helpers/slack-events.js';
import { AGENT_ID, deliver, mention, SIGNING_SECRET } from '../helpers/stack.js';
import { sleep, waitFor } from '../helpers/wait.js';

/**
 * Who may do what: people in someone else's thread, people of another organisation in a Slack Connect
 * channel, and an agent service handing out session ids that are not ids.
 */

const CHANNEL = 'C0SHARED';
const OUTSIDER_TEAM = 'T0OTHERORG';

const stack = botPerSuite({
  slack: { users: { U0ALICE: { name: 'alice' }, U0BOB: { name: 'bob' } } },
  env: { ALLOWED_TEAM_IDS: 'T0TEAM', SESSION_DELETE_RETRY_MS: '100' },
});

const textOf = (call: SlackApiCall) => String(call.args.text);
const send = (body: unknown) => deliver(stack.bot, body);
const promptsSent = () => stack.agent.requestsFor('sendMessage').map((r) => r.prompt);
const liveSessions = () => stack.agent.sessionsOf(AGENT_ID).map((s) => s.uuid);
const threadMessage = (user: string, text: string, threadTs: string, ts = nextTs()) =>
  messageEvent({ channel: CHANNEL, channelType: 'channel', user, text, ts, threadTs });

const ONLY_ALICE_MAY_RESET =
  'Only <@U0ALICE>, who started this conversation with the agent, can reset it. You can start your own by mentioning me in a new thread.';

/**
 * Whatever Bob notices first after asking to reset the thread: a private note he sees (in the thread, or in the
 * channel while the thread has no replies), or a reset there.
 */
async function answerToBobsReset(
  root: string,
  asked: () => Promise<unknown>,
): Promise<{ kind: 'note' | 'reset'; text: string }> {
  const before = stack.slack.visibleEphemerals('U0BOB', { channel: CHANNEL }).length;
  await asked();
  return waitFor(() => {
    const note = stack.slack.visibleEphemerals('U0BOB', { channel: CHANNEL })[before];
    if (note) return { kind: 'note' as const, text: note.text ?? '' };
    const reset = stack.slack.calls.find(
      (c) => c.method === 'chat.postMessage' && c.args.thread_ts === root && /reset/i.test(textOf(c)),
    );
    return reset && { kind: 'reset' as const, text: textOf(reset) };
  }, 'an answer to Bob’s reset');
}

describe("someone else's thread", () => {
  it("Bob's stop cancels none of Alice's waiting messages and his reset is refused naming her; hers work", async () => {
    // Alice's first answer comes once Bob's stop and reset are answered, however slow the machine.
    const answerAlice = stack.agent.holdAnswerTo('long task');
    const root = nextTs();
    await mention(stack.bot, { channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> long task', ts: root });
    await waitFor(() => promptsSent().includes('long task'), 'Alice’s first prompt sent');
    const session = stack.agent.requestsFor('sendMessage').at(-1)?.sessionId ?? '';
    const queued = [nextTs(), nextTs()];
    for (const [i, ts] of queued.entries()) await send(threadMessage('U0ALICE', `queued ${i}`, root, ts));
    for (const ts of queued)
      await stack.slack.waitForCall(
        'reactions.add',
        (c) => c.args.timestamp === ts && c.args.name !== 'eyes',
      );

    await mention(stack.bot, { channel: CHANNEL, user: 'U0BOB', text: '<@U0BOT> stop', threadTs: root });
    const stopNotice = await stack.slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && /stop/i.test(textOf(c)),
    );
    expect(textOf(stopNotice)).toBe(
      'Nothing of yours is waiting for the agent in this conversation, so there is nothing to stop.',
    );
    const asked = () =>
      mention(stack.bot, { channel: CHANNEL, user: 'U0BOB', text: '<@U0BOT> reset', threadTs: root });
    expect(await answerToBobsReset(root, asked)).toEqual({ kind: 'note', text: ONLY_ALICE_MAY_RESET });
    answerAlice();

    // Alice's three messages are all answered, in her one session, which Bob did not end.
    const answers = await stack.slack.waitForCalls(
      'chat.postMessage',
      3,
      (c) => c.args.thread_ts === root && textOf(c).startsWith('echo'),
      8_000,
    );
    expect(answers.map(textOf)).toEqual([
      `echo[${session}#1]: long task`,
      `echo[${session}#2]: queued 0`,
      `echo[${session}#3]: queued 1`,
    ]);
    expect(liveSessions()).toContain(session);
    expect(stack.agent.requestsFor('deleteSession')).toHaveLength(0);

    // Alice's own reset ends it.
    await mention(stack.bot, { channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> reset', threadTs: root });
    await stack.slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).includes('Conversation reset'),
    );
    await waitFor(() => !liveSessions().includes(session), 'Alice’s session deleted');
  });
});

describe('a thread whose conversation has not started yet', () => {
  it("refuses Bob's reset naming Alice, whose first message is still being answered; hers all go on", async () => {
    // Alice's first message is being worked on but its agent session is not made until Bob's reset is answered.
    const sessionMade = stack.agent.holdSessionCreation();
    try {
      const sessionsBefore = stack.agent.requestsFor('createSession').length;
      const root = nextTs();
      await mention(stack.bot, { channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> first', ts: root });
      await waitFor(
        () => stack.agent.requestsFor('createSession').length > sessionsBefore,
        'Alice’s session being created',
      );
      const queued = nextTs();
      await send(threadMessage('U0ALICE', 'second', root, queued));
      await stack.slack.waitForCall(
        'reactions.add',
        (c) => c.args.timestamp === queued && c.args.name === 'hourglass_flowing_sand',
      );

      const asked = () =>
        mention(stack.bot, { channel: CHANNEL, user: 'U0BOB', text: '<@U0BOT> reset', threadTs: root });
      expect(await answerToBobsReset(root, asked)).toEqual({ kind: 'note', text: ONLY_ALICE_MAY_RESET });
      sessionMade();

      const answers = await stack.slack.waitForCalls(
        'chat.postMessage',
        2,
        (c) => c.args.thread_ts === root && textOf(c).startsWith('echo'),
        8_000,
      );
      const session = /^echo\[(s-\d+)#/.exec(textOf(answers[0] as SlackApiCall))?.[1] ?? '';
      expect(answers.map(textOf)).toEqual([`echo[${session}#1]: first`, `echo[${session}#2]: second`]);
      await sleep(300);
      expect(liveSessions()).toContain(session);
      expect(stack.slack.callsOf('chat.postMessage').filter((c) => c.args.thread_ts === root)).toHaveLength(
        2,
      );
    } finally {
      sessionMade();
    }
  });
});

describe('ALLOWED_TEAM_IDS in a Slack Connect channel', () => {
  /** An event delivered for our workspace (T0TEAM) whose sender belongs to another organisation. */
  function fromOutsider<T extends { event: Record<string, unknown> }>(
    body: T,
    fields: Record<string, string>,
  ): T {
    Object.assign(body.event, fields);
    return body;
  }

  it('refuses a mention or thread reply from a person of another organisation, telling them privately', async () => {
    const root = nextTs();
    await mention(stack.bot, { channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> our thread', ts: root });
    await stack.slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    const before = stack.agent.requests.length;

    const cases: [string, ReturnType<typeof appMentionEvent>, Record<string, string>][] = [
      [
        "Slack's own form: the sender's workspace in user_team and team",
        appMentionEvent({ channel: CHANNEL, user: 'U0MALLORY', text: '<@U0BOT> let me in' }),
        { user_team: OUTSIDER_TEAM, team: OUTSIDER_TEAM },
      ],
      [
        'user_team alone (team as delivered)',
        appMentionEvent({ channel: CHANNEL, user: 'U0MALLORY', text: '<@U0BOT> let me in, please' }),
        { user_team: OUTSIDER_TEAM },
      ],
      [
        'team alone',
        appMentionEvent({ channel: CHANNEL, user: 'U0MALLORY', text: '<@U0BOT> let me in too' }),
        { team: OUTSIDER_TEAM },
      ],
      [
        'a reply without a mention in a thread the bot is part of',
        threadMessage('U0MALLORY', 'and me', root),
        { user_team: OUTSIDER_TEAM, team: OUTSIDER_TEAM },
      ],
    ];
    for (const [index, [label, body, fields]] of cases.entries()) {
      expect(body.team_id).toBe('T0TEAM');
      const notes = stack.slack.callsOf('chat.postEphemeral').length;
      await send(fromOutsider(body, fields));
      // Whatever comes first: a private note, or a call to the agent.
      await waitFor(
        () =>
          stack.slack.callsOf('chat.postEphemeral').length > notes || stack.agent.requests.length > before,
        label,
      );
      expect(stack.agent.requests.slice(before), label).toEqual([]);
      const note = stack.slack.callsOf('chat.postEphemeral').at(-1) as SlackApiCall;
      expect(note.args.user, label).toBe('U0MALLORY');
      // What Mallory sees: one note for each message, wherever Slack shows it.
      expect(
        stack.slack.visibleEphemerals('U0MALLORY').map((m) => m.text),
        label,
      ).toEqual(Array.from({ length: index + 1 }, () => textOf(note)));
      expect(textOf(note), label).toBe(
        "Sorry, you're not on the list of people who can use the agent here, so I did not pass your message on. Ask an admin for access.",
      );
    }
    await sleep(300);
    expect(stack.agent.requests.slice(before)).toEqual([]);
    expect(stack.slack.callsOf('chat.postMessage').filter((c) => textOf(c).includes('let me in'))).toEqual(
      [],
    );
  });

  it('refuses the reset shortcut from a person of another organisation', async () => {
    const root = nextTs();
    await mention(stack.bot, { channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> keep this', ts: root });
    const first = await stack.slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    const session = /^echo\[(s-\d+)#/.exec(textOf(first))?.[1] ?? '';
    const responseId = `outsider-${nextTs()}`;
    const payload = messageShortcutPayload({
      callbackId: 'reset_conversation',
      channel: CHANNEL,
      user: 'U0ALICE', // even with a colleague's id: the sender's workspace decides
      messageTs: root,
      threadTs: root,
      responseUrl: stack.slack.responseUrl(responseId),
    });
    (payload.user as { team_id: string }).team_id = OUTSIDER_TEAM;
    await postSignedInteraction(stack.bot.eventsUrl, SIGNING_SECRET, payload);
    const answer = await stack.slack.waitForCall('response_url', (c) => c.args.responseId === responseId);
    expect(textOf(answer)).toMatch(/not on the list of people/);
    await sleep(300);
    expect(liveSessions()).toContain(session);
  });
});

describe('session ids from the agent service', () => {
  it('a create answering ".." is a readable failure, and nothing is ever addressed with it', async () => {
    const channel = 'C0DOTS';
    const from = stack.agent.requests.length;
    // A real conversation in the channel, whose deletion below shows the archive was handled.
    const realRoot = nextTs();
    await mention(stack.bot, { channel, user: 'U0ALICE', text: '<@U0BOT> hello', ts: realRoot });
    const real = /^echo\[(s-\d+)#/.exec(
      textOf(await stack.slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === realRoot)),
    )?.[1];
    const firstAnswers: string[] = [];
    for (const bad of ['..', '.']) {
      // A service that hands out the id and then answers in it as if it were one.
      stack.agent.injectFailure('createSession', {
        type: 'http',
        status: 200,
        body: { status: true, message: 'Session created', data: { session_id: bad } },
      });
      stack.agent.injectFailure('sendMessage', {
        type: 'http',
        status: 200,
        body: { status: true, data: { status: 200, message: 'ok', data: 'hello from a broken service' } },
      });
      const root = nextTs();
      await mention(stack.bot, { channel, user: 'U0ALICE', text: '<@U0BOT> hello', ts: root });
      firstAnswers.push(
        textOf(await stack.slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root)),
      );
      stack.agent.clearFailures();
    }
    // Archiving the channel deletes every session the bot holds there: only the real one.
    await send(channelLifecycleEvent('channel_archive', { channel }));
    await waitFor(() => !liveSessions().includes(real ?? ''), 'the real session deleted');
    await sleep(500);
    const seen = stack.agent.requests.slice(from);
    expect(seen.filter((r) => r.method === 'DELETE').map((r) => r.path)).toEqual([
      `/v1/session/${AGENT_ID}/${real}`,
    ]);
    expect(seen.filter((r) => r.operation === 'sendMessage').map((r) => r.sessionId)).toEqual([real]);
    for (const text of firstAnswers)
      expect(text).toMatch(
        /^:warning: The agent service could not start a conversation, so your message was not sent to the agent\. Please try again in a moment\. \(ref [0-9A-F]{8}\)$/,
      );
  });
});
