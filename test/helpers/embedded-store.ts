import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { access, constants, cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll } from 'vitest';
import { type Database, openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/schema.js';

/** Prepared once per run by test/global-setup.ts: an initialised PGlite directory to copy. */
export const PGLITE_TEMPLATE_DIR = path.resolve('test/.tmp/pglite-template');

export interface TempDataDir {
  path: string;
  remove(): Promise<void>;
}

const run = promisify(execFile);

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
async function copyTemplate(destination: string): Promise<void> {
  if (process.platform !== 'win32' && existsSync('/bin/cp')) {
    await run('/bin/cp', ['-R', PGLITE_TEMPLATE_DIR, destination]);
    return;
  }
  await cp(PGLITE_TEMPLATE_DIR, destination, { recursive: true });
}

/**
 * A DATA_DIR with the embedded store already initialised: PGlite's first start (initdb) takes seconds,
 * copying a ready cluster takes milliseconds.
 */
export async function freshDataDir(): Promise<TempDataDir> {
  const dir = await mkdtemp(path.join(await parentOfDataDirs(), 'bridge-data-'));
  await copyTemplate(path.join(dir, 'pglite'));
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
