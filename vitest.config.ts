import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 45_000,
    hookTimeout: 30_000,
    // End-to-end files start real servers and share one Postgres database; keep files isolated.
    pool: 'forks',
    // Most of a test's time is spent waiting on servers, timers and PostgreSQL, not on a CPU: four files at a
    // time keep a 2-core machine busy without starving the timing-sensitive ones.
    maxWorkers: 4,
  },
});
