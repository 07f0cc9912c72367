import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { AgentServiceEmulator } from '../fakes/agent-service.js';
import type { FakeSlack, SlackApiCall } from '../fakes/slack.js';
import { botPerSuite, type SuiteBot } from '../helpers/bot-per-suite.js';
import {
  DEFAULT_BOT_USER_ID,
  DEFAULT_TEAM_ID,
  eventEnvelope,
  messageEvent,
  nextTs,
  postSignedEvent,
  postSignedForm,
  postSignedInteraction,
  type SignedPostResult,
} from '../helpers/slack-events.js';
import { AGENT_ID, mention, SIGNING_SECRET } from '../helpers/stack.js';
import { sleep, waitFor } from '../helpers/wait.js';

/**
 * Payloads Slack sent (or documents), recorded in test/fixtures/slack/recorded with their source, fed through
 * the real bot. Only the IDs are changed, here, so that they address this test's workspace, channel and bot;
 * the recorded shape is kept.
 */

type Json = Record<string, unknown>;

interface Recorded {
  source: Json;
  delivery: 'events_api' | 'slash_commands' | 'interactive';
  /** Present when the source shows the inner event only. */
  envelope?: string;
  payload: Json;
}

const FIXTURES = new URL('../fixtures/slack/recorded/', import.meta.url);

function recorded(name: string): Recorded {
  return JSON.parse(readFileSync(new URL(`${name}.json`, FIXTURES), 'utf8')) as Recorded;
}

/** Every occurrence of each recorded ID (a key of `ids`) in every string, replaced by the test's. */
function retarget<T>(value: T, ids: Record<string, string>): T {
  const walk = (node: unknown): unknown => {
    if (typeof node === 'string') {
      return Object.entries(ids).reduce((text, [from, to]) => text.replaceAll(from, to), node);
    }
    if (Array.isArray(node)) return node.map(walk);
    if (node !== null && typeof node === 'object') {
      return Object.fromEntries(Object.entries(node).map(([key, child]) => [key, walk(child)]));
    }
    return node;
  };
  return walk(value) as T;
}

/** The Events API body of a recorded event: as recorded, or wrapped when the source shows the inner event. */
function eventBody(fixture: Recorded, ids: Record<string, string>): Json {
  const payload = retarget(fixture.payload, ids);
  // A fresh event_id: the bot (like Slack's retries) treats a repeated one as the same delivery.
  if (fixture.envelope) return eventEnvelope(payload) as unknown as Json;
  return { ...payload, event_id: `Ev${nextTs().replace('.', '')}` };
}

const innerEvent = (body: Json) => body.event as Json;

const CHANNEL = 'C0RECORDED';
const ALICE = 'U0ALICE';

/** Delivers an event as Slack does: the workspace changes (the fake learns of it), then the signed POST. */
function deliver(suite: SuiteBot, body: Json): Promise<SignedPostResult> {
  return postSignedEvent(suite.bot.eventsUrl, SIGNING_SECRET, body, { via: suite.slack });
}

const textOf = (call: SlackApiCall) => String(call.args.text);
const postsIn = (slack: FakeSlack, channel: string, threadTs: string | undefined) =>
  slack
    .callsOf('chat.postMessage')
    .filter((c) => c.args.channel === channel && c.args.thread_ts === threadTs);
const promptsSent = (agent: AgentServiceEmulator) => agent.requestsFor('sendMessage').map((r) => r.prompt);
const liveSessions = (agent: AgentServiceEmulator) => agent.sessionsOf(AGENT_ID).map((s) => s.uuid);
const sessionIdIn = (text: string) => /^echo\[(s-\d+)#\d+\]/.exec(text)?.[1] ?? '';

/** A conversation with the bot in a new thread of `channel`, answered; its root and agent session. */
async function answeredThread(
  suite: SuiteBot,
  channel = CHANNEL,
): Promise<{ root: string; session: string }> {
  const root = nextTs();
  await mention(suite.bot, { channel, user: ALICE, text: '<@U0BOT> hello', ts: root });
  const reply = await suite.slack.waitForCall(
    'chat.postMessage',
    (c) => c.args.thread_ts === root && textOf(c).startsWith('echo'),
  );
  return { root, session: sessionIdIn(textOf(reply)) };
}

const USERS = { U0ALICE: { name: 'alice' }, U0BOB: { name: 'bob' } };

describe('recorded Slack payloads, through the bot', () => {
  const suite = botPerSuite({ slack: { users: USERS } });

  it('answers the documented app_mention once, in a thread on the mention', async () => {
    const { slack, agent } = suite;
    const root = nextTs();
    const body = eventBody(recorded('app_mention.docs'), {
      T123ABC456: DEFAULT_TEAM_ID,
      C123ABC456: CHANNEL,
      U061F7AUR: ALICE,
      U0LAN0Z89: DEFAULT_BOT_USER_ID,
      '1515449522.000016': root,
    });
    expect((await deliver(suite, body)).status).toBe(200);
    const reply = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    expect(textOf(reply)).toMatch(/^echo\[s-\d+#1\]: is it everything a river should be\?$/);
    await sleep(300);
    expect(postsIn(slack, CHANNEL, root)).toHaveLength(1);
    expect(promptsSent(agent).filter((p) => p === 'is it everything a river should be?')).toHaveLength(1);
  });

  it('answers the documented message.im at the top level of the DM', async () => {
    const { slack } = suite;
    const body = eventBody(recorded('message.im.docs'), {
      T123ABC456: DEFAULT_TEAM_ID,
      D024BE91L: 'D0ALICE',
      U2147483697: ALICE,
      '1355517523.000005': nextTs(),
    });
    expect((await deliver(suite, body)).status).toBe(200);
    const reply = await slack.waitForCall('chat.postMessage', (c) => c.args.channel === 'D0ALICE');
    expect(reply.args.thread_ts).toBeUndefined();
    expect(textOf(reply)).toMatch(/: Hello hello can you hear me\?$/);
  });

  it('answers a mention sent with "Also send to #channel" once, in its thread, from both of its deliveries', async () => {
    const { slack, agent } = suite;
    // A thread among people that the bot is not part of yet; the reply mentioning it is also broadcast.
    const [root, ts] = [nextTs(), nextTs()];
    slack.ingestEvent(
      messageEvent({ channel: CHANNEL, channelType: 'channel', user: 'U0BOB', text: 'ideas?', ts: root }),
    );
    const text = '<@U0BOT> broadcast question';
    const asMention = eventBody(recorded('app_mention.thread_broadcast.slacknet-69'), {
      C0SLACKNET: CHANNEL,
      T0SLACKNET: DEFAULT_TEAM_ID,
      U0AUTHOR: ALICE,
      '1604738785.007800': ts,
      '1604738675.007700': root,
    });
    // Recorded after an edit; its first delivery has no `edited` yet.
    delete innerEvent(asMention).edited;
    innerEvent(asMention).text = text;
    const asMessage = eventBody(recorded('message.thread_broadcast.bolt-python'), {
      T111: DEFAULT_TEAM_ID,
      C111: CHANNEL,
      U111: ALICE,
      W111: DEFAULT_BOT_USER_ID,
      '1633670813.007500': ts,
      '1633663824.000500': root,
      'Hi there!': text,
    });
    expect(innerEvent(asMention).subtype).toBe('thread_broadcast');
    expect(innerEvent(asMessage).subtype).toBe('thread_broadcast');
    const results = await Promise.all([deliver(suite, asMention), deliver(suite, asMessage)]);
    expect(results.map((r) => r.status)).toEqual([200, 200]);
    const reply = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root, 5_000);
    // The bot joins a thread among people: the prompt carries their earlier messages, then the question.
    expect(textOf(reply)).toMatch(/^echo\[s-\d+#1\]: [\s\S]*broadcast question$/);
    await sleep(500);
    expect(postsIn(slack, CHANNEL, root)).toHaveLength(1);
    expect(promptsSent(agent).filter((p) => p?.endsWith('broadcast question'))).toHaveLength(1);
  });

  it('runs an edited mention once: the re-sent app_mention (same ts, new event_id, `edited`) is not a new prompt', async () => {
    const { slack, agent } = suite;
    const root = nextTs();
    const fixture = recorded('app_mention.edited.slack-go-1256');
    // The record masks every ID with asterisks; each field is set to the test's own.
    const delivery = (text: string, edited: boolean) => {
      const body = eventBody(fixture, { '1706785424.099119': root });
      const event = innerEvent(body);
      Object.assign(event, {
        user: ALICE,
        team: DEFAULT_TEAM_ID,
        channel: CHANNEL,
        text,
        client_msg_id: root,
      });
      if (edited) event.edited = { user: ALICE, ts: nextTs() };
      else delete event.edited;
      return { ...body, team_id: DEFAULT_TEAM_ID };
    };
    expect((await deliver(suite, delivery('<@U0BOT> first words', false))).status).toBe(200);
    await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    const edited = delivery('<@U0BOT> better words', true);
    expect(innerEvent(edited).ts).toBe(root);
    expect((await deliver(suite, edited)).status).toBe(200);
    // Slack also sends the edit as message_changed (the documented shape); that one tells the author.
    const changed = eventBody(recorded('message_changed.docs'), {
      T123ABC456: DEFAULT_TEAM_ID,
      C123ABC456: CHANNEL,
      U123ABC456: ALICE,
      '1355517523.000005': root,
      '1358878755.000001': nextTs(),
      'Hello, world!': '<@U0BOT> better words',
    });
    expect((await deliver(suite, changed)).status).toBe(200);
    const note = await slack.waitForCall('chat.postEphemeral', (c) =>
      textOf(c).includes('edits are not re-sent'),
    );
    expect(note.args).toMatchObject({ user: ALICE, channel: CHANNEL });
    await sleep(300);
    expect(promptsSent(agent).filter((p) => p?.endsWith('words'))).toEqual(['first words']);
    expect(postsIn(slack, CHANNEL, root)).toHaveLength(1);
  });

  it('never runs an edited mention of a message older than the inbox remembers: it may have been answered', async () => {
    const { agent } = suite;
    // Edited eight days on: the inbox forgets a message a week after it was answered, so nothing says whether
    // this one was; run again, a command in it would run twice.
    const old = `${Math.floor(Date.now() / 1000) - 8 * 86_400}.000100`;
    const body = eventBody(recorded('app_mention.edited.slack-go-1256'), { '1706785424.099119': old });
    Object.assign(innerEvent(body), {
      user: ALICE,
      team: DEFAULT_TEAM_ID,
      channel: CHANNEL,
      text: '<@U0BOT> deploy to production, edited',
      client_msg_id: old,
      edited: { user: ALICE, ts: nextTs() },
    });
    expect((await deliver(suite, { ...body, team_id: DEFAULT_TEAM_ID })).status).toBe(200);
    // A fresh mention answered after it: the old one, had it been taken, would have been sent by then.
    const root = nextTs();
    await mention(suite.bot, { channel: CHANNEL, user: ALICE, text: '<@U0BOT> and now?', ts: root });
    await suite.slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    await sleep(300);
    expect(promptsSent(agent).filter((p) => p?.includes('production'))).toEqual([]);
  });

  it('cancels a prompt deleted while it waits (both recorded shapes), and tells its author privately', async () => {
    const { slack, agent } = suite;
    // The first message is answered once both deletions are in, however slow the machine.
    const answer = agent.holdAnswerTo('busy now');
    const root = nextTs();
    await mention(suite.bot, { channel: CHANNEL, user: ALICE, text: '<@U0BOT> busy now', ts: root });
    await slack.waitForCall('reactions.add', (c) => c.args.timestamp === root && c.args.name === 'eyes');
    const waiting = [nextTs(), nextTs()];
    for (const [i, ts] of waiting.entries()) {
      const body = messageEvent({
        channel: CHANNEL,
        channelType: 'channel',
        user: ALICE,
        text: `never mind ${i}`,
        ts,
        threadTs: root,
      });
      await deliver(suite, body as unknown as Json);
      await slack.waitForCall(
        'reactions.add',
        (c) => c.args.timestamp === ts && c.args.name === 'hourglass_flowing_sand',
      );
    }
    // bolt-python's record carries the deleted message; the documented shape only its ts.
    const withPrevious = eventBody(recorded('message_deleted.bolt-python'), {
      T111: DEFAULT_TEAM_ID,
      C111: CHANNEL,
      U111: ALICE,
      '1665368619.804829': waiting[0] ?? '',
      '1665368629.007100': nextTs(),
    });
    innerEvent(withPrevious).previous_message = {
      ...(innerEvent(withPrevious).previous_message as Json),
      thread_ts: root,
    };
    const bare = eventBody(recorded('message_deleted.docs'), {
      T123ABC456: DEFAULT_TEAM_ID,
      C123ABC456: CHANNEL,
      '1358878749.000002': waiting[1] ?? '',
      '1358878755.000001': nextTs(),
    });
    for (const body of [withPrevious, bare]) expect((await deliver(suite, body)).status).toBe(200);
    const notes = await slack.waitForCalls('chat.postEphemeral', 2, (c) => textOf(c).includes('deleted'));
    for (const note of notes) expect(note.args).toMatchObject({ user: ALICE, channel: CHANNEL });
    answer();
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).endsWith('busy now'),
    );
    await sleep(500);
    expect(promptsSent(agent).filter((p) => p?.startsWith('never mind'))).toEqual([]);
    expect(postsIn(slack, CHANNEL, root)).toHaveLength(1);
  });

  it('relays a recorded file share in its thread, saying attachments are not forwarded', async () => {
    const { slack, agent } = suite;
    const { root } = await answeredThread(suite);
    const body = eventBody(recorded('message.file_share.bolt-python'), {
      T111: DEFAULT_TEAM_ID,
      C111: CHANNEL,
      U111: ALICE,
      U222: DEFAULT_BOT_USER_ID,
      '1652227646.593159': nextTs(),
    });
    innerEvent(body).thread_ts = root; // recorded at the top level; here a reply in the bot's thread
    expect((await deliver(suite, body)).status).toBe(200);
    await slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && textOf(c).endsWith('Hi there!'),
    );
    const note = await slack.waitForCall('chat.postEphemeral', (c) =>
      textOf(c).includes('attachments are not forwarded'),
    );
    expect(note.args).toMatchObject({ user: ALICE, channel: CHANNEL });
    expect(promptsSent(agent)).toContain('Hi there!');
  });

  it('answers 200 and does nothing for what is not for it', async () => {
    const { slack, agent } = suite;
    const before = {
      requests: agent.requests.length,
      posts: slack.callsOf('chat.postMessage').length,
      notes: slack.callsOf('chat.postEphemeral').length,
    };
    const bodies = [
      // An edit whose message carries no ts (as recorded): nothing to match it with.
      eventBody(recorded('message_changed.bolt-python'), {
        T111: DEFAULT_TEAM_ID,
        C111: CHANNEL,
        U111: ALICE,
      }),
      // A broadcast reply without a mention in a thread the bot is not part of.
      eventBody(recorded('message.thread_broadcast.docs'), {
        T123ABC456: DEFAULT_TEAM_ID,
        C123ABC456: CHANNEL,
        U123ABC456: 'U0BOB',
        '1673464745.620769': nextTs(),
        '1673464730.703009': nextTs(),
      }),
      // The Home tab of a classic app, and what a person views (agent view is off).
      eventBody(recorded('app_home_opened.docs'), { U123ABC456: ALICE, D123ABC456: 'D0ALICE' }),
      eventBody(recorded('app_context_changed.docs'), { T123ABC456: DEFAULT_TEAM_ID, U123ABC456: ALICE }),
      // A deleted message the bot never had.
      eventBody(recorded('message_deleted.docs'), { T123ABC456: DEFAULT_TEAM_ID, C123ABC456: CHANNEL }),
      // A channel with no conversations closes.
      eventBody(recorded('channel_archive.docs'), { C123ABC456: 'C0EMPTY', U123ABC456: ALICE }),
    ];
    for (const body of bodies) expect((await deliver(suite, body)).status).toBe(200);
    await sleep(400);
    expect(agent.requests.length).toBe(before.requests);
    expect(slack.callsOf('chat.postMessage')).toHaveLength(before.posts);
    expect(slack.callsOf('chat.postEphemeral')).toHaveLength(before.notes);
  });

  it('deletes the agent sessions of a channel that is archived or deleted (each recorded event)', async () => {
    const { agent } = suite;
    for (const [name, recordedId] of [
      ['channel_archive.docs', 'C123ABC456'],
      ['group_archive.docs', 'G024BE91L'],
      ['channel_deleted.docs', 'C123ABC456'],
      ['group_deleted.docs', 'G0QN9RGTT'],
    ] as const) {
      const channel = `C0GONE${name.split('.')[0]?.toUpperCase().replace('_', '')}`;
      const { session } = await answeredThread(suite, channel);
      const kept = await answeredThread(suite, 'C0KEPT');
      const body = eventBody(recorded(name), { [recordedId]: channel, U123ABC456: ALICE });
      expect((await deliver(suite, body)).status).toBe(200);
      await waitFor(() => !liveSessions(agent).includes(session), `${name} deletes the session`);
      expect(liveSessions(agent)).toContain(kept.session);
    }
  });

  it("stops the answer in progress on Slack's stop button (agent_session_stopped), saying so in its thread", async () => {
    const { slack, agent } = suite;
    agent.setLatency(800, 'sendMessage');
    try {
      const root = nextTs();
      await mention(suite.bot, { channel: CHANNEL, user: ALICE, text: '<@U0BOT> long task', ts: root });
      await slack.waitForCall('reactions.add', (c) => c.args.timestamp === root && c.args.name === 'eyes');
      const body = eventBody(recorded('agent_session_stopped.docs'), {
        C0123ABC456: CHANNEL,
        U123ABC456: ALICE,
        '1782234671.392669': root,
      });
      expect((await deliver(suite, body)).status).toBe(200);
      const notice = await slack.waitForCall(
        'chat.postMessage',
        (c) => c.args.thread_ts === root && textOf(c).startsWith(':octagonal_sign: Stopped'),
      );
      expect(notice.args.channel).toBe(CHANNEL);
      await sleep(1_200);
      expect(postsIn(slack, CHANNEL, root).filter((c) => textOf(c).includes('long task'))).toEqual([]);
    } finally {
      agent.setLatency(0, 'sendMessage');
    }
  });

  it('answers the recorded slash command privately', async () => {
    const { slack, bot } = suite;
    const responseId = `slash-${nextTs()}`;
    const fields = retarget(recorded('slash_command.bolt-python').payload, {
      T111: DEFAULT_TEAM_ID,
      C111: CHANNEL,
      U111: ALICE,
      '/hello-socket-mode': '/agent',
    }) as Record<string, string>;
    fields.response_url = slack.responseUrl(responseId);
    const result = await postSignedForm(bot.eventsUrl, SIGNING_SECRET, fields);
    expect(result.status).toBe(200);
    const answer = await slack.waitForCall('response_url', (c) => c.args.responseId === responseId);
    expect(answer.args.response_type).toBe('ephemeral');
    expect(textOf(answer)).toContain('/agent reset');
  });

  it('resets the thread the recorded message shortcut was used on', async () => {
    const { slack, agent, bot } = suite;
    const { root, session } = await answeredThread(suite);
    const responseId = `shortcut-${root}`;
    const payload = retarget(recorded('message_action.bolt-python').payload, {
      T111: DEFAULT_TEAM_ID,
      W111: ALICE,
      C111: CHANNEL,
      'test-shortcut': 'reset_conversation',
      '1583636382.000300': root,
    });
    payload.response_url = slack.responseUrl(responseId);
    expect((await postSignedInteraction(bot.eventsUrl, SIGNING_SECRET, payload)).status).toBe(200);
    await waitFor(() => !liveSessions(agent).includes(session), 'the shortcut deletes the session');
    await slack.waitForCall('response_url', (c) => c.args.responseId === responseId);
  });

  it('thanks privately for a recorded block_actions click on the feedback button of an answer', async () => {
    const { slack, bot } = suite;
    const root = nextTs();
    const asked = eventBody(recorded('app_mention.docs'), {
      T123ABC456: DEFAULT_TEAM_ID,
      C123ABC456: CHANNEL,
      U061F7AUR: ALICE,
      U0LAN0Z89: DEFAULT_BOT_USER_ID,
      '1515449522.000016': root,
    });
    await deliver(suite, asked);
    const reply = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
    const answer = slack.threadMessages(CHANNEL, root).find((m) => m.text === textOf(reply));
    const feedback = (answer?.blocks ?? [])
      .flatMap((block) => ((block as Json).elements as Json[] | undefined) ?? [])
      .find((element) => element.action_id === 'reply_feedback');
    const positive = feedback?.positive_button as Json | undefined;
    expect(positive?.value).toBeDefined();
    const responseId = `feedback-${root}`;
    const payload = retarget(recorded('block_actions.bolt-python').payload, {
      T111: DEFAULT_TEAM_ID,
      W111: ALICE,
      C111: CHANNEL,
      '111.222': answer?.ts ?? '',
    });
    payload.response_url = slack.responseUrl(responseId);
    // The clicked element: the answer's feedback button instead of the recorded app's own.
    const [action] = payload.actions as Json[];
    Object.assign(action ?? {}, { action_id: 'reply_feedback', value: positive?.value });
    expect((await postSignedInteraction(bot.eventsUrl, SIGNING_SECRET, payload)).status).toBe(200);
    const thanks = await slack.waitForCall('response_url', (c) => c.args.responseId === responseId);
    expect(thanks.args).toMatchObject({ response_type: 'ephemeral', text: 'Thanks for the feedback!' });
  });
});

// One bot each: after either event the workspace takes no message until the app is installed again.
describe.each(['tokens_revoked.docs', 'app_uninstalled.docs'])('recorded payload %s', (name) => {
  const suite = botPerSuite({ slack: { users: USERS } });

  it('deletes every session of the workspace', async () => {
    const { agent } = suite;
    const ids = { TXXXXXXXX: DEFAULT_TEAM_ID, UXXXXXXXX: DEFAULT_BOT_USER_ID };
    const { session } = await answeredThread(suite);
    // Sent now: the recorded event_time (2009) is before this bot's install, so it would be a late retry
    // of an earlier installation's uninstall, and ignored.
    const body = { ...eventBody(recorded(name), ids), event_time: Math.floor(Date.now() / 1000) };
    expect((await deliver(suite, body)).status).toBe(200);
    await waitFor(() => !liveSessions(agent).includes(session), `${name} deletes the session`);
    expect(liveSessions(agent)).toEqual([]);
  });
});
