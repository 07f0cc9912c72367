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
 * Test databases are named with the time they were made and the run that made them
 * (`bridge_test_<ms in base 36>_<run><random>`), so a run can tell what a killed run left behind
 * (`removeStaleDatabases`) and drop what it kept for reuse when it ends (`dropThisRunsDatabases`).
 */
const TEST_DATABASE = /^bridge_test_([0-9a-z]+)_[0-9a-f]+$/;
/** A run lasts minutes: what is older than this was left by a run that is over. */
const STALE_MS = 60 * 60 * 1000;

/**
 * The run's id, which vitest.config.ts gives the test processes. Without one (the benchmark, a script),
 * databases are dropped when done instead of kept for reuse.
 */
export const RUN_ID_VARIABLE = 'BRIDGE_TEST_RUN_ID';

function testDatabaseName(): string {
  return `bridge_test_${Date.now().toString(36)}_${process.env[RUN_ID_VARIABLE] ?? ''}${randomBytes(4).toString('hex')}`;
}

function urlOf(name: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

type Schema = 'current' | 'none';

/**
 * Databases this process's tests are done with, emptied back to what a new one of that schema holds, for the
 * next test to take instead of a new one. Making one copies its template (8 MB written through the WAL), and
 * dropping one makes the server write every dirty buffer it holds (a checkpoint): a whole run made and dropped
 * over a hundred, and its checkpoints alone took about 20 s of the server's CPU.
 */
const reusable: Record<Schema, KeptDatabase[]> = { current: [], none: [] };

/** A test database as it was new: what `recycle` brings it back to. */
interface KeptDatabase {
  name: string;
  fingerprint: string;
  /** Its tables (quoted): emptied on reuse; any other relation is dropped. */
  tables: string[];
}

/**
 * A database on the test server that no other test is using, so test files never see each other's rows:
 * new, or one a finished test left, emptied and checked to be as new (`recycle`). Its schema is the current
 * one with `schema: 'current'` (a copy of the migrated template, `prepareTemplateDatabase`), so a bot
 * starting on it pays a version check instead of the migrations; without, it is empty, for the tests of the
 * migrations and of what a first start does.
 */
export async function createTestDatabase(options: { schema?: Schema } = {}): Promise<TestDatabase> {
  const schema = options.schema ?? 'none';
  let database = reusable[schema].pop();
  if (!database) {
    const name = testDatabaseName();
    if (schema === 'current') await copyTemplate(name);
    else await admin(`CREATE DATABASE ${name}`);
    database = { name, ...(await asNew(name)) };
  }
  const kept = database;
  let done = false;
  return {
    url: urlOf(kept.name),
    drop: async () => {
      if (done) return;
      done = true;
      const emptied = process.env[RUN_ID_VARIABLE] ? await recycle(kept) : undefined;
      if (emptied) reusable[schema].push({ ...kept, name: emptied });
      else await admin(`DROP DATABASE IF EXISTS ${kept.name} WITH (FORCE)`);
    },
  };
}

/**
 * Empties a database a test is done with back to what a new one of its schema holds, under a new name, so a
 * process the test left running (a bot being stopped) can no longer reach it; the new name, or undefined when
 * it cannot be made as new (the test changed its tables, settings or the schema's version: then it is
 * dropped). Its statistics are reset as well: a test may count what the server read.
 */
async function recycle(database: KeptDatabase): Promise<string | undefined> {
  const renamed = testDatabaseName();
  let asItWas = false;
  try {
    await renameWhenClosed(database.name, renamed, { closeOthers: true });
    const client = new pg.Client({ connectionString: urlOf(renamed), connectionTimeoutMillis: 5_000 });
    await client.connect();
    try {
      // Its own tables emptied (the schema's version kept); what a test or a bot added (Keyv's table), dropped.
      const relations = await client.query<{ name: string; kind: string }>(
        `SELECT quote_ident(relname) AS name, relkind AS kind FROM pg_class
         WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p', 'v', 'm')`,
      );
      for (const { name, kind } of relations.rows.filter((row) => !database.tables.includes(row.name))) {
        const what = kind === 'v' ? 'VIEW' : kind === 'm' ? 'MATERIALIZED VIEW' : 'TABLE';
        await client.query(`DROP ${what} IF EXISTS ${name} CASCADE`);
      }
      const emptied = database.tables.filter((table) => table !== 'schema_version');
      if (emptied.length > 0) await client.query(`TRUNCATE ${emptied.join(', ')} RESTART IDENTITY CASCADE`);
      await client.query('SELECT pg_stat_reset()');
      asItWas = (await fingerprintOn(client)) === database.fingerprint;
    } finally {
      await client.end().catch(() => {});
    }
  } catch {
    // Dropped below, as a database changed beyond its rows is.
  }
  if (asItWas) return renamed;
  await admin(`DROP DATABASE IF EXISTS ${renamed} WITH (FORCE)`).catch(() => {});
  return undefined;
}

/**
 * What a test could change in a database beyond its rows: its relations, columns, indexes, constraints,
 * functions, types, schemas, extensions, settings and sequences, and the schema's version.
 */
const FINGERPRINT = `SELECT md5(string_agg(item, E'\n' ORDER BY item)) FROM (
  SELECT format('relation %s.%s %s', n.nspname, c.relname, c.relkind) FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_toast%'
  UNION ALL SELECT format('column %s.%s %s %s %s', c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
      a.attnotnull, pg_get_expr(d.adbin, d.adrelid))
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT format('index %s', pg_get_indexdef(i.indexrelid)) FROM pg_index i
    JOIN pg_class c ON c.oid = i.indrelid WHERE c.relnamespace = 'public'::regnamespace
  UNION ALL SELECT format('constraint %s %s', conname, pg_get_constraintdef(oid)) FROM pg_constraint
    WHERE connamespace = 'public'::regnamespace
  UNION ALL SELECT format('function %s', oid::regprocedure) FROM pg_proc
    WHERE pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
  UNION ALL SELECT format('type %s', typname) FROM pg_type WHERE typnamespace = 'public'::regnamespace
  UNION ALL SELECT format('trigger %s', tgname) FROM pg_trigger WHERE NOT tgisinternal
  UNION ALL SELECT format('schema %s %s %s', nspname, nspowner::regrole, nspacl) FROM pg_namespace
  UNION ALL SELECT format('extension %s', extname) FROM pg_extension
  UNION ALL SELECT format('setting %s', setconfig) FROM pg_db_role_setting
    WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
  UNION ALL SELECT format('sequence %s %s', sequencename, last_value) FROM pg_sequences
) items(item)`;

/** FINGERPRINT, and the schema's version where the database has one. */
async function fingerprintOn(client: pg.Client): Promise<string> {
  const [{ fingerprint = '', versioned = false } = {}] = (
    await client.query<{ fingerprint: string; versioned: boolean }>(
      `SELECT (${FINGERPRINT}) AS fingerprint, to_regclass('public.schema_version') IS NOT NULL AS versioned`,
    )
  ).rows;
  if (!versioned) return fingerprint;
  const versions = await client.query<{ row: string }>(
    'SELECT to_jsonb(v)::text AS row FROM public.schema_version v ORDER BY 1',
  );
  return `${fingerprint} ${versions.rows.map((version) => version.row).join(' ')}`;
}

/** A new database's fingerprint and tables. */
async function asNew(name: string): Promise<Omit<KeptDatabase, 'name'>> {
  const client = new pg.Client({ connectionString: urlOf(name), connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    const tables = await client.query<{ name: string }>(
      `SELECT quote_ident(relname) AS name FROM pg_class
       WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p')`,
    );
    return { fingerprint: await fingerprintOn(client), tables: tables.rows.map((table) => table.name) };
  } finally {
    await client.end();
  }
}

/** Drops the databases this run kept for reuse, for test/global-setup.ts when the run ends. */
export async function dropThisRunsDatabases(runId: string): Promise<void> {
  const rows = await admin<{ name: string }>(
    `SELECT datname AS name FROM pg_database WHERE datname LIKE 'bridge\\_test\\_%\\_' || $1 || '%'`,
    [runId],
  );
  for (const { name } of rows) await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
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

async function renameWhenClosed(
  from: string,
  to: string,
  options: { closeOthers?: boolean } = {},
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    if (options.closeOthers)
      await admin('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [from]);
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
