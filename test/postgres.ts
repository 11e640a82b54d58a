/**
 * Where tests that need a real PostgreSQL server find one: TEST_DATABASE_URL, else the local
 * server. In CI (CI=true) a missing server fails the test; elsewhere such tests are skipped.
 */
import pg from 'pg';

export const LOCAL_POSTGRES = 'postgres://postgres@127.0.0.1:5432/test';

export async function postgresUrlForFaultTests(): Promise<string | undefined> {
  const url = process.env.TEST_DATABASE_URL ?? LOCAL_POSTGRES;
  if (process.env.CI === 'true') return url;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    return url;
  } catch {
    return undefined;
  } finally {
    await client.end().catch(() => undefined);
  }
}
