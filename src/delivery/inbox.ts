import type { SqlDatabase } from '../db/database.js';
import { SESSIONS_TABLE_QUALIFIED } from '../db/schema.js';

export type JobKind = 'message' | 'reset';
export type JobState = 'pending' | 'running' | 'done' | 'cancelled';

export interface NewJob {
  /** Ordering domain: jobs of one thread run one at a time, in id order. */
  threadKey: string;
  /** Identity of the Slack message (and job kind): a second delivery of it is not a second job. */
  dedupeKey: string;
  kind: JobKind;
  payload: unknown;
  /** Who sent it, for per-user rate limits. */
  userId?: string;
}

export type AdmitOutcome = 'inserted' | 'duplicate' | 'thread-full' | 'rate-limited';

export interface AdmitLimits {
  /** Open jobs a thread may have; a message beyond is refused. */
  maxOpenPerThread: number;
  /** Messages per user per minute; 0: no limit. */
  userPerMinute: number;
}

/** A job this process holds the lease of, with whatever progress an earlier owner recorded. */
export interface ClaimedJob {
  id: number;
  threadKey: string;
  dedupeKey: string;
  kind: JobKind;
  payload: unknown;
  /** 1 on the first claim; more when an earlier owner died or handed it back. */
  attempts: number;
  sessionId?: string;
  /** The prompt was sent to the agent: it must never be sent again. */
  sent: boolean;
  agentReply?: string;
  partsPosted: number;
  slowNoticeTs?: string;
  /** Recorded behind other work of its thread: it shows the "queued" indicator until it starts. */
  queued: boolean;
  /**
   * The thread's stored session row as read when the job was recorded and claimed in one statement:
   * null when the thread had none, undefined when it was not read (look it up).
   */
  sessionRow?: string | null;
}

interface JobRow {
  id: string | number;
  thread_key: string;
  dedupe_key: string;
  kind: JobKind;
  payload: string;
  attempts: number;
  session_id: string | null;
  sent_at: Date | string | null;
  agent_reply: string | null;
  parts_posted: number;
  slow_notice_ts: string | null;
  queued: boolean | null;
}

/** The job columns (all null when nothing was inserted) plus the admission figures. */
type AdmitRow = Omit<JobRow, 'id'> & {
  id: string | number | null;
  session_row: string | null;
  state: string | null;
  open: string | number;
  recent: string | number;
  known: boolean;
  leased: boolean;
};

const JOB_COLUMNS =
  'id, thread_key, dedupe_key, kind, payload, attempts, session_id, sent_at, agent_reply, parts_posted, slow_notice_ts, queued';

/**
 * The durable inbox (a job queue in SQL, the same on PostgreSQL and the embedded store). Slack events are
 * recorded here before they are acknowledged; workers of any replica claim the head job of a thread with
 * a lease, so a thread's messages run one at a time and in order, and a dead owner's job is reclaimed
 * once its lease runs out. Progress (sent, reply, parts posted) is checkpointed in the row so a reclaimed
 * job neither asks the agent twice nor posts a reply twice.
 */
export class Inbox {
  constructor(
    private readonly db: SqlDatabase,
    readonly owner: string,
    private readonly leaseMs: number,
  ) {}

  /**
   * Records a message job if its thread and its sender are within limits, in one round trip (this runs
   * before Slack is acknowledged). `queued` says the job waits behind other work of its thread.
   */
  async admit(
    job: NewJob,
    limits: AdmitLimits,
    claim: boolean,
    /** Row key of the thread's session mapping: a job claimed here comes with it, saving a lookup. */
    sessionRowKey?: string,
  ): Promise<{ outcome: AdmitOutcome; queued: boolean; claimed?: ClaimedJob }> {
    const rows = await this.db.query<AdmitRow>(
      `WITH open AS (
         SELECT count(*) AS n FROM (
           SELECT 1 FROM inbox WHERE thread_key = $1 AND state IN ('pending', 'running') LIMIT $6) heads),
       recent AS (
         SELECT count(*) AS n FROM inbox
         WHERE $7::int > 0 AND user_id = $5 AND kind = 'message' AND created_at > now() - interval '1 minute'),
       allowed AS (
         SELECT (SELECT n FROM open) < $6 AND ($7::int = 0 OR (SELECT n FROM recent) < $7::int) AS ok,
                NOT EXISTS (SELECT 1 FROM inbox WHERE dedupe_key = $2) AS fresh),
       lease AS (
         INSERT INTO inbox_threads (thread_key, owner, lease_until)
         SELECT $1, $8, now() + make_interval(secs => $9)
         WHERE $10::boolean AND (SELECT ok AND fresh FROM allowed) AND (SELECT n FROM open) = 0
         ON CONFLICT (thread_key) DO UPDATE SET owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until
         WHERE inbox_threads.owner IS NULL
            OR (inbox_threads.lease_until < now() AND inbox_threads.owner IS DISTINCT FROM EXCLUDED.owner)
         RETURNING thread_key),
       inserted AS (
         INSERT INTO inbox (thread_key, dedupe_key, kind, payload, user_id, queued, state, owner, lease_until, attempts)
         SELECT $1, $2, $3, $4, $5, (SELECT n FROM open) > 0,
                CASE WHEN EXISTS (SELECT 1 FROM lease) THEN 'running' ELSE 'pending' END,
                CASE WHEN EXISTS (SELECT 1 FROM lease) THEN $8 END,
                CASE WHEN EXISTS (SELECT 1 FROM lease) THEN now() + make_interval(secs => $9) END,
                CASE WHEN EXISTS (SELECT 1 FROM lease) THEN 1 ELSE 0 END
         WHERE (SELECT ok FROM allowed)
         ON CONFLICT (dedupe_key) DO NOTHING
         RETURNING ${JOB_COLUMNS}, state),
       thread AS (
         INSERT INTO inbox_threads (thread_key) SELECT $1
         WHERE NOT EXISTS (SELECT 1 FROM lease) AND EXISTS (SELECT 1 FROM inserted)
         ON CONFLICT (thread_key) DO NOTHING)
       SELECT inserted.*, (SELECT n FROM open) AS open, (SELECT n FROM recent) AS recent,
              NOT (SELECT fresh FROM allowed) AS known, EXISTS (SELECT 1 FROM lease) AS leased,
              (SELECT value FROM ${SESSIONS_TABLE_QUALIFIED} WHERE key = $11::text) AS session_row
       FROM (SELECT 1) one LEFT JOIN inserted ON true`,
      [
        job.threadKey,
        job.dedupeKey,
        job.kind,
        JSON.stringify(job.payload),
        job.userId ?? null,
        limits.maxOpenPerThread,
        limits.userPerMinute,
        this.owner,
        this.leaseMs / 1000,
        claim,
        sessionRowKey ?? null,
      ],
    );
    const row = rows[0];
    const queued = Number(row?.open ?? 0) > 0;
    if (row?.id !== null && row?.id !== undefined) {
      // Its thread was free and nothing older waits: this process runs it at once, no claim needed.
      const claimed =
        row.state === 'running'
          ? {
              ...toClaimedJob({ ...row, id: row.id }),
              ...(sessionRowKey === undefined ? {} : { sessionRow: row.session_row }),
            }
          : undefined;
      return { outcome: 'inserted', queued, claimed };
    }
    // A duplicate that raced in after the lease was taken: give the thread back.
    if (row?.leased) await this.releaseThreads([job.threadKey]);
    if (row?.known) return { outcome: 'duplicate', queued };
    if (Number(row?.open ?? 0) >= limits.maxOpenPerThread) return { outcome: 'thread-full', queued };
    return { outcome: 'rate-limited', queued };
  }

  /** Records a job; `inserted` is false when the same Slack message was recorded before. */
  async enqueue(job: NewJob): Promise<{ id: number; inserted: boolean }> {
    const rows = await this.db.query<{ id: string | number }>(
      `WITH inserted AS (
         INSERT INTO inbox (thread_key, dedupe_key, kind, payload, user_id) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (dedupe_key) DO NOTHING RETURNING id),
       thread AS (INSERT INTO inbox_threads (thread_key) VALUES ($1) ON CONFLICT (thread_key) DO NOTHING)
       SELECT id FROM inserted`,
      [job.threadKey, job.dedupeKey, job.kind, JSON.stringify(job.payload), job.userId ?? null],
    );
    if (rows[0]) return { id: Number(rows[0].id), inserted: true };
    const existing = await this.db.query<{ id: string | number }>(
      'SELECT id FROM inbox WHERE dedupe_key = $1',
      [job.dedupeKey],
    );
    return { id: Number(existing[0]?.id ?? 0), inserted: false };
  }

  /** Whether the bot has ever had work in this thread (a follow-up there is for it). */
  async hasThread(threadKey: string): Promise<boolean> {
    const rows = await this.db.query('SELECT 1 FROM inbox WHERE thread_key = $1 LIMIT 1', [threadKey]);
    return rows.length > 0;
  }

  /** After a restart of the only process that can use the embedded store: its running jobs are orphans. */
  async reclaimAll(): Promise<number> {
    const rows = await this.db.query(
      `UPDATE inbox SET lease_until = now() - interval '1 second' WHERE state = 'running' RETURNING 1`,
    );
    await this.db.query(`UPDATE inbox_threads SET owner = NULL, lease_until = NULL WHERE owner IS NOT NULL`);
    return rows.length;
  }

  /**
   * Takes up to `limit` threads nobody holds a live lease on (or just `threadKey`), and the oldest open job
   * of each. The thread lease, taken under a row lock with SKIP LOCKED, is what keeps a thread's messages
   * one at a time across replicas; a thread taken without a job to run is released again.
   */
  async claim(limit: number, threadKey?: string): Promise<ClaimedJob[]> {
    const rows = await this.db.query<
      Omit<JobRow, 'id'> & { id: string | number | null; taken_thread: string }
    >(
      `WITH free AS (
         SELECT t.thread_key FROM inbox_threads t
         WHERE (t.owner IS NULL OR t.lease_until < now())
           -- Never from itself: a lease of ours that ran out while we were busy is still our work in progress.
           AND t.owner IS DISTINCT FROM $1
           AND ($4::text IS NULL OR t.thread_key = $4)
           AND EXISTS (SELECT 1 FROM inbox i WHERE i.thread_key = t.thread_key AND i.state IN ('pending', 'running'))
         LIMIT $3
         FOR UPDATE OF t SKIP LOCKED),
       taken AS (
         UPDATE inbox_threads t SET owner = $1, lease_until = now() + make_interval(secs => $2)
         FROM free WHERE t.thread_key = free.thread_key
         RETURNING t.thread_key),
       heads AS (
         SELECT DISTINCT ON (i.thread_key) i.id FROM inbox i JOIN taken ON i.thread_key = taken.thread_key
         WHERE i.state IN ('pending', 'running') ORDER BY i.thread_key, i.id),
       claimed AS (
         UPDATE inbox SET state = 'running', owner = $1, lease_until = now() + make_interval(secs => $2),
                attempts = attempts + 1
         WHERE id IN (SELECT id FROM heads)
         RETURNING ${JOB_COLUMNS})
       SELECT claimed.*, taken.thread_key AS taken_thread FROM taken LEFT JOIN claimed ON claimed.thread_key = taken.thread_key`,
      [this.owner, this.leaseMs / 1000, limit, threadKey ?? null],
    );
    const idle = rows.filter((row) => row.id === null).map((row) => row.taken_thread);
    if (idle.length > 0) await this.releaseThreads(idle);
    return rows
      .filter((row): row is typeof row & { id: string | number } => row.id !== null)
      .map((row) => toClaimedJob(row))
      .sort((a, b) => a.id - b.id);
  }

  private async releaseThreads(threadKeys: readonly string[]): Promise<void> {
    await this.db.query(
      'UPDATE inbox_threads SET owner = NULL, lease_until = NULL WHERE thread_key = ANY($1) AND owner = $2',
      [threadKeys, this.owner],
    );
  }

  /** Extends the leases of jobs this process is still working on. */
  async heartbeat(ids: readonly number[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.checkpoint(
      `WITH jobs AS (
         UPDATE inbox SET lease_until = now() + make_interval(secs => $2)
         WHERE id = ANY($1::bigint[]) AND owner = $3 AND state = 'running')
       UPDATE inbox_threads SET lease_until = now() + make_interval(secs => $2)
       WHERE owner = $3 AND thread_key IN (SELECT thread_key FROM inbox WHERE id = ANY($1::bigint[]))`,
      [ids, this.leaseMs / 1000, this.owner],
    );
  }

  /** Recorded durably before the prompt leaves: whatever crashes after this, it is never sent again. */
  async markSent(id: number, sessionId: string): Promise<void> {
    await this.progress(id, 'sent_at = now(), session_id = $2', [sessionId], 'durable');
  }

  async storeReply(id: number, reply: string): Promise<void> {
    await this.progress(id, 'agent_reply = $2', [reply], 'checkpoint');
  }

  async markPartsPosted(id: number, count: number): Promise<void> {
    await this.progress(id, 'parts_posted = $2', [count], 'checkpoint');
  }

  async setSlowNotice(id: number, ts: string | null): Promise<void> {
    await this.progress(id, 'slow_notice_ts = $2', [ts], 'checkpoint');
  }

  /**
   * Marks a job done and, in the same round trip, takes the thread's next job (when `claimNext`) or
   * releases the thread, so a busy thread moves on without a separate claim.
   */
  async finish(id: number, claimNext: boolean): Promise<ClaimedJob | undefined> {
    // A checkpoint: lost with the database server, the job is simply resumed and finds its reply posted.
    const rows = await this.db.checkpoint<JobRow>(
      `WITH done AS (
         UPDATE inbox SET state = 'done', owner = NULL, lease_until = NULL, finished_at = now(),
                agent_reply = NULL, payload = '{}'
         WHERE id = $1 RETURNING thread_key),
       next AS (
         SELECT id FROM inbox
         WHERE thread_key = (SELECT thread_key FROM done) AND state = 'pending' AND $4::boolean
         ORDER BY id LIMIT 1),
       released AS (
         UPDATE inbox_threads SET owner = NULL, lease_until = NULL
         WHERE thread_key = (SELECT thread_key FROM done) AND owner = $2 AND NOT EXISTS (SELECT 1 FROM next))
       UPDATE inbox SET state = 'running', owner = $2, lease_until = now() + make_interval(secs => $3),
              attempts = attempts + 1
       WHERE id = (SELECT id FROM next) AND state = 'pending'
       RETURNING ${JOB_COLUMNS}`,
      [id, this.owner, this.leaseMs / 1000, claimNext],
    );
    return rows[0] ? toClaimedJob(rows[0]) : undefined;
  }

  /** Hands jobs back for any replica to take (graceful shutdown); only jobs not yet sent to the agent. */
  async release(ids: readonly number[]): Promise<number> {
    if (ids.length === 0) return 0;
    const rows = await this.db.query(
      `UPDATE inbox SET state = 'pending', owner = NULL, lease_until = NULL
       WHERE id = ANY($1::bigint[]) AND owner = $2 AND state = 'running' AND sent_at IS NULL RETURNING 1`,
      [ids, this.owner],
    );
    // Threads whose job was handed back are free at once; threads still mid-answer keep their lease to expire.
    await this.db.query(
      `UPDATE inbox_threads SET owner = NULL, lease_until = NULL
       WHERE owner = $1 AND NOT EXISTS (
         SELECT 1 FROM inbox WHERE inbox.thread_key = inbox_threads.thread_key AND state = 'running' AND owner = $1)`,
      [this.owner],
    );
    return rows.length;
  }

  /** Cancels a thread's jobs that have not started; returns their payloads. */
  async cancelWaiting(threadKey: string, kind: JobKind = 'message'): Promise<unknown[]> {
    const rows = await this.db.query<{ payload: string }>(
      `UPDATE inbox SET state = 'cancelled', finished_at = now()
       WHERE thread_key = $1 AND kind = $2 AND state = 'pending' AND sent_at IS NULL
       RETURNING payload`,
      [threadKey, kind],
    );
    return rows.map((row) => JSON.parse(row.payload) as unknown);
  }

  /** Cancels the open jobs of a closed channel or workspace (key prefix `team:` or `team:channel:`). */
  async cancelOpenWithPrefix(prefix: string): Promise<number> {
    const rows = await this.db.query(
      `UPDATE inbox SET state = 'cancelled', finished_at = now(), owner = NULL, lease_until = NULL
       WHERE thread_key LIKE $1 AND state IN ('pending', 'running') RETURNING 1`,
      [`${prefix.replace(/[\\%_]/g, '\\$&')}%`],
    );
    return rows.length;
  }

  /** Whether a job of this thread is being worked on now. */
  async isRunning(threadKey: string): Promise<boolean> {
    const rows = await this.db.query(
      `SELECT 1 FROM inbox WHERE thread_key = $1 AND state = 'running' AND lease_until > now() LIMIT 1`,
      [threadKey],
    );
    return rows.length > 0;
  }

  /** Gives a job still waiting a new payload (an edited message); false if it already started. */
  async replaceWaitingPayload(dedupeKey: string, payload: unknown): Promise<boolean> {
    const rows = await this.db.query(
      `UPDATE inbox SET payload = $2 WHERE dedupe_key = $1 AND state = 'pending' AND sent_at IS NULL RETURNING 1`,
      [dedupeKey, JSON.stringify(payload)],
    );
    return rows.length > 0;
  }

  async payloadOf(dedupeKey: string): Promise<unknown | undefined> {
    const rows = await this.db.query<{ payload: string }>('SELECT payload FROM inbox WHERE dedupe_key = $1', [
      dedupeKey,
    ]);
    return rows[0] ? (JSON.parse(rows[0].payload) as unknown) : undefined;
  }

  /** Whether this message's prompt reached the agent. */
  async wasSent(dedupeKey: string): Promise<boolean> {
    const rows = await this.db.query('SELECT 1 FROM inbox WHERE dedupe_key = $1 AND sent_at IS NOT NULL', [
      dedupeKey,
    ]);
    return rows.length > 0;
  }

  async counts(): Promise<{ pending: number; running: number }> {
    const rows = await this.db.query<{ state: string; count: string | number }>(
      `SELECT state, count(*) AS count FROM inbox WHERE state IN ('pending', 'running') GROUP BY state`,
    );
    const of = (state: string) => Number(rows.find((row) => row.state === state)?.count ?? 0);
    return { pending: of('pending'), running: of('running') };
  }

  /** Forgets finished jobs older than Slack's retry and edit horizon (their keys still dedupe until then). */
  async prune(olderThanDays = 7): Promise<number> {
    const rows = await this.db.query(
      `DELETE FROM inbox WHERE finished_at < now() - make_interval(days => $1) RETURNING 1`,
      [olderThanDays],
    );
    return rows.length;
  }

  /**
   * Progress writes only land while this process still owns the job. Checkpoints may be lost with the
   * database server (not with the bot): the next owner then re-checks Slack for posted parts.
   */
  private async progress(
    id: number,
    assignments: string,
    values: unknown[],
    durability: 'durable' | 'checkpoint',
  ): Promise<void> {
    const write = durability === 'durable' ? this.db.query : this.db.checkpoint;
    await write.call(
      this.db,
      `UPDATE inbox SET ${assignments} WHERE id = $1 AND owner = $${values.length + 2}`,
      [id, ...values, this.owner],
    );
  }
}

function toClaimedJob(row: JobRow): ClaimedJob {
  return {
    id: Number(row.id),
    threadKey: row.thread_key,
    dedupeKey: row.dedupe_key,
    kind: row.kind,
    payload: JSON.parse(row.payload) as unknown,
    attempts: row.attempts,
    sessionId: row.session_id ?? undefined,
    sent: row.sent_at !== null,
    agentReply: row.agent_reply ?? undefined,
    partsPosted: row.parts_posted,
    slowNoticeTs: row.slow_notice_ts ?? undefined,
    queued: row.queued === true,
  };
}
