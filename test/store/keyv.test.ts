import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, StoreError } from '../../src/store/database.js';
import { checkSessionTable } from '../../src/store/keyv.js';
import { migrate } from '../../src/store/schema.js';
import {
  createTestDatabase,
  shouldRunPostgresTests,
  TEST_DATABASE_URL,
  type TestDatabase,
} from '../helpers/postgres.js';

const runPostgres = await shouldRunPostgresTests();

describe.runIf(runPostgres)("the start-up check of Keyv's table", () => {
  const databases: TestDatabase[] = [];
  const roles: string[] = [];
  afterAll(async () => {
    await Promise.all(databases.map((database) => database.drop()));
    // The server's own database: the test databases are gone by now.
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    for (const role of roles) await admin.query(`DROP ROLE IF EXISTS ${role}`);
    await admin.end();
  });

  it('creates the table on a new database and passes', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    const db = await openDatabase({ kind: 'postgres', databaseUrl: database.url, poolSize: 2 });
    try {
      await migrate(db);
      await checkSessionTable(db);
      expect(await db.query(`SELECT to_regclass('public.thread_sessions')::text AS found`)).toEqual([
        { found: 'thread_sessions' },
      ]);
    } finally {
      await db.close();
    }
  });

  it('fails start-up when Keyv could not create its table, instead of failing every conversation later', async () => {
    const database = await createTestDatabase();
    databases.push(database);
    // A role that may use the migrated tables but not create one: Keyv's CREATE TABLE fails, and Keyv only
    // reports that as an event.
    const role = `bridge_test_${randomBytes(6).toString('hex')}`;
    roles.push(role);
    const owner = await openDatabase({ kind: 'postgres', databaseUrl: database.url, poolSize: 2 });
    await migrate(owner);
    await owner.query(`CREATE ROLE ${role} LOGIN`);
    await owner.query(`GRANT ALL ON ALL TABLES IN SCHEMA public TO ${role}`);
    await owner.close();
    const url = new URL(database.url);
    url.username = role;
    const db = await openDatabase({ kind: 'postgres', databaseUrl: url.toString(), poolSize: 2 });
    try {
      await expect(checkSessionTable(db)).rejects.toBeInstanceOf(StoreError);
      await expect(checkSessionTable(db)).rejects.toThrow(/thread_sessions/);
    } finally {
      await db.close();
    }
  });
});
