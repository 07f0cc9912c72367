import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describeFailure, diskProblemOf } from './disk-errors.js';
import type { Database, SqlQuery } from './sql.js';
import { asStoreError, messageOf, StoreError } from './store-error.js';

/** The embedded store: PGlite (PostgreSQL in WebAssembly) in DATA_DIR, one process's at a time. */
export async function openEmbedded(dataDir: string): Promise<Database> {
  // Loaded lazily: deployments on PostgreSQL never pay for the WebAssembly module.
  const { PGlite } = await import('@electric-sql/pglite');
  try {
    await mkdir(dataDir, { recursive: true });
  } catch (error) {
    throw new StoreError(`cannot create DATA_DIR ${dataDir}: ${messageOf(error)}`, { cause: error });
  }
  const releaseLock = await lockDataDir(dataDir);
  let db: InstanceType<typeof PGlite>;
  try {
    db = await PGlite.create(`${dataDir}/pglite`);
  } catch (error) {
    await releaseLock();
    throw new StoreError(`cannot open the embedded store under ${dataDir}: ${describeFailure(error)}`, {
      cause: error,
    });
  }
  // A full or read-only disk shows in the writes that fail; the next one that lands ends it.
  let writeProblem: string | undefined;
  const failed = (error: unknown) => {
    const problem = diskProblemOf(error);
    if (problem?.refusesWrites) writeProblem = `${problem.text} under ${dataDir}`;
    return asStoreError(error);
  };
  const landed = (affectedRows: number | undefined) => {
    if ((affectedRows ?? 0) > 0) writeProblem = undefined;
  };
  const query = async <Row extends object>(sql: string, params?: readonly unknown[]) => {
    try {
      const result = await db.query<Row>(sql, params ? [...params] : undefined);
      landed(result.affectedRows);
      return result.rows;
    } catch (error) {
      throw failed(error);
    }
  };
  return {
    kind: 'embedded',
    query,
    async transaction<T>(work: (query: SqlQuery) => Promise<T>): Promise<T> {
      let affected = 0;
      try {
        const result = await db.transaction((tx) =>
          work(async <Row extends object>(sql: string, params?: readonly unknown[]) => {
            const rows = await tx.query<Row>(sql, params ? [...params] : undefined);
            affected += rows.affectedRows ?? 0;
            return rows.rows;
          }),
        );
        landed(affected);
        return result;
      } catch (error) {
        throw failed(error);
      }
    },
    // One process's database, one queue: nothing to keep apart.
    async ping() {
      await query('SELECT 1');
    },
    async close() {
      await db.close();
      await releaseLock();
    },
    writeProblem: () => writeProblem,
  };
}

/**
 * PGlite is one process's database: two processes on one DATA_DIR would corrupt it. A lock file with the
 * owner's pid keeps a second bot (or `npm run sessions`) out; a lock left by a dead process is taken over.
 */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const lockPath = path.join(dataDir, 'store.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(lockPath, String(process.pid), { flag: 'wx' });
      return () => rm(lockPath, { force: true });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EACCES' || code === 'EROFS' || code === 'EPERM') {
        throw new StoreError(
          `DATA_DIR ${dataDir} is not writable by this process (uid ${process.getuid?.() ?? '?'}); make it writable (e.g. chown the volume), or set DATABASE_URL`,
        );
      }
      if (code !== 'EEXIST')
        throw new StoreError(`cannot lock the embedded store in ${dataDir}: ${messageOf(error)}`);
      const owner = await embeddedStoreOwner(dataDir);
      if (owner !== undefined) {
        throw new StoreError(
          `the embedded store in ${dataDir} is in use by process ${owner}${owner === process.pid ? ' (this one)' : ''}; stop it first, or use DATABASE_URL to share a store`,
        );
      }
      await rm(lockPath, { force: true });
    }
  }
  throw new StoreError(`cannot lock the embedded store in ${dataDir}`);
}

/** The live process holding the embedded store in `dataDir`, if any (its lock names it). */
export async function embeddedStoreOwner(dataDir: string): Promise<number | undefined> {
  const owner = Number((await readFile(path.join(dataDir, 'store.lock'), 'utf8').catch(() => '')).trim());
  return Number.isInteger(owner) && owner > 0 && isAlive(owner) ? owner : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
