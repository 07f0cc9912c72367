import { createHash } from 'node:crypto';
import type pg from 'pg';

/**
 * Refusals PostgreSQL gives a named statement before running any of it, so the same statement can run again
 * unnamed: 26000, the connection does not hold it (a pooler in transaction mode, PgBouncer before 1.21 or
 * without `max_prepared_statements`, handed the statement to another server connection than the one that
 * prepared it); 42P05, the server connection holds that name already (another client of the pooler prepared
 * it there); 0A000, its result type changed since it was prepared (a newer release altered a table).
 */
const REFUSED_AS_PREPARED = new Set(['26000', '42P05', '0A000']);
/**
 * 42601 for a named statement: a text of several statements (a migration), which PostgreSQL never prepares;
 * or a syntax error, which the same text unnamed reports again.
 */
const NOT_PREPARABLE = '42601';

/** Enough for every statement of the project, which are fixed texts; a text beyond is never named. */
const MAX_NAMED_TEXTS = 200;

/**
 * The statements a process runs outside a transaction, prepared once per connection (named by their text)
 * instead of planned on each run: under the benchmark's steady load, PostgreSQL spent longer planning the
 * inbox's statements than running them (pg_stat_statements with `track_planning`). Where a connection does
 * not keep them (a pooler in transaction mode), PostgreSQL refuses the statement before it runs; it then runs
 * again unnamed, and from then on every statement is planned each time, as without this.
 */
export class PreparedStatements {
  /** Each text's name; null for a text that cannot be prepared. */
  private readonly names = new Map<string, string | null>();
  private enabled = true;

  /** The query to send for `sql`: named while this pool's connections keep prepared statements. */
  queryFor(sql: string, values: unknown[] | undefined): pg.QueryConfig {
    const name = this.enabled ? this.nameOf(sql) : undefined;
    return name === undefined ? { text: sql, values } : { name, text: sql, values };
  }

  /**
   * Whether `error`, from the query `queryFor` gave, was a refusal of the named statement that running it
   * unnamed avoids (nothing of it ran). After a refusal by the connection no statement is named any more;
   * a text that cannot be prepared is never named again.
   */
  refusedAsPrepared(query: pg.QueryConfig, error: unknown): boolean {
    if (query.name === undefined) return false;
    const code = (error as { code?: unknown } | null)?.code;
    if (code === NOT_PREPARABLE) {
      this.names.set(query.text, null);
      return true;
    }
    if (typeof code !== 'string' || !REFUSED_AS_PREPARED.has(code)) return false;
    this.enabled = false;
    return true;
  }

  private nameOf(sql: string): string | undefined {
    const known = this.names.get(sql);
    if (known === null) return undefined;
    if (known !== undefined || this.names.size >= MAX_NAMED_TEXTS) return known;
    const name = `s${createHash('sha256').update(sql).digest('hex').slice(0, 24)}`;
    this.names.set(sql, name);
    return name;
  }
}
