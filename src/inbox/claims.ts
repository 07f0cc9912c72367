import type { OpenedSessions } from '../slack-out/agent-features.js';
import type { Database, SqlQuery } from '../store/database.js';

/**
 * What a claim is for: acting once on a control word, telling an author once that an edit is not re-sent or
 * that a request was refused, greeting a person once in the Messages tab; `agent-session` marks a thread
 * whose Slack agent session the bot opened (kept until it is closed). Rows of the retired `agent-view` purpose expire like the others.
 */
export type ClaimPurpose = 'edit-notice' | 'control' | 'refusal' | 'greeting' | 'agent-session' | 'feedback';

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

  async isClaimed(message: MessageRef, purpose: ClaimPurpose): Promise<boolean> {
    const rows = await this.db.query(
      'SELECT 1 FROM handled_messages WHERE team_id = $1 AND channel_id = $2 AND message_ts = $3 AND purpose = $4',
      [message.teamId, message.channelId, message.ts, purpose],
    );
    return rows.length > 0;
  }

  /** Gives a claim back, so the next attempt may act (for side effects that did not happen). */
  async release(message: MessageRef, purpose: ClaimPurpose): Promise<void> {
    await this.db.query(
      'DELETE FROM handled_messages WHERE team_id = $1 AND channel_id = $2 AND message_ts = $3 AND purpose = $4',
      [message.teamId, message.channelId, message.ts, purpose],
    );
  }

  /** Forgets claims older than Slack's retry and edit horizon. */
  async prune(olderThanDays = 7, batch = 5_000): Promise<number> {
    // In batches, as the inbox's: a backlog deleted at once would outlast the statement timeout.
    let pruned = 0;
    for (;;) {
      const rows = await this.db.query(
        // A greeting is once per person for good, and an opened session's mark stays until it is closed.
        `DELETE FROM handled_messages WHERE ctid = ANY(ARRAY(
           SELECT ctid FROM handled_messages
           WHERE handled_at < now() - make_interval(days => $1) AND purpose NOT IN ('greeting', 'agent-session')
           LIMIT $2))
         RETURNING 1`,
        [olderThanDays, batch],
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

/** The threads whose Slack agent session the bot opened, as claims shared by every replica. */
export function openedSessionsIn(claims: MessageClaims): OpenedSessions {
  const ref = (t: { teamId: string; channelId: string; threadTs: string }) => ({
    teamId: t.teamId,
    channelId: t.channelId,
    ts: t.threadTs,
  });
  return {
    add: async (thread) => void (await claims.claim(ref(thread), 'agent-session')),
    has: (thread) => claims.isClaimed(ref(thread), 'agent-session'),
    remove: (thread) => claims.release(ref(thread), 'agent-session'),
  };
}
