/**
 * The benchmark database: a PostgreSQL database of its own (DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/waygate_bench), created on first use through the `test`
 * database and migrated like production. Benchmarks never drop a database.
 */
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { openDatabase, type Database } from '../../src/platform/database.js';
import { runMigrations } from '../../src/platform/migrate.js';

export const DEFAULT_BENCH_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/waygate_bench';
const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

export function benchDatabaseUrl(): string {
  const url = loadConfig().databaseUrl ?? DEFAULT_BENCH_DATABASE_URL;
  const parsed = new URL(url);
  if (!LOOPBACK_HOSTS.has(parsed.hostname)) {
    throw new Error(`Benchmarks run against a local PostgreSQL only; DATABASE_URL points at ${parsed.hostname}`);
  }
  return url;
}

function databaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`Unusable benchmark database name "${name}"`);
  if (name === 'test') throw new Error('The benchmarks seed millions of rows; give them their own database, not "test"');
  return name;
}

/** Creates the database named by `url` when it does not exist yet, connecting through `test`. */
export async function ensureDatabase(url: string): Promise<{ created: boolean; name: string }> {
  const name = databaseName(url);
  const adminUrl = new URL(url);
  adminUrl.pathname = '/test';
  const admin = new pg.Client({ connectionString: adminUrl.toString(), application_name: 'waygate-bench-setup' });
  await admin.connect();
  try {
    const existing = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (existing.rowCount === 0) {
      await admin.query(`CREATE DATABASE "${name}"`);
      return { created: true, name };
    }
    return { created: false, name };
  } finally {
    await admin.end();
  }
}

/** Opens (creating if needed) and migrates the benchmark database. */
export async function openBenchDatabase(url: string, poolSize?: number): Promise<{ database: Database; created: boolean; name: string }> {
  const { created, name } = await ensureDatabase(url);
  const database = await openDatabase({ databaseUrl: url, dataDir: 'unused', ...(poolSize ? { poolSize } : {}) });
  try {
    await runMigrations(database);
  } catch (error) {
    await database.close();
    throw error;
  }
  return { database, created, name };
}
