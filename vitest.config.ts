import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
    // *.pg.test.ts need PostgreSQL itself (row locks, pg_stat_activity, several processes on one
    // database): they run in the PostgreSQL pass (TEST_DATABASE_URL) only. *.embedded.test.ts run
    // the CLI on a PGlite data directory of their own whatever the pass: they run in the PGlite
    // pass only, not twice.
    exclude: process.env.TEST_DATABASE_URL ? ['test/**/*.embedded.test.ts'] : ['test/**/*.pg.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // PGlite boots a WASM Postgres per test file; two cores cannot run many at once.
    maxWorkers: 2,
  },
});
