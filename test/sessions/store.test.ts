import type Keyv from 'keyv';
import { afterAll, describe, expect, it } from 'vitest';
import { SessionStore, type SessionWithActivity, type ThreadSession } from '../../src/sessions/store.js';
import { type Database, openDatabase, StoreError } from '../../src/store/database.js';
import { createSessionKeyv } from '../../src/store/keyv.js';
import { migrate, SESSIONS_TABLE } from '../../src/store/schema.js';
import { embeddedStorePerSuite, freshDataDir, type TempDataDir } from '../helpers/embedded-store.js';
import {
  createTestDatabase,
  postgresStorePerSuite,
  shouldRunPostgresTests,
  type TestDatabase,
} from '../helpers/postgres.js';

const runPostgres = await shouldRunPostgresTests();

const thread = { teamId: 'T1', channelId: 'C1', threadTs: '1700000000.000100' };

function sessionFixture(sessionId: string, where: Partial<ThreadSession> = {}): ThreadSession {
  return {
    ...thread,
    agentId: 'agent-1',
    sessionId,
    startedBy: 'U1',
    createdAt: new Date().toISOString(),
    ...where,
  };
}

function storeOn(db: Database): SessionStore {
  return new SessionStore(createSessionKeyv<ThreadSession>(db, SessionStore.namespace), db);
}

const ids = (sessions: SessionWithActivity[]) => sessions.map((session) => session.sessionId).sort();

/**
 * A replica of the previous release (schema version 4), still running during a rolling upgrade: the SQL its
 * SessionStore ran, copied as it was, with its mappings read and written through Keyv as it did.
 */
function previousReleaseReplica(db: Database, keyv: Keyv<ThreadSession>) {
  const rowKey = (session: ThreadSession) =>
    `thread:${session.teamId}:${session.channelId}:${session.threadTs}:${session.agentId}`;
  const read = async (sql: string, params: unknown[]) => {
    const rows = await db.query<{ value: string; last_active_at: Date | string | null }>(sql, params);
    const sessions: SessionWithActivity[] = [];
    for (const row of rows) {
      const session = (await keyv.deserializeData<ThreadSession>(row.value))?.value;
      if (!session) continue;
      const lastActiveAt =
        row.last_active_at === null ? session.createdAt : new Date(row.last_active_at).toISOString();
      sessions.push({ ...session, lastActiveAt });
    }
    return sessions;
  };
  const replica = {
    async recordActivity(session: ThreadSession, at = new Date()) {
      await db.query(
        `INSERT INTO session_activity (key, last_active_at) VALUES ($1, $2)
         ON CONFLICT (key) DO UPDATE SET last_active_at = GREATEST(session_activity.last_active_at, EXCLUDED.last_active_at)`,
        [rowKey(session), at.toISOString()],
      );
    },
    async create(session: ThreadSession) {
      await replica.recordActivity(session, new Date(session.createdAt));
      await keyv.set(rowKey(session).slice('thread:'.length), session);
    },
    async deleteAll(sessions: ThreadSession[]) {
      await keyv.deleteMany(sessions.map((session) => rowKey(session).slice('thread:'.length)));
      await db.query('DELETE FROM session_activity WHERE key = ANY($1)', [sessions.map(rowKey)]);
    },
    /** Its list, by the key prefix (workspace, channel, thread). */
    list: (prefix: string) =>
      read(
        `SELECT k.value, a.last_active_at FROM public.${SESSIONS_TABLE} k
         LEFT JOIN session_activity a ON a.key = k.key WHERE k.key LIKE $1`,
        [`thread:${prefix}:%`],
      ),
    listIdle: (before: Date, limit = 500) =>
      read(
        `SELECT k.value, a.last_active_at FROM session_activity a
         JOIN public.${SESSIONS_TABLE} k ON k.key = a.key
         WHERE a.last_active_at < $1 LIMIT $2`,
        [before.toISOString(), limit],
      ),
    async pruneActivity() {
      const rows = await db.query(
        `DELETE FROM session_activity a WHERE a.last_active_at < now() - interval '10 minutes' AND NOT EXISTS (
           SELECT 1 FROM public.${SESSIONS_TABLE} k WHERE k.key = a.key) RETURNING 1`,
      );
      return rows.length;
    },
  };
  return replica;
}

/** A store of its own, for a test that closes or reopens it or starts from a schema not yet migrated. */
type OpenOwnStore = (options?: {
  schema?: 'current' | 'none';
}) => Promise<{ db: Database; reopen: () => Promise<Database> }>;

/**
 * The contract, on one store shared by the tests that only read and write it (emptied before each,
 * `storePerSuite`) and a store of their own for the others.
 */
function storeContract(name: string, storePerSuite: () => { readonly db: Database }, open: OpenOwnStore) {
  describe(name, () => {
    const shared = storePerSuite();

    it('maps a thread to its session durably, across a reopen', async () => {
      const { db, reopen } = await open();
      await migrate(db);
      const store = storeOn(db);
      expect(await store.get(thread, 'agent-1')).toBeUndefined();
      await store.create(sessionFixture('s-1'));
      await store.create(sessionFixture('s-2', { threadTs: '1700000000.000200' }));
      await db.close();

      const again = await reopen();
      const reopened = storeOn(again);
      expect((await reopened.get(thread, 'agent-1'))?.sessionId).toBe('s-1');
      expect(await reopened.get(thread, 'agent-2')).toBeUndefined(); // keyed by agent too
      expect((await reopened.get({ ...thread, threadTs: '1700000000.000200' }, 'agent-1'))?.sessionId).toBe(
        's-2',
      );
      await reopened.deleteAll([sessionFixture('s-1')]);
      expect(await reopened.get(thread, 'agent-1')).toBeUndefined();
      await again.close();
    });

    it('finds mappings by channel, thread, starter and idleness; activity never rewrites a mapping', async () => {
      const { db } = shared;
      const store = storeOn(db);
      const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
      await store.create(sessionFixture('s-a', { threadTs: '1.1', startedBy: 'U1' }));
      await store.create(sessionFixture('s-b', { threadTs: '1.2', startedBy: 'U2', createdAt: hourAgo }));
      await store.create(sessionFixture('s-c', { channelId: 'C2', threadTs: '1.1' }));
      await store.create(sessionFixture('s-d', { teamId: 'T2', threadTs: '1.1' }));
      expect(ids(await store.list({ teamId: 'T1', channelId: 'C1' }))).toEqual(['s-a', 's-b']);
      expect(ids(await store.list({ teamId: 'T1', channelId: 'C1', startedBy: 'U2' }))).toEqual(['s-b']);
      expect(ids(await store.list({ teamId: 'T1', channelId: 'C1', threadTs: '1.1' }))).toEqual(['s-a']);
      expect(ids(await store.list({ teamId: 'T1' }))).toEqual(['s-a', 's-b', 's-c']);
      expect(ids(await store.listIdle(new Date(Date.now() - 60_000)))).toEqual(['s-b']);
      expect(ids(await store.mappingsOf('agent-1'))).toEqual(['s-a', 's-b', 's-c', 's-d']);

      // Activity lives beside Keyv's row: the row stays exactly as Keyv's serializer wrote it.
      const key = 'thread:T1:C1:1.2:agent-1';
      const [before] = await db.query<{ value: string }>(
        `SELECT value FROM ${SESSIONS_TABLE} WHERE key = $1`,
        [key],
      );
      await store.recordActivity(
        sessionFixture('s-b', { threadTs: '1.2' }),
        new Date('2030-01-01T00:00:00Z'),
      );
      const [after] = await db.query<{ value: string }>(
        `SELECT value FROM ${SESSIONS_TABLE} WHERE key = $1`,
        [key],
      );
      expect(after?.value).toBe(before?.value);
      const [listed] = await store.list({ teamId: 'T1', channelId: 'C1', threadTs: '1.2' });
      expect(listed?.lastActiveAt).toBe('2030-01-01T00:00:00.000Z');
      expect(ids(await store.listIdle(new Date(Date.now() - 60_000)))).toEqual([]);

      // Activity recorded for a thread reset meanwhile revives nothing and leaves no row.
      await store.deleteAll([sessionFixture('s-a', { threadTs: '1.1' })]);
      await store.recordActivity(sessionFixture('s-a', { threadTs: '1.1' }));
      expect(await store.get({ ...thread, threadTs: '1.1' }, 'agent-1')).toBeUndefined();
      expect(ids(await store.list({ teamId: 'T1', channelId: 'C1' }))).toEqual(['s-b']);
    });

    it('prunes a lifecycle row whose mapping is gone once it is old, never one being created', async () => {
      const { db } = shared;
      const keyv = createSessionKeyv<ThreadSession>(db, SessionStore.namespace);
      const store = new SessionStore(keyv, db);
      await store.create(sessionFixture('s-kept', { threadTs: '2.1' }));
      await store.create(sessionFixture('s-gone', { threadTs: '2.2' }));
      // As when the mapping's write failed after its row's: a row being created looks just like this.
      await keyv.delete('T1:C1:2.2:agent-1');
      expect(ids(await store.list({ teamId: 'T1' }))).toEqual(['s-kept']);
      expect(await store.pruneActivity()).toBe(0);
      await db.query(`UPDATE session_activity SET last_active_at = now() - interval '1 hour'`);
      expect(await store.pruneActivity()).toBe(1);
      expect(ids(await store.list({ teamId: 'T1' }))).toEqual(['s-kept']);
      expect(await db.query('SELECT key FROM session_activity')).toEqual([
        { key: 'thread:T1:C1:2.1:agent-1' },
      ]);
    });

    it('keeps every conversation across the upgrade to its own lifecycle table', async () => {
      const { db } = await open({ schema: 'none' });
      await migrate(db, 4);
      // Version 4 kept activity under Keyv's row key, and a mapping could lack an activity row.
      const keyv = createSessionKeyv<ThreadSession>(db, SessionStore.namespace);
      const created = '2026-01-01T00:00:00.000Z';
      await keyv.set(
        'T1:C1:3.1:agent-1',
        sessionFixture('s-active', { threadTs: '3.1', createdAt: created }),
      );
      await keyv.set(
        'T1:C2:3.2:agent-2',
        sessionFixture('s-quiet', {
          channelId: 'C2',
          threadTs: '3.2',
          agentId: 'agent-2',
          startedBy: 'U2',
          createdAt: created,
        }),
      );
      await db.query('INSERT INTO session_activity (key, last_active_at) VALUES ($1, $2), ($3, $2)', [
        'thread:T1:C1:3.1:agent-1',
        '2026-02-01T00:00:00.000Z',
        'thread:T1:C1:3.9:agent-1',
      ]);
      await migrate(db);
      const store = new SessionStore(keyv, db);
      const listed = await store.list({ teamId: 'T1' });
      expect(listed.map(({ sessionId, lastActiveAt }) => ({ sessionId, lastActiveAt }))).toEqual([
        { sessionId: 's-active', lastActiveAt: '2026-02-01T00:00:00.000Z' },
        { sessionId: 's-quiet', lastActiveAt: created },
      ]);
      expect(ids(await store.list({ teamId: 'T1', channelId: 'C2', startedBy: 'U2' }))).toEqual(['s-quiet']);
      expect(ids(await store.mappingsOf('agent-2'))).toEqual(['s-quiet']);
      // The activity of a conversation already ended stays (a replica of the previous release may still be
      // creating it) until the clean-up finds it old and without a mapping.
      expect((await db.query('SELECT key FROM session_activity')).length).toBe(3);
      expect(await store.pruneActivity()).toBe(1);
      expect((await db.query('SELECT key FROM session_activity')).length).toBe(2);
      await db.close();
    });

    it('keeps every conversation while a replica of the previous release runs beside this one', async () => {
      const { db } = shared;
      const keyv = createSessionKeyv<ThreadSession>(db, SessionStore.namespace);
      const store = new SessionStore(keyv, db);
      const previous = previousReleaseReplica(db, keyv);
      await previous.create(sessionFixture('s-old', { threadTs: '4.1' }));
      await store.create(sessionFixture('s-new', { threadTs: '4.2' }));
      await previous.recordActivity(sessionFixture('s-new', { threadTs: '4.2' }));
      // Its row names no thread, agent or starter: filled in from the mapping when listed.
      expect(ids(await store.list({ teamId: 'T1', channelId: 'C1' }))).toEqual(['s-new', 's-old']);
      expect(ids(await store.mappingsOf('agent-1'))).toEqual(['s-new', 's-old']);
      expect(ids(await previous.list('T1:C1'))).toEqual(['s-new', 's-old']);
      // Or when active.
      await previous.create(
        sessionFixture('s-other', { channelId: 'C9', threadTs: '4.4', agentId: 'agent-9' }),
      );
      await store.recordActivity(
        sessionFixture('s-other', { channelId: 'C9', threadTs: '4.4', agentId: 'agent-9' }),
      );
      expect(
        await db.query(`SELECT team_id, channel_id, agent_id FROM session_activity WHERE key LIKE '%4.4%'`),
      ).toEqual([{ team_id: 'T1', channel_id: 'C9', agent_id: 'agent-9' }]);
      await store.deleteAll([
        sessionFixture('s-other', { channelId: 'C9', threadTs: '4.4', agentId: 'agent-9' }),
      ]);

      // Both go idle; the previous release's idle sweep and clean-up see them as this one does.
      await db.query(`UPDATE session_activity SET last_active_at = now() - interval '1 hour'`);
      expect(await previous.pruneActivity()).toBe(0);
      expect(await store.pruneActivity()).toBe(0);
      const idleBefore = new Date(Date.now() - 60_000);
      expect(ids(await store.listIdle(idleBefore))).toEqual(['s-new', 's-old']);
      expect(ids(await previous.listIdle(idleBefore))).toEqual(['s-new', 's-old']);
      expect(ids(await store.list({ teamId: 'T1', startedBy: 'U1' }))).toEqual(['s-new', 's-old']);

      // A conversation the previous release created after its lifecycle row was lost still gets one back.
      await previous.create(sessionFixture('s-late', { threadTs: '4.3', startedBy: 'U3' }));
      await db.query(`DELETE FROM session_activity WHERE key LIKE '%4.3%'`);
      await store.recordActivity(sessionFixture('s-late', { threadTs: '4.3' }));
      expect(ids(await store.list({ teamId: 'T1', startedBy: 'U3' }))).toEqual(['s-late']);

      // A reset on either side ends the conversation for both.
      await previous.deleteAll([sessionFixture('s-old', { threadTs: '4.1' })]);
      await store.deleteAll([sessionFixture('s-new', { threadTs: '4.2' })]);
      expect(ids(await store.list({ teamId: 'T1' }))).toEqual(['s-late']);
      expect(ids(await previous.list('T1'))).toEqual(['s-late']);
    });

    it('never prunes a lifecycle row whose mapping exists, whoever wrote it', async () => {
      const { db } = shared;
      const keyv = createSessionKeyv<ThreadSession>(db, SessionStore.namespace);
      const store = new SessionStore(keyv, db);
      const previous = previousReleaseReplica(db, keyv);
      await previous.create(sessionFixture('s-old', { threadTs: '5.1' }));
      await store.create(sessionFixture('s-new', { threadTs: '5.2' }));
      await previous.recordActivity(sessionFixture('s-gone', { threadTs: '5.3' }));
      await db.query(`UPDATE session_activity SET last_active_at = now() - interval '1 hour'`);
      expect(await store.pruneActivity()).toBe(1);
      expect(await previous.pruneActivity()).toBe(0);
      expect((await db.query('SELECT key FROM session_activity')).length).toBe(2);
    });

    it('leaves the creation of its table to Keyv', async () => {
      const { db } = await open();
      await migrate(db);
      const [before] = await db.query<{ found: string | null }>(
        `SELECT to_regclass('public.${SESSIONS_TABLE}')::text AS found`,
      );
      expect(before?.found ?? null).toBeNull();
      await storeOn(db).create(sessionFixture('s-1'));
      expect(await storeOn(db).get(thread, 'agent-1')).toMatchObject({ sessionId: 's-1' });
      await db.close();
    });

    it('reports an unusable store as an error, never as "no session yet"', async () => {
      const { db } = await open();
      await migrate(db);
      const store = storeOn(db);
      await store.create(sessionFixture('s-1'));
      await db.close();
      await expect(store.get(thread, 'agent-1')).rejects.toBeInstanceOf(StoreError);
      await expect(store.create(sessionFixture('s-9'))).rejects.toBeInstanceOf(StoreError);
      await expect(store.list({ teamId: 'T1' })).rejects.toBeInstanceOf(StoreError);
    });
  });
}

const dataDirs: TempDataDir[] = [];
storeContract('embedded store (PGlite under DATA_DIR)', embeddedStorePerSuite, async (options) => {
  const dir = await freshDataDir(options);
  dataDirs.push(dir);
  const config = { kind: 'embedded' as const, dataDir: dir.path };
  return { db: await openDatabase(config), reopen: () => openDatabase(config) };
});
afterAll(async () => {
  await Promise.all(dataDirs.map((dir) => dir.remove()));
});

describe.runIf(runPostgres)('with PostgreSQL', () => {
  const databases: TestDatabase[] = [];
  afterAll(async () => {
    await Promise.all(databases.map((database) => database.drop()));
  });
  storeContract('postgres store', postgresStorePerSuite, async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const config = { kind: 'postgres' as const, databaseUrl: database.url, poolSize: 4 };
    return { db: await openDatabase(config), reopen: () => openDatabase(config) };
  });

  it('lets a replica start next to busy ones: no DDL, so no lock on a table in use', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const config = { kind: 'postgres' as const, databaseUrl: database.url, poolSize: 4 };
    const running = await openDatabase(config);
    await migrate(running);
    // A live replica in the middle of admitting a message holds a row lock on the inbox.
    let releaseInsert: () => void = () => {};
    const insertHeld = new Promise<void>((resolve) => {
      releaseInsert = resolve;
    });
    let inserted: () => void = () => {};
    const insertStarted = new Promise<void>((resolve) => {
      inserted = resolve;
    });
    const liveTransaction = running.transaction(async (query) => {
      await query(`INSERT INTO inbox (thread_key, dedupe_key, kind, payload) VALUES ('t', 'd', 'k', '{}')`);
      inserted();
      await insertHeld;
    });
    await insertStarted;
    const joining = await openDatabase(config);
    try {
      // Before versioning, this waited for an exclusive lock behind the open transaction (and could deadlock).
      const outcome = await Promise.race([
        migrate(joining).then(() => 'migrated'),
        new Promise((resolve) => setTimeout(() => resolve('blocked'), 3_000)),
      ]);
      expect(outcome).toBe('migrated');
    } finally {
      releaseInsert();
      await liveTransaction;
      await joining.close();
      await running.close();
    }
  });

  it('refuses a store whose schema is newer than the bot', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const db = await openDatabase({ kind: 'postgres', databaseUrl: database.url, poolSize: 4 });
    try {
      await migrate(db);
      await db.query('INSERT INTO schema_version (version) VALUES (999)');
      await expect(migrate(db)).rejects.toThrow(/newer than this bot/);
    } finally {
      await db.close();
    }
  });

  it('fails with a StoreError when the server cannot be reached', async () => {
    const db = await openDatabase({
      kind: 'postgres',
      databaseUrl: 'postgres://postgres@127.0.0.1:1/none',
      poolSize: 2,
    });
    await expect(migrate(db)).rejects.toBeInstanceOf(StoreError);
    await expect(storeOn(db).get(thread, 'agent-1')).rejects.toBeInstanceOf(StoreError);
    await db.close();
  });
});
