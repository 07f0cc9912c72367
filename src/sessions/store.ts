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
  /** Only conversations whose session was made before then. */
  createdBefore?: Date;
}

const NAMESPACE = 'thread';
/** Lifecycle rows read per Keyv lookup while looking for rows whose mapping is gone or to fill in. */
const BATCH = 500;
/** A lifecycle row's columns, in the order `UPSERT_ROW` takes them. */
const UPSERT_ROW = `INSERT INTO session_activity
    (key, team_id, channel_id, thread_ts, agent_id, started_by, last_active_at, enterprise_id)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
  ON CONFLICT (key) DO UPDATE SET team_id = EXCLUDED.team_id, channel_id = EXCLUDED.channel_id,
    enterprise_id = EXCLUDED.enterprise_id,
    thread_ts = EXCLUDED.thread_ts, agent_id = EXCLUDED.agent_id, started_by = EXCLUDED.started_by,
    last_active_at = GREATEST(session_activity.last_active_at, EXCLUDED.last_active_at)`;

/**
 * The activity write of a conversation whose row is complete (`key`: its row key, `at`: an SQL timestamp,
 * `when`: a further condition), returning a row when it landed. Shared with the inbox, whose "sent" record
 * carries it: a prompt sent is activity. A row missing or left incomplete by the previous release is rebuilt
 * by `recordActivity`.
 */
export function activityUpdateSql(key: string, at: string, when = 'true'): string {
  return `UPDATE session_activity SET last_active_at = GREATEST(last_active_at, ${at})
    WHERE key = ${key} AND team_id IS NOT NULL AND ${when} RETURNING 1`;
}

/** The lifecycle row key of a thread's conversation with one agent (see activityUpdateSql). */
export function activityRowKey(session: ThreadKey & { agentId: string }): string {
  return rowKey(sessionKeyString(session, session.agentId));
}

interface LifecycleRow {
  key: string;
  last_active_at: Date | string;
}

/**
 * The durable thread → agent-session mapping and each conversation's lifecycle. Keyv (on @keyv/postgres)
 * holds the mappings, through its own API only. Our own table, `session_activity`, holds one row per
 * conversation under the row key Keyv gives its mapping (`thread:<team>:<channel>:<thread>:<agent>`): its
 * workspace, channel, thread, agent and starter, and its last activity. Lifecycle queries (by workspace or
 * channel, idle) select rows there and fetch their mappings from Keyv. A replica of the previous release
 * (during a rolling upgrade) writes rows with only key and activity: they are filled in from their mappings
 * before each query by workspace or agent, and a row is only ever deleted once its mapping is gone. Every
 * failure is a StoreError, never an empty answer.
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
    await this.guard('write', () => this.db.query(UPSERT_ROW, rowOf(session, new Date(session.createdAt))));
    await this.guard('write', () => this.keyv.set(sessionKeyString(session, session.agentId), session));
  }

  /** Forgets mappings (and their lifecycle rows). */
  async deleteAll(sessions: readonly ThreadSession[]): Promise<void> {
    if (sessions.length === 0) return;
    const keys = sessions.map((session) => sessionKeyString(session, session.agentId));
    await this.guard('delete', () => this.keyv.deleteMany(keys));
    await this.db.query('DELETE FROM session_activity WHERE key = ANY($1)', [keys.map(rowKey)]);
  }

  /**
   * Records that the thread was active now (for idle expiry and `/agent sessions`). A row that is missing or
   * was written by a replica of the previous release is rebuilt from the mapping; a conversation ended
   * meanwhile (a reset while an answer was being recorded) has no mapping, and gets no row.
   */
  async recordActivity(session: ThreadKey & { agentId: string }, at = new Date()): Promise<void> {
    const key = sessionKeyString(session, session.agentId);
    const updated = await this.db.query(activityUpdateSql('$1', '$2::timestamptz'), [
      rowKey(key),
      at.toISOString(),
    ]);
    if (updated.length > 0) return;
    const mapping = await this.guard('read', () => this.keyv.get(key));
    if (isThreadSession(mapping)) await this.db.query(UPSERT_ROW, rowOf(mapping, at));
  }

  /** Mappings matching the filter (workspace, and optionally channel, thread and starter), oldest first. */
  async list(filter: SessionFilter): Promise<SessionWithActivity[]> {
    await this.fillRows();
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
    const bound = filter.createdBefore?.getTime() ?? Number.POSITIVE_INFINITY;
    // A creation time that cannot be read counts as before (the conversation ends rather than outlive it).
    return sessions
      .filter((session) => !(Date.parse(session.createdAt) >= bound))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  /**
   * Every mapping of the org's workspaces (Enterprise Grid), for an org-wide uninstall, but those of a
   * workspace installed on its own after `removedAt` (workspace_installs, kept by inbox/removals.ts).
   */
  async listOfOrg(enterpriseId: string, removedAt?: Date): Promise<SessionWithActivity[]> {
    return this.withMappings(
      await this.guard('read', () =>
        this.db.query<LifecycleRow>(
          `SELECT key, last_active_at FROM session_activity a WHERE enterprise_id = $1
             AND NOT EXISTS (SELECT 1 FROM workspace_installs i
               WHERE i.scope = 'team:' || a.team_id AND i.installed_at > $2::timestamptz)`,
          [enterpriseId, removedAt?.toISOString() ?? 'infinity'],
        ),
      ),
    );
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
    await this.fillRows();
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
        [after, BATCH],
      );
      if (rows.length === 0) return pruned;
      const keys = rows.map((row) => row.key);
      const mappings = await this.guard('read', () => this.keyv.getMany(keys.map(keyvKey)));
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

  /**
   * Fills in the rows a replica of the previous release wrote (key and activity only) from their mappings,
   * so queries by workspace, channel, starter or agent find them. Rows without a mapping stay as they are.
   */
  private async fillRows(): Promise<void> {
    let after = '';
    for (;;) {
      const rows = await this.guard('read', () =>
        this.db.query<LifecycleRow>(
          `SELECT key, last_active_at FROM session_activity WHERE team_id IS NULL AND key > $1
           ORDER BY key LIMIT $2`,
          [after, BATCH],
        ),
      );
      if (rows.length === 0) return;
      const mappings = await this.guard('read', () => this.keyv.getMany(rows.map((row) => keyvKey(row.key))));
      for (const [index, row] of rows.entries()) {
        const mapping = mappings[index];
        if (isThreadSession(mapping))
          await this.guard('write', () =>
            this.db.query(UPSERT_ROW, rowOf(mapping, new Date(row.last_active_at))),
          );
      }
      after = rows.at(-1)?.key ?? after;
    }
  }

  /** The rows' mappings, read through Keyv, with their last activity; rows without a mapping are left out. */
  private async withMappings(rows: readonly LifecycleRow[]): Promise<SessionWithActivity[]> {
    if (rows.length === 0) return [];
    const mappings = await this.guard('read', () => this.keyv.getMany(rows.map((row) => keyvKey(row.key))));
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

/** The lifecycle row's key: the row key Keyv gives the mapping, which the previous release reads too. */
function rowKey(key: string): string {
  return `${NAMESPACE}:${key}`;
}

/** The mapping's Keyv key, from its lifecycle row's. */
function keyvKey(key: string): string {
  return key.slice(NAMESPACE.length + 1);
}

/** A mapping's lifecycle row, as `UPSERT_ROW` takes it. */
function rowOf(session: ThreadSession, lastActiveAt: Date): unknown[] {
  return [
    rowKey(sessionKeyString(session, session.agentId)),
    session.teamId,
    session.channelId,
    session.threadTs,
    session.agentId,
    // A mapping written before starters were recorded still lists, as nobody's.
    session.startedBy ?? '',
    lastActiveAt.toISOString(),
    session.enterpriseId ?? null,
  ];
}

function isThreadSession(value: unknown): value is ThreadSession {
  const session = value as Partial<ThreadSession> | undefined;
  return (
    typeof session?.sessionId === 'string' &&
    typeof session.channelId === 'string' &&
    typeof session.agentId === 'string'
  );
}
