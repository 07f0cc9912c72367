import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type SlackApiCall } from '../fakes/slack.js';
import { botPerSuite } from '../helpers/bot-per-suite.js';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import {
  appMentionEvent,
  channelLeftEvent,
  channelLifecycleEvent,
  messageEvent,
  messageShortcutPayload,
  nextTs,
  postSignedForm,
  postSignedInteraction,
  slashCommandFields,
  workspaceGoneEvent,
} from '../helpers/slack-events.js';
import {
  AGENT_ID,
  deliver,
  mention,
  metric,
  type RunningBot,
  SIGNING_SECRET,
  type StoreChoice,
  startBot,
} from '../helpers/stack.js';
import { forEachStore, type StoreCases } from '../helpers/stores.js';
import { sleep, waitFor } from '../helpers/wait.js';

const runPostgres = await shouldRunPostgresTests();

const textOf = (call: SlackApiCall) => String(call.args.text);
const sessionIdIn = (text: string) => /^echo\[(s-\d+)#\d+\]/.exec(text)?.[1] ?? '';

/** Sessions the agent service still has (what an orphan would be left in). */
const liveSessions = (agent: AgentServiceEmulator, agentId = AGENT_ID) =>
  agent
    .sessionsOf(agentId)
    .map((session) => session.uuid)
    .sort();

function lifecycleSuite(
  name: string,
  prepareStore: () => Promise<{ store: StoreChoice; cleanup(): Promise<void> }>,
  cases: StoreCases,
) {
  describe(name, () => {
    let slack: FakeSlack;
    let agent: AgentServiceEmulator;
    let bot: RunningBot;
    let store: StoreChoice;
    let cleanup: () => Promise<void>;
    const env = { SESSION_DELETE_RETRY_MS: '200', AGENT_ROUTES: 'C0ROUTED=agent-b' };

    // One bot for the cases of this suite: each works in channels of its own, and counts only its own
    // sessions and the agent calls made since it began (a bot start costs more than all of a case's work).
    beforeAll(async () => {
      ({ store, cleanup } = await prepareStore());
      slack = await FakeSlack.start({
        users: { U0ALICE: { name: 'alice' }, U0BOB: { name: 'bob' } },
        // A public channel the bot was never added to: where Slack takes no post from it.
        channels: { C0OUTSIDE: { type: 'channel', botIsMember: false } },
      });
      agent = await AgentServiceEmulator.start();
      bot = await startBot({ slack, agent, store, env });
    });
    afterAll(async () => {
      await bot?.stop();
      await Promise.all([slack?.stop(), agent?.stop(), cleanup?.()]);
    });
    let deletionsBefore = 0;
    // A test that failed before releasing a hold on the agent leaves none to the next.
    afterEach(() => agent?.releaseHolds());
    beforeEach(() => {
      deletionsBefore = agent.requestsFor('deleteSession').length;
    });
    /** The session deletions the agent service received during this case. */
    const deletions = () => agent.requestsFor('deleteSession').slice(deletionsBefore);
    /** Which of `sessions` the agent service still has. */
    const liveAmong = (...sessions: string[]) => liveSessions(agent).filter((id) => sessions.includes(id));

    /** Starts a conversation in a new channel thread and returns its root ts and session id. */
    async function startThread(
      channel: string,
      user = 'U0ALICE',
    ): Promise<{ root: string; session: string }> {
      const root = nextTs();
      await mention(bot, { channel, user, text: '<@U0BOT> hello', ts: root });
      const reply = await slack.waitForCall(
        'chat.postMessage',
        (c) => c.args.thread_ts === root && textOf(c).startsWith('echo'),
      );
      return { root, session: sessionIdIn(textOf(reply)) };
    }

    async function slash(text: string, channel: string, user = 'U0ALICE') {
      const responseId = `${channel}-${text}-${nextTs()}`;
      const started = Date.now();
      const result = await postSignedForm(
        bot.eventsUrl,
        SIGNING_SECRET,
        slashCommandFields({ text, channel, user, responseUrl: slack.responseUrl(responseId) }),
      );
      expect(result.status).toBe(200);
      // Within Slack's 3 s (api.slack.com/interactivity/slash-commands): a tighter bound measured how busy the
      // machine was (1.7 s on a loaded one), not the bot.
      expect(Date.now() - started).toBeLessThan(3_000);
      const answer = await slack.waitForCall('response_url', (c) => c.args.responseId === responseId);
      expect(answer.args.response_type).toBe('ephemeral');
      return textOf(answer);
    }

    cases.onOneStore(
      '/agent reset in a DM deletes exactly that session; the next message starts a new one',
      async () => {
        const other = await startThread('C0OTHER');
        await deliver(
          bot,
          messageEvent({ channel: 'D0ALICE', channelType: 'im', user: 'U0ALICE', text: 'hi' }),
        );
        const first = await slack.waitForCall('chat.postMessage', (c) => c.args.channel === 'D0ALICE');
        const dmSession = sessionIdIn(textOf(first));

        expect(await slash('reset', 'D0ALICE')).toMatch(/Your next message here starts a fresh conversation/);
        await waitFor(() => !liveSessions(agent).includes(dmSession), 'DM session deleted on the service');
        expect(deletions().map((r) => r.sessionId)).toEqual([dmSession]);
        expect(liveSessions(agent)).toContain(other.session);

        await deliver(
          bot,
          messageEvent({ channel: 'D0ALICE', channelType: 'im', user: 'U0ALICE', text: 'again' }),
        );
        const next = await slack.waitForCall(
          'chat.postMessage',
          (c) => c.args.channel === 'D0ALICE' && textOf(c).endsWith('again'),
        );
        expect(sessionIdIn(textOf(next))).not.toBe(dmSession);
        expect(textOf(next)).toMatch(/#1\]: again$/);
      },
    );

    cases.onOneStore(
      'resets one thread by a "reset" mention and another by the message shortcut',
      async () => {
        const byMention = await startThread('C0RESET');
        const byShortcut = await startThread('C0RESET');
        const untouched = await startThread('C0RESET');

        await mention(bot, { channel: 'C0RESET', text: '<@U0BOT> reset', threadTs: byMention.root });
        const notice = await slack.waitForCall(
          'chat.postMessage',
          (c) => c.args.thread_ts === byMention.root && textOf(c).includes('Conversation reset'),
        );
        expect(textOf(notice)).toMatch(/next message starts a fresh conversation/);

        // Only the person who started a conversation may reset it; anyone else is told who can.
        const shortcut = async (user: string) => {
          const responseId = `shortcut-${nextTs()}`;
          const acked = await postSignedInteraction(
            bot.eventsUrl,
            SIGNING_SECRET,
            messageShortcutPayload({
              callbackId: 'reset_conversation',
              channel: 'C0RESET',
              user,
              messageTs: nextTs(),
              threadTs: byShortcut.root,
              responseUrl: slack.responseUrl(responseId),
            }),
          );
          expect(acked.status).toBe(200);
          const answer = await slack.waitForCall('response_url', (c) => c.args.responseId === responseId);
          expect(answer.args).toMatchObject({ response_type: 'ephemeral' });
          return textOf(answer);
        };
        expect(await shortcut('U0BOB')).toBe(
          'Only <@U0ALICE>, who started this conversation with the agent, can reset it. You can start your own by mentioning me in a new thread.',
        );
        await sleep(200);
        expect(liveSessions(agent)).toContain(byShortcut.session);
        expect(await shortcut('U0ALICE')).toMatch(/Conversation reset/);

        await waitFor(
          () =>
            !liveSessions(agent).includes(byMention.session) &&
            !liveSessions(agent).includes(byShortcut.session),
          'both sessions deleted',
        );
        expect(liveSessions(agent)).toContain(untouched.session);
        await mention(bot, { channel: 'C0RESET', text: '<@U0BOT> fresh start', threadTs: byMention.root });
        const fresh = await slack.waitForCall(
          'chat.postMessage',
          (c) => c.args.thread_ts === byMention.root && textOf(c).endsWith('fresh start'),
        );
        expect(textOf(fresh)).toMatch(/#1\]: fresh start$/);
      },
    );

    cases.onOneStore(
      'confirms a shortcut reset privately in the thread when its response_url has expired meanwhile',
      async () => {
        const { root, session } = await startThread('C0LATE', 'U0ALICE');
        // The reset waits behind an answer that outlasts the shortcut's response_url (30 minutes in Slack).
        const answer = agent.holdAnswerTo('a long one');
        await mention(bot, { channel: 'C0LATE', text: '<@U0BOT> a long one', threadTs: root });
        await waitFor(() => agent.requestsFor('sendMessage').some((r) => r.prompt === 'a long one'), 'sent');
        const responseId = `late-${root}`;
        const acked = await postSignedInteraction(
          bot.eventsUrl,
          SIGNING_SECRET,
          messageShortcutPayload({
            callbackId: 'reset_conversation',
            channel: 'C0LATE',
            user: 'U0ALICE',
            messageTs: root,
            threadTs: root,
            responseUrl: slack.responseUrl(responseId),
          }),
        );
        expect(acked.status).toBe(200);
        slack.expireResponseUrl(responseId);
        answer();
        const note = await slack.waitForCall(
          'chat.postEphemeral',
          (c) => c.args.channel === 'C0LATE' && textOf(c).includes('Conversation reset'),
        );
        expect(note.args).toMatchObject({ user: 'U0ALICE', thread_ts: root });
        await waitFor(() => !liveSessions(agent).includes(session), 'session deleted on the service');
      },
    );

    cases.onOneStore(
      '/agent reset in a channel resets only the threads the caller started there',
      async () => {
        const aliceOne = await startThread('C0CHAN', 'U0ALICE');
        const aliceTwo = await startThread('C0CHAN', 'U0ALICE');
        const bobs = await startThread('C0CHAN', 'U0BOB');
        const aliceElsewhere = await startThread('C0ELSE', 'U0ALICE');
        expect(await slash('reset', 'C0CHAN', 'U0ALICE')).toMatch(
          /Reset 2 threads you started in this channel/,
        );
        await waitFor(() => deletions().length === 2, 'two deletions');
        expect(liveAmong(aliceOne.session, aliceTwo.session, bobs.session, aliceElsewhere.session)).toEqual(
          [bobs.session, aliceElsewhere.session].sort(),
        );
        expect(liveSessions(agent)).not.toContain(aliceOne.session);
        expect(liveSessions(agent)).not.toContain(aliceTwo.session);
        expect(await slash('reset', 'C0CHAN', 'U0ALICE')).toMatch(
          /no conversations with the agent in this channel/,
        );
      },
    );

    cases.onOneStore(
      '/agent reset lets the answer under way arrive first and cancels the messages still waiting',
      async () => {
        const { root, session } = await startThread('C0ORDER', 'U0ALICE');
        // Answered once the reset is recorded, however slow the machine.
        const answer = agent.holdAnswerTo('under way');
        await mention(bot, { channel: 'C0ORDER', text: '<@U0BOT> under way', threadTs: root });
        await waitFor(() => agent.requestsFor('sendMessage').some((r) => r.prompt === 'under way'), 'sent');
        await mention(bot, { channel: 'C0ORDER', text: '<@U0BOT> still waiting', threadTs: root });
        expect(await slash('reset', 'C0ORDER', 'U0ALICE')).toMatch(/Reset 1 thread you started/);
        answer();

        await waitFor(() => !liveSessions(agent).includes(session), 'session deleted on the service');
        const answers = slack
          .callsOf('chat.postMessage')
          .filter((c) => c.args.thread_ts === root)
          .map(textOf);
        // The answer under way came in the conversation it was asked in, before that conversation ended.
        expect(answers).toEqual([`echo[${session}#1]: hello`, `echo[${session}#2]: under way`]);
        await sleep(300);
        expect(agent.requestsFor('sendMessage').map((r) => r.prompt)).not.toContain('still waiting');
      },
    );

    cases.onOneStore(
      '/agent reset also resets a conversation whose first message is still being answered, before its session exists',
      async () => {
        // Alice's first message is being worked on; its session is made once the reset is recorded.
        const sessionMade = agent.holdSessionCreation();
        const root = nextTs();
        await mention(bot, { channel: 'C0EARLY', text: '<@U0BOT> first question', ts: root });
        await waitFor(() => agent.requestsFor('createSession').length > 0, 'the session being made');
        expect(await slash('reset', 'C0EARLY', 'U0ALICE')).toMatch(/Reset 1 thread you started/);
        sessionMade();
        // The answer under way comes, then the conversation it started ends: the next message starts afresh.
        const answer = await slack.waitForCall(
          'chat.postMessage',
          (c) => c.args.thread_ts === root && textOf(c).includes('first question'),
        );
        const session = /^echo\[(s-\d+)#1\]/.exec(textOf(answer))?.[1] ?? '';
        await waitFor(() => !liveSessions(agent).includes(session), 'its session deleted on the service');
        await mention(bot, { channel: 'C0EARLY', text: '<@U0BOT> next question', threadTs: root });
        const next = await slack.waitForCall(
          'chat.postMessage',
          (c) => c.args.thread_ts === root && textOf(c).includes('next question'),
        );
        expect(textOf(next)).toMatch(/#1\]: next question$/);
        expect(textOf(next)).not.toContain(session);
      },
    );

    cases.onOneStore(
      "/agent sessions lists the caller's conversations with their creation time; help and unknown give usage",
      async () => {
        const alices = await startThread('C0LIST', 'U0ALICE');
        await startThread('C0LIST', 'U0ALICE');
        await startThread('C0LIST', 'U0BOB');
        const listing = await slash('sessions', 'C0LIST', 'U0ALICE');
        expect(listing).toMatch(/^You have 2 conversations with the agent here:/);
        expect(listing.split('\n').filter((line) => line.startsWith('• '))).toHaveLength(2);
        const created = agent.sessionsOf(AGENT_ID).find((s) => s.uuid === alices.session)?.createdAt ?? '';
        expect(listing).toContain(`|${new Date(created).toISOString()}>`); // the service's creation time
        expect(await slash('sessions', 'C0EMPTY', 'U0ALICE')).toMatch(
          /no conversations with the agent here yet/,
        );
        expect(await slash('help', 'C0LIST')).toMatch(/\/agent reset/);
        expect(await slash('frobnicate', 'C0LIST')).toMatch(/^I don't know `frobnicate`/);
        expect(await slash('', 'C0LIST')).toMatch(/\/agent sessions/);
        // Typed in a public channel the bot is not in: answered all the same (a response_url needs no membership).
        expect(await slash('help', 'C0OUTSIDE')).toMatch(/\/agent reset/);
        expect(await slash('sessions', 'C0OUTSIDE')).toMatch(/no conversations with the agent here yet/);
      },
    );

    cases.onOneStore(
      'deletes every session of an archived or deleted channel and leaves other channels alone',
      async () => {
        const one = await startThread('C0ARCH');
        const two = await startThread('C0ARCH');
        const kept = await startThread('C0KEEP');
        const archived = await deliver(bot, channelLifecycleEvent('channel_archive', { channel: 'C0ARCH' }));
        expect(archived.status).toBe(200);
        const mine = [one.session, two.session, kept.session];
        await waitFor(() => liveAmong(...mine).length === 1, 'archived channel sessions deleted');
        expect(liveAmong(...mine)).toEqual([kept.session]);
        expect(
          deletions()
            .map((r) => r.sessionId)
            .sort(),
        ).toEqual([one.session, two.session].sort());

        for (const type of ['group_archive', 'channel_deleted', 'group_deleted'] as const) {
          const channel = `C0${type.toUpperCase().replace('_', '')}`;
          const thread = await startThread(channel);
          mine.push(thread.session);
          await deliver(bot, channelLifecycleEvent(type, { channel }));
          await waitFor(() => !liveSessions(agent).includes(thread.session), `${type} deletes the session`);
        }
        expect(liveAmong(...mine)).toEqual([kept.session]);
      },
    );

    cases.onOneStore(
      'a late retry of an archive, delivered after the channel was unarchived and used again, ends only the conversations from before it',
      async () => {
        const before = await startThread('C0UNARCH');
        const archive = channelLifecycleEvent('channel_archive', { channel: 'C0UNARCH' });
        // Unarchived, and a new conversation started there, a few seconds after the archive (event_time).
        await waitFor(() => Date.now() >= (archive.event_time + 3) * 1000, 'a few seconds later');
        const after = await startThread('C0UNARCH');
        // In the new conversation, one message being answered and one waiting its turn.
        const release = agent.holdAnswerTo('under way');
        await mention(bot, { channel: 'C0UNARCH', text: '<@U0BOT> under way', threadTs: after.root });
        await waitFor(() => agent.requestsFor('sendMessage').some((r) => r.prompt === 'under way'), 'sent');
        await mention(bot, { channel: 'C0UNARCH', text: '<@U0BOT> still here', threadTs: after.root });
        // Slack retries an event for up to an hour: the archive's last retry comes only now.
        const retried = await deliver(bot, archive, { retryNum: 3, retryReason: 'http_timeout' });
        expect(retried.status).toBe(200);
        await waitFor(
          () => !liveSessions(agent).includes(before.session),
          "the old conversation's session deleted",
        );
        release();
        const next = await slack.waitForCall(
          'chat.postMessage',
          (c) => c.args.thread_ts === after.root && textOf(c).includes('still here'),
        );
        expect(textOf(next)).toBe(`echo[${after.session}#3]: still here`);
        expect(liveSessions(agent)).toContain(after.session);
      },
    );

    cases.onOneStore(
      "deletes a channel's sessions when the bot is removed from it, whichever event Slack sends for that",
      async () => {
        // A private channel's archive or deletion reaches members only: once removed, the bot hears neither.
        const someoneElse = await startThread('G0PEOPLE');
        await deliver(bot, channelLeftEvent('member_left_channel', { channel: 'G0PEOPLE', user: 'U0BOB' }));
        const cases = [
          ['member_left_channel', 'G0KICKED'],
          ['group_left', 'G0LEFT'],
          ['channel_left', 'C0LEFT'],
        ] as const;
        for (const [type, channel] of cases) {
          const thread = await startThread(channel);
          expect((await deliver(bot, channelLeftEvent(type, { channel }))).status).toBe(200);
          await waitFor(() => !liveSessions(agent).includes(thread.session), `${type} deletes the session`);
        }
        // Someone else leaving ends nothing.
        expect(liveSessions(agent)).toContain(someoneElse.session);
      },
    );

    cases.onOneStore(
      'leaves no session behind that was being made for a first message when its channel was archived',
      async () => {
        const sessionMade = agent.holdSessionCreation();
        const creates = agent.requestsFor('createSession').length;
        const root = nextTs();
        await mention(bot, { channel: 'C0MIDWAY', text: '<@U0BOT> first words', ts: root });
        await waitFor(() => agent.requestsFor('createSession').length > creates, 'the session being made');
        const archived = await deliver(
          bot,
          channelLifecycleEvent('channel_archive', { channel: 'C0MIDWAY' }),
        );
        expect(archived.status).toBe(200);
        sessionMade();
        await waitFor(() => deletions().length === 1, 'the session made after the archive deleted too');
        expect(liveSessions(agent)).not.toContain(deletions()[0]?.sessionId);
        await sleep(300);
        expect(agent.requestsFor('sendMessage').some((r) => r.prompt === 'first words')).toBe(false);
        expect(slack.callsOf('chat.postMessage').some((c) => c.args.thread_ts === root)).toBe(false);
      },
    );

    cases.onOneStore('deletes every session of the workspace when the app is uninstalled', async () => {
      const first = await startThread('C0U1');
      await startThread('C0U2');
      const otherTeamRoot = nextTs();
      await deliver(
        bot,
        appMentionEvent({
          teamId: 'T0OTHER',
          channel: 'C0T2',
          user: 'U0ALICE',
          text: '<@U0BOT> hi',
          ts: otherTeamRoot,
        }),
      );
      const otherTeam = sessionIdIn(
        textOf(await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === otherTeamRoot)),
      );
      await deliver(bot, workspaceGoneEvent('app_uninstalled'));
      await waitFor(() => liveSessions(agent).length === 1, 'all sessions of the workspace deleted');
      expect(liveSessions(agent)).toEqual([otherTeam]);
      // Installed again (a new token, and a restart: docs/behaviour.md), the workspace's mappings are gone
      // too: a message in one of its old threads starts a new session.
      await bot.stop();
      bot = await startBot({ slack, agent, store, env });
      const creates = agent.requestsFor('createSession').length;
      await deliver(
        bot,
        appMentionEvent({
          channel: 'C0U1',
          user: 'U0ALICE',
          text: '<@U0BOT> back again',
          threadTs: first.root,
        }),
      );
      const again = await slack.waitForCall('chat.postMessage', (c) => textOf(c).endsWith('back again'));
      expect(sessionIdIn(textOf(again))).not.toBe(first.session);
      expect(agent.requestsFor('createSession')).toHaveLength(creates + 1);
    });

    cases.onEveryStore(
      'keeps a deletion while the agent service is down and finishes it after recovery, also across a restart',
      async () => {
        const early = await startThread('C0DOWN');
        const late = await startThread('C0DOWN2');
        await agent.down();
        await deliver(bot, channelLifecycleEvent('channel_archive', { channel: 'C0DOWN' }));
        await waitFor(
          async () => (await metric(bot, 'agent_session_deletions_pending')) === 1,
          'deletion recorded as pending',
        );
        await agent.up();
        await waitFor(
          () => !liveSessions(agent).includes(early.session),
          'deleted once the service is back',
          10_000,
        );
        await waitFor(
          async () => (await metric(bot, 'agent_session_deletions_pending')) === 0,
          'no deletion left pending',
        );

        await agent.down();
        await deliver(bot, channelLifecycleEvent('channel_deleted', { channel: 'C0DOWN2' }));
        await waitFor(
          async () => (await metric(bot, 'agent_session_deletions_pending')) === 1,
          'second deletion pending',
        );
        await bot.stop();
        await agent.up();
        await sleep(300);
        expect(liveSessions(agent)).toContain(late.session); // nobody running to delete it
        bot = await startBot({ slack, agent, store, env });
        await waitFor(
          () => !liveSessions(agent).includes(late.session),
          'deleted by the restarted bot',
          10_000,
        );
      },
    );

    cases.onOneStore('counts a session already gone on the service as deleted', async () => {
      const thread = await startThread('C0GONE');
      await fetch(`${agent.baseUrl}/session/${AGENT_ID}/${thread.session}`, {
        method: 'DELETE',
        headers: { private_key: agent.apiKey },
      });
      await deliver(bot, channelLifecycleEvent('channel_archive', { channel: 'C0GONE' }));
      await waitFor(() => deletions().length === 2, 'deletion attempted');
      await waitFor(
        async () => (await metric(bot, 'agent_session_deletions_pending')) === 0,
        'nothing left pending',
      );
    });

    cases.onOneStore('sends channels with a route to their own agent, keyed by agent', async () => {
      const routed = await startThread('C0ROUTED');
      const plain = await startThread('C0PLAIN');
      expect(agent.sessionsOf('agent-b').map((s) => s.uuid)).toEqual([routed.session]);
      expect(liveAmong(routed.session, plain.session)).toEqual([plain.session]);
      const sends = agent.requestsFor('sendMessage');
      expect(sends.find((r) => r.sessionId === routed.session)?.agentId).toBe('agent-b');
      await deliver(bot, channelLifecycleEvent('channel_archive', { channel: 'C0ROUTED' }));
      await waitFor(() => agent.sessionsOf('agent-b').length === 0, 'routed session deleted on its agent');
    });
  });
}

forEachStore(runPostgres, (kind, prepare, cases) =>
  lifecycleSuite(
    `session lifecycle (${kind === 'embedded' ? 'embedded store' : 'PostgreSQL'})`,
    prepare,
    cases,
  ),
);

describe('idle expiry', () => {
  const stack = botPerSuite({ env: { SESSION_IDLE_TTL: '2s' } });

  it('deletes the session of a thread idle longer than SESSION_IDLE_TTL, and keeps an active one', async () => {
    const idleRoot = nextTs();
    await mention(stack.bot, { channel: 'C0IDLE', text: '<@U0BOT> then silence', ts: idleRoot });
    const idle = sessionIdIn(
      textOf(await stack.slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === idleRoot)),
    );
    const busyRoot = nextTs();
    await mention(stack.bot, { channel: 'C0IDLE', text: '<@U0BOT> keep talking', ts: busyRoot });
    const busy = sessionIdIn(
      textOf(await stack.slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === busyRoot)),
    );
    for (let i = 0; i < 3; i++) {
      await sleep(900);
      await mention(stack.bot, { channel: 'C0IDLE', text: `<@U0BOT> still here ${i}`, threadTs: busyRoot });
    }
    await waitFor(() => !liveSessions(stack.agent).includes(idle), 'idle session deleted', 8_000);
    expect(liveSessions(stack.agent)).toContain(busy);
  });
});
