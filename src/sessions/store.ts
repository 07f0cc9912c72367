import type Keyv from 'keyv';
import { type Database, StoreError } from '../store/database.js';
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
/** Lifecycle rows read per Keyv lookup while looking for rows whose mapping is gone. */
const PRUNE_BATCH = 500;

interface LifecycleRow {
  key: string;
  last_active_at: Date | string;
}

/**
 * The durable thread → agent-session mapping and each conversation's lifecycle. Keyv (on @keyv/postgres)
 * holds the mappings, through its own API only. Our own table, `session_activity`, holds one row per
 * conversation under the mapping's Keyv key: its workspace, channel, thread, agent and starter, and its last
 * activity. Lifecycle queries (by workspace or channel, idle) select rows there and fetch their mappings from
 * Keyv. Every failure is a StoreError, never an empty answer.
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

  /** Records a new mapping; its lifecycle row first, so every mapping the idle sweep can see has one. */
  async create(session: ThreadSession): Promise<void> {
    const key = sessionKeyString(session, session.agentId);
    await this.guard('write', () =>
      this.db.query(
        `INSERT INTO session_activity (key, team_id, channel_id, thread_ts, agent_id, started_by, last_active_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (key) DO UPDATE SET started_by = EXCLUDED.started_by,
           last_active_at = GREATEST(session_activity.last_active_at, EXCLUDED.last_active_at)`,
        [
          key,
          session.teamId,
          session.channelId,
          session.threadTs,
          session.agentId,
          session.startedBy,
          new Date(session.createdAt).toISOString(),
        ],
      ),
    );
    await this.guard('write', () => this.keyv.set(key, session));
  }

  /** Forgets mappings (and their lifecycle rows). */
  async deleteAll(sessions: readonly ThreadSession[]): Promise<void> {
    if (sessions.length === 0) return;
    const keys = sessions.map((session) => sessionKeyString(session, session.agentId));
    await this.guard('delete', () => this.keyv.deleteMany(keys));
    await this.db.query('DELETE FROM session_activity WHERE key = ANY($1)', [keys]);
  }

  /**
   * Records that the thread was active now (for idle expiry and `/agent sessions`). A conversation ended
   * meanwhile (a reset while an answer was being recorded) has no row, and gets none.
   */
  async recordActivity(session: ThreadKey & { agentId: string }, at = new Date()): Promise<void> {
    await this.db.query(
      `UPDATE session_activity SET last_active_at = GREATEST(last_active_at, $2::timestamptz) WHERE key = $1`,
      [sessionKeyString(session, session.agentId), at.toISOString()],
    );
  }

  /** Mappings matching the filter (workspace, and optionally channel, thread and starter), oldest first. */
  async list(filter: SessionFilter): Promise<SessionWithActivity[]> {
    const sessions = await this.withMappings(
      await this.guard('read', () =>
        this.db.query<LifecycleRow>(
          `SELECT key, last_active_at FROM session_activity
           WHERE team_id = $1 AND ($2::text IS NULL OR channel_id = $2) AND ($3::text IS NULL OR thread_ts = $3)
             AND ($4::text IS NULL OR started_by = $4)`,
          [filter.teamId, filter.channelId ?? null, filter.threadTs ?? null, filter.startedBy ?? null],
        ),
      ),
    );
    return sessions.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /** Mappings with no activity since `before`, a batch at a time. */
  async listIdle(before: Date, limit = 500): Promise<SessionWithActivity[]> {
    const rows = await this.guard('read', () =>
      this.db.query<LifecycleRow>(
        'SELECT key, last_active_at FROM session_activity WHERE last_active_at < $1 ORDER BY last_active_at LIMIT $2',
        [before.toISOString(), limit],
      ),
    );
    return this.withMappings(rows);
  }

  /** Every mapping to a session of this agent (for the orphan check of `npm run sessions`). */
  async mappingsOf(agentId: string): Promise<SessionWithActivity[]> {
    return this.withMappings(
      await this.guard('read', () =>
        this.db.query<LifecycleRow>('SELECT key, last_active_at FROM session_activity WHERE agent_id = $1', [
          agentId,
        ]),
      ),
    );
  }

  /**
   * Lifecycle rows whose mapping is gone (its write failed after the row's, or its row's delete after the
   * mapping's). Only old ones: a conversation being created has its row a moment before its mapping (see
   * `create`), and the clean-up also runs at start-up, while the first messages are taken.
   */
  async pruneActivity(): Promise<number> {
    let pruned = 0;
    let after = '';
    for (;;) {
      const rows = await this.db.query<{ key: string }>(
        `SELECT key FROM session_activity WHERE last_active_at < now() - interval '10 minutes' AND key > $1
         ORDER BY key LIMIT $2`,
        [after, PRUNE_BATCH],
      );
      if (rows.length === 0) return pruned;
      const keys = rows.map((row) => row.key);
      const mappings = await this.guard('read', () => this.keyv.getMany(keys));
      const gone = keys.filter((_, index) => mappings[index] === undefined);
      if (gone.length > 0) {
        const deleted = await this.db.query(
          `DELETE FROM session_activity WHERE key = ANY($1) AND last_active_at < now() - interval '10 minutes'
           RETURNING 1`,
          [gone],
        );
        pruned += deleted.length;
      }
      after = keys.at(-1) ?? after;
    }
  }

  /** The rows' mappings, read through Keyv, with their last activity; rows without a mapping are left out. */
  private async withMappings(rows: readonly LifecycleRow[]): Promise<SessionWithActivity[]> {
    if (rows.length === 0) return [];
    const mappings = await this.guard('read', () => this.keyv.getMany(rows.map((row) => row.key)));
    return rows.flatMap((row, index) => {
      const session = mappings[index];
      return isThreadSession(session)
        ? [{ ...session, lastActiveAt: new Date(row.last_active_at).toISOString() }]
        : [];
    });
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

function isThreadSession(value: unknown): value is ThreadSession {
  const session = value as Partial<ThreadSession> | undefined;
  return (
    typeof session?.sessionId === 'string' &&
    typeof session.channelId === 'string' &&
    typeof session.agentId === 'string'
  );
}
