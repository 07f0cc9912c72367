import type { Database, SqlQuery } from '../store/database.js';
import { MESSAGE_MEMORY_DAYS } from './retention.js';

/**
 * What a claim is for: acting once on a control word, telling an author once that an edit is not re-sent or
 * that a request was refused, recording feedback once. Rows of retired purposes (`agent-view`) expire like
 * the others; lasting facts about a conversation are marks (see marks.ts).
 */
export type ClaimPurpose = 'edit-notice' | 'control' | 'refusal' | 'feedback';

/**
 * Marks as the previous release kept them, which marks.ts keeps in step during a rolling upgrade: lasting,
 * so never pruned here (as that release did not).
 */
const LEGACY_MARK_PURPOSES = ['greeting', 'agent-session'];

export interface MessageRef {
  teamId: string;
  channelId: string;
  ts: string;
}

/**
 * At-most-once side effects of a Slack message that are not jobs: the first claim wins, durably, so
 * retries, restarts and other replicas agree.
 */
export class MessageClaims {
  constructor(private readonly db: Database) {}

  /** True for the first claim of this message and purpose; false for every later one. */
  claim(message: MessageRef, purpose: ClaimPurpose): Promise<boolean> {
    return claimWith((sql, params) => this.db.query(sql, params), message, purpose);
  }

  /** Forgets claims older than Slack's retry and edit horizon. */
  async prune(olderThanDays = MESSAGE_MEMORY_DAYS, batch = 5_000): Promise<number> {
    // In batches, as the inbox's: a backlog deleted at once would outlast the statement timeout.
    let pruned = 0;
    for (;;) {
      const rows = await this.db.query(
        `DELETE FROM handled_messages WHERE ctid = ANY(ARRAY(
           SELECT ctid FROM handled_messages
           WHERE handled_at < now() - make_interval(days => $1) AND NOT purpose = ANY($3) LIMIT $2))
         RETURNING 1`,
        [olderThanDays, batch, LEGACY_MARK_PURPOSES],
      );
      pruned += rows.length;
      if (rows.length < batch) break;
    }
    return pruned;
  }
}

/** The claim as one statement, for use inside a transaction of the caller's. */
export async function claimWith(
  query: SqlQuery,
  message: MessageRef,
  purpose: ClaimPurpose,
): Promise<boolean> {
  const rows = await query(
    `INSERT INTO handled_messages (team_id, channel_id, message_ts, purpose) VALUES ($1, $2, $3, $4)
     ON CONFLICT DO NOTHING RETURNING 1`,
    [message.teamId, message.channelId, message.ts, purpose],
  );
  return rows.length === 1;
}
