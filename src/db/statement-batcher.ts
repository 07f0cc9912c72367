import pg from 'pg';
import { prepareValue } from 'pg/lib/utils.js';

export interface BatcherOptions {
  /** Batches in flight at once (each on its own connection). */
  lanes: number;
  /** Statements sent in one round trip at most. */
  maxBatch: number;
}

/** One statement waiting for its turn. */
interface Pending {
  name: string;
  sql: string;
  params: readonly unknown[];
  resolve: (rows: object[]) => void;
  reject: (error: unknown) => void;
}

/** Runs one statement by itself (the ordinary extended-protocol path with its own error handling). */
export type SingleRunner = (sql: string, params: readonly unknown[]) => Promise<object[]>;

/**
 * Group commit for PostgreSQL: statements issued in the same turn of the event loop, or while the lanes
 * are busy, go together, in one round trip and one transaction, as `EXECUTE`s of statements prepared once
 * per connection.
 *
 * On a loopback or in a VM, each round trip costs far more CPU (socket writes, wake-ups on both sides,
 * a WAL flush per commit) than the small statements the bot runs per message, so under load this is
 * what keeps the bot and PostgreSQL from saturating. A statement with nothing to go with goes alone by the
 * ordinary path: a quiet bot pays one turn of the event loop. A batch the server refuses (a deadlock, a stale
 * plan, a constraint) is rolled back whole and its statements are run again one by one, so each caller
 * gets its own result or error.
 */
export class StatementBatcher {
  private readonly queue: Pending[] = [];
  private busyLanes = 0;
  private dispatchScheduled = false;
  /** Statements prepared with SQL `PREPARE` on each connection (a namespace apart from the driver's). */
  private readonly prepared = new WeakMap<pg.PoolClient, Set<string>>();

  constructor(
    /** Checks a connection out of the pool (the caller's, so the pool's error handling applies). */
    private readonly connect: () => Promise<pg.PoolClient>,
    private readonly runSingle: SingleRunner,
    private readonly options: BatcherOptions,
  ) {}

  run(name: string, sql: string, params: readonly unknown[]): Promise<object[]> {
    return new Promise((resolve, reject) => {
      this.queue.push({ name, sql, params, resolve, reject });
      if (this.dispatchScheduled) return;
      // Statements issued in the same turn of the event loop (say, the next step of every job whose
      // statement just came back) go together, at the cost of that one turn.
      this.dispatchScheduled = true;
      setImmediate(() => {
        this.dispatchScheduled = false;
        this.dispatch();
      });
    });
  }

  private dispatch(): void {
    while (this.busyLanes < this.options.lanes && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.options.maxBatch);
      this.busyLanes++;
      void this.send(batch).finally(() => {
        this.busyLanes--;
        this.dispatch();
      });
    }
  }

  private async send(batch: Pending[]): Promise<void> {
    const [only] = batch;
    if (only && batch.length === 1) {
      await this.runSingle(only.sql, only.params).then(only.resolve, only.reject);
      return;
    }
    let client: pg.PoolClient;
    try {
      client = await this.connect();
    } catch (error) {
      for (const pending of batch) pending.reject(error);
      return;
    }
    let prepared = this.prepared.get(client);
    if (!prepared) {
      prepared = new Set();
      this.prepared.set(client, prepared);
    }
    const text: string[] = [];
    /** Index in the server's answer of each statement's own result. */
    const resultIndex: number[] = [];
    const preparing: string[] = [];
    for (const pending of batch) {
      const sqlName = `batch_${pending.name}`;
      if (!prepared.has(sqlName) && !preparing.includes(sqlName)) {
        text.push(`PREPARE ${sqlName} AS ${pending.sql}`);
        preparing.push(sqlName);
      }
      resultIndex.push(text.length);
      text.push(`EXECUTE ${sqlName}(${pending.params.map(literalOf).join(', ')})`);
    }
    let results: pg.QueryResult[];
    try {
      const answer: pg.QueryResult | pg.QueryResult[] = await client.query(text.join(';\n'));
      results = Array.isArray(answer) ? answer : [answer];
    } catch (error) {
      // A server-side error rolled the whole batch back: nothing of it happened. The connection may hold
      // some of this batch's PREPAREs or not, so it is not reused.
      client.release(true);
      if (!isServerError(error)) {
        for (const pending of batch) pending.reject(error);
        return;
      }
      await Promise.all(
        batch.map((pending) =>
          this.runSingle(pending.sql, pending.params).then(pending.resolve, pending.reject),
        ),
      );
      return;
    }
    for (const name of preparing) prepared.add(name);
    client.release();
    for (const [index, pending] of batch.entries())
      pending.resolve(results[resultIndex[index] ?? -1]?.rows ?? []);
  }
}

/** An error PostgreSQL itself reported (it has a SQLSTATE), as opposed to a lost connection. */
function isServerError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

/**
 * A parameter as an SQL literal of unknown type: PostgreSQL resolves it against the prepared statement's
 * parameter type exactly as it does a parameter sent untyped by the driver, which is how `pg` sends them.
 */
export function literalOf(value: unknown): string {
  const text = prepareValue(value);
  if (text === null) return 'NULL';
  if (Buffer.isBuffer(text)) return `'\\x${text.toString('hex')}'`;
  return pg.escapeLiteral(text);
}
