import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, shouldRunPostgresTests, type TestDatabase } from './postgres.js';

const runPostgres = await shouldRunPostgresTests();

/** Runs statements on a database, on a connection of its own. */
async function on<Row extends object>(url: string, ...statements: string[]): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    let rows: Row[] = [];
    for (const statement of statements) rows = (await client.query<Row>(statement)).rows;
    return rows;
  } finally {
    await client.end();
  }
}

/** The server's id of a database: a database renamed keeps it. */
const idOf = async (url: string) =>
  (
    await on<{ id: string }>(
      url,
      'SELECT oid::text AS id FROM pg_database WHERE datname = current_database()',
    )
  )[0]?.id;

const tablesOf = async (url: string) =>
  (
    await on<{ name: string }>(
      url,
      "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
    )
  ).map((row) => row.name);

/**
 * Test databases a finished test leaves are emptied and handed to the next test instead of being dropped: what
 * the next test gets must be what a new database would be, and a process still using the old one must not
 * reach it.
 */
describe.runIf(runPostgres)('test databases', () => {
  const taken: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(taken.splice(0).map((database) => database.drop()));
  });
  const take = async (schema?: 'current' | 'none') => {
    const database = await createTestDatabase(schema ? { schema } : {});
    taken.push(database);
    return database;
  };

  it('of the current schema: the next test gets one as new, rows, tables added and numbering gone', async () => {
    const first = await take('current');
    const id = await idOf(first.url);
    const fresh = await tablesOf(first.url);
    await on(
      first.url,
      "INSERT INTO inbox (thread_key, dedupe_key, kind, payload) VALUES ('t', 'd1', 'message', '{}'), ('t', 'd2', 'message', '{}')",
      'CREATE TABLE thread_sessions (key TEXT PRIMARY KEY, value TEXT)',
      "INSERT INTO thread_sessions VALUES ('k', 'v')",
    );
    const stillConnected = new pg.Client({ connectionString: first.url });
    stillConnected.on('error', () => {});
    await stillConnected.connect();
    await first.drop();

    const next = await take('current');
    expect(await idOf(next.url), 'the same database, renamed').toBe(id);
    expect(next.url).not.toBe(first.url);
    expect(await tablesOf(next.url)).toEqual(fresh);
    const [row] = await on<{ id: string }>(
      next.url,
      "INSERT INTO inbox (thread_key, dedupe_key, kind, payload) VALUES ('t', 'd1', 'message', '{}') RETURNING id",
    );
    expect(row?.id).toBe('1');
    expect(await on(next.url, 'SELECT 1 FROM inbox')).toHaveLength(1);
    // The connection left open was closed, and the old name leads nowhere.
    await expect(stillConnected.query('SELECT 1')).rejects.toThrow();
    await expect(on(first.url, 'SELECT 1')).rejects.toThrow(/does not exist/);
  });

  it('whose schema a test changed is dropped, not handed on', async () => {
    const first = await take('current');
    const id = await idOf(first.url);
    await on(first.url, 'ALTER TABLE inbox ADD COLUMN added_by_a_test TEXT');
    await first.drop();
    const next = await take('current');
    expect(await idOf(next.url)).not.toBe(id);
    const columns = await on<{ name: string }>(
      next.url,
      "SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'inbox'",
    );
    expect(columns.map((column) => column.name)).not.toContain('added_by_a_test');
    await expect(on(first.url, 'SELECT 1')).rejects.toThrow(/does not exist/);
  });

  it('without a schema: the next test gets an empty one, whatever the last test created', async () => {
    const first = await take();
    const id = await idOf(first.url);
    await on(
      first.url,
      'CREATE TABLE schema_version (version INTEGER)',
      'INSERT INTO schema_version VALUES (3)',
    );
    await first.drop();
    const next = await take();
    expect(await idOf(next.url), 'the same database, renamed').toBe(id);
    expect(next.url).not.toBe(first.url);
    expect(await tablesOf(next.url)).toEqual([]);
  });
});
