/**
 * Test support: a real database per test file (in-memory PGlite by default, PostgreSQL when
 * TEST_DATABASE_URL is set) and a fresh tenant (account + token) per test, with random ids, so
 * tests never share state.
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import pg from 'pg';
import { expect, inject } from 'vitest';
import { buildApp, createServices, type Services } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { openDatabase, type Database } from '../src/platform/database.js';
import { runMigrations } from '../src/platform/migrate.js';
import { WorkerRuntime } from '../src/worker-runtime.js';
import pino from 'pino';

export interface TestContext {
  app: FastifyInstance;
  database: Database;
  services: Services;
  config: Config;
  worker: WorkerRuntime | undefined;
  close(): Promise<void>;
}

/** A database of this test file's own: an in-memory PGlite, or a copy of the run's migrated PostgreSQL template. */
export async function openTestDatabase(): Promise<Database> {
  const postgres = inject('postgres');
  if (!postgres) {
    const template = inject('pgliteTemplate');
    const loadDataDir = template ? new Blob([await readFile(template)]) : undefined;
    const database = await openDatabase({ dataDir: 'memory://', loadDataDir });
    await runMigrations(database);
    return database;
  }
  const name = `${postgres.template}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: postgres.serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${postgres.template}`);
  } finally {
    await admin.end();
  }
  const url = new URL(postgres.serverUrl);
  url.pathname = `/${name}`;
  const database = await openDatabase({ databaseUrl: url.toString(), dataDir: 'unused', poolSize: 5 });
  const close = database.close.bind(database);
  database.close = async () => {
    await close();
    const cleanup = new pg.Client({ connectionString: postgres.serverUrl });
    await cleanup.connect();
    await cleanup.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).finally(() => cleanup.end());
  };
  return database;
}

export async function createTestApp(
  env: Record<string, string> = {},
  /** worker: run the worker role in this process too (as `serve --role all`); directHandOver: false makes direct sends go through the queue as with separate processes. */
  options: { logStream?: NodeJS.WritableStream; worker?: boolean; directHandOver?: boolean } = {},
): Promise<TestContext> {
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    // Listening on loopback only: a fresh install's first sign-up needs no setup code.
    HOST: '127.0.0.1',
    RATE_LIMIT_PER_MINUTE: '100000',
    RATE_LIMIT_ANONYMOUS_PER_MINUTE: '100000',
    SANDBOX_RECEIPT_MS: '50',
    SEND_WAIT_MS: '5000',
    LEASE_MS: '3000',
    ...env,
  });
  const database = await openTestDatabase();
  let worker: WorkerRuntime | undefined;
  const services = createServices(database, config, options.directHandOver !== false ? { directHost: () => worker?.supervisor } : {});
  const app = await buildApp({ config, database, services, ...(options.logStream ? { logStream: options.logStream } : {}) });
  await app.ready();
  if (options.worker) {
    worker = new WorkerRuntime(config, database, services.bus, pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }));
    await worker.start();
  }
  return {
    app,
    database,
    services,
    config,
    worker,
    async close() {
      await worker?.stop();
      await app.close();
      await services.close();
      await database.close();
    },
  };
}

export interface Tenant {
  accountId: string;
  email: string;
  token: string;
  headers: { 'x-api-key': string };
}

export async function createTenant(ctx: TestContext, options: { plan?: string; scopes?: string[] } = {}): Promise<Tenant> {
  const email = `t-${randomBytes(6).toString('hex')}@example.test`;
  const { accountId } = await ctx.services.accounts.createAccount({ email, password: 'correct horse battery', plan: options.plan ?? 'unlimited' });
  const { token } = await ctx.services.tokens.create(accountId, { name: 'test', scopes: options.scopes });
  return { accountId, email, token, headers: { 'x-api-key': token } };
}

/**
 * A test app with a tenant and a device it added with POST /devices: PENDING, never linked, so
 * nothing claims or sends its messages unless the test does.
 */
export async function createAppWithDevice(name: string): Promise<{ ctx: TestContext; tenant: Tenant; deviceId: string }> {
  const ctx = await createTestApp();
  const tenant = await createTenant(ctx);
  const response = await ctx.app.inject({ method: 'POST', url: '/devices', headers: tenant.headers, payload: { name } });
  return { ctx, tenant, deviceId: json<{ data: { id: string } }>(response).data.id };
}

/**
 * Stores `count` SENT messages of the tenant's device straight in the table: ids `prefix` and a
 * six-digit number from 000001, network ids `prefix` and the number.
 */
export async function storeSentMessages(ctx: TestContext, tenant: Tenant, deviceId: string, prefix: string, count: number): Promise<void> {
  await ctx.database.query(
    `INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, priority)
     SELECT $4 || lpad(n::text, 6, '0'), $1, $2, 'out', '62812' || lpad(n::text, 8, '0'), 'TEXT', 'sent', 'SENT', $4 || n, 0
       FROM generate_series(1, $3::int) AS n`,
    [tenant.accountId, deviceId, count, prefix],
  );
}

/**
 * Leaves messages with the statistics of a table that had rows and has none (its pages are still
 * there; the planner then takes it for one row however many it holds): `count` messages stored
 * with ids `prefix`…, deleted, and the table analysed.
 */
export async function emptyMessagesStatistics(ctx: TestContext, tenant: Tenant, deviceId: string, prefix: string, count: number): Promise<void> {
  await storeSentMessages(ctx, tenant, deviceId, prefix, count);
  await ctx.database.query(`DELETE FROM messages WHERE id LIKE $1 || '%'`, [prefix]);
  await ctx.database.query('ANALYZE messages');
}

/**
 * Stores `count` QUEUED messages of the tenant's device, due a minute ago, with their queue rows:
 * ids `prefix` and a six-digit number from 000001, network ids `prefix` and the number; each a
 * reply to the message `replyToPrefix` and the same six digits, where given.
 */
export async function queueMessages(ctx: TestContext, tenant: Tenant, deviceId: string, prefix: string, count: number, replyToPrefix?: string): Promise<void> {
  await ctx.database.query(
    `WITH m AS (
       INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, priority, reply_to)
       SELECT $4 || lpad(n::text, 6, '0'), $1, $2, 'out', '62812' || lpad(n::text, 8, '0'), 'TEXT', 'queued', 'QUEUED', $4 || n, 1,
              $5 || lpad(n::text, 6, '0')
         FROM generate_series(1, $3::int) AS n
       RETURNING id, device_id, priority)
     INSERT INTO message_queue (id, device_id, priority, due_at) SELECT id, device_id, priority, now() - interval '1 minute' FROM m`,
    [tenant.accountId, deviceId, count, prefix, replyToPrefix ?? null],
  );
}

/** A random valid E.164 number (Indonesia, +62 8xx), different on every call. */
export function randomPhone(): string {
  return `628${String(100_000_000 + Math.floor(Math.random() * 899_999_999))}`;
}

export function json<T = Record<string, unknown>>(response: LightMyRequestResponse): T {
  return response.json() as T;
}

export interface FieldError {
  field: string;
  message: string;
}
export interface ErrorBody {
  success: false;
  error: { code: string; message: string; details?: FieldError[] | Record<string, unknown> };
  requestId: string;
}

/** ISO 8601 UTC with milliseconds, as every timestamp of the API. */
export const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Asserts the one error body (code, message, requestId, never a stack trace) and returns it. */
export function expectError(response: LightMyRequestResponse, status: number, code: string): ErrorBody {
  expect(response.statusCode, response.body).toBe(status);
  const body = json<ErrorBody>(response);
  expect(body.success).toBe(false);
  expect(body.error.code, response.body).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(body.requestId).toMatch(/^req_/);
  expect(response.body).not.toMatch(/\bat .+\.(ts|js):\d+/);
  expect(response.headers['x-request-id']).toBe(body.requestId);
  return body;
}

/** Writes raw bytes to a listening app and reads until the server closes the connection (or 15 s pass). */
export function rawExchange(app: FastifyInstance, request: string): Promise<{ text: string; body: string; closed: boolean }> {
  const { port } = app.server.address() as net.AddressInfo;
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, body: text.slice(text.indexOf('\r\n\r\n') + 4), closed });
    };
    const timer = setTimeout(() => finish(false), 15_000);
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('close', () => finish(true));
    socket.on('error', () => undefined);
    socket.write(request);
  });
}
