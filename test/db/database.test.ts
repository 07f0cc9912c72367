import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, StoreError } from '../../src/db/database.js';
import { createTestDatabase, shouldRunPostgresTests, type TestDatabase } from '../helpers/postgres.js';

const runPostgres = await shouldRunPostgresTests();

describe.runIf(runPostgres)('PostgreSQL handle', () => {
  const databases: TestDatabase[] = [];
  afterAll(async () => {
    await Promise.all(databases.map((database) => database.drop()));
  });

  it('waits for the disk on ordinary writes and not on checkpoints', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const db = await openDatabase({ kind: 'postgres', databaseUrl: database.url });
    try {
      const setting = 'SELECT current_setting($1) AS value';
      expect(await db.query(setting, ['synchronous_commit'])).toEqual([{ value: 'on' }]);
      expect(await db.checkpoint(setting, ['synchronous_commit'])).toEqual([{ value: 'off' }]);
    } finally {
      await db.close();
    }
  });

  it('keeps answering after a table under its prepared statements gains a column', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const db = await openDatabase({ kind: 'postgres', databaseUrl: database.url });
    const other = await openDatabase({ kind: 'postgres', databaseUrl: database.url });
    try {
      await db.query('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
      await db.query('INSERT INTO notes VALUES (1, $1)', ['first']);
      // Prepared on the pooled connection, as a replica that has been running a while.
      expect(await db.query('SELECT * FROM notes WHERE id = $1', [1])).toEqual([{ id: 1, body: 'first' }]);
      await other.query('ALTER TABLE notes ADD COLUMN author TEXT');
      expect(await db.query('SELECT * FROM notes WHERE id = $1', [1])).toEqual([
        { id: 1, body: 'first', author: null },
      ]);
    } finally {
      await Promise.all([db.close(), other.close()]);
    }
  });

  it('survives the server ending a connection it has checked out, and reports it as a store error', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const db = await openDatabase({ kind: 'postgres', databaseUrl: database.url });
    const admin = await openDatabase({ kind: 'postgres', databaseUrl: database.url });
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
