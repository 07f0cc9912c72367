import type { SqlDatabase } from '../db/database.js';

/**
 * What a claim is for: telling an author once that an edit is not re-sent or that a message was refused,
 * acting once on a control word, or greeting a person once in the Messages tab.
 */
export type ClaimPurpose = 'edit-notice' | 'control' | 'refusal' | 'greeting';

export interface MessageRef {
  teamId: string;
  channelId: string;
  ts: string;
}

/**
 * At-most-once side effects of a Slack message that are not jobs (control words, edit notices): the first
 * claim wins, durably, so retries, restarts and other replicas agree.
 */
export class MessageClaims {
  constructor(private readonly db: SqlDatabase) {}

  /** True for the first claim of this message and purpose; false for every later one. */
  async claim(message: MessageRef, purpose: ClaimPurpose): Promise<boolean> {
    const rows = await this.db.query(
      `INSERT INTO handled_messages (team_id, channel_id, message_ts, purpose) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING RETURNING 1 AS claimed`,
      [message.teamId, message.channelId, message.ts, purpose],
    );
    return rows.length === 1;
  }

  /** Gives a claim back, so the next attempt may act (for side effects that did not happen). */
  async release(message: MessageRef, purpose: ClaimPurpose): Promise<void> {
    await this.db.query(
      'DELETE FROM handled_messages WHERE team_id = $1 AND channel_id = $2 AND message_ts = $3 AND purpose = $4',
      [message.teamId, message.channelId, message.ts, purpose],
    );
  }

  /** Forgets claims older than Slack's retry and edit horizon. */
  async prune(olderThanDays = 7): Promise<number> {
    const rows = await this.db.query(
      // A greeting is once per conversation for good, and a Messages-tab marker stays (see AgentViewConversations).
      `DELETE FROM handled_messages
       WHERE handled_at < now() - make_interval(days => $1) AND purpose NOT IN ('greeting', 'agent-view')
       RETURNING 1`,
      [olderThanDays],
    );
    return rows.length;
  }
}
