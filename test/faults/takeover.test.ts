import { describe, expect, it } from 'vitest';
import { TAKEOVER_GRACE_MS } from '../../src/conversation/relay.js';
import { openDatabase } from '../../src/store/database.js';
import type { BotProcess } from '../helpers/bot-process.js';
import { shouldRunPostgresTests } from '../helpers/postgres.js';
import { sleep, waitFor } from '../helpers/wait.js';
import { perTestFakes } from './support.js';

/**
 * Two replicas on one PostgreSQL. A replica that only stalled (paused past its lease) may still get the
 * agent's answer after the other took its job over: the answer is posted once and never called lost. Only
 * when the first owner can no longer be waiting for it (AGENT_TIMEOUT_MS after the prompt, and a grace) is
 * an answer called lost.
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

describe.runIf(runPostgres)('a job taken over from a replica', () => {
  const fakes = perTestFakes();

  const prompts = () => fakes.prompts();
  const threadTexts = (root: string) => fakes.slack.threadMessages(CHANNEL, root).map((m) => m.text);

  /** Replica A (its own process) gets the user's message and sends the prompt. */
  async function askReplicaA(text: string): Promise<{ a: BotProcess; root: string }> {
    const a = await fakes.spawnBot(ENV);
    const root = await fakes.ask(a.eventsUrl, CHANNEL, text);
    await waitFor(() => prompts().includes(text), 'the prompt at the agent');
    return { a, root };
  }

  it('posts the answer of a replica that stalled past its lease once, as soon as it comes, and never calls it lost', async () => {
    fakes.agent.setLatency(5_000, 'sendMessage');
    const { a, root } = await askReplicaA('stalled');
    a.child.kill('SIGSTOP');
    // Replica B starts only now, so the job is surely A's until its lease lapses.
    await fakes.startBot(ENV);
    await waitFor(
      async () => (await job(fakes.database.url))?.attempts === 2,
      'replica B took the job over',
      15_000,
    );
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
    // Posted as soon as the agent's answer is in, not when A could last have been waiting for it; the
    // message shows it is being worked on until then.
    const [sent] = fakes.agent.requestsFor('sendMessage');
    const agentAnswered = sent!.startedAt + (sent!.durationMs ?? Number.NaN);
    expect(resumedAt, 'A resumed before the agent answered').toBeLessThan(agentAnswered);
    expect(posts[0]!.at - agentAnswered).toBeLessThan(2_500);
    const removals = fakes.slack.callsOf('reactions.remove').filter((c) => c.args.timestamp === root);
    expect(
      removals.every((c) => c.at >= posts[0]!.at),
      'the working reaction stays until the answer is posted',
    ).toBe(true);
  });

  it('calls the answer of a replica that is gone lost only once AGENT_TIMEOUT_MS and the grace have passed', async () => {
    fakes.agent.setLatency(30_000, 'sendMessage');
    const { a, root } = await askReplicaA('gone');
    a.child.kill('SIGKILL');
    await a.exited;
    const sentAt = (await job(fakes.database.url))?.sentAt;
    expect(sentAt).toBeDefined();
    await fakes.startBot(ENV);

    const notice = await fakes.slack.waitForCall(
      'chat.postMessage',
      (c) => c.args.thread_ts === root && ANSWER_LOST.test(String(c.args.text)),
      20_000,
    );
    expect(notice.at - sentAt!).toBeGreaterThanOrEqual(AGENT_TIMEOUT_MS + TAKEOVER_GRACE_MS);
    await fakes.slack.waitForCall('reactions.remove', (c) => c.args.timestamp === root, 5_000);
    await sleep(300);
    expect(threadTexts(root)).toEqual(['<@U0BOT> gone', notice.args.text]);
    expect(prompts()).toEqual(['gone']);
  });
});

/** The one message job: how often it was claimed, and when its prompt was sent (ms since the epoch). */
async function job(databaseUrl: string): Promise<{ attempts: number; sentAt?: number } | undefined> {
  const db = await openDatabase({ kind: 'postgres', databaseUrl, poolSize: 1 });
  try {
    const [row] = await db.query<{ attempts: number; sent_at: Date | null }>(
      `SELECT attempts, sent_at FROM inbox WHERE kind = 'message'`,
    );
    return row && { attempts: row.attempts, sentAt: row.sent_at?.getTime() };
  } finally {
    await db.close();
  }
}
