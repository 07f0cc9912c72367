import { mkdir } from 'node:fs/promises';
import { lockDataDir } from './data-dir-lock.js';
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
