/**
 * Webhook delivery on PostgreSQL, the server (`serve --role all`, API and worker in one process)
 * in a child process and the receivers in this one, all on 127.0.0.1:
 *
 *   (a) throughput: a bulk job of BULK_RECIPIENTS recipients makes 3 message.status events each
 *       (SENT, DELIVERED, READ) plus bulk_job.completed, far faster than they are delivered; the
 *       receiver answers 204 at once. Deliveries/s at the receiver, over the middle 90% of
 *       them (target ≥ 2,000/s).
 *   (b) latency: incoming messages at a steady LATENCY_RATE/s; from event commit (events.created_at,
 *       the body's timestamp) to receipt, p50 ≤ 50 ms.
 *   (c) isolation: the same job as (a) for an account with a healthy endpoint and one that never
 *       answers (every attempt times out); the healthy one keeps ≥ 80% of its solo throughput,
 *       both measured from the moment the job has written all its events (delivery alone; the
 *       figure while the job still writes is printed too).
 *
 * The database (waygate_bench_webhooks) is dropped and created anew on each run.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../src/config.js';
import { startServer } from '../src/server.js';
import { benchDatabaseUrl } from './lib/bench-database.js';
import { percentile } from './lib/load.js';
import { allPassed, formatTable, writeResults, type Check } from './lib/report.js';
import { api, linkDevice, makeTenant, recipients, recreateDatabase } from './lib/tenant.js';
import { startServerProcess, type ServerProcess, type StartedServers } from './lib/server-process.js';
import type { BenchmarkOptions, BenchmarkOutcome } from './run.js';

const THIS_FILE = fileURLToPath(import.meta.url);
const BULK_RECIPIENTS = Number(process.env.BENCH_WEBHOOK_RECIPIENTS ?? 10_000);
const TARGET_RATE = 2_000;
const LATENCY_RATE = 100;
const TARGET_P50_MS = 50;
const TARGET_ISOLATION = 0.8;

interface ServerInput {
  databaseUrl: string;
}
interface ServerInfo {
  origin: string;
}

/** Runs in the server process: the product as `waygate serve` starts it (role all). */
export async function startWebhookBenchServer(input: ServerInput): Promise<StartedServers<ServerInfo>> {
  const config = loadConfig({
    DATABASE_URL: input.databaseUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '10000000',
    BULK_DELAY_MS: '0',
    NETWORK: 'sandbox',
    SANDBOX_RECEIPT_MS: '100',
    ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '0,1s,1s,1s,1s',
  });
  const server = await startServer(config, 'all');
  return { info: { origin: server.address!.replace('localhost', '127.0.0.1') }, close: () => server.stop() };
}

/** The receivers: one HTTP server, an endpoint per path; /hang never answers. */
class Receivers {
  readonly times = new Map<string, number[]>();
  readonly latencies: number[] = [];
  private readonly server: http.Server;
  origin = '';

  constructor() {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const now = Date.now();
        const key = request.url ?? '/';
        if (key === '/hang') return;
        let list = this.times.get(key);
        if (!list) this.times.set(key, (list = []));
        list.push(now);
        if (key === '/latency') {
          const body = JSON.parse(Buffer.concat(chunks).toString()) as { timestamp: string };
          this.latencies.push(now - Date.parse(body.timestamp));
        }
        response.writeHead(204).end();
      });
    });
    this.server.keepAliveTimeout = 60_000;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.origin = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  count(key: string): number {
    return this.times.get(key)?.length ?? 0;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

async function addEndpoint(origin: string, token: string, url: string, events?: string[]): Promise<void> {
  const created = await api(origin, token, 'POST', '/webhooks', { url, ...(events ? { events } : {}) });
  if (created.status !== 201) throw new Error(`POST /webhooks answered ${created.status}: ${JSON.stringify(created.json)}`);
}

async function waitUntil(what: string, timeoutMs: number, done: () => boolean): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) {
      console.log(`  gave up waiting for ${what}`);
      return false;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return true;
}

/** Deliveries per second over the middle 90% of the receipts (the ramp up and the tail left out). */
function middleRate(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  const low = Math.floor(sorted.length * 0.05);
  const high = Math.ceil(sorted.length * 0.95) - 1;
  const span = (sorted[high]! - sorted[low]!) / 1000;
  return span > 0 ? (high - low) / span : NaN;
}

/** A bulk job for a new tenant whose endpoints are `paths`; returns the healthy endpoint's receipts. */
interface BulkRun {
  delivered: number;
  expected: number;
  /** Deliveries/s over the middle 90% of the receipts, while the job is still writing events too. */
  rate: number;
  /** Deliveries/s from the moment every event of the job was written to the last receipt: delivery alone. */
  drainRate: number;
  seconds: number;
}

async function bulkRun(origin: string, databaseUrl: string, receivers: Receivers, label: string, paths: string[], prefix: string): Promise<BulkRun> {
  const token = await makeTenant(databaseUrl, label);
  await linkDevice(origin, token, `62811${prefix}0001`);
  for (const route of paths) await addEndpoint(origin, token, `${receivers.origin}${route}`);
  const healthy = paths.find((route) => route !== '/hang')!;
  const started = Date.now();
  const accepted = await api<{ jobId: string }>(origin, token, 'POST', '/messages/send', { type: 'TEXT', content: 'Webhook bench', recipients: recipients(BULK_RECIPIENTS, `62813${prefix}`) });
  if (accepted.status !== 202) throw new Error(`The bulk send answered ${accepted.status}: ${JSON.stringify(accepted.json)}`);
  // Every event of the job is written once every message is READ; the device's CONNECTED event
  // came before the endpoints and is not delivered. (Normally 3 per recipient + 1; fewer when a
  // receipt overtakes the SENT write, which then writes no SENT event.)
  for (const deadline = Date.now() + 60_000; Date.now() < deadline; ) {
    const job = await api<{ data: { status: string; readCount: number } }>(origin, token, 'GET', `/messages/bulk-jobs/${accepted.json.jobId}`);
    if (job.json.data.status === 'COMPLETED' && job.json.data.readCount === BULK_RECIPIENTS) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const written = Date.now();
  const expected = (await api<{ meta: { lastSeq: number } }>(origin, token, 'GET', '/events?limit=1')).json.meta.lastSeq - 1;
  if (expected !== BULK_RECIPIENTS * 3 + 1) console.log(`  ${label}: ${expected} events for ${BULK_RECIPIENTS} recipients (expected ${BULK_RECIPIENTS * 3 + 1}: SENT events missing)`);
  await waitUntil(`${expected} deliveries to ${healthy}`, 120_000, () => receivers.count(healthy) >= expected);
  const times = receivers.times.get(healthy) ?? [];
  const after = times.filter((t) => t >= written);
  const drainRate = after.length > 1 ? after.length / ((Math.max(...after) - written) / 1000) : NaN;
  return { delivered: times.length, expected, rate: middleRate(times), drainRate, seconds: (Date.now() - started) / 1000 };
}

export async function run(options: BenchmarkOptions): Promise<BenchmarkOutcome> {
  const base = new URL(benchDatabaseUrl());
  base.pathname = '/waygate_bench_webhooks';
  const databaseUrl = base.toString();
  console.log(`Recreating ${databaseUrl} …`);
  await recreateDatabase(databaseUrl);
  await makeTenant(databaseUrl, 'migrate');
  const checks: Check[] = [];
  const results: Record<string, unknown> = {};
  const receivers = new Receivers();
  await receivers.listen();
  const server: ServerProcess<ServerInfo> = await startServerProcess<ServerInput, ServerInfo>(THIS_FILE, 'startWebhookBenchServer', { databaseUrl });
  try {
    const origin = server.info.origin;

    // (a) one healthy endpoint, solo.
    console.log(`(a) bulk job of ${BULK_RECIPIENTS.toLocaleString('en')} recipients → ${(BULK_RECIPIENTS * 3 + 1).toLocaleString('en')} events to one endpoint …`);
    const solo = await bulkRun(origin, databaseUrl, receivers, 'solo', ['/solo'], '1');
    results.solo = solo;
    checks.push({
      metric: 'deliveries/s to one endpoint (answers at once)',
      measured: `${Math.round(solo.rate).toLocaleString('en')}/s (${solo.delivered}/${solo.expected} in ${solo.seconds.toFixed(1)} s)`,
      target: `>= ${TARGET_RATE.toLocaleString('en')}/s`,
      pass: solo.delivered >= solo.expected && solo.rate >= TARGET_RATE,
    });
    checks.push({ metric: 'deliveries/s once every event is written (solo)', measured: `${Math.round(solo.drainRate).toLocaleString('en')}/s`, target: '', pass: undefined });

    // (b) commit-to-receipt latency at a moderate steady rate.
    const seconds = options.durationSeconds;
    console.log(`(b) ${LATENCY_RATE} incoming messages/s for ${seconds} s → message.received …`);
    const token = await makeTenant(databaseUrl, 'latency');
    const deviceId = await linkDevice(origin, token, '628112000001');
    await addEndpoint(origin, token, `${receivers.origin}/latency`, ['message.received']);
    const total = LATENCY_RATE * seconds;
    const start = performance.now();
    const sends: Promise<unknown>[] = [];
    for (let i = 0; i < total; i++) {
      const wait = start + (i * 1000) / LATENCY_RATE - performance.now();
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
      sends.push(api(origin, token, 'POST', '/sandbox/incoming', { deviceId, from: `62815${String(i).padStart(8, '0')}`, content: `latency ${i}` }));
    }
    await Promise.all(sends);
    await waitUntil(`${total} message.received deliveries`, 30_000, () => receivers.latencies.length >= total);
    const latencies = [...receivers.latencies].sort((a, b) => a - b);
    const p50 = percentile(latencies, 50);
    results.latency = { rate: LATENCY_RATE, count: latencies.length, p50, p95: percentile(latencies, 95), p99: percentile(latencies, 99), max: latencies[latencies.length - 1] };
    checks.push({
      metric: `event commit → receipt p50 at ${LATENCY_RATE} events/s`,
      measured: `${p50.toFixed(0)} ms (p95 ${percentile(latencies, 95).toFixed(0)}, p99 ${percentile(latencies, 99).toFixed(0)} ms; ${latencies.length}/${total})`,
      target: `<= ${TARGET_P50_MS} ms`,
      pass: latencies.length >= total && p50 <= TARGET_P50_MS,
    });

    // (c) the same job with an endpoint that never answers beside the healthy one.
    console.log('(c) the same job with a never-answering endpoint beside the healthy one …');
    const shared = await bulkRun(origin, databaseUrl, receivers, 'shared', ['/hang', '/shared'], '2');
    results.shared = shared;
    // The check compares delivery alone (after the job has written its events): while the job
    // runs, the shared account also writes a second delivery row per event, which is the cost of
    // having two endpoints, not interference of the dead one with the healthy one's deliveries.
    const overall = shared.rate / solo.rate;
    checks.push({
      metric: 'healthy beside a dead one, while the job writes (info)',
      measured: `${Math.round(shared.rate).toLocaleString('en')}/s = ${(overall * 100).toFixed(0)}% of solo`,
      target: '',
      pass: undefined,
    });
    const ratio = shared.drainRate / solo.drainRate;
    checks.push({
      metric: 'healthy endpoint beside a dead one: deliveries/s',
      measured: `${Math.round(shared.drainRate).toLocaleString('en')}/s = ${(ratio * 100).toFixed(0)}% of solo (${shared.delivered}/${shared.expected})`,
      target: `>= ${TARGET_ISOLATION * 100}% of solo`,
      pass: shared.delivered >= shared.expected && ratio >= TARGET_ISOLATION,
    });
  } finally {
    // Let the requests hanging at /hang end now (refused), so the server stops at once.
    await receivers.close();
    await server.stop();
  }

  console.log(`\n${formatTable(checks)}\n`);
  const file = await writeResults('webhooks', { at: new Date().toISOString(), checks, results });
  console.log(`Results written to ${file}`);
  return { passed: allPassed(checks) };
}

