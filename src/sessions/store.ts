import type Keyv from 'keyv';
import { type Database, StoreError } from '../store/database.js';
import { startsWithPattern } from '../store/like.js';
import { SESSIONS_TABLE } from '../store/schema.js';
import { sessionKeyString, type ThreadKey } from './thread-key.js';

/** What the bot remembers about the agent session of one Slack thread; written once, when it is created. */
export interface ThreadSession extends ThreadKey {
  agentId: string;
  sessionId: string;
  /** Slack user who started the conversation (the one who may reset it). */
  startedBy: string;
  createdAt: string;
}

/** A mapping with its last activity (kept beside it, see SessionStore). */
export interface SessionWithActivity extends ThreadSession {
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
 * The durable thread → agent-session mapping. Keyv (on @keyv/postgres) holds the mappings and is the only
 * writer of their rows. Lifecycle queries (by workspace or channel, idle) read Keyv's table directly, by the
 * key prefix Keyv gives each row (`thread:<team>:<channel>:<thread>:<agent>`), and decode each value with
 * Keyv's own deserializer. Last activity lives in a table of our own, `session_activity`, under the same key.
 * Every failure is a StoreError, never an empty answer.
 */
export class SessionStore {
  constructor(
    private readonly keyv: Keyv<ThreadSession>,
    private readonly db: Database,
  ) {}

  static readonly namespace = NAMESPACE;

  async get(thread: ThreadKey, agentId: string): Promise<ThreadSession | undefined> {
    return this.guard('read', () => this.keyv.get(sessionKeyString(thread, agentId)));
  }

  /** Records a new mapping; its activity row first, so every mapping the idle sweep can see has one. */
  async create(session: ThreadSession): Promise<void> {
    await this.recordActivity(session, new Date(session.createdAt));
    await this.guard('write', () => this.keyv.set(sessionKeyString(session, session.agentId), session));
  }

  /** Forgets mappings (and their activity). */
  async deleteAll(sessions: readonly ThreadSession[]): Promise<void> {
    if (sessions.length === 0) return;
    const keys = sessions.map((session) => sessionKeyString(session, session.agentId));
    await this.guard('delete', () => this.keyv.deleteMany(keys));
    await this.db.query('DELETE FROM session_activity WHERE key = ANY($1)', [keys.map(rowKey)]);
  }

  /** Records that the thread was active now (for idle expiry and `/agent sessions`). */
  async recordActivity(session: ThreadKey & { agentId: string }, at = new Date()): Promise<void> {
    await this.db.query(
      `INSERT INTO session_activity (key, last_active_at) VALUES ($1, $2)
       ON CONFLICT (key) DO UPDATE SET last_active_at = GREATEST(session_activity.last_active_at, EXCLUDED.last_active_at)`,
      [rowKey(sessionKeyString(session, session.agentId)), at.toISOString()],
    );
  }

  /** Mappings matching the filter (workspace, and optionally channel, thread and starter), oldest first. */
  async list(filter: SessionFilter): Promise<SessionWithActivity[]> {
    const prefix = [filter.teamId, filter.channelId, filter.threadTs]
      .filter((part) => part !== undefined)
      .join(':');
    const sessions = await this.read(
      `SELECT k.value, a.last_active_at FROM public.${SESSIONS_TABLE} k
       LEFT JOIN session_activity a ON a.key = k.key
       WHERE k.key LIKE $1`,
      [startsWithPattern(`${NAMESPACE}:${prefix}:`)],
    );
    return sessions
      .filter((session) => filter.startedBy === undefined || session.startedBy === filter.startedBy)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /** Mappings with no activity since `before`, a batch at a time. */
  async listIdle(before: Date, limit = 500): Promise<SessionWithActivity[]> {
    return this.read(
      `SELECT k.value, a.last_active_at FROM session_activity a
       JOIN public.${SESSIONS_TABLE} k ON k.key = a.key
       WHERE a.last_active_at < $1 LIMIT $2`,
      [before.toISOString(), limit],
    );
  }

  /** Every mapping to a session of this agent (for the orphan check of `npm run sessions`). */
  async mappingsOf(agentId: string): Promise<SessionWithActivity[]> {
    const all = await this.read(
      `SELECT k.value, a.last_active_at FROM public.${SESSIONS_TABLE} k
       LEFT JOIN session_activity a ON a.key = k.key WHERE k.key LIKE $1`,
      [`${NAMESPACE}:%`],
    );
    return all.filter((session) => session.agentId === agentId);
  }

  /**
   * Activity rows whose mapping is gone (a reset while an answer was being recorded). Only old ones: a
   * conversation being created has its activity row a moment before its mapping (see `create`), and the
   * clean-up also runs at start-up, while the first messages are taken.
   */
  async pruneActivity(): Promise<number> {
    const rows = await this.db.query(
      `DELETE FROM session_activity a WHERE a.last_active_at < now() - interval '10 minutes' AND NOT EXISTS (
         SELECT 1 FROM public.${SESSIONS_TABLE} k WHERE k.key = a.key) RETURNING 1`,
    );
    return rows.length;
  }

  private async read(sql: string, params: unknown[]): Promise<SessionWithActivity[]> {
    const rows = await this.db.query<{ value: string; last_active_at: Date | string | null }>(sql, params);
    const sessions: SessionWithActivity[] = [];
    for (const row of rows) {
      const session = (await this.guard('read', () => this.keyv.deserializeData<ThreadSession>(row.value)))
        ?.value;
      if (!isThreadSession(session)) continue;
      const lastActive =
        row.last_active_at === null ? session.createdAt : new Date(row.last_active_at).toISOString();
      sessions.push({ ...session, lastActiveAt: lastActive });
    }
    return sessions;
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

/** The row key Keyv gives a mapping. */
function rowKey(key: string): string {
  return `${NAMESPACE}:${key}`;
}

function isThreadSession(value: unknown): value is ThreadSession {
  const session = value as Partial<ThreadSession> | undefined;
  return (
    typeof session?.sessionId === 'string' &&
    typeof session.channelId === 'string' &&
    typeof session.agentId === 'string'
  );
}
