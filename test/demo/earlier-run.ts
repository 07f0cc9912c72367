import { mkdir, rename } from 'node:fs/promises';
import path from 'node:path';
import { emptyStoreDir } from '../../demo/demo.js';
import { freshDataDir, type TempDataDir } from '../helpers/embedded-store.js';

/**
 * A --data-dir as an earlier demo run leaves it: with the empty store each run starts on a copy of, so the
 * demo does not initialise one (seconds of CPU). test/demo/local-only.test.ts starts on an empty directory.
 */
export async function dataDirOfAnEarlierRun(): Promise<TempDataDir> {
  // A store of the current schema, made once for the test run (test/helpers/embedded-store.ts).
  const dir = await freshDataDir();
  const emptyStore = emptyStoreDir(dir.path);
  await mkdir(emptyStore);
  await rename(path.join(dir.path, 'pglite'), path.join(emptyStore, 'pglite'));
  return dir;
}
