/**
 * Where tests that need a PostgreSQL server of their own (several CLI processes on one database)
 * find it: TEST_DATABASE_URL, and nowhere else. Such tests are named *.pg.test.ts, so they run
 * in the PostgreSQL pass (`TEST_DATABASE_URL=postgres://… npm test`) and are not collected in the
 * embedded one: `npm test` alone never touches a local PostgreSQL server.
 */
export function postgresUrlForFaultTests(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error('*.pg.test.ts run only with TEST_DATABASE_URL set (vitest.config.ts excludes them otherwise)');
  return url;
}
