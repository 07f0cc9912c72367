import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 45_000,
    hookTimeout: 30_000,
    // End-to-end files start real servers and share one Postgres database; keep files isolated.
    pool: 'forks',
  },
});
