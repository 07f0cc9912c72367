import { describe, expect } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import type { BotProcess } from '../helpers/bot-process.js';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { itWithFakes, type PerTestFakes } from './support.js';

/**
 * Two replicas on one PostgreSQL. A replica that only stalled (paused past its lease) may still get the
 * agent's answer after the other took its job over: while it is heard from, the answer is posted once and
 * never called lost. One that is gone (not heard from within a short window after the takeover) has its
 * answer called lost within seconds, and then never posted, even if it comes back with it.
 */

const runPostgres = await shouldRunPostgresTests();

const CHANNEL = 'C0TAKEOVER';
const AGENT_TIMEOUT_MS = 7_000;
const ENV = {
  JOB_LEASE_MS: '1000',
  SLOW_NOTICE_MS: '1500',
  AGENT_TIMEOUT_MS: String(AGENT_TIMEOUT_MS),
};
const ANSWER_LOST = /its answer was lost/;

/** Views of a case's fakes. */
function views(fakes: PerTestFakes) {
  const prompts = () => fakes.prompts();
  return {
    prompts,
    threadTexts: (root: string) => fakes.slack.threadMessages(CHANNEL, root).map((m) => m.text),
    /** Replica A (its own process) gets the user's message and sends the prompt. */
    async askReplicaA(text: string, env = ENV): Promise<{ a: BotProcess; root: string }> {
      const a = await fakes.spawnBot(env);
      const root = await fakes.ask(a.eventsUrl, CHANNEL, text);
      await waitFor(() => prompts().includes(text), 'the prompt at the agent');
      return { a, root };
    },
  };
}

// Each case has fakes and a database of its own, so the cases wait out leases side by side.
describe.runIf(runPostgres)('a job taken over from a replica', { concurrent: true }, () => {
  itWithFakes(
    'posts the answer of a replica that stalled past its lease once, as soon as it comes, and never calls it lost',
    async ({ fakes }) => {
      const { prompts, threadTexts, askReplicaA } = views(fakes);
      fakes.agent.setLatency(5_000, 'sendMessage');
      // A lease long enough for A to be resumed and heard from before B gives up on it.
      const env = { ...ENV, JOB_LEASE_MS: '3000' };
      const { a, root } = await askReplicaA('stalled', env);
      a.child.kill('SIGSTOP');
      // Replica B starts only now, so the job is surely A's until its lease lapses.
      await fakes.startBot(env);
      await waitForAttempts(fakes.database.url, 2, 'replica B took the job over', 15_000);
      // Resumed before the agent answers (and after its slow-notice time): the answer comes to A.
      a.child.kill('SIGCONT');
      const resumedAt = Date.now();

      await fakes.slack.waitForCall('reactions.remove', (c) => c.args.timestamp === root, 20_000);
      await sleep(500);
      expect(threadTexts(root)).toEqual(['<@U0BOT> stalled', 'echo[s-1#1]: stalled']);
      // Nothing else was ever posted there (no "answer lost", no notice from the replica that lost the job).
      const posts = fakes.slack.callsOf('chat.postMessage').filter((c) => c.args.thread_ts === root);
      expect(posts.map((c) => c.args.text)).toEqual(['echo[s-1#1]: stalled']);
      expect(prompts()).toEqual(['stalled']);
      // Posted as soon as the agent's answer is in (a heartbeat or two of the resumed replica, seconds on a busy
      // machine), not when A could last have been waiting for it (the 5 s takeover grace after the agent's 7 s
      // timeout, 7 s after this answer); the message shows it is being worked on until then.
      const [sent] = fakes.agent.requestsFor('sendMessage');
      const agentAnswered = sent!.startedAt + (sent!.durationMs ?? Number.NaN);
      expect(resumedAt, 'A resumed before the agent answered').toBeLessThan(agentAnswered);
      expect(posts[0]!.at - agentAnswered).toBeLessThan(4_000);
      const removals = fakes.slack.callsOf('reactions.remove').filter((c) => c.args.timestamp === root);
      expect(
        removals.every((c) => c.at >= posts[0]!.at),
        'the working reaction stays until the answer is posted',
      ).toBe(true);
    },
  );

  itWithFakes(
    'with default settings, tells the thread within 20 s of the crash that the answer of a replica that is gone was lost',
    async ({ fakes }) => {
      const { prompts, threadTexts } = views(fakes);
      // The defaults that matter here: the lease, and the agent's own timeout (90 s), which the agent outlasts.
      const defaults = { SLOW_NOTICE_MS: '1500', AGENT_TIMEOUT_MS: '90000' };
      fakes.agent.setLatency(120_000, 'sendMessage');
      // A posts no slow notice before it is killed: one posted in the moment before the kill, not yet recorded
      // in the job, would stay (a crash's window, not what this checks); B's own is posted and cleared.
      const a = await fakes.spawnBot({ ...defaults, SLOW_NOTICE_MS: '60000' });
      const root = await fakes.ask(a.eventsUrl, CHANNEL, 'gone');
      await waitFor(() => prompts().includes('gone'), 'the prompt at the agent');
      a.child.kill('SIGKILL');
      await a.exited;
      const crashedAt = Date.now();
      await fakes.startBot(defaults);

      const notice = await fakes.slack.waitForCall(
        'chat.postMessage',
        (c) => c.args.thread_ts === root && ANSWER_LOST.test(String(c.args.text)),
        25_000,
      );
      expect(notice.at - crashedAt).toBeLessThanOrEqual(20_000);
      await fakes.slack.waitForCall('reactions.remove', (c) => c.args.timestamp === root, 5_000);
      await sleep(300);
      expect(threadTexts(root)).toEqual(['<@U0BOT> gone', notice.args.text]);
      expect(prompts()).toEqual(['gone']);
    },
    60_000,
  );

  itWithFakes(
    'never posts the late answer of a replica that stalled so long it was called gone',
    async ({ fakes }) => {
      const { prompts, threadTexts, askReplicaA } = views(fakes);
      fakes.agent.setLatency(6_000, 'sendMessage');
      const { a, root } = await askReplicaA('too late');
      a.child.kill('SIGSTOP');
      await fakes.startBot(ENV);
      const notice = await fakes.slack.waitForCall(
        'chat.postMessage',
        (c) => c.args.thread_ts === root && ANSWER_LOST.test(String(c.args.text)),
        // A lease to expire, a claim, a question to A left unanswered, a post: 1.8 s on a loaded machine.
        15_000,
      );
      // A comes back and gets the agent's answer: the thread was told it is lost, so it is never posted.
      a.child.kill('SIGCONT');
      const [sent] = fakes.agent.requestsFor('sendMessage');
      await waitFor(() => sent!.durationMs !== null, 'the agent answered A', 10_000);
      await sleep(2_000);
      expect(threadTexts(root)).toEqual(['<@U0BOT> too late', notice.args.text]);
      expect(prompts()).toEqual(['too late']);
      await waitFor(() => fakes.slack.reactionsOn(CHANNEL, root).length === 0, 'working indicator cleared');
    },
  );
});

/**
 * Waits until the one message job was claimed `attempts` times, asking on one connection for the whole wait:
 * a connection per poll cost the server a process fifty times a second.
 */
async function waitForAttempts(databaseUrl: string, attempts: number, what: string, timeoutMs: number) {
  const db = await openDatabase({ kind: 'postgres', databaseUrl, poolSize: 1 });
  try {
    await waitFor(
      async () => {
        const [row] = await db.query<{ attempts: number }>(
          `SELECT attempts FROM inbox WHERE kind = 'message'`,
        );
        return row?.attempts === attempts;
      },
      what,
      timeoutMs,
    );
  } finally {
    await db.close();
  }
}
