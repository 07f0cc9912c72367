import { afterAll, beforeAll, beforeEach, describe, expect } from 'vitest';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type SlackApiCall } from '../fakes/slack.js';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { appMentionEvent, nextTs, postSignedEvent } from '../helpers/slack-events.js';
import {
  AGENT_ID,
  mention,
  metric,
  type RunningBot,
  SIGNING_SECRET,
  type StoreChoice,
  startBot,
} from '../helpers/stack.js';
import { forEachStore, type StoreCases } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const runPostgres = await shouldRunPostgresTests();

/**
 * The channel of the running case: each has one of its own, so a case's posts are not paced by Slack's
 * one-message-a-second per channel after the posts of the cases before it.
 */
let CHANNEL = 'C0GENERAL';
let channelsUsed = 0;

function replyIn(threadTs: string) {
  return (call: SlackApiCall) => call.args.thread_ts === threadTs && call.args.channel === CHANNEL;
}

/** The text of the reply in a thread: what a person would read there. */
function textOf(call: SlackApiCall): string {
  return String(call.args.text);
}

function conversationSuite(
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

    // One bot for the cases of this suite (a bot start costs more than a case's work): each case works in a
    // channel and threads of its own, and counts only the sessions, agent calls and posts it made.
    beforeAll(async () => {
      ({ store, cleanup } = await prepareStore());
      slack = await FakeSlack.start();
      agent = await AgentServiceEmulator.start();
      bot = await startBot({ slack, agent, store });
    });
    afterAll(async () => {
      await bot?.stop();
      await Promise.all([slack?.stop(), agent?.stop(), cleanup?.()]);
    });
    let sessionsBefore = new Set<string>();
    let createsBefore = 0;
    let postsBefore = 0;
    beforeEach(async () => {
      // What a case before this one left under way (it failed midway) would count as this case's.
      await waitFor(
        async () =>
          (await metric(bot, 'jobs_in_flight')) === 0 &&
          (await metric(bot, 'inbox_open_jobs{state="pending"}')) === 0,
        'the jobs of the cases before this one finished',
      );
      channelsUsed += 1;
      CHANNEL = `C0GENERAL${channelsUsed}`;
      sessionsBefore = new Set(agent.sessionsOf(AGENT_ID).map((session) => session.uuid));
      createsBefore = agent.requestsFor('createSession').length;
      postsBefore = slack.callsOf('chat.postMessage').length;
    });
    /** The agent sessions this case made that the service still has, oldest first. */
    const sessionsCreated = () =>
      agent
        .sessionsOf(AGENT_ID)
        .map((session) => session.uuid)
        .filter((uuid) => !sessionsBefore.has(uuid));
    /** The createSession calls the agent service received during this case. */
    const creates = () => agent.requestsFor('createSession').slice(createsBefore);

    cases.onOneStore(
      'answers a mention in its thread with the agent reply, and reuses the session in that thread',
      async () => {
        const rootTs = nextTs();
        const first = await mention(bot, { channel: CHANNEL, text: '<@U0BOT> what is up?', ts: rootTs });
        expect(first.status).toBe(200);
        // Within Slack's 3 seconds, on a machine the rest of the suite keeps busy.
        expect(first.ms).toBeLessThan(3_000);

        const reply = await slack.waitForCall('chat.postMessage', replyIn(rootTs));
        const [session] = sessionsCreated();
        expect(textOf(reply)).toBe(`echo[${session}#1]: what is up?`);
        expect(reply.args.blocks).toEqual([
          { type: 'markdown', text: `echo[${session}#1]: what is up?` },
          // Feedback buttons end each answer, naming its agent and session.
          {
            type: 'context_actions',
            elements: [
              expect.objectContaining({
                type: 'feedback_buttons',
                action_id: 'reply_feedback',
                positive_button: expect.objectContaining({
                  value: JSON.stringify({ v: 'good', a: AGENT_ID, s: session }),
                }),
                negative_button: expect.objectContaining({
                  value: JSON.stringify({ v: 'bad', a: AGENT_ID, s: session }),
                }),
              }),
            ],
          },
        ]);
        expect(reply.tokenKind).toBe('bot');

        await mention(bot, { channel: CHANNEL, text: '<@U0BOT> and now?', threadTs: rootTs });
        const second = await slack.waitForCall(
          'chat.postMessage',
          (c) => replyIn(rootTs)(c) && textOf(c).includes('#2'),
        );
        expect(textOf(second)).toBe(`echo[${session}#2]: and now?`);
        expect(creates()).toHaveLength(1);
        expect(sessionsCreated()).toEqual([session]);
      },
    );

    cases.onOneStore('gives each thread its own session', async () => {
      const threadA = nextTs();
      const threadB = nextTs();
      await mention(bot, { channel: CHANNEL, text: '<@U0BOT> one', ts: threadA });
      await slack.waitForCall('chat.postMessage', replyIn(threadA));
      await mention(bot, { channel: CHANNEL, text: '<@U0BOT> two', ts: threadB });
      const replyB = await slack.waitForCall('chat.postMessage', replyIn(threadB));
      const created = sessionsCreated();
      expect(created).toHaveLength(2);
      expect(textOf(replyB)).toBe(`echo[${created[1]}#1]: two`);
    });

    cases.onEveryStore('keeps the thread-to-session mapping across a restart on the same store', async () => {
      const rootTs = nextTs();
      await mention(bot, { channel: CHANNEL, text: '<@U0BOT> remember me', ts: rootTs });
      await slack.waitForCall('chat.postMessage', replyIn(rootTs));
      const [session] = sessionsCreated();
      await bot.stop();

      bot = await startBot({ slack, agent, store });
      await mention(bot, { channel: CHANNEL, text: '<@U0BOT> still there?', threadTs: rootTs });
      const reply = await slack.waitForCall(
        'chat.postMessage',
        (c) => replyIn(rootTs)(c) && textOf(c).includes('#2'),
      );
      expect(textOf(reply)).toBe(`echo[${session}#2]: still there?`);
      expect(creates()).toHaveLength(1);
    });

    cases.onOneStore('answers a bare mention with help, without calling the agent', async () => {
      const before = agent.requests.length; // the start-up check's call
      const rootTs = nextTs();
      await mention(bot, { channel: CHANNEL, text: '<@U0BOT>', ts: rootTs });
      const reply = await slack.waitForCall('chat.postMessage', replyIn(rootTs));
      expect(textOf(reply)).toMatch(/Mention me with a question/);
      expect(agent.requests.slice(before)).toEqual([]);
    });

    cases.onOneStore(
      'turns an agent failure into one readable sentence with a reference, then keeps serving',
      async () => {
        const rootTs = nextTs();
        agent.injectFailure('sendMessage', { type: 'malformed' });
        await mention(bot, { channel: CHANNEL, text: '<@U0BOT> break please', ts: rootTs });
        const notice = await slack.waitForCall('chat.postMessage', replyIn(rootTs));
        expect(textOf(notice)).toMatch(
          /^:warning: The agent service sent a reply I could not read, so I have no answer\. .*\(ref [0-9A-F]{8}\)$/,
        );
        const ref = /\(ref ([0-9A-F]{8})\)/.exec(textOf(notice))?.[1];
        // The operator's line for that reference names the job and its thread.
        const logged = bot.logs.lines.find((line) => ref !== undefined && line.includes(ref));
        expect(logged).toBeDefined();
        expect(JSON.parse(logged ?? '{}')).toMatchObject({
          channel: CHANNEL,
          thread: rootTs,
          job: expect.any(Number),
        });

        await mention(bot, { channel: CHANNEL, text: '<@U0BOT> try again', threadTs: rootTs });
        const reply = await slack.waitForCall(
          'chat.postMessage',
          (c) => replyIn(rootTs)(c) && textOf(c).startsWith('echo'),
        );
        const created = sessionsCreated();
        expect(created).toHaveLength(1);
        expect(textOf(reply)).toBe(`echo[${created[0]}#1]: try again`);
      },
    );

    cases.onOneStore('rejects a request with a bad signature and processes nothing', async () => {
      const before = agent.requests.length; // the start-up check's call
      const body = appMentionEvent({ channel: CHANNEL, user: 'U0ALICE', text: '<@U0BOT> sneaky' });
      const forged = await postSignedEvent(bot.eventsUrl, SIGNING_SECRET, body, { badSignature: true });
      expect(forged.status).toBe(401);
      const stale = await postSignedEvent(bot.eventsUrl, SIGNING_SECRET, body, {
        timestampSeconds: Math.floor(Date.now() / 1000) - 600,
      });
      expect(stale.status).toBe(401);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(agent.requests.slice(before)).toEqual([]);
      expect(slack.callsOf('chat.postMessage').slice(postsBefore)).toHaveLength(0);
    });

    cases.onOneStore('answers health and readiness probes', async () => {
      const health = await fetch(`${bot.baseUrl}/healthz`);
      expect(health.status).toBe(200);
      const ready = await fetch(`${bot.baseUrl}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready' });
    });
  });
}

forEachStore(runPostgres, (kind, prepare, cases) =>
  conversationSuite(
    `mentions with the ${kind === 'embedded' ? 'embedded' : 'PostgreSQL'} store`,
    prepare,
    cases,
  ),
);
