import { afterAll, describe } from 'vitest';
import { freshDataDir } from './embedded-store.js';
import { createTestDatabase, type TestDatabase } from './postgres.js';
import type { StoreChoice } from './stack.js';

export type StoreKind = StoreChoice['kind'];
export type PrepareStore = () => Promise<{ store: StoreChoice; cleanup(): Promise<void> }>;

/** A fresh embedded store (an initialised PGlite directory) per call. */
export const prepareEmbeddedStore: PrepareStore = async () => {
  const dir = await freshDataDir();
  return { store: { kind: 'embedded', dataDir: dir.path }, cleanup: () => dir.remove() };
};

/**
 * Registers a suite once with the embedded store and once with PostgreSQL (a throwaway database per
 * preparation, dropped after the file), so both stores prove the same behaviour.
 */
export function forEachStore(
  runPostgres: boolean,
  suite: (kind: StoreKind, prepare: PrepareStore) => void,
): void {
  suite('embedded', prepareEmbeddedStore);
  onPostgres(runPostgres, suite);
}

/**
 * Registers a suite with PostgreSQL only, as `forEachStore` does: for a long suite whose embedded half runs
 * in a file of its own, so the two halves run side by side.
 */
export function onPostgres(
  runPostgres: boolean,
  suite: (kind: 'postgres', prepare: PrepareStore) => void,
): void {
  describe.runIf(runPostgres)('PostgreSQL', () => {
    const databases: TestDatabase[] = [];
    afterAll(async () => {
      await Promise.all(databases.map((database) => database.drop()));
    });
    suite('postgres', async () => {
      const database = await createTestDatabase();
      databases.push(database);
      return { store: { kind: 'postgres', databaseUrl: database.url }, cleanup: async () => {} };
    });
  });
}
