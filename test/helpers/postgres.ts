import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { type Database, openDatabase } from '../../src/store/database.js';
import { storePerSuite } from './embedded-store.js';

/** The server the Postgres-backed tests use; CI points this at the local cluster. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** True when a test run must not silently skip the Postgres tests. */
export const POSTGRES_REQUIRED = process.env.CI === 'true' || process.env.CI === '1';

export async function postgresReachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** Whether to run the Postgres suites: always under CI (a missing server then fails loudly), else if reachable. */
export async function shouldRunPostgresTests(): Promise<boolean> {
  if (POSTGRES_REQUIRED) return true;
  const reachable = await postgresReachable();
  if (!reachable)
    console.warn(`PostgreSQL at ${TEST_DATABASE_URL} is unreachable: skipping its tests (CI would fail)`);
  return reachable;
}

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A brand-new database on the test server, so test files never see each other's rows. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const name = `bridge_test_${randomBytes(6).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * A database on the test server shared by the tests of the enclosing `describe`, emptied before each, as
 * `storePerSuite`: creating a database per test costs the server a copy of its template each time.
 */
export function postgresStorePerSuite(): { readonly db: Database } {
  return storePerSuite(async () => {
    const database = await createTestDatabase();
    const db = await openDatabase({ kind: 'postgres', databaseUrl: database.url, poolSize: 4 });
    return { db, remove: () => database.drop() };
  });
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
