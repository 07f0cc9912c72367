import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type Database, openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/schema.js';

/** Prepared once per run by test/global-setup.ts: an initialised PGlite directory to copy. */
export const PGLITE_TEMPLATE_DIR = path.resolve('test/.tmp/pglite-template');

export interface TempDataDir {
  path: string;
  remove(): Promise<void>;
}

/**
 * A DATA_DIR with the embedded store already initialised: PGlite's first start (initdb) takes seconds,
 * copying a ready cluster takes milliseconds.
 */
export async function freshDataDir(): Promise<TempDataDir> {
  const dir = await mkdtemp(path.join(tmpdir(), 'bridge-data-'));
  await cp(PGLITE_TEMPLATE_DIR, path.join(dir, 'pglite'), { recursive: true });
  return { path: dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/**
 * An embedded store with the bot's schema for the tests of the enclosing `describe`: opened before them,
 * closed and removed after. Read `db` inside the tests.
 */
export function embeddedStorePerSuite(): { readonly db: Database } {
  let dir: TempDataDir | undefined;
  let db: Database | undefined;
  beforeAll(async () => {
    dir = await freshDataDir();
    db = await openDatabase({ kind: 'embedded', dataDir: dir.path });
    await migrate(db);
  });
  afterAll(async () => {
    await db?.close();
    await dir?.remove();
  });
  return {
    get db(): Database {
      if (!db) throw new Error('the embedded store is opened in beforeAll');
      return db;
    },
  };
}
