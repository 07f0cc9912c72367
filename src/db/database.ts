import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { StoreConfig } from '../config.js';
import { StatementBatcher } from './statement-batcher.js';

/** The one SQL handle a process uses: real PostgreSQL, or PGlite (PostgreSQL in WebAssembly) on local disk. */
export interface SqlDatabase {
  readonly kind: 'postgres' | 'embedded';
  query<Row extends object = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<Row[]>;
  /**
   * A progress write whose loss in a crash of the database server itself is tolerated, because whoever
   * resumes the work can tell what happened without it (a checkpoint after the prompt was recorded as
   * sent). PostgreSQL commits it without waiting for the disk flush (synchronous_commit off): other
   * connections, replicas and restarts of the bot see it at once like any write. Everything a guarantee
   * rests on (recording an event before the ack, "sent" before sending) goes through `query`.
   */
  checkpoint<Row extends object = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<Row[]>;
  /** Runs `work` in one transaction on one connection; rolls back if it throws. */
  transaction<T>(work: (query: SqlQuery) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export type SqlQuery = <Row extends object = Record<string, unknown>>(
  sql: string,
  params?: readonly unknown[],
) => Promise<Row[]>;

/** Any failure to reach or use the store; never to be confused with "no record". */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}

export async function openDatabase(config: StoreConfig): Promise<SqlDatabase> {
  return config.kind === 'postgres' ? openPostgres(config.databaseUrl) : openEmbedded(config.dataDir);
}

/** Batches in flight at once on each pool: few, so that statements arriving meanwhile go together. */
const DURABLE_LANES = 16;
const CHECKPOINT_LANES = 8;

function openPostgres(databaseUrl: string): SqlDatabase {
  const newPool = (max: number, options?: string) => {
    const created = new pg.Pool({
      connectionString: databaseUrl,
      max,
      connectionTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      ...(options ? { options } : {}),
    });
    // An idle client losing its connection must not crash the process; the next query reports the failure.
    created.on('error', () => {});
    return created;
  };
  // Intake (before the Slack ack) and workers share it; a roomy pool keeps acks from queueing.
  const pool = newPool(40);
  // Checkpoints: each commit would otherwise wait for its own disk flush, the costliest part of a write.
  const checkpointPool = newPool(20, '-c synchronous_commit=off');
  const run = async <Row extends object>(on: pg.Pool, sql: string, params?: readonly unknown[]) => {
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return (await on.query(statementOf(sql, params))).rows as Row[];
        } catch (error) {
          if (isStalePlan(error) && attempt === 1) {
            // A migration changed a table under statements prepared before it: name them all afresh.
            renameStatements();
          } else if (isDeadlock(error) && attempt < DEADLOCK_ATTEMPTS) {
            // PostgreSQL rolled this statement back to break a lock cycle; it goes again shortly.
            await new Promise((resolve) => setTimeout(resolve, Math.random() * 10 * attempt));
          } else {
            throw error;
          }
        }
      }
    } catch (error) {
      throw asStoreError(error);
    }
  };
  // Statements issued while others are in flight go together (see StatementBatcher); DDL and other
  // statements without parameters go by themselves.
  const batched = (on: pg.Pool, lanes: number) => {
    const batcher = new StatementBatcher(
      () => checkOut(on),
      (sql, params) => run(on, sql, params),
      { lanes, maxBatch: 64 },
    );
    return async <Row extends object>(sql: string, params?: readonly unknown[]): Promise<Row[]> => {
      const name = params && params.length > 0 ? statementName(sql) : undefined;
      if (!params || name === undefined) return run<Row>(on, sql, params);
      try {
        return (await batcher.run(name, sql, params)) as Row[];
      } catch (error) {
        throw asStoreError(error);
      }
    };
  };
  return {
    kind: 'postgres',
    query: batched(pool, DURABLE_LANES),
    checkpoint: batched(checkpointPool, CHECKPOINT_LANES),
    async transaction<T>(work: (query: SqlQuery) => Promise<T>): Promise<T> {
      let client: pg.PoolClient;
      try {
        client = await checkOut(pool);
      } catch (error) {
        throw asStoreError(error);
      }
      const query: SqlQuery = async <Row extends object>(sql: string, params?: readonly unknown[]) => {
        try {
          return (await client.query(statementOf(sql, params))).rows as Row[];
        } catch (error) {
          throw asStoreError(error);
        }
      };
      try {
        await query('BEGIN');
        const result = await work(query);
        await query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      } finally {
        client.release();
      }
    },
    close: async () => {
      await Promise.all([pool.end(), checkpointPool.end()]);
    },
  };
}

const listenedClients = new WeakSet<pg.PoolClient>();

/**
 * A connection from the pool. The pool listens for errors only on idle connections: a connection the
 * server ends (a restart, `pg_terminate_backend`) while it is checked out between two queries would
 * otherwise throw an uncaught 'error' and take the process down. Its next query reports the failure.
 */
async function checkOut(pool: pg.Pool): Promise<pg.PoolClient> {
  const client = await pool.connect();
  if (!listenedClients.has(client)) {
    listenedClients.add(client);
    client.on('error', () => {});
  }
  return client;
}

const statementNames = new Map<string, string>();
let statementGeneration = 1;
/** Our SQL texts are a fixed set; past this, something builds SQL dynamically and gets no name. */
const MAX_NAMED_STATEMENTS = 500;

/**
 * A parameterized query gets a stable name per SQL text, so each pooled connection prepares it once and
 * PostgreSQL reuses its plan: parsing and planning the inbox's CTEs cost more than running them.
 * Statements without parameters (DDL, possibly several in one string) stay unnamed.
 */
function statementOf(sql: string, params: readonly unknown[] | undefined): pg.QueryConfig {
  if (!params || params.length === 0) return { text: sql };
  return { name: statementName(sql), text: sql, values: [...params] };
}

/** The stable name of a parameterized SQL text (undefined past MAX_NAMED_STATEMENTS). */
function statementName(sql: string): string | undefined {
  let name = statementNames.get(sql);
  if (name === undefined && statementNames.size < MAX_NAMED_STATEMENTS) {
    name = `bridge_${statementGeneration}_${statementNames.size + 1}`;
    statementNames.set(sql, name);
  }
  return name;
}

function renameStatements(): void {
  statementNames.clear();
  statementGeneration++;
}

const DEADLOCK_ATTEMPTS = 5;

/** PostgreSQL chose this statement's transaction to break a deadlock: nothing of it happened. */
function isDeadlock(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === '40P01';
}

/** PostgreSQL refuses a prepared statement whose result columns changed since it was prepared. */
function isStalePlan(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return code === '0A000' && typeof message === 'string' && message.includes('cached plan must not change');
}

async function openEmbedded(dataDir: string): Promise<SqlDatabase> {
  // Loaded lazily: deployments on PostgreSQL never pay for the WebAssembly module.
  const { PGlite } = await import('@electric-sql/pglite');
  await mkdir(dataDir, { recursive: true });
  const releaseLock = await lockDataDir(dataDir);
  let db: InstanceType<typeof PGlite>;
  try {
    db = await PGlite.create(`${dataDir}/pglite`);
  } catch (error) {
    await releaseLock();
    throw new StoreError(`cannot open the embedded store under ${dataDir}: ${messageOf(error)}`, {
      cause: error,
    });
  }
  async function embeddedQuery<Row extends object>(sql: string, params?: readonly unknown[]): Promise<Row[]> {
    try {
      const result = await db.query<Row>(sql, params ? [...params] : undefined);
      return result.rows;
    } catch (error) {
      throw asStoreError(error);
    }
  }
  return {
    kind: 'embedded',
    query: embeddedQuery,
    // One process owns the embedded store, so every write goes the same way.
    checkpoint: embeddedQuery,
    async transaction<T>(work: (query: SqlQuery) => Promise<T>): Promise<T> {
      try {
        return await db.transaction(async (tx) =>
          work(async <Row extends object>(sql: string, params?: readonly unknown[]) => {
            return (await tx.query<Row>(sql, params ? [...params] : undefined)).rows;
          }),
        );
      } catch (error) {
        throw asStoreError(error);
      }
    },
    async close() {
      await db.close();
      await releaseLock();
    },
  };
}

/**
 * PGlite is one process's database: two processes on one DATA_DIR would corrupt it. A lock file with
 * the owner's pid keeps a second bot (or `npm run sessions`) out; a lock left by a dead process is taken over.
 */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const lockPath = path.join(dataDir, 'store.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await writeFile(lockPath, String(process.pid), { flag: 'wx' });
      return () => rm(lockPath, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const owner = Number((await readFile(lockPath, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(owner) && owner > 0 && isAlive(owner)) {
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

function asStoreError(error: unknown): StoreError {
  return error instanceof StoreError
    ? error
    : new StoreError(`store query failed: ${messageOf(error)}`, { cause: error });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
