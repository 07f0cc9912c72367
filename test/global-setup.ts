import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { TestProject } from 'vitest/node';
import { compileSources } from './helpers/compiled-sources.js';
import { PGLITE_TEMPLATE_DIR, prepareMigratedTemplate } from './helpers/embedded-store.js';
import {
  dropThisRunsDatabases,
  postgresReachable,
  prepareTemplateDatabase,
  RUN_ID_VARIABLE,
} from './helpers/postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where test/helpers/compiled-sources.ts compiled src for this run. */
    compiledSources: string;
  }
}

/**
 * Initialises one PGlite cluster that embedded-store tests copy instead of running initdb each time, and a
 * copy of it migrated to the current schema; makes the migrated template database the PostgreSQL tests copy,
 * when the server is there; compiles src once for the tests that start the bot in a child process.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const run = project.config.env[RUN_ID_VARIABLE];
  // Independent of one another (a compiler process, PGlite in this process, the PostgreSQL server), so side by
  // side: on a fresh checkout the first test file starts seconds sooner.
  const [compiledSources, , withPostgres] = await Promise.all([
    compileSources(path.resolve(import.meta.dirname, '..')),
    preparePgliteTemplates(),
    // Without a server the PostgreSQL tests are skipped, or fail in CI, each saying why.
    postgresReachable().then(async (reachable) => {
      if (reachable) await prepareTemplateDatabase();
      return reachable;
    }),
  ]);
  project.provide('compiledSources', compiledSources);
  // The test databases the run's processes kept for reuse (test/helpers/postgres.ts).
  return async () => {
    if (withPostgres && run) await dropThisRunsDatabases(run);
  };
}

async function preparePgliteTemplates(): Promise<void> {
  if (!existsSync(path.join(PGLITE_TEMPLATE_DIR, 'PG_VERSION'))) {
    await mkdir(path.dirname(PGLITE_TEMPLATE_DIR), { recursive: true });
    const db = await PGlite.create(PGLITE_TEMPLATE_DIR);
    await db.close();
  }
  await prepareMigratedTemplate();
}
