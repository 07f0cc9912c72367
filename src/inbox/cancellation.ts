import type { StoppedWork } from '../conversation/job-progress.js';
import type { Database, SqlQuery } from '../store/database.js';
import { startsWithPattern } from '../store/like.js';
import { storableJson } from '../util/storable-text.js';
import type { MessageRef } from './claims.js';
import { claimWith } from './claims.js';
import { lockThread, NOT_STARTED, OPEN } from './job-rows.js';
import type { NewJob } from './queue.js';

/** A thread reset as recorded, or refused because the conversation is another person's (`starter`). */
export type EnqueuedReset =
  | { outcome: 'queued' | 'duplicate'; cancelled: unknown[] }
  | { outcome: 'not-allowed'; starter: string };

/** What an edit did to its message's job (see JobCancellation.editMessage). */
export type EditOutcome = 'replaced' | 'sending' | 'sent' | 'none';

/** What a `stop` did (see JobCancellation.stop). */
export interface StopOutcome {
  first: boolean;
  cancelled: unknown[];
  stoppedWork: StoppedWork;
  othersGoOn: boolean;
}

/**
 * Ending work before it runs: a thread reset recorded in turn (cancelling what waits behind it), `stop` from
 * a message's author, a closed channel or workspace, a message edited or deleted while it waits.
 */
export class JobCancellation {
  constructor(private readonly db: Database) {}

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
        `INSERT INTO inbox (thread_key, dedupe_key, kind, payload, user_id, enterprise_id)
         VALUES ($1, $2, 'reset', $3, $4, $5)
         ON CONFLICT (dedupe_key) DO NOTHING RETURNING 1`,
        [
          job.threadKey,
          job.dedupeKey,
          storableJson(job.payload),
          job.userId ?? null,
          job.enterpriseId ?? null,
        ],
      );
      if (inserted.length === 0) return { outcome: 'duplicate', cancelled: [] };
      return { outcome: 'queued', cancelled: await cancelWaiting(query, job.threadKey, undefined) };
    });
  }

  /**
   * `stop` from `userId` in a thread, once per request (`request` is claimed in the same transaction): their
   * messages still waiting are cancelled, and their message being answered is stopped (its answer is not
   * posted). `stoppedWork` says whether there was one, and whether its prompt had left (`sent`: the agent has it)
   * or is now never sent. Nobody else's work is touched: `othersGoOn` says whether any is still open in the
   * thread. `first` is false for a repeated delivery of the same request, which changes nothing.
   */
  async stop(threadKey: string, userId: string, request: MessageRef): Promise<StopOutcome> {
    return this.db.transaction(async (query) => {
      if (!(await claimWith(query, request, 'control')))
        return { first: false, cancelled: [], stoppedWork: 'none', othersGoOn: false };
      const cancelled = await cancelWaiting(query, threadKey, userId);
      // Open and not cancelled above: running, or put back to wait after its prompt left (Slack refusing the
      // answer's post, a takeover waiting on the process that sent it), which runs again at once only to end.
      // The row lock orders this against markSent, which refuses a stopped job: a prompt not recorded as sent
      // here never leaves.
      const stopped = await query<{ work: Exclude<StoppedWork, 'none'> }>(
        `UPDATE inbox SET stop_requested = true,
                run_after = CASE WHEN state = 'pending' THEN now() ELSE run_after END
         WHERE thread_key = $1 AND kind = 'message' AND ${OPEN} AND NOT stop_requested AND user_id = $2
         RETURNING CASE WHEN sent_at IS NULL THEN 'unsent'
                        WHEN agent_reply IS NOT NULL AND parts_posted > 0 THEN 'partly-posted'
                        ELSE 'sent' END AS work`,
        [threadKey, userId],
      );
      const others = await query(
        `SELECT 1 FROM inbox WHERE thread_key = $1 AND kind = 'message' AND ${OPEN} AND NOT stop_requested LIMIT 1`,
        [threadKey],
      );
      // One message of a person's is worked on at a time in a thread.
      return {
        first: true,
        cancelled,
        stoppedWork: stopped[0]?.work ?? 'none',
        othersGoOn: others.length > 0,
      };
    });
  }

  /**
   * Cancels the open jobs of a closed channel or workspace (key prefix `team:` or `team:channel:`), those
   * recorded before `recordedBefore` when given (a channel's archive ends none of its jobs after an unarchive).
   */
  async cancelOpenWithPrefix(prefix: string, recordedBefore?: Date): Promise<number> {
    const rows = await this.db.query(
      `UPDATE inbox SET state = 'cancelled', finished_at = now(), owner = NULL, lease_until = NULL,
              payload = '{}', agent_reply = NULL
       WHERE thread_key LIKE $1 AND ${OPEN} AND created_at < $2::timestamptz RETURNING 1`,
      [startsWithPattern(prefix), recordedBefore?.toISOString() ?? 'infinity'],
    );
    return rows.length;
  }

  /**
   * Cancels the open jobs of every workspace of an org (an org-wide uninstall), but those of a workspace that
   * installed the app on its own after `removedAt` (its jobs are that install's).
   */
  async cancelOpenOfOrg(enterpriseId: string, removedAt?: Date): Promise<number> {
    const rows = await this.db.query(
      `UPDATE inbox SET state = 'cancelled', finished_at = now(), owner = NULL, lease_until = NULL,
              payload = '{}', agent_reply = NULL
       WHERE enterprise_id = $1 AND ${OPEN} AND NOT EXISTS (SELECT 1 FROM workspace_installs i
         WHERE i.scope = 'team:' || split_part(thread_key, ':', 1) AND i.installed_at > $2::timestamptz)
       RETURNING 1`,
      [enterpriseId, removedAt?.toISOString() ?? 'infinity'],
    );
    return rows.length;
  }

  /**
   * An edit of a relayed message: one still waiting takes the new words (`replaced`); one being prepared
   * (`sending`) or whose prompt was sent (`sent`) keeps the words it has; any other (never relayed, or ended
   * unsent) is left alone (`none`). The row lock orders this against the job's claim. Unlike NOT_STARTED, a
   * running job whose lease lapsed is not waiting here: its owner, if only slow, would still send the old words.
   */
  async editMessage(dedupeKey: string, edit: (payload: unknown) => unknown): Promise<EditOutcome> {
    return this.db.transaction(async (query) => {
      const [row] = await query<{ payload: string; phase: 'waiting' | 'sending' | 'sent' | 'ended' }>(
        `SELECT payload, CASE WHEN sent_at IS NOT NULL THEN 'sent' WHEN state = 'pending' THEN 'waiting'
                              WHEN state = 'running' THEN 'sending' ELSE 'ended' END AS phase
         FROM inbox WHERE dedupe_key = $1 FOR UPDATE`,
        [dedupeKey],
      );
      if (!row || row.phase === 'ended') return 'none';
      if (row.phase !== 'waiting') return row.phase;
      await query('UPDATE inbox SET payload = $2 WHERE dedupe_key = $1', [
        dedupeKey,
        storableJson(edit(JSON.parse(row.payload))),
      ]);
      return 'replaced';
    });
  }

  /** Cancels one message that has not started (its Slack message was deleted); returns its payload if it did. */
  async cancelWaitingMessage(dedupeKey: string): Promise<unknown> {
    const [row] = await this.db.query<{ payload: string }>(
      `WITH waiting AS (
         SELECT id, payload FROM inbox
         WHERE dedupe_key = $1 AND kind = 'message' AND ${NOT_STARTED}
         FOR UPDATE)
       UPDATE inbox SET state = 'cancelled', finished_at = now(), payload = '{}', owner = NULL, lease_until = NULL
       FROM waiting WHERE inbox.id = waiting.id
       RETURNING waiting.payload`,
      [dedupeKey],
    );
    return row ? (JSON.parse(row.payload) as unknown) : undefined;
  }
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
       WHERE thread_key = $1 AND kind = 'message' AND ${NOT_STARTED}
         AND ($2::text IS NULL OR user_id = $2)
       FOR UPDATE)
     UPDATE inbox SET state = 'cancelled', finished_at = now(), payload = '{}', owner = NULL, lease_until = NULL
     FROM waiting WHERE inbox.id = waiting.id
     RETURNING waiting.payload`,
    [threadKey, userId ?? null],
  );
  return rows.map((row) => JSON.parse(row.payload) as unknown);
}
