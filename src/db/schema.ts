import { type SqlDatabase, StoreError } from './database.js';

/** Keyv's table; @keyv/postgres always qualifies it with its schema (public), so we do too. */
export const SESSIONS_TABLE = 'thread_sessions';
export const SESSIONS_TABLE_QUALIFIED = `public.${SESSIONS_TABLE}`;

/**
 * Schema versions, applied in order. A database records the last one it has, so a replica that
 * starts next to live ones runs no DDL at all: even `ADD COLUMN IF NOT EXISTS` would take an
 * exclusive lock on a busy table and can deadlock with the other replicas' inserts.
 */
const MIGRATIONS: readonly (readonly string[])[] = [
  [
    `CREATE TABLE IF NOT EXISTS ${SESSIONS_TABLE_QUALIFIED} (key VARCHAR(255) PRIMARY KEY, value TEXT)`,
    `CREATE TABLE IF NOT EXISTS handled_messages (
       team_id TEXT NOT NULL,
       channel_id TEXT NOT NULL,
       message_ts TEXT NOT NULL,
       purpose TEXT NOT NULL,
       handled_at TIMESTAMPTZ NOT NULL DEFAULT now(),
       PRIMARY KEY (team_id, channel_id, message_ts, purpose))`,
    `CREATE INDEX IF NOT EXISTS handled_messages_age ON handled_messages (handled_at)`,
    `CREATE TABLE IF NOT EXISTS pending_session_deletions (
       agent_id TEXT NOT NULL,
       session_id TEXT NOT NULL,
       reason TEXT NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
       last_error TEXT,
       created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
       PRIMARY KEY (agent_id, session_id))`,
    // The durable inbox: every Slack message for the agent is recorded here before Slack is acknowledged.
    `CREATE TABLE IF NOT EXISTS inbox (
       id BIGSERIAL PRIMARY KEY,
       thread_key TEXT NOT NULL,
       dedupe_key TEXT NOT NULL UNIQUE,
       kind TEXT NOT NULL,
       payload TEXT NOT NULL,
       state TEXT NOT NULL DEFAULT 'pending',
       owner TEXT,
       lease_until TIMESTAMPTZ,
       attempts INTEGER NOT NULL DEFAULT 0,
       session_id TEXT,
       sent_at TIMESTAMPTZ,
       agent_reply TEXT,
       parts_posted INTEGER NOT NULL DEFAULT 0,
       slow_notice_ts TEXT,
       user_id TEXT,
       queued BOOLEAN,
       created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
       finished_at TIMESTAMPTZ)`,
    `CREATE INDEX IF NOT EXISTS inbox_open ON inbox (thread_key, id) WHERE state IN ('pending', 'running')`,
    // Per-user rate limiting counts a user's recent messages.
    'CREATE INDEX IF NOT EXISTS inbox_user_recent ON inbox (user_id, created_at)',
    `CREATE INDEX IF NOT EXISTS inbox_finished ON inbox (finished_at) WHERE finished_at IS NOT NULL`,
    // One row per thread with work: its lease makes sure only one replica works on a thread at a time.
    `CREATE TABLE IF NOT EXISTS inbox_threads (
       thread_key TEXT PRIMARY KEY,
       owner TEXT,
       lease_until TIMESTAMPTZ)`,
  ],
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings the schema up to SCHEMA_VERSION. Replicas starting together take turns on a
 * transaction-scoped advisory lock, taken before anything else so even the version table's
 * creation never races.
 */
export async function migrate(db: SqlDatabase): Promise<void> {
  await db.transaction(async (query) => {
    await query(`SELECT pg_advisory_xact_lock(hashtext('slack-agent-bridge:migrate'))`);
    await query('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
    const [row] = await query<{ version: number }>('SELECT max(version) AS version FROM schema_version');
    const current = row?.version ?? 0;
    if (current > SCHEMA_VERSION) {
      throw new StoreError(
        `the store's schema is version ${current}, newer than this bot's ${SCHEMA_VERSION}; upgrade the bot`,
      );
    }
    for (let version = current + 1; version <= SCHEMA_VERSION; version++) {
      for (const statement of MIGRATIONS[version - 1] ?? []) await query(statement);
      await query('INSERT INTO schema_version (version) VALUES ($1)', [version]);
    }
  });
}
