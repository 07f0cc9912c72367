import { setTimeout as sleep } from 'node:timers/promises';
import { type Database, type SqlQuery, StoreError } from '../store/database.js';
import { storableJson } from '../util/storable-text.js';
import { claimWith, type MessageRef } from './claims.js';

export type JobKind = 'message' | 'reset';

export interface NewJob {
  /** Ordering domain: jobs of one thread run one at a time, in the order they were recorded. */
  threadKey: string;
  /** Identity of the Slack message (and job kind): a second delivery of it is not a second job. */
  dedupeKey: string;
  kind: JobKind;
  payload: unknown;
  /** Who asked, for the per-user limit and for `stop`. */
  userId?: string;
}

export type AdmitOutcome = 'inserted' | 'duplicate' | 'thread-full' | 'rate-limited';

/** A thread reset as recorded, or refused because the conversation is another person's (`starter`). */
export type EnqueuedReset =
  | { outcome: 'queued' | 'duplicate'; cancelled: unknown[] }
  | { outcome: 'not-allowed'; starter: string };

export interface AdmitLimits {
  /** Open jobs a thread may have; a message beyond is refused. */
  maxOpenPerThread: number;
  /** Requests per user per minute; 0: no limit. */
  userPerMinute: number;
}

/** A job this process holds the lease of, with whatever progress an earlier owner recorded. */
export interface ClaimedJob {
  id: number;
  threadKey: string;
  dedupeKey: string;
  kind: JobKind;
  payload: unknown;
  userId?: string;
  /** 1 on the first claim; more when it was deferred, or an earlier owner died or handed it back. */
  attempts: number;
  sessionId?: string;
  /** When the prompt was sent to the agent; once set it is never sent again. */
  sentAt?: Date;
  /** What is to be posted: the agent's answer, or a notice (when `replyIsNotice`). */
  agentReply?: string;
  replyIsNotice: boolean;
  partsPosted: number;
  slowNoticeTs?: string;
  /** Recorded behind other work of its thread: it shows the "queued" indicator until it starts. */
  queued: boolean;
  /** Since when Slack has been refusing this job's posts (it is retried until REPLY_RETRY_WINDOW). */
  slackFailingSince?: Date;
  /** The answer of the process that sent the prompt was given up (it was gone): the thread is told so. */
  answerLost: boolean;
}

/** The verdict on the process that sent a job's prompt, asked by the job's next owner. */
export type SenderVerdict =
  /** Gone, or past the time it could still be waiting: its answer is given up, and never stored now. */
  | { lost: true }
  /** Not known yet, or heard from: ask again after `recheckInMs`. */
  | { lost: false; recheckInMs: number };

/** How often a process renews the leases of its jobs (and answers for the prompts it sent). */
export function heartbeatEveryMs(leaseMs: number): number {
  // Four to a lease: a process is taken over only after missing several in a row.
  return Math.max(50, leaseMs / 4);
}

/** How long a write that keeps an answer is retried through store errors (see `storeReply`). */
export interface Hold {
  /** From the first failure on. */
  forMs: number;
  /** Aborted when the process stops waiting for its jobs: then the write is given up. */
  signal?: AbortSignal;
}

/** Why a job may no longer have side effects: another owner took it over, or its author stopped it. */
export type JobInterruption = 'lost' | 'stopped';

export class JobInterruptedError extends Error {
  constructor(readonly reason: JobInterruption) {
    super(reason === 'lost' ? 'job taken over by another owner' : 'job stopped by its author');
    this.name = 'JobInterruptedError';
  }
}

interface JobRow {
  id: string | number;
  thread_key: string;
  dedupe_key: string;
  kind: JobKind;
  payload: string;
  user_id: string | null;
  attempts: number;
  session_id: string | null;
  sent_at: Date | string | null;
  agent_reply: string | null;
  reply_is_notice: boolean | null;
  parts_posted: number;
  slow_notice_ts: string | null;
  queued: boolean | null;
  slack_failing_since: Date | string | null;
  answer_lost: boolean | null;
}

/**
 * Waits between attempts of an idempotent write that met a store error, doubling from 250 ms to 4 s while
 * they add up to at most `budgetMs` (STORE_WRITE_RETRY_MS, 20 s by default), so an answer rides out a
 * failover or a dropped connection instead of being lost with the job's progress.
 */
export function storeRetryDelays(budgetMs: number): number[] {
  const delays: number[] = [];
  let total = 0;
  for (let delay = 250; total + delay <= budgetMs; delay = Math.min(delay * 2, 4_000)) {
    delays.push(delay);
    total += delay;
  }
  return delays;
}
/**
 * Waits between attempts of a held write (see `Hold`), the last repeated: short, so an answer is recorded
 * within a second of the store's return, before another replica that finds its lease lapsed gives it up.
 */
const HOLD_RETRY_DELAYS_MS = [250, 500, 1_000];

/** Finished jobs forgotten per statement: each one well inside the statement timeout. */
const PRUNE_BATCH = 5_000;

const JOB_COLUMNS =
  'id, thread_key, dedupe_key, kind, payload, user_id, attempts, session_id, sent_at, agent_reply, reply_is_notice, parts_posted, slow_notice_ts, queued, slack_failing_since, answer_lost';
const OPEN = `state IN ('pending', 'running')`;

/**
 * Inserts a job ($1 thread, $2 dedupe key, $3 kind, $4 payload, $5 user) unless a limit ($6, $7) refuses it.
 * `turn` serialises the recording of a thread's jobs: a job's id is its place in the thread's order, and ids
 * are taken on insert but seen on commit, so without it a job numbered first could become visible after a
 * later one had been claimed as the thread's oldest, and both would run at once. The lock is taken before
 * the row (and its id) exists, as the row is made from `turn`, and held until the statement commits.
 * The counts read the statement's snapshot, taken before the lock: under a concurrent message of the same
 * thread they may miss it (so `queued` may say false), never the dedupe, which ON CONFLICT decides.
 */
const ADMIT = `
  WITH turn AS MATERIALIZED (SELECT pg_advisory_xact_lock(hashtext('inbox:' || $1))),
  open AS (SELECT count(*) AS n FROM inbox WHERE thread_key = $1 AND ${OPEN}),
  recent AS (
    SELECT count(*) AS n FROM user_requests
    WHERE $7::int > 0 AND user_id = $5 AND at > now() - interval '1 minute'),
  known AS (SELECT EXISTS (SELECT 1 FROM inbox WHERE dedupe_key = $2) AS yes),
  job AS (
    INSERT INTO inbox (thread_key, dedupe_key, kind, payload, user_id, queued)
    SELECT $1, $2, $3, $4, $5, (SELECT n FROM open) > 0 FROM turn
    WHERE NOT (SELECT yes FROM known) AND (SELECT n FROM open) < $6
      AND ($7::int = 0 OR (SELECT n FROM recent) < $7::int)
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING id),
  charged AS (INSERT INTO user_requests (user_id) SELECT $5 FROM job WHERE $7::int > 0)
  SELECT (SELECT id FROM job) AS id, (SELECT n FROM open) AS open, (SELECT n FROM recent) AS recent,
         (SELECT yes FROM known) AS known`;

/**
 * The durable inbox: a job queue in SQL (the same on PostgreSQL and the embedded store), on its own tables.
 * Slack events are recorded here before they are acknowledged. A thread's turn is its oldest open job: only
 * that job can be claimed, under a row lock and a lease, so a thread's messages run one at a time and in
 * order across replicas, and a dead owner's job is taken over once its lease runs out. Progress (sent,
 * reply, parts posted) is checkpointed in the row, so a job taken over never asks the agent twice nor posts
 * twice; every progress write checks the job is still this owner's and still wanted.
 */
export class Inbox {
  constructor(
    private readonly db: Database,
    readonly owner: string,
    private readonly leaseMs: number,
    private readonly storeRetryDelaysMs: readonly number[] = storeRetryDelays(20_000),
  ) {}

  /**
   * Records a message if its thread and its sender are within limits, in one statement under the thread's
   * lock (this runs before Slack is acknowledged). `queued` says the job waits behind other work of its thread.
   */
  async admit(job: NewJob, limits: AdmitLimits): Promise<{ outcome: AdmitOutcome; queued: boolean }> {
    const rows = await this.db.query<{
      id: string | null;
      open: string | number;
      recent: string | number;
      known: boolean;
    }>(ADMIT, [
      job.threadKey,
      job.dedupeKey,
      job.kind,
      // Slack's words come in here: a NUL in them would reach the agent, and come back in its answer.
      storableJson(job.payload),
      job.userId ?? null,
      limits.maxOpenPerThread,
      limits.userPerMinute,
    ]);
    const row = rows[0];
    const queued = Number(row?.open ?? 0) > 0;
    if (row?.id !== null && row?.id !== undefined) return { outcome: 'inserted', queued };
    if (row?.known) return { outcome: 'duplicate', queued };
    if (Number(row?.open ?? 0) >= limits.maxOpenPerThread) return { outcome: 'thread-full', queued };
    // The insert lost a race with another delivery of the same message: that is a duplicate too.
    if (limits.userPerMinute === 0 || Number(row?.recent ?? 0) < limits.userPerMinute)
      return { outcome: 'duplicate', queued };
    return { outcome: 'rate-limited', queued };
  }

  /**
   * Records a thread reset behind the answer in progress, cancelling the messages still waiting (they were
   * for the conversation being reset), in one transaction; returns their payloads. `duplicate` when the same
   * request was recorded before (then nothing is cancelled). `noSession`: the thread has no conversation yet
   * (its first message waits or is being answered, or it was reset or expired): it is the one the thread's
   * oldest open message starts, so only that message's author may reset it (`not-allowed` names them).
   */
  async enqueueReset(job: NewJob, options: { noSession: boolean }): Promise<EnqueuedReset> {
    return this.db.transaction(async (query): Promise<EnqueuedReset> => {
      await lockThread(query, job.threadKey);
      const known = await query('SELECT 1 FROM inbox WHERE dedupe_key = $1', [job.dedupeKey]);
      if (known.length > 0) return { outcome: 'duplicate', cancelled: [] };
      if (options.noSession) {
        const [oldest] = await query<{ user_id: string | null }>(
          `SELECT user_id FROM inbox WHERE thread_key = $1 AND kind = 'message' AND ${OPEN} ORDER BY id LIMIT 1`,
          [job.threadKey],
        );
        if (oldest?.user_id && oldest.user_id !== job.userId)
          return { outcome: 'not-allowed', starter: oldest.user_id };
      }
      const inserted = await query(
        `INSERT INTO inbox (thread_key, dedupe_key, kind, payload, user_id) VALUES ($1, $2, 'reset', $3, $4)
         ON CONFLICT (dedupe_key) DO NOTHING RETURNING 1`,
        [job.threadKey, job.dedupeKey, storableJson(job.payload), job.userId ?? null],
      );
      if (inserted.length === 0) return { outcome: 'duplicate', cancelled: [] };
      return { outcome: 'queued', cancelled: await cancelWaiting(query, job.threadKey, undefined) };
    });
  }

  /**
   * `stop` from `userId` in a thread, once per request (`request` is claimed in the same transaction): their
   * messages still waiting are cancelled, and their message being answered is stopped (its answer is not
   * posted). Nobody else's work is touched: `othersGoOn` says whether any is still open in the thread.
   * `first` is false for a repeated delivery of the same request, which changes nothing.
   */
  async stop(
    threadKey: string,
    userId: string,
    request: MessageRef,
  ): Promise<{ first: boolean; cancelled: unknown[]; stoppedRunning: boolean; othersGoOn: boolean }> {
    return this.db.transaction(async (query) => {
      if (!(await claimWith(query, request, 'control')))
        return { first: false, cancelled: [], stoppedRunning: false, othersGoOn: false };
      const cancelled = await cancelWaiting(query, threadKey, userId);
      const stopped = await query(
        `UPDATE inbox SET stop_requested = true
         WHERE thread_key = $1 AND kind = 'message' AND state = 'running' AND NOT stop_requested AND user_id = $2
         RETURNING 1`,
        [threadKey, userId],
      );
      const others = await query(
        `SELECT 1 FROM inbox WHERE thread_key = $1 AND kind = 'message' AND ${OPEN} AND NOT stop_requested LIMIT 1`,
        [threadKey],
      );
      return { first: true, cancelled, stoppedRunning: stopped.length > 0, othersGoOn: others.length > 0 };
    });
  }

  /** Counts a request (a command, a shortcut, a button) against the user's limit; false when over it. */
  async chargeUser(userId: string, perMinute: number): Promise<boolean> {
    if (perMinute === 0) return true;
    const rows = await this.db.query(
      `INSERT INTO user_requests (user_id)
       SELECT $1 WHERE (SELECT count(*) FROM user_requests WHERE user_id = $1 AND at > now() - interval '1 minute') < $2
       RETURNING 1`,
      [userId, perMinute],
    );
    return rows.length > 0;
  }

  /** Whether anything was asked of the bot in this job's thread before it (a first mention has nothing). */
  async hasEarlierWork(job: ClaimedJob): Promise<boolean> {
    const rows = await this.db.query('SELECT 1 FROM inbox WHERE thread_key = $1 AND id < $2 LIMIT 1', [
      job.threadKey,
      job.id,
    ]);
    return rows.length > 0;
  }

  /** Whether the bot has ever had work in this thread (a follow-up there is for it). */
  async hasThread(threadKey: string): Promise<boolean> {
    return (await this.db.query('SELECT 1 FROM inbox WHERE thread_key = $1 LIMIT 1', [threadKey])).length > 0;
  }

  /**
   * Takes up to `limit` due jobs that are the oldest open job of their thread, pending or with a lapsed lease.
   * A lapsed lease of this very process counts too (its work was lost to a store failure), except for the
   * jobs it is running right now (`running`).
   */
  async claim(limit: number, running: readonly number[] = []): Promise<ClaimedJob[]> {
    const rows = await this.db.query<JobRow>(
      `UPDATE inbox SET state = 'running', owner = $1, lease_until = now() + make_interval(secs => $2),
              attempts = attempts + 1
       WHERE id IN (
         SELECT j.id FROM inbox j
         WHERE j.${OPEN} AND j.run_after <= now()
           AND (j.state = 'pending' OR j.lease_until < now())
           AND NOT (j.id = ANY($4::bigint[]))
           AND NOT EXISTS (SELECT 1 FROM inbox o WHERE o.thread_key = j.thread_key AND o.${OPEN} AND o.id < j.id)
         ORDER BY j.id LIMIT $3
         FOR UPDATE SKIP LOCKED)
       RETURNING ${JOB_COLUMNS}`,
      [this.owner, this.leaseMs / 1000, limit, running],
    );
    return rows.map(toClaimedJob).sort((a, b) => a.id - b.id);
  }

  /** Lets every running job be taken at once (the embedded store's only process restarted: they are orphans). */
  async expireLeases(): Promise<void> {
    await this.db.query(`UPDATE inbox SET lease_until = now() - interval '1 second' WHERE state = 'running'`);
  }

  /**
   * Extends the leases of jobs this process is still working on, and says it is alive to the next owner of
   * any of them whose prompt it sent (it may still be waiting for the answer after losing the job).
   */
  async heartbeat(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(
      `UPDATE inbox SET
         lease_until = CASE WHEN owner = $3 AND state = 'running'
                            THEN now() + make_interval(secs => $2) ELSE lease_until END,
         sender_seen_at = CASE WHEN sent_by = $3 THEN now() ELSE sender_seen_at END
       WHERE id = ANY($1::bigint[]) AND ((owner = $3 AND state = 'running') OR (sent_by = $3 AND ${OPEN}))`,
      [ids, this.leaseMs / 1000, this.owner],
    );
  }

  /**
   * Throws JobInterruptedError unless the job is still this owner's and its author has not stopped it.
   * Called before each Slack side effect.
   */
  async assertWanted(job: ClaimedJob): Promise<void> {
    const rows = await this.db.query<WantedRow>(
      'SELECT owner, state, stop_requested FROM inbox WHERE id = $1',
      [job.id],
    );
    this.throwUnlessWanted(rows[0]);
  }

  private throwUnlessWanted(row: WantedRow | undefined): void {
    if (!row || row.owner !== this.owner || row.state !== 'running') throw new JobInterruptedError('lost');
    if (row.stop_requested) throw new JobInterruptedError('stopped');
  }

  /** Recorded before the prompt leaves: whatever crashes after this, it is never sent again. */
  async markSent(job: ClaimedJob, sessionId: string): Promise<void> {
    await this.persist(() =>
      this.progress(job, 'sent_at = now(), session_id = $3, sent_by = $2', [sessionId]),
    );
  }

  /**
   * Asked by the owner of a job whose prompt another process sent (or this one, in a run that ended): is
   * that sender still there, waiting for the answer? A question is left in the row, which the sender's
   * heartbeat answers; unanswered for two heartbeats, the sender is gone. Gone (or `force`d: past the time
   * it could still be waiting), its answer is given up in the same statement, so an answer that comes later
   * is refused (see storeReply) and the thread hears either the answer or that it was lost, never both.
   * undefined: nothing to judge any more (the answer is in, or the job is no longer this owner's).
   */
  async judgeSender(job: ClaimedJob, force: boolean): Promise<SenderVerdict | undefined> {
    const windowS = (2 * heartbeatEveryMs(this.leaseMs)) / 1000;
    // Every SET expression reads the row as it was, so the verdict is on the question asked before.
    const rows = await this.persist(() =>
      this.db.query<{ answer_lost: boolean; wait_ms: string | number }>(
        `UPDATE inbox SET
           answer_lost = coalesce(answer_lost OR $4::boolean OR sent_by = $2
             OR (sender_pinged_at <= now() - make_interval(secs => $3)
                 AND (sender_seen_at IS NULL OR sender_seen_at < sender_pinged_at)), false),
           sender_pinged_at = CASE WHEN sender_pinged_at IS NULL OR sender_seen_at >= sender_pinged_at
                                   THEN now() ELSE sender_pinged_at END
         WHERE id = $1 AND owner = $2 AND state = 'running' AND NOT stop_requested
           AND agent_reply IS NULL AND sent_at IS NOT NULL
         RETURNING answer_lost,
           extract(epoch FROM sender_pinged_at + make_interval(secs => $3) - now()) * 1000 AS wait_ms`,
        [job.id, this.owner, windowS, force],
      ),
    );
    const row = rows[0];
    if (!row) return undefined;
    return row.answer_lost ? { lost: true } : { lost: false, recheckInMs: Math.max(0, Number(row.wait_ms)) };
  }

  /**
   * Records what is to be posted. Unlike other progress this lands even if another owner took the job over
   * meanwhile (this process may have been slow, or cut off from the store, not dead): the answer is kept for
   * whoever posts it, and a job put back to wait for it runs at once. Then, in the same statement, it asks
   * what assertWanted asks, and interrupts unless this owner may post it. With `hold`, it is retried through
   * a store outage for that long (the answer exists only in this process until it lands).
   */
  async storeReply(job: ClaimedJob, reply: string, isNotice: boolean, hold?: Hold): Promise<void> {
    const store = () =>
      // The SELECT reads the row as it was before the UPDATE, which changes none of the columns it reads.
      this.db.query<WantedRow & { answer_lost: boolean }>(
        `WITH stored AS (
           UPDATE inbox SET agent_reply = $2, reply_is_notice = $3, run_after = least(run_after, now())
           WHERE id = $1 AND ${OPEN} AND agent_reply IS NULL AND NOT stop_requested AND NOT answer_lost
           RETURNING 1)
         SELECT owner, state, stop_requested, answer_lost FROM inbox WHERE id = $1`,
        [job.id, reply, isNotice],
      );
    const rows = await this.persist(store, hold);
    // The next owner already told the thread this answer was lost.
    if (rows[0]?.answer_lost) throw new JobInterruptedError('lost');
    this.throwUnlessWanted(rows[0]);
  }

  async markPartsPosted(job: ClaimedJob, count: number): Promise<void> {
    await this.persist(() => this.progress(job, 'parts_posted = $3', [count]));
  }

  async setSlowNotice(job: ClaimedJob, ts: string): Promise<void> {
    await this.persist(() => this.progress(job, 'slow_notice_ts = $3', [ts]));
  }

  /**
   * Puts the job back to run again after `delayMs` (Slack is refusing posts, or an earlier owner may still
   * be waiting for the agent), keeping all its progress. `slackFailure` starts or continues the clock of
   * how long Slack has been failing it.
   */
  async defer(job: ClaimedJob, delayMs: number, slackFailure: boolean): Promise<void> {
    await this.persist(() =>
      this.db.query(
        `UPDATE inbox SET state = 'pending', owner = NULL, lease_until = NULL,
              run_after = now() + make_interval(secs => $3),
              slack_failing_since = CASE WHEN $4::boolean THEN coalesce(slack_failing_since, now()) END
       WHERE id = $1 AND owner = $2 AND state = 'running'`,
        [job.id, this.owner, delayMs / 1000, slackFailure],
      ),
    );
  }

  /**
   * Marks a job done. The text it carried (prompt, reply, response_url) is cleared: only what deduplication,
   * ordering and the per-user limit need stays, until `prune`. Says whether the thread has more work waiting.
   */
  async finish(job: ClaimedJob): Promise<{ threadHasMore: boolean }> {
    const rows = await this.persist(() =>
      this.db.query<{ more: boolean }>(
        `UPDATE inbox SET state = 'done', owner = NULL, lease_until = NULL, finished_at = now(),
                agent_reply = NULL, payload = '{}'
         WHERE id = $1 AND owner = $2 AND state = 'running'
         RETURNING EXISTS (
           SELECT 1 FROM inbox o WHERE o.thread_key = inbox.thread_key AND o.${OPEN} AND o.id <> inbox.id) AS more`,
        [job.id, this.owner],
      ),
    );
    return { threadHasMore: rows[0]?.more === true };
  }

  /** Hands jobs back for any replica to take (graceful shutdown); only jobs not yet sent to the agent. */
  async release(ids: readonly number[]): Promise<number> {
    if (ids.length === 0) return 0;
    const rows = await this.db.query(
      `UPDATE inbox SET state = 'pending', owner = NULL, lease_until = NULL
       WHERE id = ANY($1::bigint[]) AND owner = $2 AND state = 'running' AND sent_at IS NULL RETURNING 1`,
      [ids, this.owner],
    );
    return rows.length;
  }

  /** Cancels the open jobs of a closed channel or workspace (key prefix `team:` or `team:channel:`). */
  async cancelOpenWithPrefix(prefix: string): Promise<number> {
    const rows = await this.db.query(
      `UPDATE inbox SET state = 'cancelled', finished_at = now(), owner = NULL, lease_until = NULL,
              payload = '{}', agent_reply = NULL
       WHERE thread_key LIKE $1 AND ${OPEN} RETURNING 1`,
      [`${prefix.replace(/[\\%_]/g, '\\$&')}%`],
    );
    return rows.length;
  }

  /** Gives a message still waiting new words (an edit); false if it already started. */
  async replaceWaitingPayload(dedupeKey: string, edit: (payload: unknown) => unknown): Promise<boolean> {
    return this.db.transaction(async (query) => {
      const [row] = await query<{ payload: string }>(
        `SELECT payload FROM inbox WHERE dedupe_key = $1 AND state = 'pending' AND sent_at IS NULL FOR UPDATE`,
        [dedupeKey],
      );
      if (!row) return false;
      await query('UPDATE inbox SET payload = $2 WHERE dedupe_key = $1', [
        dedupeKey,
        storableJson(edit(JSON.parse(row.payload))),
      ]);
      return true;
    });
  }

  /** Cancels one message that has not started (its Slack message was deleted); returns its payload if it did. */
  async cancelWaitingMessage(dedupeKey: string): Promise<unknown> {
    const [row] = await this.db.query<{ payload: string }>(
      `WITH waiting AS (
         SELECT id, payload FROM inbox
         WHERE dedupe_key = $1 AND kind = 'message' AND sent_at IS NULL
           AND (state = 'pending' OR (state = 'running' AND lease_until < now()))
         FOR UPDATE)
       UPDATE inbox SET state = 'cancelled', finished_at = now(), payload = '{}', owner = NULL, lease_until = NULL
       FROM waiting WHERE inbox.id = waiting.id
       RETURNING waiting.payload`,
      [dedupeKey],
    );
    return row ? (JSON.parse(row.payload) as unknown) : undefined;
  }

  /** Who asked for a job and in which thread, while the inbox remembers it (see `prune`). */
  async requestOf(dedupeKey: string): Promise<{ threadKey: string; userId?: string } | undefined> {
    const [row] = await this.db.query<{ thread_key: string; user_id: string | null }>(
      'SELECT thread_key, user_id FROM inbox WHERE dedupe_key = $1',
      [dedupeKey],
    );
    return row ? { threadKey: row.thread_key, userId: row.user_id ?? undefined } : undefined;
  }

  /** Whether this message's prompt reached the agent. */
  async wasSent(dedupeKey: string): Promise<boolean> {
    return (
      (await this.db.query('SELECT 1 FROM inbox WHERE dedupe_key = $1 AND sent_at IS NOT NULL', [dedupeKey]))
        .length > 0
    );
  }

  async counts(): Promise<{ pending: number; running: number }> {
    const rows = await this.db.query<{ state: string; count: string | number }>(
      `SELECT state, count(*) AS count FROM inbox WHERE ${OPEN} GROUP BY state`,
    );
    const of = (state: string) => Number(rows.find((row) => row.state === state)?.count ?? 0);
    return { pending: of('pending'), running: of('running') };
  }

  /**
   * Forgets finished jobs older than Slack's retry and edit horizon (their keys dedupe until then), and
   * request counts older than the per-user limit's minute.
   */
  async prune(olderThanDays = 7, batch = PRUNE_BATCH): Promise<number> {
    // In batches: a backlog (a first clean-up after weeks) deleted in one statement outlasts the statement
    // timeout, and would then fail every hour.
    let pruned = 0;
    for (;;) {
      const rows = await this.db.query(
        `DELETE FROM inbox WHERE id IN (
           SELECT id FROM inbox WHERE finished_at < now() - make_interval(days => $1) LIMIT $2)
         RETURNING 1`,
        [olderThanDays, batch],
      );
      pruned += rows.length;
      if (rows.length < batch) break;
    }
    await this.db.query(`DELETE FROM user_requests WHERE at < now() - interval '10 minutes'`);
    return pruned;
  }

  /** Runs an idempotent write, retrying it through a short store outage, or for as long as `hold` says. */
  private async persist<T>(write: () => Promise<T>, hold?: Hold): Promise<T> {
    let firstFailure: number | undefined;
    for (let attempt = 0; ; attempt++) {
      try {
        return await write();
      } catch (error) {
        if (!(error instanceof StoreError)) throw error;
        firstFailure ??= Date.now();
        const delay = hold ? holdDelay(attempt, firstFailure + hold.forMs) : this.storeRetryDelaysMs[attempt];
        if (delay === undefined || hold?.signal?.aborted) throw error;
        // An abort ends the wait; the next attempt then gives up if it fails too.
        await sleep(delay, undefined, { signal: hold?.signal }).catch(() => {});
      }
    }
  }

  /** A progress write that lands only while the job is this owner's and wanted; otherwise it interrupts. */
  private async progress(job: ClaimedJob, assignments: string, values: unknown[]): Promise<void> {
    const rows = await this.db.query(
      `UPDATE inbox SET ${assignments} WHERE id = $1 AND owner = $2 AND state = 'running' AND NOT stop_requested
       RETURNING 1`,
      [job.id, this.owner, ...values],
    );
    if (rows.length === 0) await this.assertWanted(job);
  }
}

interface WantedRow {
  owner: string | null;
  state: string;
  stop_requested: boolean;
}

/** The wait before attempt `attempt + 1` of a held write, or undefined once `deadline` has passed. */
function holdDelay(attempt: number, deadline: number): number | undefined {
  const left = deadline - Date.now();
  if (left <= 0) return undefined;
  return Math.min(HOLD_RETRY_DELAYS_MS[Math.min(attempt, HOLD_RETRY_DELAYS_MS.length - 1)] ?? 1_000, left);
}

function toClaimedJob(row: JobRow): ClaimedJob {
  return {
    id: Number(row.id),
    threadKey: row.thread_key,
    dedupeKey: row.dedupe_key,
    kind: row.kind,
    payload: JSON.parse(row.payload) as unknown,
    userId: row.user_id ?? undefined,
    attempts: row.attempts,
    sessionId: row.session_id ?? undefined,
    sentAt: row.sent_at === null ? undefined : new Date(row.sent_at),
    agentReply: row.agent_reply ?? undefined,
    replyIsNotice: row.reply_is_notice === true,
    partsPosted: row.parts_posted,
    slowNoticeTs: row.slow_notice_ts ?? undefined,
    queued: row.queued === true,
    slackFailingSince: row.slack_failing_since === null ? undefined : new Date(row.slack_failing_since),
    answerLost: row.answer_lost === true,
  };
}

/** Serialises the recording of a thread's jobs until the transaction ends, as ADMIT's `turn` does. */
async function lockThread(query: SqlQuery, threadKey: string): Promise<void> {
  await query(`SELECT pg_advisory_xact_lock(hashtext('inbox:' || $1))`, [threadKey]);
}

/** Cancels a thread's messages that have not started (only `userId`'s, when given); returns their payloads. */
async function cancelWaiting(
  query: SqlQuery,
  threadKey: string,
  userId: string | undefined,
): Promise<unknown[]> {
  const rows = await query<{ payload: string }>(
    `WITH waiting AS (
       SELECT id, payload FROM inbox
       WHERE thread_key = $1 AND kind = 'message' AND sent_at IS NULL
         AND (state = 'pending' OR (state = 'running' AND lease_until < now()))
         AND ($2::text IS NULL OR user_id = $2)
       FOR UPDATE)
     UPDATE inbox SET state = 'cancelled', finished_at = now(), payload = '{}', owner = NULL, lease_until = NULL
     FROM waiting WHERE inbox.id = waiting.id
     RETURNING waiting.payload`,
    [threadKey, userId ?? null],
  );
  return rows.map((row) => JSON.parse(row.payload) as unknown);
}
