import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { AgentServiceEmulator } from '../fakes/agent-service.js';
import { FakeSlack, type SlackApiCall } from '../fakes/slack.js';
import { type BotProcess, spawnBot } from '../helpers/bot-process.js';
import { appMentionEvent, messageEvent, nextTs, postSignedEvent } from '../helpers/slack-events.js';
import { AGENT_ID, type RunningBot, SIGNING_SECRET, type StoreChoice, startBot } from '../helpers/stack.js';
import { sleep, waitFor } from '../helpers/wait.js';

export const CHANNEL = 'C0DELIVER';
export const ENV = { JOB_LEASE_MS: '3000', SLOW_NOTICE_MS: '0', SHUTDOWN_TIMEOUT_MS: '8000' };
/**
 * A takeover waits out the dead or stopped process's lease (PostgreSQL) and two of its heartbeats before
 * calling an answer lost: a shorter lease, as only one process runs at a time in those cases (the first, then
 * the next owner), so none can lose a job it is running to another.
 */
const TAKEOVER_ENV = { ...ENV, JOB_LEASE_MS: '1000' };
const textOf = (call: SlackApiCall) => String(call.args.text);
const prompts = (agent: AgentServiceEmulator) => agent.requestsFor('sendMessage').map((r) => r.prompt);

export interface Topology {
  name: string;
  /** Two bot instances on one store (PostgreSQL), or one (the embedded store is one process's). */
  twoInstances: boolean;
  prepare(): Promise<{ store: StoreChoice; cleanup(): Promise<void> }>;
  /**
   * Which half of the cases: delivery (order, retries, draining) or takeover (a killed process's work
   * finished by the next owner). Each half of each store runs in a file of its own, side by side.
   */
  part: 'delivery' | 'takeover';
}

/** What a message may rely on, however Slack delivers it and whatever happens to the process answering it. */
export function guarantees(topology: Topology) {
  describe(topology.name, () => {
    if (topology.part === 'delivery') sharedInstanceCases(topology);
    ownProcessCases(topology);
  });
}

/** Slack delivers an event: the fake has the message, then the process at `url` gets it. */
const send = (slack: FakeSlack, url: string, body: unknown, retryNum?: number) =>
  postSignedEvent(url, SIGNING_SECRET, body, { via: slack, ...(retryNum === undefined ? {} : { retryNum }) });
const mentionBody = (text: string, ts: string, threadTs?: string, channel = CHANNEL) =>
  appMentionEvent({ channel, user: 'U0ALICE', text: `<@U0BOT> ${text}`, ts, threadTs });

/**
 * The cases that need only running instances share them, with their fakes and store: each case works in
 * threads and channels of its own and counts only the agent traffic it caused, so it passes alone or after
 * the others.
 */
function sharedInstanceCases(topology: Topology): void {
  describe('on instances the cases share', () => {
    let slack: FakeSlack;
    let agent: AgentServiceEmulator;
    let cleanup: (() => Promise<void>) | undefined;
    let a: RunningBot | undefined;
    let b: RunningBot | undefined;

    beforeAll(async () => {
      let store: StoreChoice;
      ({ store, cleanup } = await topology.prepare());
      slack = await FakeSlack.start();
      agent = await AgentServiceEmulator.start();
      // Two instances on one store (PostgreSQL), one on the embedded store.
      a = await startBot({ slack, agent, store, env: ENV });
      b = topology.twoInstances ? await startBot({ slack, agent, store, env: ENV }) : a;
    });
    // Each case starts with Slack's full allowance (reactions.remove takes 20 a minute), as on a fresh fake.
    beforeEach(() => slack.resetRateLimits());
    afterEach(() => {
      agent.setLatency(0, 'sendMessage');
      agent.setLatency(0, 'createSession');
    });
    afterAll(async () => {
      await a?.stop();
      if (b !== a) await b?.stop();
      await Promise.all([slack?.stop(), agent?.stop(), cleanup?.()]);
    });

    const instances = (): { a: RunningBot; b: RunningBot } => {
      if (!a || !b) throw new Error('the instances did not start');
      return { a, b };
    };
    /** The agent traffic from here on: what the case calling it caused (cases run one after another). */
    function trafficFromNow() {
      const sends = agent.requestsFor('sendMessage').length;
      const creates = agent.requestsFor('createSession').length;
      const sessions = agent.sessionsOf(AGENT_ID).length;
      const sent = () => agent.requestsFor('sendMessage').slice(sends);
      return {
        prompts: () => sent().map((r) => r.prompt),
        createSessions: () => agent.requestsFor('createSession').slice(creates),
        newSessions: () => agent.sessionsOf(AGENT_ID).length - sessions,
        /** The most prompts in flight at once in any one session the case sent to. */
        maxConcurrentSends: () =>
          Math.max(0, ...sent().map((r) => agent.maxConcurrentSends(r.sessionId ?? ''))),
      };
    }

    it('delivers one thread in order, one message at a time, whichever instance gets each message', async () => {
      const { a, b } = instances();
      const traffic = trafficFromNow();
      agent.setLatency(120, 'sendMessage');
      const root = nextTs();
      const texts = ['m0', 'm1', 'm2', 'm3', 'm4', 'm5'];
      for (const [i, text] of texts.entries()) {
        const target = i % 2 === 0 ? a : b;
        const result = await send(
          slack,
          target.eventsUrl,
          mentionBody(text, i === 0 ? root : nextTs(), i === 0 ? undefined : root),
        );
        expect(result.status).toBe(200);
      }
      const replies = await slack.waitForCalls(
        'chat.postMessage',
        6,
        (c) => c.args.thread_ts === root,
        10_000,
      );
      expect(traffic.prompts()).toEqual(texts);
      expect(replies.map((reply) => textOf(reply).replace(/^echo\[s-\d+#\d+\]: /, ''))).toEqual(texts);
      expect(traffic.createSessions()).toHaveLength(1);
      expect(traffic.maxConcurrentSends()).toBe(1);
    });

    it("creates one session when a new thread's first messages reach both instances at once", async () => {
      const { a, b } = instances();
      const traffic = trafficFromNow();
      agent.setLatency(100, 'createSession');
      // Ten new threads, each opened on one instance and answered into on the other at the same moment; each in
      // its own channel, as Slack takes about one post a second per channel.
      const roots = Array.from({ length: 10 }, () => nextTs());
      const results = await Promise.all(
        roots.flatMap((root, i) => [
          send(slack, a.eventsUrl, mentionBody(`first ${i}`, root, undefined, `${CHANNEL}${i}`)),
          send(slack, b.eventsUrl, mentionBody(`second ${i}`, nextTs(), root, `${CHANNEL}${i}`)),
        ]),
      );
      expect(results.every((r) => r.status === 200)).toBe(true);
      for (const root of roots)
        await slack.waitForCalls('chat.postMessage', 2, (c) => c.args.thread_ts === root, 10_000);
      expect(traffic.createSessions()).toHaveLength(10);
      expect(traffic.newSessions()).toBe(10);
      expect(traffic.maxConcurrentSends()).toBe(1);
    });

    it("relays a message once when Slack's retries land on different instances", async () => {
      const { a, b } = instances();
      const traffic = trafficFromNow();
      const root = nextTs();
      await send(slack, a.eventsUrl, mentionBody('start', root));
      await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
      const ts = nextTs();
      const event = mentionBody('only once', ts, root);
      const asMessage = messageEvent({
        channel: CHANNEL,
        channelType: 'channel',
        user: 'U0ALICE',
        text: '<@U0BOT> only once',
        ts,
        threadTs: root,
      });
      const statuses = await Promise.all([
        send(slack, a.eventsUrl, event),
        send(slack, b.eventsUrl, event, 1),
        send(slack, a.eventsUrl, event, 2),
        send(slack, b.eventsUrl, asMessage),
      ]);
      expect(statuses.map((s) => s.status)).toEqual([200, 200, 200, 200]);
      await slack.waitForCall('chat.postMessage', (c) => textOf(c).endsWith('only once'));
      await sleep(500);
      expect(traffic.prompts().filter((p) => p === 'only once')).toHaveLength(1);
      expect(slack.callsOf('chat.postMessage').filter((c) => textOf(c).endsWith('only once'))).toHaveLength(
        1,
      );
    });
  });
}

/**
 * The cases that run the bot in a child process (to kill it, or send it SIGTERM), each on fakes and a store
 * of its own.
 */
function ownProcessCases(topology: Topology): void {
  describe('in a process of its own', () => {
    let slack: FakeSlack;
    let agent: AgentServiceEmulator;
    let store: StoreChoice;
    let cleanup: () => Promise<void>;
    let a: RunningBot | undefined;
    let child: BotProcess | undefined;

    // Only the fakes and the store before each case: the bot runs in a child process first, and an instance
    // started here would only be stopped again.
    beforeEach(async () => {
      ({ store, cleanup } = await topology.prepare());
      slack = await FakeSlack.start();
      agent = await AgentServiceEmulator.start();
    });
    afterEach(async () => {
      child?.child.kill('SIGKILL');
      await child?.exited;
      child = undefined;
      await a?.stop();
      a = undefined;
      await Promise.all([slack.stop(), agent.stop(), cleanup()]);
    });

    /** After a takeover: the job finished (indicator cleared), one reply in the thread, one prompt. */
    async function expectAnsweredOnce(root: string, prompt: string): Promise<void> {
      await waitFor(
        () => slack.reactionsOn(CHANNEL, root).length === 0,
        'job finished by the survivor',
        25_000,
      );
      await sleep(300);
      const posts = slack.callsOf('chat.postMessage').filter((c) => c.args.thread_ts === root);
      expect(posts.map(textOf)).toEqual([`echo[s-1#1]: ${prompt}`]);
      expect(prompts(agent)).toEqual([prompt]);
    }

    /** The bot in a child process, on this case's store. */
    const spawnChild = (env: Record<string, string>) => spawnBot({ slack, agent, store, env });

    /**
     * The bot in a child process, the only one running until it is killed (a live replica could otherwise
     * take the job first, and there would be nothing to take over), and the survivor to start after it.
     */
    async function spawnSurvivorAndVictim(): Promise<{
      victim: BotProcess;
      survivor: () => Promise<RunningBot>;
    }> {
      child = await spawnChild(TAKEOVER_ENV);
      return {
        victim: child,
        // With PostgreSQL the survivor takes the job over once its lease runs out; embedded: at start.
        survivor: async () => {
          a = await startBot({ slack, agent, store, env: TAKEOVER_ENV });
          return a;
        },
      };
    }

    if (topology.part === 'takeover') {
      it('answers an acknowledged event exactly once after the process that took it was killed', async () => {
        const { victim, survivor } = await spawnSurvivorAndVictim();
        // Hold the victim after the acknowledgement, before the prompt: while its session is being created. (Not
        // at the "working" reaction: the bot waits a second at most for that, and a busy machine can take longer
        // to kill it, which then sent the prompt and rightly called the answer lost.)
        agent.setLatency(5_000, 'createSession');
        const root = nextTs();
        expect((await send(slack, victim.eventsUrl, mentionBody('survive this', root))).status).toBe(200);
        await waitFor(() => agent.requestsFor('createSession').length > 0, 'the session being created');
        victim.child.kill('SIGKILL');
        await victim.exited;
        agent.setLatency(0, 'createSession');

        await survivor();
        // Generous: the survivor takes over only after the lease runs out, on a machine busy with other tests.
        const reply = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root, 25_000);
        expect(textOf(reply)).toMatch(/^echo\[.*\]: survive this$/);
        await sleep(500);
        expect(prompts(agent).filter((p) => p === 'survive this')).toHaveLength(1);
        expect(slack.callsOf('chat.postMessage').filter((c) => c.args.thread_ts === root)).toHaveLength(1);
        await waitFor(() => slack.reactionsOn(CHANNEL, root).length === 0, 'working indicator cleared');
      });

      it('never sends a prompt twice: an answer lost with a killed process is reported, not asked again', async () => {
        const { victim, survivor } = await spawnSurvivorAndVictim();
        agent.setLatency(3_000, 'sendMessage');
        const root = nextTs();
        await send(slack, victim.eventsUrl, mentionBody('in flight', root));
        await waitFor(() => prompts(agent).includes('in flight'), 'prompt reached the agent');
        victim.child.kill('SIGKILL');
        await victim.exited;
        agent.setLatency(0, 'sendMessage');

        await survivor();
        const notice = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root, 25_000);
        expect(textOf(notice)).toMatch(/restarted while the agent was answering/);
        await sleep(500);
        expect(prompts(agent).filter((p) => p === 'in flight')).toHaveLength(1);
      });

      it('keeps an answer Slack could not take yet: the next owner posts it without asking the agent again', async () => {
        const { victim, survivor } = await spawnSurvivorAndVictim();
        const root = nextTs();
        const body = mentionBody('keep this answer', root);
        slack.ingestEvent(body);
        // Slack fails the post (the victim keeps retrying it) until the victim is gone.
        slack.failNext('chat.postMessage', { type: 'http', status: 503 }, 1_000);
        await send(slack, victim.eventsUrl, body);
        // A second try: the answer refused the first time is recorded before the post is tried again.
        await slack.waitForCalls('chat.postMessage', 2, (c) => c.args.thread_ts === root, 15_000);
        victim.child.kill('SIGKILL');
        await victim.exited;
        slack.clearFailures('chat.postMessage');

        await survivor();
        const answered = () =>
          slack.threadMessages(CHANNEL, root).filter((m) => m.text?.endsWith(': keep this answer'));
        await waitFor(() => answered().length > 0, 'recorded answer posted by the survivor', 25_000);
        await sleep(300);
        expect(answered()).toHaveLength(1);
        expect(prompts(agent)).toEqual(['keep this answer']);
      });

      it('never posts a reply twice when killed between posting it and recording that', async () => {
        const { victim, survivor } = await spawnSurvivorAndVictim();
        const root = nextTs();
        const body = mentionBody('post once', root);
        slack.ingestEvent(body); // the thread exists in Slack, as it would
        slack.setLatency('chat.postMessage', 3_000);
        await send(slack, victim.eventsUrl, body);
        await slack.waitForCall(
          'chat.postMessage',
          (c) => c.args.thread_ts === root && textOf(c).endsWith('post once'),
        );
        victim.child.kill('SIGKILL');
        await victim.exited;
        slack.setLatency('chat.postMessage', undefined);

        await survivor();
        await expectAnsweredOnce(root, 'post once');
      });

      it('does not report an answer lost when it reached Slack but its record did not survive', async () => {
        const { victim, survivor } = await spawnSurvivorAndVictim();
        const root = nextTs();
        const body = mentionBody('posted, record lost', root);
        slack.ingestEvent(body);
        slack.setLatency('chat.postMessage', 3_000);
        await send(slack, victim.eventsUrl, body);
        await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root);
        victim.child.kill('SIGKILL');
        await victim.exited;
        slack.setLatency('chat.postMessage', undefined);
        // The reply's record is lost (say, a failover to a database replica that had not received it yet).
        const db = await openDatabase(store.kind === 'postgres' ? { ...store, poolSize: 2 } : store);
        await db.query(
          `UPDATE inbox SET agent_reply = NULL, parts_posted = 0 WHERE dedupe_key LIKE '%' || $1 || ':message'`,
          [root],
        );
        await db.close();

        await survivor();
        await expectAnsweredOnce(root, 'posted, record lost');
      });
    }

    if (topology.part === 'delivery') {
      it('drains on SIGTERM: refuses new events, finishes the answer in progress and exits 0', async () => {
        // A drain bound far above what finishing the answer takes, so a drain that waits out its bound instead of
        // ending when the work does is told apart from a slow machine.
        const victim = await spawnChild({ ...ENV, SHUTDOWN_TIMEOUT_MS: '30000' });
        child = victim;
        agent.setLatency(1_500, 'sendMessage');
        const root = nextTs();
        await send(slack, victim.eventsUrl, mentionBody('finish me', root));
        await waitFor(() => prompts(agent).includes('finish me'), 'prompt reached the agent');
        const signalled = Date.now();
        victim.child.kill('SIGTERM');
        await waitFor(
          async () => (await fetch(`${victim.baseUrl}/readyz`).catch(() => undefined))?.status !== 200,
          'not ready while draining',
        );
        const late = await send(slack, victim.eventsUrl, mentionBody('too late', nextTs())).catch(() => ({
          status: 0,
        }));
        expect(late.status).not.toBe(200);
        const { code } = await victim.exited;
        expect(code).toBe(0);
        // It ends when the answer is posted (1.5-2 s here, idle or busy), not at its bound.
        expect(Date.now() - signalled, victim.output()).toBeLessThan(10_000);
        expect(victim.output()).not.toContain('shutdown drain bound reached');
        const posts = slack.callsOf('chat.postMessage').filter((c) => c.args.thread_ts === root);
        expect(posts.map(textOf)).toEqual(['echo[s-1#1]: finish me']);
        expect(prompts(agent)).not.toContain('too late');
      });

      it('past the drain bound, leaves the answer still coming for the next owner instead of calling the agent down', async () => {
        // The survivor calls the answer lost AGENT_TIMEOUT_MS (+ a grace) after the prompt left.
        const env = { ...TAKEOVER_ENV, SHUTDOWN_TIMEOUT_MS: '300', AGENT_TIMEOUT_MS: '2000' };
        // A trace collector that never answers keeps the stopping process (and its store) up for seconds after
        // the drain bound: time enough for a job that was not abandoned to post something.
        const collector = createServer(() => {});
        await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
        const { port } = collector.address() as AddressInfo;
        child = await spawnChild({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` });
        agent.setLatency(1_800, 'sendMessage');
        const root = nextTs();
        await send(slack, child.eventsUrl, mentionBody('cut short', root));
        await waitFor(() => prompts(agent).includes('cut short'), 'prompt reached the agent');
        child.child.kill('SIGTERM');
        expect((await child.exited).code).toBe(0);
        child = undefined;
        collector.close();
        // Its connection to the agent was closed on the way out: that is no fault of the agent service.
        expect(slack.callsOf('chat.postMessage').filter((c) => c.args.thread_ts === root)).toEqual([]);

        a = await startBot({ slack, agent, store, env });
        const notice = await slack.waitForCall('chat.postMessage', (c) => c.args.thread_ts === root, 25_000);
        expect(textOf(notice)).toMatch(/restarted while the agent was answering/);
        expect(prompts(agent).filter((p) => p === 'cut short')).toHaveLength(1);
      });
    }
  });
}
