import pg from 'pg';
import type { StoreConfig } from '../config/index.js';
import { openEmbedded } from './embedded.js';
import { PreparedStatements } from './prepared-statements.js';
import type { Database, SqlQuery } from './sql.js';
import { asStoreError, StoreError } from './store-error.js';

export { dataDirHolder } from './data-dir-lock.js';
export type { Database, SqlQuery } from './sql.js';
export { StoreError };

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
/** The readiness check gives up after 2 s: a ping connection silent that long is replaced by the next check. */
const PING_TIMEOUT_MS = 2_000;

/** The PostgreSQL connections one process opens at most: its pool, and the readiness check's own. */
export function postgresConnections(poolSize: number): number {
  return poolSize + 1;
}

export async function openDatabase(config: StoreConfig, options: DatabaseOptions = {}): Promise<Database> {
  const db =
    config.kind === 'postgres'
      ? openPostgres(config.databaseUrl, config.poolSize)
      : await openEmbedded(config.dataDir);
  return options.onQuery ? timed(db, options.onQuery) : db;
}

function openPostgres(databaseUrl: string, poolSize: number): Database {
  const connections = {
    connectionString: databaseUrl,
    // No start-up parameters (statement_timeout, options, ...): see BEGIN.
    // TCP keep-alive: a connection the network dropped without a FIN is noticed and replaced.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
  const pool = new pg.Pool({
    ...connections,
    max: poolSize,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
    query_timeout: QUERY_TIMEOUT_MS,
  });
  // Its own connection, so the answer does not wait behind the work queued for the pool.
  const pings = new pg.Pool({
    ...connections,
    max: 1,
    connectionTimeoutMillis: PING_TIMEOUT_MS,
    // Kept between probes (seconds apart), so a probe does not open a connection.
    idleTimeoutMillis: 60_000,
    query_timeout: PING_TIMEOUT_MS,
  });
  // An idle connection the server or the network ends must not crash the process; the next query reports it.
  pool.on('error', () => {});
  pings.on('error', () => {});
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
  // Only statements outside a transaction: one refused inside would abort the transaction around it.
  const prepared = new PreparedStatements();
  const runPrepared = async <Row extends object>(sql: string, params?: readonly unknown[]) => {
    const query = prepared.queryFor(sql, params ? [...params] : undefined);
    try {
      return (await pool.query(query)).rows as Row[];
    } catch (error) {
      if (prepared.refusedAsPrepared(query, error)) return run<Row>(pool, sql, params);
      throw asStoreError(error, databaseUrl);
    }
  };
  return {
    kind: 'postgres',
    query: runPrepared,
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
    async ping() {
      await run(pings, 'SELECT 1');
    },
    close: async () => {
      await Promise.all([pool.end(), pings.end()]);
    },
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
    ping: () => db.ping(),
    close: () => db.close(),
    writeProblem: db.writeProblem && (() => db.writeProblem?.()),
  };
}
