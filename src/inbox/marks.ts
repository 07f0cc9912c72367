import type { OpenedSessions, SessionThread } from '../slack-out/agent-features.js';
import type { Database } from '../store/database.js';

/** A lasting fact about a conversation, as opposed to a one-time claim on a message (see claims.ts). */
export type ConversationMark =
  /** The person was greeted in this Messages-tab conversation: set once, for good. */
  | 'greeted'
  /** The bot opened this thread's agent view session (status, stop button): set until it is closed. */
  | 'agent-view-opened';

/** A conversation (a whole channel or DM), or one thread of it. */
export interface MarkedConversation {
  teamId: string;
  channelId: string;
  threadTs?: string;
}

/**
 * Marks on conversations, shared by every replica and kept across restarts: set, looked up and cleared, never
 * expired (each kind says how long it lasts). The previous release kept greetings and opened agent view
 * sessions as claims in handled_messages, and its replicas keep setting and releasing them there during a
 * rolling upgrade; so those marks are written to both places and cleared from both, and the claim decides
 * whether one is set (see `legacyClaimOf`): neither release greets twice or leaves an agent view session open.
 */
export class ConversationMarks {
  constructor(private readonly db: Database) {}

  /**
   * Sets the mark; true when it was not set before (the first of several replicas to set it). One statement,
   * both rows or neither: it runs for every answer, so it costs no transaction of its own.
   */
  async set(conversation: MarkedConversation, mark: ConversationMark): Promise<boolean> {
    const legacy = legacyClaimOf(conversation, mark);
    const setMark = `INSERT INTO conversation_marks (team_id, channel_id, thread_ts, mark) VALUES ($1, $2, $3, $4)
       ON CONFLICT DO NOTHING RETURNING 1`;
    if (!legacy) return (await this.db.query(setMark, [...keyOf(conversation), mark])).length === 1;
    const [row] = await this.db.query<{ claimed: boolean }>(
      `WITH marked AS (${setMark}),
       claimed AS (INSERT INTO handled_messages (team_id, channel_id, message_ts, purpose) VALUES ($5, $6, $7, $8)
         ON CONFLICT DO NOTHING RETURNING 1)
       SELECT EXISTS (SELECT 1 FROM claimed) AS claimed`,
      [...keyOf(conversation), mark, ...legacy],
    );
    return row?.claimed === true;
  }

  async has(conversation: MarkedConversation, mark: ConversationMark): Promise<boolean> {
    const legacy = legacyClaimOf(conversation, mark);
    const rows = legacy
      ? await this.db.query(
          'SELECT 1 FROM handled_messages WHERE team_id = $1 AND channel_id = $2 AND message_ts = $3 AND purpose = $4',
          legacy,
        )
      : await this.db.query(
          'SELECT 1 FROM conversation_marks WHERE team_id = $1 AND channel_id = $2 AND thread_ts = $3 AND mark = $4',
          [...keyOf(conversation), mark],
        );
    return rows.length > 0;
  }

  async clear(conversation: MarkedConversation, mark: ConversationMark): Promise<void> {
    const legacy = legacyClaimOf(conversation, mark);
    await this.db.transaction(async (query) => {
      await query(
        'DELETE FROM conversation_marks WHERE team_id = $1 AND channel_id = $2 AND thread_ts = $3 AND mark = $4',
        [...keyOf(conversation), mark],
      );
      if (legacy)
        await query(
          'DELETE FROM handled_messages WHERE team_id = $1 AND channel_id = $2 AND message_ts = $3 AND purpose = $4',
          legacy,
        );
    });
  }
}

/** The table's key: a whole conversation has the empty thread, as no Slack ts is empty. */
function keyOf(conversation: MarkedConversation): [string, string, string] {
  return [conversation.teamId, conversation.channelId, conversation.threadTs ?? ''];
}

/**
 * The claim the previous release kept for a mark (team, channel, message ts, purpose): a greeting on the
 * invented ts `welcome`, an opened agent view session on the thread's root. Kept, and deciding, until a
 * later schema version retires it once no replica of that release runs; see LEGACY_MARK_PURPOSES in
 * claims.ts.
 */
function legacyClaimOf(
  conversation: MarkedConversation,
  mark: ConversationMark,
): [string, string, string, string] | undefined {
  if (mark === 'greeted' && conversation.threadTs === undefined)
    return [conversation.teamId, conversation.channelId, 'welcome', 'greeting'];
  if (mark === 'agent-view-opened' && conversation.threadTs !== undefined)
    return [conversation.teamId, conversation.channelId, conversation.threadTs, 'agent-session'];
  return undefined;
}

/** The threads whose agent view session the bot opened, as marks shared by every replica. */
export function openedSessionsIn(marks: ConversationMarks): OpenedSessions {
  return {
    add: async (thread: SessionThread) => void (await marks.set(thread, 'agent-view-opened')),
    has: (thread) => marks.has(thread, 'agent-view-opened'),
    remove: (thread) => marks.clear(thread, 'agent-view-opened'),
  };
}
