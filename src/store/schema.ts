import { type Database, type SqlQuery, StoreError } from './database.js';

/**
 * Keyv's table (thread → agent session), which @keyv/postgres creates on start and always qualifies with its
 * schema, public. Only Keyv reads and writes it; the one exception is the upgrade to version 5 below.
 */
export const SESSIONS_TABLE = 'thread_sessions';

/** A statement, or a step that needs to look before it acts. */
type MigrationStep = string | ((query: SqlQuery) => Promise<void>);

/**
 * Schema versions, applied in order. A database records the last one it has, so a replica that starts next
 * to live ones runs none of these (even `ADD COLUMN IF NOT EXISTS` takes an exclusive lock on a busy table);
 * Keyv's own `CREATE TABLE IF NOT EXISTS` on start is the only DDL then, and on an existing table it takes no
 * lock. Never change what a released version does to a database, add the next.
 */
const MIGRATIONS: readonly (readonly MigrationStep[])[] = [
  [
    // Version 1 also created Keyv's table; Keyv alone does now (a database that has it keeps it).
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
    // Each conversation's lifecycle row names its thread, agent and starter, so listing conversations by
    // workspace, channel, starter or idleness reads this table alone, never Keyv's. Expand only: replicas of
    // the previous release run beside this one during a rolling upgrade and write rows with only key and
    // last activity, under Keyv's row key, and join on it; so the key keeps that format, the new columns stay
    // nullable (this release fills a row's from its mapping, see SessionStore), and nothing is deleted.
    `ALTER TABLE session_activity ADD COLUMN team_id TEXT, ADD COLUMN channel_id TEXT, ADD COLUMN thread_ts TEXT,
       ADD COLUMN agent_id TEXT, ADD COLUMN started_by TEXT`,
    backfillConversations,
    'CREATE INDEX IF NOT EXISTS session_activity_thread ON session_activity (team_id, channel_id, thread_ts)',
    'CREATE INDEX IF NOT EXISTS session_activity_agent ON session_activity (agent_id)',
    // Rows a replica of the previous release wrote, still to be filled in from their mappings.
    'CREATE INDEX IF NOT EXISTS session_activity_unfilled ON session_activity (key) WHERE team_id IS NULL',
  ],
  [
    // Lasting marks on a conversation (a person greeted, an agent view session the bot opened), until now kept
    // as claims on invented message ts ('welcome', the thread's root): copied, and the claims kept, as replicas
    // of the previous release still read and write them during a rolling upgrade (ConversationMarks keeps
    // both in step). A whole conversation's mark has the empty thread.
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
  ],
  [
    // The org (Enterprise Grid) of a job's and a conversation's workspace, where Slack names one, so an org-wide
    // uninstall finds every workspace's waiting work and conversations. Nullable: single-workspace rows, and rows
    // of the previous release, have none.
    'ALTER TABLE inbox ADD COLUMN IF NOT EXISTS enterprise_id TEXT',
    `CREATE INDEX IF NOT EXISTS inbox_open_enterprise ON inbox (enterprise_id)
       WHERE enterprise_id IS NOT NULL AND state IN ('pending', 'running')`,
    'ALTER TABLE session_activity ADD COLUMN IF NOT EXISTS enterprise_id TEXT',
    `CREATE INDEX IF NOT EXISTS session_activity_enterprise ON session_activity (enterprise_id)
       WHERE enterprise_id IS NOT NULL`,
    // A workspace or org the app was removed from, recorded before anything is cleaned up and kept until every
    // step is done (retried like a session deletion), so a crash or an outage midway never forgets it.
    `CREATE TABLE IF NOT EXISTS workspace_removals (
       scope TEXT PRIMARY KEY,
       team_id TEXT,
       enterprise_id TEXT,
       is_enterprise_install BOOLEAN NOT NULL,
       reason TEXT NOT NULL,
       attempts INTEGER NOT NULL DEFAULT 0,
       next_attempt_at TIMESTAMPTZ NOT NULL DEFAULT now(),
       last_error TEXT,
       requested_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
  ],
  [
    // A finished removal is kept (done_at, and never due again, so a replica of the previous release, which
    // picks due rows, leaves it alone) until the app is installed there again: until then no event of that
    // workspace or org is admitted (see inbox/queue.ts ADMIT).
    'ALTER TABLE workspace_removals ADD COLUMN IF NOT EXISTS done_at TIMESTAMPTZ',
  ],
  [
    // The open jobs in the order they were recorded: the claim pass takes the oldest due ones, and the
    // heartbeat finds a process's running ones by id. Without it both walked the primary key through every
    // finished job kept until the retention horizon, a week of them, on every pass.
    `CREATE INDEX IF NOT EXISTS inbox_open_id ON inbox (id) WHERE state IN ('pending', 'running')`,
    // Room on each page for a row's next version: a job's row is written several times while it runs (sent,
    // leases, progress), and a new version that fits on its page and changes no indexed column adds no index
    // entries. Applies to pages written from now on; a replica of the previous release is not affected.
    'ALTER TABLE inbox SET (fillfactor = 70)',
  ],
  [
    // When the app was last installed in a workspace or org (multi-workspace mode), by removal scope: a removal
    // Slack sent before it concerns the installation it replaced (a late retry), and an org-wide removal does
    // not close a workspace of the org that has installed the app on its own since.
    'CREATE TABLE IF NOT EXISTS workspace_installs (scope TEXT PRIMARY KEY, installed_at TIMESTAMPTZ NOT NULL)',
  ],
  [
    // A thread's open jobs as they are when asked, not as the asking statement's snapshot saw them: a VOLATILE
    // function takes a fresh snapshot for each query it runs (PostgreSQL's manual, "Function Volatility
    // Categories"). The inbox's ADMIT asks it once it holds the thread's lock (see inbox/queue.ts).
    `CREATE OR REPLACE FUNCTION thread_open_jobs_now(thread TEXT) RETURNS BIGINT LANGUAGE sql VOLATILE
       AS $$ SELECT count(*) FROM inbox WHERE thread_key = $1 AND state IN ('pending', 'running') $$`,
  ],
];

/**
 * Copies thread, agent and starter of every mapping into its lifecycle row, creating the row where a mapping
 * had none (its last activity then is its creation, as it was listed before), so no conversation is lost on
 * the upgrade. Reads Keyv's rows as Keyv's serializer writes them (`{"value": {...}, "expires": ...}`); a
 * database where Keyv never ran has no such table and nothing to copy.
 */
async function backfillConversations(query: SqlQuery): Promise<void> {
  const [existing] = await query<{ found: string | null }>(
    `SELECT to_regclass('public.${SESSIONS_TABLE}')::text AS found`,
  );
  if (!existing?.found) return;
  await query(
    `INSERT INTO session_activity (key, last_active_at, team_id, channel_id, thread_ts, agent_id, started_by)
     SELECT k.key, COALESCE((m.session->>'createdAt')::timestamptz, now()), m.session->>'teamId',
            m.session->>'channelId', m.session->>'threadTs', m.session->>'agentId', m.session->>'startedBy'
       FROM public.${SESSIONS_TABLE} k, LATERAL (SELECT k.value::jsonb->'value' AS session) m
      WHERE k.key LIKE 'thread:%' AND m.session->>'teamId' IS NOT NULL AND m.session->>'channelId' IS NOT NULL
        AND m.session->>'threadTs' IS NOT NULL AND m.session->>'agentId' IS NOT NULL
        AND m.session->>'startedBy' IS NOT NULL
     ON CONFLICT (key) DO UPDATE SET team_id = EXCLUDED.team_id, channel_id = EXCLUDED.channel_id,
       thread_ts = EXCLUDED.thread_ts, agent_id = EXCLUDED.agent_id, started_by = EXCLUDED.started_by`,
  );
}

export const SCHEMA_VERSION = MIGRATIONS.length;

/**
 * Brings the schema up to SCHEMA_VERSION (`upTo`: an earlier one, to test an upgrade). Replicas starting together take turns on a transaction-scoped
 * advisory lock, taken before anything else so even the version table's creation never races.
 */
export async function migrate(db: Database, upTo = SCHEMA_VERSION): Promise<void> {
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
    for (let version = current + 1; version <= upTo; version++) {
      for (const step of MIGRATIONS[version - 1] ?? []) {
        if (typeof step === 'string') await query(step);
        else await step(query);
      }
      await query('INSERT INTO schema_version (version) VALUES ($1)', [version]);
    }
  });
}
