/** The one SQL handle a process uses: PostgreSQL through one pg.Pool, or PGlite (PostgreSQL in WebAssembly). */
export interface Database {
  readonly kind: 'postgres' | 'embedded';
  query<Row extends object = Record<string, unknown>>(
    sql: string,
    params?: readonly unknown[],
  ): Promise<Row[]>;
  /** Runs `work` in one transaction on one connection; rolls back if it throws. */
  transaction<T>(work: (query: SqlQuery) => Promise<T>): Promise<T>;
  /**
   * Resolves when the store answers, on a connection kept for this alone (PostgreSQL): a replica whose
   * connections are all busy with work still has a store that answers.
   */
  ping(): Promise<void>;
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
