import type { ClaimedJob, JobKind } from '../conversation/job-progress.js';
import type { Database } from '../store/database.js';
import { startsWithPattern } from '../store/like.js';
import { storableJson } from '../util/storable-text.js';
import { JOB_COLUMNS, type JobRow, OPEN, oldestOpenJobOf, toClaimedJob } from './job-rows.js';
import { DEFAULT_STORE_RETRY_DELAYS_MS, persist } from './store-retry.js';
import { USER_LIMIT_WINDOW } from './user-limit.js';

export interface NewJob {
  /** Ordering domain: jobs of one thread run one at a time, in the order they were recorded. */
  threadKey: string;
  /** Identity of the Slack message (and job kind): a second delivery of it is not a second job. */
  dedupeKey: string;
  kind: JobKind;
  payload: unknown;
  /** Who asked, for the per-user limit and for `stop`. */
  userId?: string;
  /** The org (Enterprise Grid) of the job's workspace, where Slack names one: an org-wide uninstall drops it. */
  enterpriseId?: string;
}

/** `workspace-removed`: the app was removed from the message's workspace or org (or is being removed). */
export type AdmitOutcome = 'inserted' | 'duplicate' | 'thread-full' | 'rate-limited' | 'workspace-removed';

export interface AdmitLimits {
  /** Open jobs a thread may have; a message beyond is refused. */
  maxOpenPerThread: number;
  /** Requests per user per minute; 0: no limit. */
  userPerMinute: number;
}

/** How often a process renews the leases of its jobs (and answers for the prompts it sent). */
export function heartbeatEveryMs(leaseMs: number): number {
  // Four to a lease: a process is taken over only after missing several in a row.
  return Math.max(50, leaseMs / 4);
}

/**
 * Inserts a job ($1 thread, $2 dedupe key, $3 kind, $4 payload, $5 user, $8 org) unless a limit ($6, $7) refuses it,
 * or the app was removed from the thread's workspace (its team is the thread key's first part) or org: a
 * finished removal older than the scope's last install concerns the install it replaced (it is deleted, but
 * a process may die first), and an org's removal older than the workspace's own install is not its.
 * `turn` serialises the recording of a thread's jobs: a job's id is its place in the thread's order, and ids
 * are taken on insert but seen on commit, so without it a job numbered first could become visible after a
 * later one had been claimed as the thread's oldest, and both would run at once. The lock is taken before
 * the row (and its id) exists, as the row is made from `turn`, and held until the statement commits.
 * `open` counts the thread's open jobs once the lock is held, through thread_open_jobs_now (store/schema.ts),
 * which reads them afresh: the statement's own snapshot is taken before the lock, and would miss a job of the
 * thread whose recording committed while this one waited for it. So the count is exact, and with $9 a job
 * its thread has nothing open before is recorded already claimed by owner $10 for $11 seconds: the claim
 * costs no statement, and no commit, of its own. The other counts (the user's rate) read the snapshot. Where
 * the database's default isolation is stricter than READ COMMITTED, nothing is read afresh: no job is recorded
 * claimed there, and claim passes take them.
 * A lease (here and in `claim`) runs from when it is granted (clock_timestamp), not from when the statement
 * began (now()): a statement that waited on a lock would otherwise grant one already lapsed.
 */
const ADMIT = `
  WITH turn AS MATERIALIZED (SELECT pg_advisory_xact_lock(hashtext('inbox:' || $1))),
  open AS (SELECT thread_open_jobs_now($1) AS n FROM turn),
  recent AS (
    SELECT count(*) AS n FROM user_requests
    WHERE $7::int > 0 AND user_id = $5 AND at > now() - ${USER_LIMIT_WINDOW}),
  known AS (SELECT EXISTS (SELECT 1 FROM inbox WHERE dedupe_key = $2) AS yes),
  gone AS (SELECT EXISTS (SELECT 1 FROM workspace_removals r
    WHERE (r.team_id = split_part($1, ':', 1) OR (r.is_enterprise_install AND r.enterprise_id = $8))
      AND NOT (r.is_enterprise_install AND EXISTS (SELECT 1 FROM workspace_installs i
        WHERE i.scope = 'team:' || split_part($1, ':', 1) AND i.installed_at > r.requested_at))
      AND NOT (r.done_at IS NOT NULL AND EXISTS (SELECT 1 FROM workspace_installs i
        WHERE i.scope = r.scope AND i.installed_at > r.requested_at))) AS yes),
  take AS (SELECT $9::boolean AND (SELECT n FROM open) = 0
    AND current_setting('transaction_isolation') = 'read committed' AS yes),
  job AS (
    INSERT INTO inbox (thread_key, dedupe_key, kind, payload, user_id, queued, enterprise_id, state, owner,
                       lease_until, attempts)
    SELECT $1, $2, $3, $4, $5, (SELECT n FROM open) > 0, $8,
           CASE WHEN take.yes THEN 'running' ELSE 'pending' END,
           CASE WHEN take.yes THEN $10 END,
           CASE WHEN take.yes THEN clock_timestamp() + make_interval(secs => $11) END,
           CASE WHEN take.yes THEN 1 ELSE 0 END
    FROM turn, take
    WHERE NOT (SELECT yes FROM known) AND NOT (SELECT yes FROM gone) AND (SELECT n FROM open) < $6
      AND ($7::int = 0 OR (SELECT n FROM recent) < $7::int)
    ON CONFLICT (dedupe_key) DO NOTHING
    RETURNING ${JOB_COLUMNS}, state),
  charged AS (INSERT INTO user_requests (user_id) SELECT $5 FROM job WHERE $7::int > 0)
  SELECT job.*, (SELECT n FROM open) AS open, (SELECT n FROM recent) AS recent, (SELECT yes FROM known) AS known,
    (SELECT yes FROM gone) AS gone
  FROM (SELECT 1) AS one LEFT JOIN job ON true`;

/**
 * The durable inbox's queue: a job queue in SQL (the same on PostgreSQL and the embedded store). Slack events
 * are recorded here before they are acknowledged. A thread's turn is its oldest open job: only that job can
 * be claimed, under a row lock and a lease, so a thread's messages run one at a time and in order across
 * replicas, and a dead owner's job is taken over once its lease runs out.
 */
export class JobQueue {
  constructor(
    private readonly db: Database,
    readonly owner: string,
    private readonly leaseMs: number,
    private readonly retryDelaysMs: readonly number[] = DEFAULT_STORE_RETRY_DELAYS_MS,
  ) {}

  /** `persist` with this process's store retry waits (STORE_WRITE_RETRY_MS). */
  private persist<T>(write: () => Promise<T>): Promise<T> {
    return persist(write, undefined, this.retryDelaysMs);
  }

  /**
   * Records a message if its thread and its sender are within limits, in one statement under the thread's
   * lock (this runs before Slack is acknowledged). `queued` says the job waits behind other work of its thread.
   * With `claim` (this process has room for it), a job that is its thread's turn is recorded claimed by this
   * process and comes back as `claimed`, to be run at once.
   */
  async admit(
    job: NewJob,
    limits: AdmitLimits,
    claim = false,
  ): Promise<{ outcome: AdmitOutcome; queued: boolean; claimed?: ClaimedJob }> {
    const rows = await this.db.query<
      Partial<JobRow> & {
        state: string | null;
        open: string | number;
        recent: string | number;
        known: boolean;
        gone: boolean;
      }
    >(ADMIT, [
      job.threadKey,
      job.dedupeKey,
      job.kind,
      // Slack's words come in here: a NUL in them would reach the agent, and come back in its answer.
      storableJson(job.payload),
      job.userId ?? null,
      limits.maxOpenPerThread,
      limits.userPerMinute,
      job.enterpriseId ?? null,
      claim,
      this.owner,
      this.leaseMs / 1000,
    ]);
    const row = rows[0];
    const queued = Number(row?.open ?? 0) > 0;
    if (row?.id !== null && row?.id !== undefined) {
      const claimed = row.state === 'running' ? toClaimedJob(row as JobRow) : undefined;
      return { outcome: 'inserted', queued, ...(claimed ? { claimed } : {}) };
    }
    if (row?.known) return { outcome: 'duplicate', queued };
    if (row?.gone) return { outcome: 'workspace-removed', queued };
    if (Number(row?.open ?? 0) >= limits.maxOpenPerThread) return { outcome: 'thread-full', queued };
    // The insert lost a race with another delivery of the same message: that is a duplicate too.
    if (limits.userPerMinute === 0 || Number(row?.recent ?? 0) < limits.userPerMinute)
      return { outcome: 'duplicate', queued };
    return { outcome: 'rate-limited', queued };
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
      `UPDATE inbox SET state = 'running', owner = $1, lease_until = clock_timestamp() + make_interval(secs => $2),
              attempts = attempts + 1
       WHERE id IN (
         SELECT j.id FROM inbox j
         WHERE j.${OPEN} AND j.run_after <= now()
           AND (j.state = 'pending' OR j.lease_until < now())
           AND NOT (j.id = ANY($4::bigint[]))
           AND ${oldestOpenJobOf('j')} = j.id
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

  /** Who asked for a job and in which thread, while the inbox remembers it (see `prune`). */
  async requestOf(dedupeKey: string): Promise<{ threadKey: string; userId?: string } | undefined> {
    const [row] = await this.db.query<{ thread_key: string; user_id: string | null }>(
      'SELECT thread_key, user_id FROM inbox WHERE dedupe_key = $1',
      [dedupeKey],
    );
    return row ? { threadKey: row.thread_key, userId: row.user_id ?? undefined } : undefined;
  }

  /**
   * What `userId`'s messages still open in threads under `prefix` (a channel's `team:channel:`) carry, one per
   * thread: the conversations they are starting or continuing, whether or not a session exists yet.
   */
  async openMessagesOf(prefix: string, userId: string): Promise<unknown[]> {
    const rows = await this.db.query<{ payload: string }>(
      `SELECT DISTINCT ON (thread_key) payload FROM inbox
       WHERE thread_key LIKE $1 AND kind = 'message' AND ${OPEN} AND user_id = $2
       ORDER BY thread_key, id`,
      [startsWithPattern(prefix), userId],
    );
    return rows.map((row) => JSON.parse(row.payload) as unknown);
  }

  async counts(): Promise<{ pending: number; running: number }> {
    const rows = await this.db.query<{ state: string; count: string | number }>(
      `SELECT state, count(*) AS count FROM inbox WHERE ${OPEN} GROUP BY state`,
    );
    const of = (state: string) => Number(rows.find((row) => row.state === state)?.count ?? 0);
    return { pending: of('pending'), running: of('running') };
  }
}
