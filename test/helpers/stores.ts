import { afterAll, describe, it } from 'vitest';
import { freshDataDir } from './embedded-store.js';
import { createTestDatabase, shouldRunPostgresTests, type TestDatabase } from './postgres.js';
import type { StoreChoice } from './stack.js';

export type StoreKind = StoreChoice['kind'];
export type PrepareStore = () => Promise<{ store: StoreChoice; cleanup(): Promise<void> }>;

/** A fresh embedded store (an initialised PGlite directory) per call. */
export const prepareEmbeddedStore: PrepareStore = async () => {
  const dir = await freshDataDir();
  return { store: { kind: 'embedded', dataDir: dir.path }, cleanup: () => dir.remove() };
};

/**
 * The store a bot runs on in a test whose subject is not the store (docs/development.md, "Which suites run
 * on both stores"): PostgreSQL when the run has it (always in CI), as a bot starts and queries there for a
 * fraction of the CPU PGlite takes in the test's own process; else the embedded store, so a machine without
 * PostgreSQL still runs every such test. `runPostgres` is `shouldRunPostgresTests()`.
 */
export function storeForBots(runPostgres: boolean): StoreKind {
  return runPostgres ? 'postgres' : 'embedded';
}

export interface TestStore {
  store: StoreChoice;
  remove(): Promise<void>;
}

let runPostgres: Promise<boolean> | undefined;

/**
 * A fresh store of the current schema for a test's bot, on the store `storeForBots` picks: a database of its
 * own on PostgreSQL, or a copy of the embedded store's template. Tests about the embedded store, the default
 * configuration or DATA_DIR use `freshDataDir` instead.
 */
export async function testStore(): Promise<TestStore> {
  runPostgres ??= shouldRunPostgresTests();
  if (storeForBots(await runPostgres) === 'postgres') {
    const database = await createTestDatabase({ schema: 'current' });
    return { store: { kind: 'postgres', databaseUrl: database.url }, remove: () => database.drop() };
  }
  const { store, cleanup } = await prepareEmbeddedStore();
  return { store, remove: cleanup };
}

/** Registers one test case, as Vitest's `it` does. */
export type RegisterCase = (name: string, test: () => Promise<void>, timeoutMs?: number) => void;

/**
 * Where an end-to-end suite's cases run, decided here for every suite (docs/development.md, "Which suites run
 * on both stores"). A case whose outcome depends on what the store keeps or how it behaves (what survives a
 * restart, a deletion recorded while the agent service is down, text the store must clean) runs on every
 * store. A case about the bot's behaviour runs on one, the store `storeForBots` picks: the same SQL on the
 * other is proved by the store contract tests (test/inbox, test/sessions/store.test.ts, test/store), which
 * run on both.
 */
export interface StoreCases {
  /** A case whose outcome depends on the store: registered on every store. */
  onEveryStore: RegisterCase;
  /** A case about the bot's behaviour, whatever the store: registered on the store bots run on. */
  onOneStore: RegisterCase;
}

function casesOn(kind: StoreKind, runPostgres: boolean): StoreCases {
  return { onEveryStore: it, onOneStore: kind === storeForBots(runPostgres) ? it : () => {} };
}

/**
 * Registers a suite once with the embedded store and once with PostgreSQL (a throwaway database per
 * preparation, dropped after the file); its cases choose, through `cases`, whether both stores run them.
 */
export function forEachStore(
  runPostgres: boolean,
  suite: (kind: StoreKind, prepare: PrepareStore, cases: StoreCases) => void,
): void {
  suite('embedded', prepareEmbeddedStore, casesOn('embedded', runPostgres));
  onPostgres(runPostgres, (kind, prepare) => suite(kind, prepare, casesOn(kind, runPostgres)));
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
      const database = await createTestDatabase({ schema: 'current' });
      databases.push(database);
      return { store: { kind: 'postgres', databaseUrl: database.url }, cleanup: async () => {} };
    });
  });
}
