import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
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
});
