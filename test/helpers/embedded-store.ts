import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { access, constants, cp, mkdtemp, readdir, rename, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { type Database, openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/schema.js';

/** Prepared once per run by test/global-setup.ts: an initialised PGlite directory to copy. */
export const PGLITE_TEMPLATE_DIR = path.resolve('test/.tmp/pglite-template');

/**
 * The template migrated to the current schema, prepared by test/global-setup.ts: a bot or a test starting on a
 * copy finds its schema current, so it pays a version check instead of the migrations (~0.3 s of CPU each).
 * Keyed by a hash of src/store (the schema and the code it runs through) and PGlite's version, so a changed
 * schema gets a template of its own.
 */
let migratedTemplateDir: string | undefined;
function migratedTemplate(): string {
  // Worked out on first use, not at import: the benchmark imports these helpers compiled into dist/.
  migratedTemplateDir ??= path.resolve(
    `test/.tmp/pglite-migrated-${schemaHash(['node_modules/@electric-sql/pglite/package.json'])}`,
  );
  return migratedTemplateDir;
}

/**
 * A hash of src/store (the schema and the code it runs through) and of the files `also` names, relative to
 * the project's root: what a migrated template is keyed by.
 */
export function schemaHash(also: string[] = []): string {
  // The project's root, as the templates' paths are: the working directory of the run.
  const root = path.resolve('.');
  const storeSources = path.join(root, 'src/store');
  const hash = createHash('sha256');
  for (const file of also) hash.update(readFileSync(path.join(root, file)));
  for (const file of readdirSync(storeSources).sort()) {
    hash.update(`\0${file}\0`).update(readFileSync(path.join(storeSources, file)));
  }
  return hash.digest('hex').slice(0, 16);
}

/**
 * Makes the migrated template from the bare one unless it exists. It appears whole or not at all (made aside,
 * then renamed), so runs side by side share it safely.
 */
export async function prepareMigratedTemplate(): Promise<void> {
  const template = migratedTemplate();
  await removeStaleTemplates();
  if (existsSync(template)) return;
  const staging = await mkdtemp(path.join(path.dirname(template), 'staging-'));
  try {
    await copyTemplate(PGLITE_TEMPLATE_DIR, path.join(staging, 'pglite'));
    const db = await openDatabase({ kind: 'embedded', dataDir: staging });
    try {
      await migrate(db);
    } finally {
      await db.close();
    }
    await rename(path.join(staging, 'pglite'), template).catch((error: unknown) => {
      // Another run finished the same template first.
      if (!existsSync(template)) throw error;
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

export interface TempDataDir {
  path: string;
  remove(): Promise<void>;
}

const run = promisify(execFile);

/** Templates of schemas since changed, made over an hour ago (a run lasts minutes), are removed. */
async function removeStaleTemplates(): Promise<void> {
  const current = migratedTemplate();
  const parent = path.dirname(current);
  const now = Date.now();
  for (const entry of await readdir(parent)) {
    const dir = path.join(parent, entry);
    if (!entry.startsWith('pglite-migrated-') || dir === current) continue;
    const modified = await stat(dir).then(
      (stats) => stats.mtimeMs,
      () => now,
    );
    if (now - modified > 60 * 60 * 1000) await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Where data directories go: /dev/shm when the machine has one, as the stores are thrown away after their
 * tests and a memory file system makes copying and removing them cheap (measured: a tenth of the CPU of /tmp).
 */
let dataDirParent: Promise<string> | undefined;
function parentOfDataDirs(): Promise<string> {
  dataDirParent ??= access('/dev/shm', constants.W_OK).then(
    () => '/dev/shm',
    () => tmpdir(),
  );
  return dataDirParent;
}

/**
 * Copies the template with `cp`: node's fs.cp walks the cluster's ~1000 files in JavaScript, which cost
 * ~0.4 s of CPU per copy (the run makes over a hundred); `cp` does it in ~0.05 s.
 */
async function copyTemplate(template: string, destination: string): Promise<void> {
  if (process.platform !== 'win32' && existsSync('/bin/cp')) {
    await run('/bin/cp', ['-R', template, destination]);
    return;
  }
  await cp(template, destination, { recursive: true });
}

/**
 * A DATA_DIR with the embedded store already initialised: PGlite's first start (initdb) takes seconds,
 * copying a ready cluster takes milliseconds. Its schema is the current one; `schema: 'none'` gives a store
 * that was never migrated, for the tests of the migrations themselves.
 */
export async function freshDataDir(options: { schema?: 'current' | 'none' } = {}): Promise<TempDataDir> {
  return dataDirFrom(options.schema === 'none' ? PGLITE_TEMPLATE_DIR : migratedTemplate());
}

/**
 * A copy of a data dir whose store is closed: tests that each need the same rows stored copy them, instead of
 * each opening a store to write them.
 */
export function copyOfDataDir(source: TempDataDir): Promise<TempDataDir> {
  return dataDirFrom(path.join(source.path, 'pglite'));
}

async function dataDirFrom(cluster: string): Promise<TempDataDir> {
  const dir = await mkdtemp(path.join(await parentOfDataDirs(), 'bridge-data-'));
  await copyTemplate(cluster, path.join(dir, 'pglite'));
  return { path: dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * Empties every table of the store (the schema's and Keyv's) but the schema's version, numbering included, so
 * a store shared by a suite's tests gives each test what a fresh one would: opening a store costs far more
 * (PGlite: ~1 s of CPU) than emptying it.
 */
export async function emptyStore(db: Database): Promise<void> {
  const tables = await db.query<{ name: string }>(
    `SELECT quote_ident(tablename) AS name FROM pg_tables
     WHERE schemaname = 'public' AND tablename <> 'schema_version'`,
  );
  if (tables.length === 0) return;
  await db.query(`TRUNCATE ${tables.map((table) => table.name).join(', ')} RESTART IDENTITY`);
}

/**
 * A store with the bot's schema shared by the tests of the enclosing `describe`: opened before them, emptied
 * before each (`emptyStore`), closed and removed after. Read `db` inside the tests.
 */
export function storePerSuite(open: () => Promise<{ db: Database; remove(): Promise<void> }>): {
  readonly db: Database;
} {
  let opened: { db: Database; remove(): Promise<void> } | undefined;
  beforeAll(async () => {
    opened = await open();
    await migrate(opened.db);
  });
  beforeEach(async () => {
    if (opened) await emptyStore(opened.db);
  });
  afterAll(async () => {
    await opened?.db.close();
    await opened?.remove();
  });
  return {
    get db(): Database {
      if (!opened) throw new Error('the store is opened in beforeAll');
      return opened.db;
    },
  };
}

/** An embedded store shared by the tests of the enclosing `describe`, as `storePerSuite`. */
export function embeddedStorePerSuite(): { readonly db: Database } {
  return storePerSuite(async () => {
    const dir = await freshDataDir();
    return { db: await openDatabase({ kind: 'embedded', dataDir: dir.path }), remove: () => dir.remove() };
  });
}
