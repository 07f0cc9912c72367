import { KeyvPostgres } from '@keyv/postgres';
import Keyv from 'keyv';
import { type Database, StoreError } from './database.js';
import { SESSIONS_TABLE } from './schema.js';

/**
 * A Keyv on @keyv/postgres whose SQL runs through our Database: the embedded store (PGlite) and PostgreSQL
 * share one code path, and PostgreSQL keeps one pool per process (the stock adapter opens a pool of its own,
 * module-global, shared by every Keyv in the process).
 */
export function createSessionKeyv<Value>(db: Database, namespace: string): Keyv<Value> {
  class OwnDatabaseAdapter extends KeyvPostgres {
    override async connect() {
      return (sql: string, values?: unknown[]) => db.query(sql, values);
    }
    override async disconnect() {
      // The database belongs to the caller and outlives this adapter.
    }
  }
  const keyv = new Keyv<Value>({
    store: new OwnDatabaseAdapter({ table: SESSIONS_TABLE }),
    namespace,
    // Without this Keyv turns a store failure into "not found", which would start a second session.
    throwOnErrors: true,
  });
  // Failures reach callers as thrown errors; the event is only a duplicate notification.
  keyv.on('error', () => {});
  return keyv;
}

/**
 * Makes sure Keyv's table exists, at start-up. @keyv/postgres creates it from its constructor and reports a
 * failure only as an event, so a store blip then would leave no table, and every conversation failing, until
 * a restart: one read through Keyv turns that into a start-up failure.
 */
export async function checkSessionTable(db: Database): Promise<void> {
  try {
    await createSessionKeyv<unknown>(db, 'start-up-check').get('table');
  } catch (error) {
    throw new StoreError(
      `the session table (${SESSIONS_TABLE}) could not be created or read: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}
