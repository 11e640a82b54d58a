/** What the benchmarks do through the product, as a user would: a database, a tenant, a linked device. */
import pg from 'pg';
import { openDatabase } from '../../src/platform/database.js';
import { runMigrations } from '../../src/platform/migrate.js';
import { AccountService } from '../../src/directory/accounts.js';
import { TokenService } from '../../src/directory/tokens.js';

/** Runs `work` on the `test` database for the benchmark's own database (never `test`), named waygate_bench_…. */
async function administer(url: string, work: (client: pg.Client, name: string) => Promise<void>): Promise<void> {
  const name = new URL(url).pathname.slice(1);
  if (!/^waygate_bench_\w+$/.test(name)) throw new Error(`Refusing to recreate or drop a database not named waygate_bench_…: ${name}`);
  const admin = new URL(url);
  admin.pathname = '/test';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    await work(client, name);
  } finally {
    await client.end();
  }
}

/** Drops and creates the benchmark's own database. */
export async function recreateDatabase(url: string): Promise<void> {
  await administer(url, async (client, name) => {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${name}`);
  });
}

/** Drops the benchmark's own database (for seeds too large to keep between runs). */
export async function dropDatabase(url: string): Promise<void> {
  await administer(url, async (client, name) => {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
}

/** Migrates the database and creates an unlimited account; returns its API token. */
export async function makeTenant(databaseUrl: string, label = 'bench'): Promise<string> {
  const database = await openDatabase({ databaseUrl, dataDir: 'unused', poolSize: 2 });
  try {
    await runMigrations(database);
    const { accountId } = await new AccountService(database).createAccount({ email: `bench-${label}-${Date.now()}@waygate.test`, password: 'benchmark password', plan: 'unlimited' });
    return (await new TokenService(database).create(accountId, { name: 'bench' })).token;
  } finally {
    await database.close();
  }
}

export async function api<T>(origin: string, token: string, method: string, route: string, body?: unknown): Promise<{ status: number; json: T }> {
  const response = await fetch(`${origin}${route}`, {
    method,
    headers: { 'x-api-key': token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as T };
}

/** Adds a device, plays the phone scanning its QR code, and waits until it is CONNECTED. */
export async function linkDevice(origin: string, token: string, phoneNumber = '6281100000001'): Promise<string> {
  const created = await api<{ data: { id: string }; qr: { code: string } | null }>(origin, token, 'POST', '/devices', { name: 'bench phone' });
  if (created.status !== 201 || !created.json.qr) throw new Error(`POST /devices answered ${created.status}: ${JSON.stringify(created.json)}`);
  await api(origin, token, 'POST', '/sandbox/scan', { code: created.json.qr.code, phoneNumber });
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline) {
    const device = await api<{ data: { status: string } }>(origin, token, 'GET', `/devices/${created.json.data.id}`);
    if (device.json.data.status === 'CONNECTED') return created.json.data.id;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('The bench device did not connect');
}

/** Recipients that avoid the sandbox's magic endings (0000–0003), so every message is SENT. */
export function recipients(count: number, prefix: string): string[] {
  const list: string[] = [];
  for (let i = 0; list.length < count; i++) if (i % 10_000 >= 4) list.push(`${prefix}${String(i).padStart(7, '0')}`);
  return list;
}
