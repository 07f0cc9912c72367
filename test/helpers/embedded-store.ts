import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

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
