import { type Database, StoreError } from './database.js';

/** Keyv's table (thread → agent session); @keyv/postgres always qualifies it with its schema, public. */
export const SESSIONS_TABLE = 'thread_sessions';

/**
 * Schema versions, applied in order. A database records the last one it has, so a replica that starts next
 * to live ones runs no DDL at all (even `ADD COLUMN IF NOT EXISTS` takes an exclusive lock on a busy table).
 * Each version is a list of statements; never edit a released one, add the next.
 */
const MIGRATIONS: readonly (readonly string[])[] = [
  [
    `CREATE TABLE IF NOT EXISTS public.${SESSIONS_TABLE} (key VARCHAR(255) PRIMARY KEY, value TEXT)`,
    `CREATE TABLE IF NOT EXISTS handled_messages (
       team_id TEXT NOT NULL,
       channel_id TEXT NOT NULL,
       message_ts TEXT NOT NULL,
       purpose TEXT NOT NULL,
       handled_at TIMESTAMPTZ NOT NULL DEFAULT now(),
       PRIMARY KEY (team_id, channel_id, message_ts, purpose))`,
    'CREATE INDEX IF NOT EXISTS handled_messages_age ON handled_messages (handled_at)',
    `CREATE TABLE IF NOT EXISTS pending_session_deletions (
       agent_id TEXT NOT NULL,
       session_id TEXT NOT NULL,
       reason TEXT NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
       last_error TEXT,
       created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
       PRIMARY KEY (agent_id, session_id))`,
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
    'CREATE INDEX IF NOT EXISTS inbox_user_recent ON inbox (user_id, created_at)',
    'CREATE INDEX IF NOT EXISTS inbox_finished ON inbox (finished_at) WHERE finished_at IS NOT NULL',
    `CREATE TABLE IF NOT EXISTS inbox_threads (thread_key TEXT PRIMARY KEY, owner TEXT, lease_until TIMESTAMPTZ)`,
  ],
  [
    // A thread's turn is now its oldest open job (locked while claimed), so the per-thread lease table goes.
    'DROP TABLE IF EXISTS inbox_threads',
    // When a job may run next (a deferred job waits for Slack to come back), and whether its author stopped it.
    'ALTER TABLE inbox ADD COLUMN run_after TIMESTAMPTZ NOT NULL DEFAULT now()',
    'ALTER TABLE inbox ADD COLUMN stop_requested BOOLEAN NOT NULL DEFAULT false',
    'ALTER TABLE inbox ADD COLUMN slack_failing_since TIMESTAMPTZ',
    // The stored output is a notice (an agent failure) rather than the agent's answer.
    'ALTER TABLE inbox ADD COLUMN reply_is_notice BOOLEAN NOT NULL DEFAULT false',
    `CREATE INDEX IF NOT EXISTS inbox_due ON inbox (run_after) WHERE state IN ('pending', 'running')`,
    'DROP INDEX IF EXISTS inbox_user_recent',
    // Requests per person (prompts, commands, the reset shortcut, Send again), for the per-user limit across replicas.
    `CREATE TABLE IF NOT EXISTS user_requests (user_id TEXT NOT NULL, at TIMESTAMPTZ NOT NULL DEFAULT now())`,
    'CREATE INDEX IF NOT EXISTS user_requests_recent ON user_requests (user_id, at)',
    // Last activity of each thread's session, kept beside Keyv's rows so only Keyv writes those.
    `CREATE TABLE IF NOT EXISTS session_activity (
       key VARCHAR(255) PRIMARY KEY,
       last_active_at TIMESTAMPTZ NOT NULL)`,
    'CREATE INDEX IF NOT EXISTS session_activity_age ON session_activity (last_active_at)',
    // The channel each person views while talking in the Messages tab, and the one the agent was told about.
    `CREATE TABLE IF NOT EXISTS viewing_context (
       team_id TEXT NOT NULL,
       viewer TEXT NOT NULL,
       channel_id TEXT,
       told_channel_id TEXT,
       updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
       PRIMARY KEY (team_id, viewer))`,
  ],
  [
    // Whether the bot has (had) work in a thread, asked of every thread reply in every channel before the ack,
    // and whether a job has earlier work in its thread: finished jobs count too, so the open-jobs index cannot
    // answer it, and without this a week of finished jobs is scanned in full.
    'CREATE INDEX IF NOT EXISTS inbox_thread ON inbox (thread_key, id)',
  ],
  [
    // Who sent a job's prompt, and a handshake with that process after a takeover: the new owner asks
    // (`sender_pinged_at`), the sender's heartbeat answers (`sender_seen_at`); unanswered, its answer is
    // given up for good (`answer_lost`), so it is never posted after the thread was told it is lost.
    'ALTER TABLE inbox ADD COLUMN sent_by TEXT',
    'ALTER TABLE inbox ADD COLUMN sender_pinged_at TIMESTAMPTZ',
    'ALTER TABLE inbox ADD COLUMN sender_seen_at TIMESTAMPTZ',
    'ALTER TABLE inbox ADD COLUMN answer_lost BOOLEAN NOT NULL DEFAULT false',
  ],
  [
    // Lasting marks on a conversation (a person greeted, an agent view session the bot opened), until now kept
    // as claims on invented message ts ('welcome', the thread's root): moved, not dropped. A whole
    // conversation's mark has the empty thread.
    `CREATE TABLE IF NOT EXISTS conversation_marks (
       team_id TEXT NOT NULL,
       channel_id TEXT NOT NULL,
       thread_ts TEXT NOT NULL,
       mark TEXT NOT NULL,
       set_at TIMESTAMPTZ NOT NULL DEFAULT now(),
       PRIMARY KEY (team_id, channel_id, thread_ts, mark))`,
    `INSERT INTO conversation_marks (team_id, channel_id, thread_ts, mark, set_at)
     SELECT team_id, channel_id, '', 'greeted', handled_at FROM handled_messages WHERE purpose = 'greeting'
     ON CONFLICT DO NOTHING`,
    `INSERT INTO conversation_marks (team_id, channel_id, thread_ts, mark, set_at)
     SELECT team_id, channel_id, message_ts, 'agent-view-opened', handled_at FROM handled_messages
     WHERE purpose = 'agent-session'
     ON CONFLICT DO NOTHING`,
    `DELETE FROM handled_messages WHERE purpose IN ('greeting', 'agent-session')`,
  ],
];

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings the schema up to SCHEMA_VERSION. Replicas starting together take turns on a transaction-scoped
 * advisory lock, taken before anything else so even the version table's creation never races.
 */
export async function migrate(db: Database): Promise<void> {
  await db.transaction(async (query) => {
    await query(`SELECT pg_advisory_xact_lock(hashtext('slack-agent-bridge:migrate'))`);
    // DDL may wait for locks on a busy database; the usual statement bound is for the hot path.
    if (db.kind === 'postgres') await query('SET LOCAL statement_timeout = 0');
    await query('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
    const [row] = await query<{ version: number | null }>(
      'SELECT max(version) AS version FROM schema_version',
    );
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
