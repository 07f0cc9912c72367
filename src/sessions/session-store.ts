import type Keyv from 'keyv';
import type { SqlDatabase } from '../db/database.js';
import { StoreError } from '../db/database.js';
import { SESSIONS_TABLE_QUALIFIED as SESSIONS_TABLE } from '../db/schema.js';
import { sessionKeyString, type ThreadKey } from './thread-key.js';

/** What the bot remembers about the agent session of one Slack thread. */
export interface ThreadSession extends ThreadKey {
  agentId: string;
  sessionId: string;
  /** Slack user who started the conversation. */
  startedBy: string;
  createdAt: string;
  lastActiveAt: string;
}

/** Which mappings a lifecycle operation applies to. */
export interface SessionFilter {
  teamId: string;
  channelId?: string;
  threadTs?: string;
  startedBy?: string;
}

const NAMESPACE = 'thread';

/**
 * Durable thread → agent-session mapping. Lookups go through Keyv; the lifecycle queries (by channel,
 * by workspace, idle) read the same table with SQL, relying on Keyv's row format `{"value": …}`.
 * Every failure is a StoreError, never an empty answer.
 */
export class SessionStore {
  constructor(
    private readonly keyv: Keyv<ThreadSession>,
    private readonly db: SqlDatabase,
  ) {}

  static namespace = NAMESPACE;

  /** The row key of a thread's mapping, for statements that read it along with other work. */
  static rowKey(thread: ThreadKey, agentId: string): string {
    return `${NAMESPACE}:${sessionKeyString(thread, agentId)}`;
  }

  /** A mapping as read straight from its row (see rowKey); undefined if unreadable. */
  static fromRow(raw: string): ThreadSession | undefined {
    return parseSession(raw);
  }

  async get(thread: ThreadKey, agentId: string): Promise<ThreadSession | undefined> {
    return this.guard('read', () => this.keyv.get(sessionKeyString(thread, agentId)));
  }

  async set(session: ThreadSession): Promise<void> {
    await this.guard('write', () => this.keyv.set(sessionKeyString(session, session.agentId), session));
  }

  /** Forgets several mappings in one go. */
  async deleteAll(sessions: readonly ThreadSession[]): Promise<void> {
    if (sessions.length === 0) return;
    const keys = sessions.map((session) => sessionKeyString(session, session.agentId));
    await this.guard('delete', () => this.keyv.deleteMany(keys));
  }

  async delete(thread: ThreadKey, agentId: string): Promise<void> {
    await this.guard('delete', () => this.keyv.delete(sessionKeyString(thread, agentId)));
  }

  /**
   * Records activity, only if the thread still maps to this very session: a reset that happened while
   * the answer was being computed must not be undone.
   */
  async touch(session: ThreadSession, at = new Date()): Promise<void> {
    const updated: ThreadSession = { ...session, lastActiveAt: at.toISOString() };
    // Activity only feeds idle expiry, which works in days: a checkpoint is enough.
    await this.db.checkpoint(
      `UPDATE ${SESSIONS_TABLE} SET value = $1
       WHERE key = $2 AND (value::jsonb -> 'value' ->> 'sessionId') = $3`,
      [JSON.stringify({ value: updated }), SessionStore.rowKey(session, session.agentId), session.sessionId],
    );
  }

  /** Mappings matching the filter (workspace, and optionally channel, thread and starter). */
  async list(filter: SessionFilter): Promise<ThreadSession[]> {
    const prefix = [filter.teamId, filter.channelId, filter.threadTs]
      .filter((part) => part !== undefined)
      .join(':');
    const rows = await this.db.query<{ value: string }>(
      `SELECT value FROM ${SESSIONS_TABLE} WHERE key LIKE $1 ORDER BY key`,
      [`${NAMESPACE}:${escapeLike(prefix)}:%`],
    );
    return rows
      .map((row) => parseSession(row.value))
      .filter((session): session is ThreadSession => session !== undefined)
      .filter((session) => filter.startedBy === undefined || session.startedBy === filter.startedBy);
  }

  /** Mappings with no activity since `before`. */
  async listIdle(before: Date, limit = 500): Promise<ThreadSession[]> {
    const rows = await this.db.query<{ value: string }>(
      `SELECT value FROM ${SESSIONS_TABLE}
       WHERE key LIKE $1 AND (value::jsonb -> 'value' ->> 'lastActiveAt')::timestamptz < $2
       LIMIT $3`,
      [`${NAMESPACE}:%`, before.toISOString(), limit],
    );
    return rows.map((row) => parseSession(row.value)).filter((s): s is ThreadSession => s !== undefined);
  }

  /** Every mapping to a session of this agent (for the orphan check). */
  async mappingsOf(agentId: string): Promise<ThreadSession[]> {
    const rows = await this.db.query<{ value: string }>(
      `SELECT value FROM ${SESSIONS_TABLE}
       WHERE key LIKE $1 AND (value::jsonb -> 'value' ->> 'agentId') = $2`,
      [`${NAMESPACE}:%`, agentId],
    );
    return rows.map((row) => parseSession(row.value)).filter((s): s is ThreadSession => s !== undefined);
  }

  private async guard<T>(action: string, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (error instanceof StoreError) throw error;
      throw new StoreError(
        `session store ${action} failed: ${error instanceof Error ? error.message : String(error)}`,
        {
          cause: error,
        },
      );
    }
  }
}

function parseSession(raw: string): ThreadSession | undefined {
  try {
    const parsed = JSON.parse(raw) as { value?: ThreadSession };
    const session = parsed.value;
    return session && typeof session.sessionId === 'string' && typeof session.channelId === 'string'
      ? session
      : undefined;
  } catch {
    return undefined;
  }
}

function escapeLike(value: string): string {
  return value.replace(/[\\%_]/g, '\\$&');
}
