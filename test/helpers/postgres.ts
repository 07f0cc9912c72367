import { randomBytes } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import pg from 'pg';
import { type Database, openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/schema.js';
import { schemaHash, storePerSuite } from './embedded-store.js';

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

/**
 * Test databases are named with the time they were made (`bridge_test_<ms in base 36>_<random>`), so a run
 * can tell what a killed run left behind (`removeStaleDatabases`).
 */
const TEST_DATABASE = /^bridge_test_([0-9a-z]+)_[0-9a-f]+$/;
/** A run lasts minutes: what is older than this was left by a run that is over. */
const STALE_MS = 60 * 60 * 1000;

function testDatabaseName(): string {
  return `bridge_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

function urlOf(name: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * A brand-new database on the test server, so test files never see each other's rows. Its schema is the
 * current one with `schema: 'current'` (a copy of the migrated template, `prepareTemplateDatabase`), so a bot
 * starting on it pays a version check instead of the migrations; without, it is empty, for the tests of the
 * migrations and of what a first start does.
 */
export async function createTestDatabase(
  options: { schema?: 'current' | 'none' } = {},
): Promise<TestDatabase> {
  const name = testDatabaseName();
  if (options.schema === 'current') await copyTemplate(name);
  else await admin(`CREATE DATABASE ${name}`);
  return {
    url: urlOf(name),
    drop: async () => {
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** The migrated template of this schema: keyed by a hash of src/store, as the embedded store's. */
let templateName: string | undefined;
function template(): string {
  templateName ??= `bridge_template_${schemaHash()}`;
  return templateName;
}

async function copyTemplate(name: string): Promise<void> {
  try {
    await admin(`CREATE DATABASE ${name} TEMPLATE ${template()}`);
  } catch (error) {
    // Not made yet (PostgreSQL was down at the run's set-up), or removed by a run on another schema.
    if (codeOf(error) !== '3D000') throw error;
    await prepareTemplateDatabase();
    await admin(`CREATE DATABASE ${name} TEMPLATE ${template()}`);
  }
}

/**
 * Makes the migrated template database unless it exists, as test/global-setup.ts does once per run: copying
 * it costs the server less than migrating each test's database. It is made under a test database's name,
 * then renamed, so it appears whole or not at all and runs side by side share it safely. Nothing may connect
 * to it (PostgreSQL copies a template only while no one is connected), so it allows no connections.
 */
export async function prepareTemplateDatabase(): Promise<void> {
  await removeStaleDatabases();
  if (await databaseExists(template())) return;
  const staging = testDatabaseName();
  await admin(`CREATE DATABASE ${staging}`);
  try {
    const db = await openDatabase({ kind: 'postgres', databaseUrl: urlOf(staging), poolSize: 1 });
    try {
      await migrate(db);
    } finally {
      await db.close();
    }
    // When it was made, for removeStaleDatabases: its name says only which schema it has.
    await admin(`COMMENT ON DATABASE ${staging} IS '${Date.now()}'`);
    await admin(`ALTER DATABASE ${staging} WITH ALLOW_CONNECTIONS false`);
    await renameWhenClosed(staging, template());
  } finally {
    await admin(`DROP DATABASE IF EXISTS ${staging} WITH (FORCE)`);
  }
}

async function renameWhenClosed(from: string, to: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await admin(`ALTER DATABASE ${from} RENAME TO ${to}`);
      return;
    } catch (error) {
      // Another run made the same template first.
      if (codeOf(error) === '42P04') return;
      // The closed connection's server process has not exited yet.
      if (codeOf(error) !== '55006' || attempt === 50) throw error;
      await setTimeout(20);
    }
  }
}

/**
 * Drops the test databases a killed run left behind, and the templates of schemas since changed, when made
 * over an hour ago (as removeStaleTemplates does for the embedded store's templates). A database named
 * otherwise is left alone.
 */
async function removeStaleDatabases(): Promise<void> {
  const rows = await admin<{ name: string; made: string | null }>(
    `SELECT datname AS name, shobj_description(oid, 'pg_database') AS made FROM pg_database
     WHERE datname LIKE 'bridge\\_test\\_%' OR datname LIKE 'bridge\\_template\\_%'`,
  );
  const now = Date.now();
  for (const { name, made } of rows) {
    const test = TEST_DATABASE.exec(name);
    // A template without its time (not made here) is left alone, as is this schema's.
    const madeAt = test
      ? Number.parseInt(test[1] ?? '', 36)
      : name === template() || made === null
        ? Number.NaN
        : Number(made);
    if (Number.isFinite(madeAt) && now - madeAt > STALE_MS)
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  }
}

async function databaseExists(name: string): Promise<boolean> {
  return (await admin('SELECT 1 FROM pg_database WHERE datname = $1', [name])).length === 1;
}

function codeOf(error: unknown): unknown {
  return (error as { code?: unknown } | undefined)?.code;
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

/** One statement on the test server's own database, on a connection of its own. */
async function admin<Row extends object = Record<string, unknown>>(
  sql: string,
  params: unknown[] = [],
): Promise<Row[]> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return (await client.query<Row>(sql, params)).rows;
  } finally {
    await client.end();
  }
}
