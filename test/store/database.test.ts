import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, StoreError } from '../../src/store/database.js';
import { freshDataDir } from '../helpers/embedded-store.js';
import { createTestDatabase, shouldRunPostgresTests, type TestDatabase } from '../helpers/postgres.js';

const runPostgres = await shouldRunPostgresTests();

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
});

describe('store timing', () => {
  it('times every statement, those inside a transaction too, and says which failed', async () => {
    const dir = await freshDataDir();
    const timings: boolean[] = [];
    const db = await openDatabase(
      { kind: 'embedded', dataDir: dir.path },
      { onQuery: (_durationMs, ok) => timings.push(ok) },
    );
    try {
      await db.query('SELECT 1');
      await db.transaction(async (query) => {
        await query('SELECT 2');
        await query('SELECT 3');
      });
      await expect(db.query('SELECT * FROM no_such_table')).rejects.toBeInstanceOf(StoreError);
      expect(timings).toEqual([true, true, true, false]);
    } finally {
      await db.close();
      await dir.remove();
    }
  });
});
