import {
  type ClaimedJob,
  type Hold,
  JobInterruptedError,
  type JobProgress,
  type SenderVerdict,
} from '../conversation/job-progress.js';
import { activityUpdateSql } from '../sessions/store.js';
import type { Database } from '../store/database.js';
import { OPEN, throwUnlessWanted, type WantedRow } from './job-rows.js';
import { heartbeatEveryMs } from './queue.js';
import { DEFAULT_STORE_RETRY_DELAYS_MS, persist } from './store-retry.js';

/**
 * A running job's checkpoints in its inbox row (sent, reply, parts posted), so a job taken over never asks
 * the agent twice nor posts twice; every progress write checks the job is still this owner's and still wanted.
 */
export class InboxJobProgress implements JobProgress {
  constructor(
    private readonly db: Database,
    readonly owner: string,
    private readonly leaseMs: number,
    private readonly retryDelaysMs: readonly number[] = DEFAULT_STORE_RETRY_DELAYS_MS,
  ) {}

  /** `persist` with this process's store retry waits (STORE_WRITE_RETRY_MS). */
  private persist<T>(write: () => Promise<T>, hold?: Hold): Promise<T> {
    return persist(write, hold, this.retryDelaysMs);
  }

  /** Whether anything was asked of the bot in this job's thread before it (a first mention has nothing). */
  async hasEarlierWork(job: ClaimedJob): Promise<boolean> {
    const rows = await this.db.query('SELECT 1 FROM inbox WHERE thread_key = $1 AND id < $2 LIMIT 1', [
      job.threadKey,
      job.id,
    ]);
    return rows.length > 0;
  }

  /**
   * Throws JobInterruptedError unless the job is still this owner's and its author has not stopped it.
   * Called before each Slack side effect; with too little of its lease left, the lease is taken again first.
   */
  async assertWanted(job: ClaimedJob): Promise<void> {
    const rows = await this.db.query<LeasedRow>(
      `SELECT owner, state, stop_requested, ${LEASE_HOLDS} AS lease_holds FROM inbox WHERE id = $1`,
      [job.id, this.leaseMs / 2000],
    );
    throwUnlessWanted(rows[0], this.owner);
    if (rows[0]?.lease_holds !== true) await this.renewLease(job);
  }

  /**
   * The job's lease taken again, or JobInterruptedError when it is no longer this owner's. Needed before
   * acting once its heartbeats have failed (the store was away): from when the lease lapses, another replica
   * may take the job over and post the answer too, its lookup not seeing this owner's post on the way.
   */
  private async renewLease(job: ClaimedJob): Promise<void> {
    const renewed = await this.db.query(progressSql('lease_until = now() + make_interval(secs => $3)'), [
      job.id,
      this.owner,
      this.leaseMs / 1000,
    ]);
    if (renewed.length > 0) return;
    const rows = await this.db.query<WantedRow>(
      'SELECT owner, state, stop_requested FROM inbox WHERE id = $1',
      [job.id],
    );
    throwUnlessWanted(rows[0], this.owner);
    // Wanted a moment ago, but the lease was not taken: not this owner's to act on, to be safe.
    throw new JobInterruptedError('lost');
  }

  /**
   * Recorded before the prompt leaves: whatever crashes after this, it is never sent again. The thread's
   * activity rides on it (`activityKey`), so a message under way costs no statement, nor commit, for it.
   */
  async markSent(job: ClaimedJob, sessionId: string, activityKey?: string): Promise<boolean> {
    const assignments = 'sent_at = now(), session_id = $3, sent_by = $2';
    if (activityKey === undefined) {
      await this.persist(() => this.progress(job, assignments, [sessionId]));
      return false;
    }
    const rows = await this.persist(() =>
      this.db.query<{ active: boolean }>(
        `WITH sent AS (${progressSql(assignments)}),
         active AS (${activityUpdateSql('$4', 'now()', 'EXISTS (SELECT 1 FROM sent)')})
         SELECT EXISTS (SELECT 1 FROM active) AS active FROM sent`,
        [job.id, this.owner, sessionId, activityKey],
      ),
    );
    if (rows.length === 0) await this.assertWanted(job);
    return rows[0]?.active === true;
  }

  /**
   * The agent service refused the prompt for a session it does not have, so it never ran it: recorded as not
   * sent again, so that a stop, or an owner taking over, while a new session is made knows it was not received.
   */
  async markUnsent(job: ClaimedJob): Promise<void> {
    await this.persist(() => this.progress(job, 'sent_at = NULL, session_id = NULL, sent_by = NULL', []));
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
   * whoever posts it, and a job put back to wait for it runs at once. It answers what assertWanted asks from
   * the row it wrote (or, not written, read afresh), and interrupts unless this owner may post it. With
   * `hold`, it is retried through a store outage for that long (the answer exists only in this process until
   * it lands).
   */
  async storeReply(job: ClaimedJob, reply: string, isNotice: boolean, hold?: Hold): Promise<void> {
    type StoredRow = LeasedRow & { answer_lost: boolean };
    const store = async () => {
      // The row as the UPDATE left it: one that waited for a stop's or a takeover's lock sees their outcome.
      // Still this owner's, its lease is taken again with it (see renewLease): the answer is posted next.
      const stored = await this.db.query<StoredRow>(
        `UPDATE inbox SET agent_reply = $2, reply_is_notice = $3, run_after = least(run_after, now()),
           lease_until = CASE WHEN owner = $4 AND state = 'running'
                              THEN greatest(lease_until, now() + make_interval(secs => $5)) ELSE lease_until END
         WHERE id = $1 AND ${OPEN} AND agent_reply IS NULL AND NOT stop_requested AND NOT answer_lost
         RETURNING owner, state, stop_requested, answer_lost, true AS lease_holds`,
        [job.id, reply, isNotice, this.owner, this.leaseMs / 1000],
      );
      if (stored.length > 0) return stored;
      // Not stored (stopped, given up, or already stored by an earlier try): why, asked afresh, since a
      // statement's own reads see the row as it was when the statement began, before any lock it waited for.
      return this.db.query<StoredRow>(
        `SELECT owner, state, stop_requested, answer_lost, ${LEASE_HOLDS} AS lease_holds FROM inbox WHERE id = $1`,
        [job.id, this.leaseMs / 2000],
      );
    };
    const rows = await this.persist(store, hold);
    // The next owner already told the thread this answer was lost.
    if (rows[0]?.answer_lost) throw new JobInterruptedError('lost');
    throwUnlessWanted(rows[0], this.owner);
    if (rows[0]?.lease_holds !== true) await this.renewLease(job);
  }

  async markPartsPosted(job: ClaimedJob, count: number): Promise<void> {
    await this.persist(() => this.progress(job, 'parts_posted = $3', [count]));
  }

  async setSlowNotice(job: ClaimedJob, ts: string): Promise<void> {
    await this.persist(() => this.progress(job, 'slow_notice_ts = $3', [ts]));
  }

  /** A progress write that lands only while the job is this owner's and wanted; otherwise it interrupts. */
  private async progress(job: ClaimedJob, assignments: string, values: unknown[]): Promise<void> {
    const rows = await this.db.query(progressSql(assignments), [job.id, this.owner, ...values]);
    if (rows.length === 0) await this.assertWanted(job);
  }
}

/** Whether at least $2 seconds of the job's lease are left: enough to act before another replica may take it. */
const LEASE_HOLDS = 'coalesce(lease_until > now() + make_interval(secs => $2), false)';

type LeasedRow = WantedRow & { lease_holds: boolean };

/** A progress write ($1 job, $2 owner) that lands only while the job is this owner's and wanted. */
function progressSql(assignments: string): string {
  return `UPDATE inbox SET ${assignments} WHERE id = $1 AND owner = $2 AND state = 'running' AND NOT stop_requested
       RETURNING 1`;
}
