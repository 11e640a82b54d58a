/**
 * The product as a new user runs it: `waygate serve` on the embedded database (PGlite in a data
 * directory), as a child process of its own, on 127.0.0.1. Used by the starvation benchmark and
 * by the test that replays the webhook-backlog hang at reduced scale.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { openDatabase, type Database } from '../../src/platform/database.js';
import { runMigrations } from '../../src/platform/migrate.js';
import { AccountService } from '../../src/directory/accounts.js';
import { TokenService } from '../../src/directory/tokens.js';
import { cliArgs, type StartOptions } from '../../test/fault/cluster.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

export interface EmbeddedTenant {
  dataDir: string;
  accountId: string;
  token: string;
}

/** A fresh data directory, migrated, with one unlimited account and its token. */
export async function createEmbeddedTenant(prefix: string): Promise<EmbeddedTenant> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `${prefix}-`));
  const database = await openDatabase({ dataDir });
  try {
    await runMigrations(database);
    const { accountId } = await new AccountService(database).createAccount({ email: `${prefix}@waygate.test`, password: 'embedded test password', plan: 'unlimited' });
    const token = (await new TokenService(database).create(accountId, { name: prefix })).token;
    return { dataDir, accountId, token };
  } finally {
    await database.close();
  }
}

/** Runs `work` on the tenant's data directory while no server holds it. */
export async function withEmbeddedDatabase<T>(tenant: EmbeddedTenant, work: (database: Database) => Promise<T>): Promise<T> {
  const database = await openDatabase({ dataDir: tenant.dataDir });
  try {
    return await work(database);
  } finally {
    await database.close();
  }
}

/**
 * An endpoint (inactive, as a user leaves it while a backlog builds) with `count` PENDING
 * deliveries of message.received events, all due now; `attempts` > 0 makes them retries.
 * Set-based, so a hundred thousand take seconds.
 */
export async function seedWebhookBacklog(
  database: Database,
  accountId: string,
  options: { url: string; count: number; attempts?: number; active?: boolean },
): Promise<string> {
  const endpointId = `wh_backlog${Date.now().toString(36)}`;
  await database.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO webhook_endpoints (id, account_id, url, events, active, secret) VALUES ($1, $2, $3, '{}', $4, 'whsec_' || encode(sha256(random()::text::bytea), 'base64'))`,
      [endpointId, accountId, options.url, options.active ?? false],
    );
    const [account] = await tx.query<{ event_seq: number }>('UPDATE accounts SET event_seq = event_seq + $2 WHERE id = $1 RETURNING event_seq - $2 AS event_seq', [
      accountId,
      options.count,
    ]);
    const base = Number(account!.event_seq);
    await tx.query(
      `INSERT INTO events (id, account_id, seq, type, data, created_at)
       SELECT 'evt_' || substr($1, 5) || lpad((($2::bigint) + g)::text, 12, '0'), $1, $2::bigint + g, 'message.received',
              jsonb_build_object('id', 'msg_backlog' || g, 'from', '6281200000000', 'content', 'backlog ' || g), now() - interval '1 hour'
         FROM generate_series(1, $3::int) AS g`,
      [accountId, base, options.count],
    );
    await tx.query(
      `INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, attempts, next_attempt_at)
       SELECT 'whd_' || substr(e.id, 5) || substr($2, 4), $1, $2, e.id, $4, now() - interval '1 minute'
         FROM events e WHERE e.account_id = $1 AND e.seq > $3::bigint`,
      [accountId, endpointId, base, options.attempts ?? 0],
    );
  });
  return endpointId;
}

export interface EmbeddedServer {
  origin: string;
  child: ChildProcess;
  output: string[];
  /** The process's peak resident set (VmHWM), in MB. */
  peakRssMb(): number;
  /** The process's resident set now (VmRSS), in MB. */
  rssMb(): number;
  /** The process's resident set now split by /proc/PID/smaps_rollup: anonymous memory and file-backed pages, in MB. */
  rssSplitMb(): { anonymous: number; file: number };
  /** SIGTERM, then the milliseconds until the process exited (SIGKILL after `killAfterMs`, and then Infinity). */
  terminate(killAfterMs?: number): Promise<number>;
}

/** `npm run build`, for servers started with `built: true`. */
export function buildProduct(): void {
  console.log('Building the product (npm run build) …');
  execFileSync('npm', ['run', '-s', 'build'], { cwd: ROOT, stdio: 'inherit' });
}

/** Starts `waygate serve` (role all) on the tenant's data directory; resolves once it listens. */
export async function startEmbeddedServer(tenant: EmbeddedTenant, env: Record<string, string> = {}, options: StartOptions = {}): Promise<EmbeddedServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [...cliArgs(options), 'serve'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: '', DATA_DIR: tenant.dataDir, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', NETWORK: 'sandbox', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const origin = `http://127.0.0.1:${port}`;
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`the server exited with ${code}:\n${output.join('')}`))));
  exited.catch(() => undefined);
  const deadline = Date.now() + 90_000;
  try {
    for (;;) {
      const up = await fetch(`${origin}/healthz`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false);
      if (up) break;
      if (child.exitCode !== null) await exited;
      if (Date.now() > deadline) throw new Error(`the server did not start:\n${output.join('')}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (error) {
    // Never leave a half-started server behind.
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    throw error;
  }
  // Only the tail of the log is kept: a long run must not grow this process.
  child.stdout!.on('data', () => output.splice(0, Math.max(0, output.length - 200)));
  child.stderr!.on('data', () => output.splice(0, Math.max(0, output.length - 200)));
  return {
    origin,
    child,
    output,
    peakRssMb: () => procStatusMb(child.pid!, 'VmHWM'),
    rssMb: () => procStatusMb(child.pid!, 'VmRSS'),
    rssSplitMb: () => {
      const rollup = fs.readFileSync(`/proc/${child.pid!}/smaps_rollup`, 'utf8');
      const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? 0);
      return { anonymous: kb('Anonymous') / 1024, file: (kb('Rss') - kb('Anonymous')) / 1024 };
    },
    async terminate(killAfterMs = 20_000) {
      if (child.exitCode !== null || child.signalCode !== null) return 0;
      const started = performance.now();
      const exited = new Promise<number>((resolve) => child.once('exit', () => resolve(performance.now() - started)));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      const elapsed = await exited;
      clearTimeout(timer);
      return child.signalCode === 'SIGKILL' ? Number.POSITIVE_INFINITY : elapsed;
    },
  };
}

function procStatusMb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
}

/** A port nothing listens on now (the kernel's pick, released at once). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** GETs `url` every `intervalMs` for `durationMs`; each answer's latency in ms (a timeout counts as `timeoutMs`). */
export async function probeLatencies(url: string, durationMs: number, options: { intervalMs?: number; timeoutMs?: number; headers?: Record<string, string> } = {}): Promise<number[]> {
  const { intervalMs = 20, timeoutMs = 10_000 } = options;
  const latencies: number[] = [];
  const end = Date.now() + durationMs;
  while (Date.now() < end) {
    const started = performance.now();
    try {
      const response = await fetch(url, { headers: options.headers, signal: AbortSignal.timeout(timeoutMs) });
      await response.arrayBuffer();
      latencies.push(performance.now() - started);
    } catch {
      latencies.push(timeoutMs);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return latencies;
}
