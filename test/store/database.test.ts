import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Database, openDatabase, StoreError } from '../../src/store/database.js';
import { describeFailure } from '../../src/store/disk-errors.js';
import { migrate } from '../../src/store/schema.js';
import { freshDataDir, type TempDataDir } from '../helpers/embedded-store.js';
import { pgBouncerAvailable, type RunningPgBouncer, startPgBouncer } from '../helpers/pgbouncer.js';
import { createTestDatabase, shouldRunPostgresTests, type TestDatabase } from '../helpers/postgres.js';

const runPostgres = await shouldRunPostgresTests();
const runPgBouncer = await pgBouncerAvailable();

describe.runIf(runPostgres)('PostgreSQL handle', () => {
  const databases: TestDatabase[] = [];
  afterAll(async () => {
    await Promise.all(databases.map((database) => database.drop()));
  });

  it('survives the server ending a connection it has checked out, and reports it as a store error', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const db = await openDatabase({ kind: 'postgres', databaseUrl: database.url, poolSize: 4 });
    const admin = await openDatabase({ kind: 'postgres', databaseUrl: database.url, poolSize: 4 });
    try {
      const outcome = db.transaction(async (query) => {
        const [row] = await query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        // Ended between two queries, while no query is running on it (a restart, an operator).
        await admin.query('SELECT pg_terminate_backend($1::int)', [row?.pid]);
        await new Promise((resolve) => setTimeout(resolve, 300));
        return query('SELECT 1 AS one');
      });
      await expect(outcome).rejects.toBeInstanceOf(StoreError);
      // The process is still here (an unhandled 'error' would have failed this run) and the store works.
      expect(await db.query('SELECT $1::int AS n', [2])).toEqual([{ n: 2 }]);
    } finally {
      await Promise.all([db.close(), admin.close()]);
    }
  });

  it('prepares a statement run outside a transaction once per connection, and plans it no more', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    // One connection, so every statement below runs on the session asked about.
    const db = await openDatabase({ kind: 'postgres', databaseUrl: database.url, poolSize: 1 });
    try {
      const statement = 'SELECT $1::int + 1 AS n';
      for (let n = 0; n < 3; n++) expect(await db.query(statement, [n])).toEqual([{ n: n + 1 }]);
      const prepared = await db.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements');
      expect(prepared.map((row) => row.statement)).toContain(statement);
      // Inside a transaction nothing is prepared (a refusal there would abort the transaction).
      await db.transaction((query) => query('SELECT $1::int + 2 AS n', [1]));
      const after = await db.query<{ statement: string }>('SELECT statement FROM pg_prepared_statements');
      expect(after.map((row) => row.statement)).not.toContain('SELECT $1::int + 2 AS n');
    } finally {
      await db.close();
    }
  });

  it('runs a prepared statement whose table a newer release altered, with the new columns', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const db = await openDatabase({ kind: 'postgres', databaseUrl: database.url, poolSize: 1 });
    const admin = await openDatabase({ kind: 'postgres', databaseUrl: database.url, poolSize: 1 });
    try {
      await admin.query('CREATE TABLE altered (id int)');
      await admin.query('INSERT INTO altered VALUES (1)');
      expect(await db.query('SELECT * FROM altered')).toEqual([{ id: 1 }]);
      // PostgreSQL refuses the prepared statement now ("cached plan must not change result type").
      await admin.query("ALTER TABLE altered ADD COLUMN note text DEFAULT 'new'");
      expect(await db.query('SELECT * FROM altered')).toEqual([{ id: 1, note: 'new' }]);
      expect(await db.query('SELECT * FROM altered')).toEqual([{ id: 1, note: 'new' }]);
    } finally {
      await Promise.all([db.close(), admin.close()]);
    }
  });
});

describe.runIf(runPostgres && runPgBouncer)(
  'PostgreSQL handle through PgBouncer in transaction pooling mode',
  () => {
    let bouncer: RunningPgBouncer | undefined;
    let database: TestDatabase | undefined;
    let db: Database | undefined;
    let admin: pg.Client | undefined;
    beforeAll(async () => {
      bouncer = await startPgBouncer({ defaultPoolSize: 2 });
      database = await createTestDatabase();
      admin = new pg.Client({ connectionString: database.url });
      await admin.connect();
      db = await openDatabase({ kind: 'postgres', databaseUrl: bouncer.urlFor(database.url), poolSize: 4 });
    });
    afterAll(async () => {
      await db?.close();
      await admin?.end();
      await bouncer?.stop();
      await database?.drop();
    });
    const store = () => {
      if (!db) throw new Error('no store');
      return db;
    };

    it('bounds each transaction on the server: a statement stuck on a lock is ended, a transaction left idle would be', async () => {
      const bounds = await store().transaction(async (query) => ({
        statement: await query<{ statement_timeout: string }>('SHOW statement_timeout'),
        idle: await query<{ idle_in_transaction_session_timeout: string }>(
          'SHOW idle_in_transaction_session_timeout',
        ),
      }));
      expect(bounds.statement).toEqual([{ statement_timeout: '5s' }]);
      expect(bounds.idle).toEqual([{ idle_in_transaction_session_timeout: '30s' }]);

      // Another client holds the lock: the server, not only the client, gives up on the waiting statement.
      await admin?.query('BEGIN');
      await admin?.query('SELECT pg_advisory_xact_lock(4242)');
      try {
        const started = Date.now();
        const waiting = store().transaction((query) => query('SELECT pg_advisory_xact_lock(4242)'));
        // The server's own message (the client's 6 s bound says "Query read timeout"): it, not the client, ended it.
        await expect(waiting).rejects.toThrow(/statement timeout/);
        // Its 5 s, with room for a loaded machine (6.0 s seen in CI with every core busy).
        expect(Date.now() - started).toBeLessThan(7_000);
      } finally {
        await admin?.query('ROLLBACK');
      }
    }, 15_000);

    it('answers every statement while clients share the server connections, which keep no prepared statement', async () => {
      // Another store on the same PgBouncer: each statement may land on a server connection the other used.
      const other = await openDatabase({
        kind: 'postgres',
        databaseUrl: bouncer?.urlFor(database?.url ?? '') ?? '',
        poolSize: 4,
      });
      try {
        const statements = ['SELECT $1::int AS n', 'SELECT $1::int * 2 AS n', 'SELECT $1::int * 3 AS n'];
        const results = await Promise.all(
          Array.from({ length: 60 }, (_, i) => {
            const on = i % 2 === 0 ? store() : other;
            return on.query<{ n: number }>(statements[i % 3] ?? '', [i]);
          }),
        );
        expect(results.map((rows) => rows[0]?.n)).toEqual(
          Array.from({ length: 60 }, (_, i) => i * ((i % 3) + 1)),
        );
      } finally {
        await other.close();
      }
    });

    it('leaves no bound behind on the shared server connections once a transaction ends', async () => {
      // Another client of PgBouncer gets the server connections this store's transactions used.
      await Promise.all(Array.from({ length: 4 }, () => store().transaction((query) => query('SELECT 1'))));
      const other = new pg.Client({ connectionString: bouncer?.urlFor(database?.url ?? '') });
      await other.connect();
      try {
        // One statement at a time: a pg client runs one anyway, and queueing them is deprecated.
        const shown: (string | undefined)[] = [];
        for (let i = 0; i < 4; i++) {
          const result = await other.query<{ statement_timeout: string }>('SHOW statement_timeout');
          shown.push(result.rows[0]?.statement_timeout);
        }
        expect(shown).toEqual(['0', '0', '0', '0']);
      } finally {
        await other.end();
      }
    });
  },
);

/**
 * One embedded store, timed as the bot's is, for the tests below that neither close nor reopen it (opening
 * PGlite costs far more than they do): opened by the first that asks, closed after the file.
 */
let embedded: Promise<{ db: Database; dir: TempDataDir }> | undefined;
const timings: boolean[] = [];
function embeddedStore(): Promise<{ db: Database; dir: TempDataDir }> {
  embedded ??= freshDataDir().then(async (dir) => ({
    dir,
    db: await openDatabase(
      { kind: 'embedded', dataDir: dir.path },
      { onQuery: (_durationMs, ok) => timings.push(ok) },
    ),
  }));
  return embedded;
}
afterAll(async () => {
  const opened = await embedded;
  await opened?.db.close();
  await opened?.dir.remove();
});

describe('store timing', () => {
  it('times every statement, those inside a transaction too, and says which failed', async () => {
    const { db } = await embeddedStore();
    timings.length = 0;
    await db.query('SELECT 1');
    await db.transaction(async (query) => {
      await query('SELECT 2');
      await query('SELECT 3');
    });
    await expect(db.query('SELECT * FROM no_such_table')).rejects.toBeInstanceOf(StoreError);
    expect(timings).toEqual([true, true, true, false]);
  });
});

describe('the embedded store on a failing disk', () => {
  /** What PGlite throws when its files fail: provoked for real (its directory is a file), to learn its class. */
  async function pgliteFileError(): Promise<{ errno: number; make: (errno: number) => unknown }> {
    const dir = await mkdtemp(path.join(tmpdir(), 'bridge-disk-'));
    try {
      await writeFile(path.join(dir, 'pglite'), 'not a directory');
      const error = await openDatabase({ kind: 'embedded', dataDir: dir }).then(
        () => undefined,
        (failure: unknown) => failure,
      );
      expect(error).toBeInstanceOf(StoreError);
      const cause = (error as StoreError).cause as {
        errno: number;
        constructor: new (errno: number) => unknown;
      };
      return { errno: cause.errno, make: (errno) => new cause.constructor(errno) };
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  it("names a full or read-only disk in PGlite's own error objects, and never prints [object Object]", async () => {
    const { errno, make } = await pgliteFileError();
    expect(describeFailure(make(errno))).toBe('a part of the path is a file, not a directory (ENOTDIR)');
    // The same class with the errno numbers PGlite's file system gives a full or read-only disk.
    expect(describeFailure(make(51))).toBe('the disk is full (ENOSPC)');
    expect(describeFailure(make(69))).toBe('the file system is read-only (EROFS)');
    expect(describeFailure(make(2))).toBe('permission denied (read-only for this process) (EACCES)');
    expect(describeFailure(make(1234))).toBe('file system error (errno 1234)');
    // PostgreSQL's own report of the same is read in test/store/disk-errors.test.ts.
  });

  it('says it refuses writes after a write fails for lack of space, until a write lands again', async () => {
    const { db, dir } = await embeddedStore();
    try {
      await migrate(db);
      expect(db.writeProblem?.()).toBeUndefined();
      // PostgreSQL's answer to a full disk (SQLSTATE 53100, as it reports a relation it cannot extend).
      await db.query(`CREATE OR REPLACE FUNCTION full_disk() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'could not extend file "base/5/16384": No space left on device'
          USING ERRCODE = 'disk_full'; END $$`);
      await db.query(
        'CREATE TRIGGER full_disk BEFORE INSERT ON user_requests FOR EACH ROW EXECUTE FUNCTION full_disk()',
      );
      await expect(db.query(`INSERT INTO user_requests (user_id) VALUES ('U1')`)).rejects.toThrow(
        /the disk is full \(ENOSPC\)/,
      );
      expect(db.writeProblem?.()).toBe(`the disk is full (ENOSPC) under ${dir.path}`);
      // Reads still work, and do not end it; a write that lands does.
      expect(await db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      expect(db.writeProblem?.()).toBeDefined();
      await db.query('DROP TRIGGER full_disk ON user_requests');
      await db.transaction((query) => query(`INSERT INTO user_requests (user_id) VALUES ('U1')`));
      expect(db.writeProblem?.()).toBeUndefined();
    } finally {
      // The store is shared: a failure above must not leave the full disk to the tests after it.
      await db.query('DROP TRIGGER IF EXISTS full_disk ON user_requests');
    }
  });
});
