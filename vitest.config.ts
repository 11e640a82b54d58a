import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // *.pg.test.ts need PostgreSQL itself (row locks, pg_stat_activity): they run in the
    // PostgreSQL pass (TEST_DATABASE_URL) and are not collected in the PGlite one.
    exclude: process.env.TEST_DATABASE_URL ? [] : ['test/**/*.pg.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // PGlite boots a WASM Postgres per test file; two cores cannot run many at once.
    maxWorkers: 2,
  },
});
