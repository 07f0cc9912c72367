import { KeyvPostgres } from '@keyv/postgres';
import Keyv from 'keyv';
import type { SqlDatabase } from './database.js';

/**
 * A Keyv whose @keyv/postgres adapter runs its SQL through our own SqlDatabase, so the embedded
 * store (PGlite) and PostgreSQL share one code path and one connection pool per process
 * (the stock adapter keeps a single module-global pool, which two app instances in one process would share).
 */
export function createSqlKeyv<Value>(
  db: SqlDatabase,
  options: { table: string; namespace: string },
): Keyv<Value> {
  class OwnDatabaseAdapter extends KeyvPostgres {
    override async connect() {
      return (sql: string, values?: unknown[]) => db.query(sql, values);
    }
    override async disconnect() {
      // The database belongs to the caller and outlives this adapter.
    }
  }
  const keyv = new Keyv<Value>({
    store: new OwnDatabaseAdapter({ table: options.table }),
    namespace: options.namespace,
    // Without this Keyv turns a store failure into "not found", which would start a second session.
    throwOnErrors: true,
  });
  // Failures reach callers as thrown errors; the event is only a duplicate notification.
  keyv.on('error', () => {});
  return keyv;
}
