import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import type { StoreConfig } from '../config/index.js';
import { describeFailure, diskProblemOf } from './disk-errors.js';

/** The one SQL handle a process uses: PostgreSQL through one pg.Pool, or PGlite (PostgreSQL in WebAssembly). */
export interface Database {
  readonly kind: 'postgres' | 'embedded';
  query<Row extends object = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<Row[]>;
  /** Runs `work` in one transaction on one connection; rolls back if it throws. */
  transaction<T>(work: (query: SqlQuery) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /**
   * The embedded store: why its files refuse writes (a full or read-only disk), from the last write that
   * failed so, until a write succeeds again. PostgreSQL answers for its own disk.
   */
  writeProblem?(): string | undefined;
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

export interface DatabaseOptions {
  /** Called after every query, for metrics. */
  onQuery?: (durationMs: number, ok: boolean) => void;
}

/**
 * Every statement is small; one that takes longer than this is stuck (a lock, a half-open connection) and
 * is better failed and retried than waited on: Slack gives an event 3 s to be acknowledged.
 */
const STATEMENT_TIMEOUT_MS = 5_000;
/** A transaction left open by a process that stalled must not hold its locks for long. */
const IDLE_IN_TRANSACTION_TIMEOUT_MS = 30_000;
/**
 * The server-side bounds are set per transaction, in the round trip that opens it, never for the session:
 * a pooler in transaction mode (PgBouncer) refuses them as start-up parameters and hands the server
 * connection to another client after each transaction, so session settings would be lost or leak.
 */
const BEGIN = `BEGIN; SET LOCAL statement_timeout = ${STATEMENT_TIMEOUT_MS}; SET LOCAL idle_in_transaction_session_timeout = ${IDLE_IN_TRANSACTION_TIMEOUT_MS}`;
/**
 * The client-side bound, the only one on a statement run outside a transaction: also covers a connection
 * the network silently dropped. The pool then discards the connection.
 */
const QUERY_TIMEOUT_MS = 6_000;
const CONNECT_TIMEOUT_MS = 3_000;

export async function openDatabase(config: StoreConfig, options: DatabaseOptions = {}): Promise<Database> {
  const db =
    config.kind === 'postgres'
      ? openPostgres(config.databaseUrl, config.poolSize)
      : await openEmbedded(config.dataDir);
  return options.onQuery ? timed(db, options.onQuery) : db;
}

function openPostgres(databaseUrl: string, poolSize: number): Database {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: poolSize,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    query_timeout: QUERY_TIMEOUT_MS,
    // No start-up parameters (statement_timeout, options, ...): see BEGIN.
    // TCP keep-alive: a connection the network dropped without a FIN is noticed and replaced.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  // An idle connection the server or the network ends must not crash the process; the next query reports it.
  pool.on('error', () => {});
  const run = async <Row extends object>(
    on: pg.Pool | pg.PoolClient,
    sql: string,
    params?: readonly unknown[],
  ) => {
    try {
      return (await on.query(sql, params ? [...params] : undefined)).rows as Row[];
    } catch (error) {
      throw asStoreError(error, databaseUrl);
    }
  };
  return {
    kind: 'postgres',
    query: (sql, params) => run(pool, sql, params),
    async transaction<T>(work: (query: SqlQuery) => Promise<T>): Promise<T> {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw asStoreError(error, databaseUrl);
      }
      // The pool listens for errors only on idle connections; one ended between two of our queries would
      // otherwise throw an uncaught 'error'. Its next query reports the failure.
      const ignore = () => {};
      client.on('error', ignore);
      let broken = false;
      try {
        await run(client, BEGIN);
        const result = await work((sql, params) => run(client, sql, params));
        await run(client, 'COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
        throw error;
      } finally {
        client.off('error', ignore);
        client.release(broken);
      }
    },
    close: () => pool.end(),
  };
}

async function openEmbedded(dataDir: string): Promise<Database> {
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
  return {
    kind: 'embedded',
    async query<Row extends object>(sql: string, params?: readonly unknown[]) {
      try {
        const result = await db.query<Row>(sql, params ? [...params] : undefined);
        landed(result.affectedRows);
        return result.rows;
      } catch (error) {
        throw failed(error);
      }
    },
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
    async close() {
      await db.close();
      await releaseLock();
    },
    writeProblem: () => writeProblem,
  };
}

function timed(db: Database, onQuery: (durationMs: number, ok: boolean) => void): Database {
  const time =
    (run: SqlQuery): SqlQuery =>
    async <Row extends object>(sql: string, params?: readonly unknown[]) => {
      const started = performance.now();
      try {
        const rows = await run<Row>(sql, params);
        onQuery(performance.now() - started, true);
        return rows;
      } catch (error) {
        onQuery(performance.now() - started, false);
        throw error;
      }
    };
  return {
    kind: db.kind,
    query: time((sql, params) => db.query(sql, params)),
    // Each statement of a transaction is timed as one, so the metric counts every round trip.
    transaction: (work) => db.transaction((query) => work(time(query))),
    close: () => db.close(),
    writeProblem: db.writeProblem && (() => db.writeProblem?.()),
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

/** `databaseUrl`: PostgreSQL's, so a failure to connect names the setting to check. */
function asStoreError(error: unknown, databaseUrl?: string): StoreError {
  if (error instanceof StoreError) return error;
  const connectFailure = databaseUrl === undefined ? undefined : connectFailureOf(error);
  if (databaseUrl !== undefined && connectFailure !== undefined) {
    return new StoreError(
      `cannot connect to the database in DATABASE_URL (${whereIs(databaseUrl)}): ${connectFailure}; check DATABASE_URL and that PostgreSQL is running and reachable`,
      { cause: error },
    );
  }
  return new StoreError(`store query failed: ${messageOf(error)}`, { cause: error });
}

/** Network errors while connecting, and the server refusing the login or the database, in a few words. */
const CONNECT_FAILURES: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  '28P01': 'password authentication failed',
  '28000': 'login refused',
  '3D000': 'the database does not exist',
};

function connectFailureOf(error: unknown): string | undefined {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const words = typeof code === 'string' ? CONNECT_FAILURES[code] : undefined;
  if (words !== undefined) return `${words} (${String(code)})`;
  // pg's own wording when connectionTimeoutMillis passes.
  if (typeof message === 'string' && /timeout exceeded when trying to connect/i.test(message))
    return 'connection timed out';
  return undefined;
}

/** Host, port and database of a PostgreSQL URL, never its user or password. */
function whereIs(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `${url.host || 'localhost'}${url.pathname.length > 1 ? url.pathname : ''}`;
  } catch {
    return 'not a URL';
  }
}

function messageOf(error: unknown): string {
  return describeFailure(error);
}
