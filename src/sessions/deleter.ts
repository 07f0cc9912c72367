import type { AgentClient } from '../agent/client.js';
import { isAgentServiceError } from '../agent/errors.js';
import type { Logger } from '../observability/logger.js';
import type { Database } from '../store/database.js';
import { DueWork, rowRetryDelayMs } from '../store/due-work.js';

/** Why a session is deleted; `unused`: made for a message whose conversation ended before it was sent. */
export type DeletionReason = 'reset' | 'channel-gone' | 'workspace-gone' | 'idle' | 'orphan' | 'unused';

export interface SessionToDelete {
  agentId: string;
  sessionId: string;
  reason: DeletionReason;
}

interface DueDeletion {
  agent_id: string;
  session_id: string;
  reason: DeletionReason;
  attempts: number;
}

const BATCH = 25;

/**
 * Deletes agent sessions durably: each deletion is written to the store first, then attempted; a
 * failure is retried with exponential backoff, also after a restart, until the service confirms.
 * A session the service no longer knows counts as deleted.
 */
export class SessionDeleter {
  private readonly due: DueWork<DueDeletion>;

  constructor(
    private readonly db: Database,
    private readonly agent: AgentClient,
    private readonly logger: Logger,
    private readonly options: {
      retryBaseMs: number;
      pollMs: number;
      onDeleted?: (reason: DeletionReason) => void;
    },
  ) {
    this.due = new DueWork<DueDeletion>(db, logger, {
      // Claim a batch by pushing its next attempt into the future, so other replicas skip it meanwhile.
      claimSql: `UPDATE pending_session_deletions SET next_attempt_at = now() + make_interval(secs => $1)
         WHERE (agent_id, session_id) IN (
           SELECT agent_id, session_id FROM pending_session_deletions
           WHERE next_attempt_at <= now() ORDER BY next_attempt_at LIMIT $2 FOR UPDATE SKIP LOCKED)
         RETURNING agent_id, session_id, reason, attempts`,
      batch: BATCH,
      pendingSql: 'SELECT count(*) AS count FROM pending_session_deletions',
      work: async (due) => {
        await Promise.all(due.map((deletion) => this.attempt(deletion)));
      },
      pollMs: options.pollMs,
      passFailed: 'session deletion pass failed; will retry',
    });
  }

  /** Records the deletions durably, then starts working on them. */
  async schedule(sessions: readonly SessionToDelete[]): Promise<void> {
    if (sessions.length === 0) return;
    // One statement for a whole channel or workspace, however many sessions it had.
    await this.db.query(
      `INSERT INTO pending_session_deletions (agent_id, session_id, reason)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
       ON CONFLICT (agent_id, session_id) DO NOTHING`,
      [
        sessions.map((session) => session.agentId),
        sessions.map((session) => session.sessionId),
        sessions.map((session) => session.reason),
      ],
    );
    this.kick();
  }

  /** Polls for due deletions (including ones left by an earlier run) until stopped. */
  start(): void {
    this.due.start();
  }

  async stop(): Promise<void> {
    await this.due.stop();
  }

  /** Runs a pass now (or right after the one in progress). */
  kick(): void {
    this.due.kick();
  }

  /** Deletions not confirmed by the agent service yet (a gauge for operators). */
  pendingCount(): Promise<number> {
    return this.due.pendingCount();
  }

  private async attempt(deletion: DueDeletion): Promise<void> {
    const context = { agentId: deletion.agent_id, session: deletion.session_id, reason: deletion.reason };
    try {
      await this.agent.deleteSession(deletion.agent_id, deletion.session_id);
      this.options.onDeleted?.(deletion.reason);
      this.logger.info(context, 'agent session deleted');
    } catch (error) {
      if (!isAgentServiceError(error) || error.kind !== 'session_not_found') {
        const attempts = deletion.attempts + 1;
        const delayMs = rowRetryDelayMs(attempts, this.options.retryBaseMs);
        const kind = isAgentServiceError(error) ? error.kind : 'internal';
        await this.db.query(
          `UPDATE pending_session_deletions
           SET attempts = $3, last_error = $4, next_attempt_at = now() + make_interval(secs => $5)
           WHERE agent_id = $1 AND session_id = $2`,
          [deletion.agent_id, deletion.session_id, attempts, kind, delayMs / 1000],
        );
        this.logger.warn(
          { ...context, attempts, retryInMs: delayMs, kind },
          'agent session deletion failed; will retry',
        );
        return;
      }
      this.logger.info(context, 'agent session was already gone');
    }
    await this.db.query('DELETE FROM pending_session_deletions WHERE agent_id = $1 AND session_id = $2', [
      deletion.agent_id,
      deletion.session_id,
    ]);
  }
}
