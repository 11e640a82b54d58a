/**
 * Messaging on PostgreSQL with the sandbox network and zero pacing (BULK_DELAY_MS=0):
 *
 *   (a) direct sends, 1 recipient, 50 concurrent clients: throughput against a bare Fastify route
 *       that INSERTs one row per request, side by side in the same run (target ≥ 50%); p99 reported.
 *   (b) 1,000 messages scheduled for the same second: p99 lateness (sentAt − scheduledAt) ≤ 1 s.
 *   (c) a 100,000-recipient bulk job in a fresh server process: accepted in ≤ 2 s; every message
 *       SENT at ≥ 10,000 messages/s end to end; the process's peak RSS (VmHWM) ≤ 300 MB.
 *
 * The benchmark database (waygate_bench_messaging) is dropped and created anew on each run, so
 * runs do not slow down as messages pile up. Everything talks to 127.0.0.1 only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Queryable } from '../src/platform/database.js';
import { startServer } from '../src/server.js';
import { startBareRoute } from './lib/bare-route.js';
import { benchDatabaseUrl } from './lib/bench-database.js';
import { percentile } from './lib/load.js';
import { alternate, formatRatio, receiptsSeconds, runPostLoad, type ComparedSide, type PostLoadOptions, type PostLoadResult } from './lib/post-load.js';
import { cpuChecks, perRequest, startCpuMeter } from './lib/cpu-meter.js';
import { describeActivity, watchPostgres } from './lib/postgres-activity.js';
import { allPassed, formatTable, writeResults, type Check } from './lib/report.js';
import { api, linkDevice, makeTenant, recipients, recreateDatabase } from './lib/tenant.js';
import { startServerProcess, type ServerProcess, type StartedServers } from './lib/server-process.js';
import { buildProduct } from './lib/embedded.js';
import { cliArgs } from '../test/fault/cluster.js';
import type { BenchmarkOptions, BenchmarkOutcome } from './run.js';

const THIS_FILE = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(THIS_FILE), '..');
const TARGET_DIRECT_RATIO = 0.5;
/** The sandbox's delivery receipt comes this long after a send, its read receipt twice that. */
const RECEIPT_MS = Number(process.env.BENCH_RECEIPT_MS ?? 1000);
const BULK_RECIPIENTS = 100_000;
const TARGET_ACCEPT_MS = 2_000;
const TARGET_BULK_RATE = 10_000;
const TARGET_RSS_MB = 300;
const SCHEDULED_COUNT = 1_000;
const TARGET_LATENESS_MS = 1_000;
const DIRECT_CONNECTIONS = 50;
/** Where (a) and (b) load Waygate from: 'built' (default) or 'tsx' (BENCH_DIRECT_SERVER=tsx). */
const DIRECT_SERVER = ((value): 'built' | 'tsx' => {
  if (value !== 'built' && value !== 'tsx') throw new Error(`BENCH_DIRECT_SERVER must be built or tsx, not ${value}`);
  return value;
})(process.env.BENCH_DIRECT_SERVER ?? 'built');

interface ServersInput {
  databaseUrl: string;
  withBare: boolean;
  /** 'built': dist/ (npm run build), as `npm start` runs it; 'tsx': src/ through the tsx loader. */
  server: 'built' | 'tsx';
}
interface ServersInfo {
  waygate: string;
  bare: string | null;
}

/**
 * Runs in the server process: `waygate serve --role all` as the product starts it, and the bare
 * route. The built product by default: tsx compiles src/ with esbuild's keepNames, which wraps
 * every function a send creates in a `__name` call the built product does not make.
 */
export async function startMessagingServers(input: ServersInput): Promise<StartedServers<ServersInfo>> {
  const modules: { loadConfig: typeof loadConfig; startServer: typeof startServer } =
    input.server === 'built'
      ? {
          loadConfig: ((await import(pathToFileURL(path.join(ROOT, 'dist/config.js')).href)) as { loadConfig: typeof loadConfig }).loadConfig,
          startServer: ((await import(pathToFileURL(path.join(ROOT, 'dist/server.js')).href)) as { startServer: typeof startServer }).startServer,
        }
      : { loadConfig, startServer };
  const config = modules.loadConfig({
    DATABASE_URL: input.databaseUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '10000000',
    BULK_DELAY_MS: '0',
    NETWORK: 'sandbox',
    SANDBOX_RECEIPT_MS: String(RECEIPT_MS),
  });
  const server = await modules.startServer(config, 'all');
  const bare = input.withBare ? await startBareRoute(input.databaseUrl, server.database.pool!.options.max) : null;
  return {
    info: { waygate: server.address!, bare: bare?.address ?? null },
    async close() {
      await bare?.close();
      await server.stop();
    },
  };
}

async function waitForJob(origin: string, token: string, jobId: string, timeoutMs: number): Promise<{ done: boolean; at: number; job: Record<string, number | string> }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { json } = await api<{ data: Record<string, number | string> }>(origin, token, 'GET', `/messages/bulk-jobs/${jobId}`);
    const job = json.data;
    const finished = (job.sentCount as number) + (job.failedCount as number) >= (job.totalContacts as number);
    if (finished || Date.now() > deadline) return { done: finished, at: Date.now(), job };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function peakRssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
  return Math.round((kb / 1024) * 10) / 10;
}

/** Starts `node dist/cli.js serve` (role all) and resolves with its address once it logs that it is up. */
async function startProduct(databaseUrl: string): Promise<{ child: ChildProcess; origin: string; stop(): Promise<void> }> {
  // BENCH_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof") profiles the product process.
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, ...cliArgs({ built: true }), 'serve'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', BULK_DELAY_MS: '0', SANDBOX_RECEIPT_MS: String(RECEIPT_MS), RATE_LIMIT_PER_MINUTE: '10000000', NETWORK: 'sandbox' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const origin = await new Promise<string>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`The product did not start: ${output}`)), 60_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"address":"(http:\/\/[^"]+)"/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`The product exited with ${code}: ${output}`)));
  });
  // BENCH_PRODUCT_LOG=file keeps the product's stdout (logs, --trace-gc output).
  if (process.env.BENCH_PRODUCT_LOG) child.stdout!.pipe(fs.createWriteStream(process.env.BENCH_PRODUCT_LOG));
  else child.stdout!.resume();
  return {
    child,
    origin,
    stop: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

export async function run(options: BenchmarkOptions): Promise<BenchmarkOutcome> {
  const base = new URL(benchDatabaseUrl());
  base.pathname = '/waygate_bench_messaging';
  const databaseUrl = base.toString();
  console.log(`Recreating ${databaseUrl} …`);
  await recreateDatabase(databaseUrl);
  const token = await makeTenant(databaseUrl);
  // BENCH_ANALYZE=empty: every table analysed while empty, as autovacuum may leave a new install,
  // and kept so for the whole run (the machine's PostgreSQL runs without autovacuum).
  if (process.env.BENCH_ANALYZE === 'empty') await analyze(databaseUrl);
  const checks: Check[] = [];
  const results: Record<string, unknown> = {};

  // (a) and (b): one server process with Waygate and the bare route side by side.
  // BENCH_ONLY=bulk runs (c) alone, BENCH_ONLY=direct (a) alone, for quick iterations.
  const only = process.env.BENCH_ONLY;
  if (only !== 'direct' || DIRECT_SERVER === 'built') buildProduct();
  if (only !== 'bulk') {
  const servers: ServerProcess<ServersInfo> = await startServerProcess<ServersInput, ServersInfo>(THIS_FILE, 'startMessagingServers', { databaseUrl, withBare: true, server: DIRECT_SERVER });
  try {
    const origin = servers.info.waygate.replace('localhost', '127.0.0.1');
    const deviceId = await linkDevice(origin, token);
    console.log(`Device ${deviceId} connected. Direct sends, ${DIRECT_CONNECTIONS} connections, ${options.durationSeconds} s each …`);
    const body = JSON.stringify({ type: 'TEXT', content: 'Your code is 123456', recipients: ['6281234567891'] });
    const common = { path: '/messages/send', body, connections: DIRECT_CONNECTIONS, cpu: { server: [servers.pid] } };
    const side = (load: Omit<PostLoadOptions, 'durationSeconds' | 'warmupSeconds'>, rewarmSeconds: number, settleSeconds: number): ComparedSide => ({
      run: async (durationSeconds, warmupSeconds) => [await runPostLoad({ ...load, durationSeconds, warmupSeconds })],
      rewarmSeconds,
      settleSeconds,
    });
    const receipts = receiptsSeconds(RECEIPT_MS);
    const compared = await alternate(
      side({ ...common, title: 'bare INSERT', origin: servers.info.bare!.replace('localhost', '127.0.0.1'), headers: {} }, 1, 0),
      side({ ...common, title: 'waygate direct send', origin, headers: { 'x-api-key': token } }, receipts, receipts),
      { durationSeconds: options.durationSeconds, warmupSeconds: options.warmupSeconds },
    );
    const [bare] = compared.baseline as [PostLoadResult];
    const [waygate] = compared.subject as [PostLoadResult];
    results.direct = { bare, waygate, roundRatios: compared.roundRatios };
    const ratio = compared.ratio;
    checks.push({ metric: 'bare route: INSERT one row (req/s)', measured: bare.requestsPerSecond.toFixed(0), target: '', pass: undefined });
    checks.push({ metric: 'direct send, 1 recipient (req/s)', measured: waygate.requestsPerSecond.toFixed(0), target: '', pass: undefined });
    checks.push({
      metric: 'direct send throughput / bare',
      measured: formatRatio(compared),
      target: `>= ${TARGET_DIRECT_RATIO * 100}%`,
      pass: ratio >= TARGET_DIRECT_RATIO && waygate.non2xx === 0 && waygate.errors === 0,
    });
    checks.push({ metric: 'direct send latency p50 / p99', measured: `${waygate.latencyMs.p50} / ${waygate.latencyMs.p99} ms`, target: '', pass: undefined });
    // What a request costs each process: steadier than the rates on a shared machine.
    checks.push(...cpuChecks({ cpuMs: bare.cpuMs, requests: bare.responses }, { cpuMs: waygate.cpuMs, requests: waygate.responses }, 'direct send'));
    if (waygate.non2xx > 0) console.log('Direct send status codes:', waygate.statusCodes);

    // (b) 1,000 messages scheduled for the same second.
    if (only !== 'direct') await scheduledSecond(origin, token, databaseUrl, checks, results);
    // The device goes with its server: the job's server would otherwise take it over and be
    // handed again the last MARK_LAG_MS (10 s) of its receipts, some 70,000 that change nothing,
    // while the job runs (a session that starts reads its receipts from before its stored mark).
    const removed = await api(origin, token, 'DELETE', `/devices/${deviceId}`);
    if (removed.status !== 200) throw new Error(`Removing the direct sends' device answered ${removed.status}`);
  } finally {
    await servers.stop();
  }
  }

  // BENCH_ANALYZE=1: the job runs on analysed statistics, as autovacuum leaves a production
  // database (the machine's PostgreSQL runs without it, so nothing here analyses otherwise).
  if (only !== 'direct' && process.env.BENCH_ANALYZE === '1') await analyze(databaseUrl);
  if (only !== 'direct') await bulkJob(databaseUrl, checks, results);

  console.log(`\n${formatTable(checks)}\n`);
  const file = await writeResults('messaging', { at: new Date().toISOString(), checks, results });
  console.log(`Results written to ${file}`);
  return { passed: allPassed(checks) };
}

async function analyze(databaseUrl: string): Promise<void> {
  const database = await openDatabase({ databaseUrl, dataDir: 'unused', poolSize: 1 });
  try {
    await database.query('ANALYZE');
  } finally {
    await database.close();
  }
}

async function bulkJob(databaseUrl: string, checks: Check[], results: Record<string, unknown>): Promise<void> {
  // (c) the 100,000-recipient job, in a fresh process of the built product (`node dist/cli.js
  // serve`, as `npm start` runs it; built at the start), so its peak RSS is this job's and
  // nothing else's.
  const product = await startProduct(databaseUrl);
  const probe = await openDatabase({ databaseUrl, dataDir: 'unused', poolSize: 1 });
  try {
    const origin = product.origin;
    const bulkToken = await makeTenant(databaseUrl);
    await linkDevice(origin, bulkToken);
    const list = recipients(BULK_RECIPIENTS, '628130');
    console.log(`Bulk job of ${BULK_RECIPIENTS.toLocaleString('en')} recipients …`);
    const meter = startCpuMeter({ server: [product.child.pid!] });
    const postgres = await watchPostgres((text) => probe.query(text));
    const started = Date.now();
    const accepted = await api<{ jobId: string; totalContacts: number }>(origin, bulkToken, 'POST', '/messages/send', {
      type: 'TEXT',
      content: 'Our summer sale starts today',
      recipients: list,
    });
    const acceptMs = Date.now() - started;
    if (accepted.status !== 202) throw new Error(`The bulk send answered ${accepted.status}: ${JSON.stringify(accepted.json)}`);
    const finished = await waitForJob(origin, bulkToken, accepted.json.jobId, 120_000);
    const seconds = (finished.at - started) / 1000;
    const cpuMs = meter?.stop();
    const activity = await postgres();
    const rate = Number(finished.job.sentCount) / seconds;
    const rss = peakRssMb(product.child.pid!);
    const shape = await jobShape(probe, accepted.json.jobId, started);
    results.bulk = { acceptMs, seconds, rate, job: finished.job, peakRssMb: rss, postgres: activity, shape };
    checks.push({ metric: '100,000-recipient job accepted in', measured: `${acceptMs} ms`, target: `<= ${TARGET_ACCEPT_MS} ms`, pass: acceptMs <= TARGET_ACCEPT_MS });
    checks.push({
      metric: 'bulk: every message SENT, end to end',
      measured: `${Math.round(rate).toLocaleString('en')} msg/s (${finished.job.sentCount} sent, ${finished.job.failedCount} failed in ${seconds.toFixed(2)} s)`,
      target: `>= ${TARGET_BULK_RATE.toLocaleString('en')} msg/s`,
      pass: finished.done && finished.job.sentCount === BULK_RECIPIENTS && rate >= TARGET_BULK_RATE,
    });
    checks.push({ metric: 'CPU per bulk message (receipts included)', measured: perRequest({ cpuMs, requests: Number(finished.job.sentCount) }), target: '', pass: undefined });
    checks.push({ metric: 'PostgreSQL during the job', measured: describeActivity(activity, BULK_RECIPIENTS, 'message'), target: '', pass: undefined });
    checks.push({
      metric: 'bulk: first SENT, then the sending alone',
      measured: `${Math.round(shape.firstSentMs)} ms after the request; then ${Math.round(shape.sendingRate).toLocaleString('en')} msg/s`,
      target: '',
      pass: undefined,
    });
    checks.push({ metric: 'bulk: server peak RSS (VmHWM)', measured: `${rss} MB`, target: `<= ${TARGET_RSS_MB} MB`, pass: rss <= TARGET_RSS_MB });
  } finally {
    await probe.close();
    await product.stop();
  }
}

/**
 * The job's two phases, from its messages' sentAt (the server's clock, on this machine): how long
 * after the request the first message was SENT (acceptance, then the first fan-out chunk), and
 * the rate of the sending from then on. The end-to-end rate is the target; these tell a ramp
 * that grew from a sending that slowed.
 */
async function jobShape(db: Queryable, jobId: string, started: number): Promise<{ firstSentMs: number; sendingRate: number }> {
  const [row] = await db.query<{ first_ms: number; last_ms: number; n: number }>(
    `SELECT extract(epoch FROM min(sent_at)) * 1000 AS first_ms, extract(epoch FROM max(sent_at)) * 1000 AS last_ms, count(*)::int AS n
       FROM messages WHERE job_id = $1 AND sent_at IS NOT NULL`,
    [jobId],
  );
  const first = Number(row!.first_ms);
  const seconds = (Number(row!.last_ms) - first) / 1000;
  return { firstSentMs: first - started, sendingRate: seconds > 0 ? row!.n / seconds : 0 };
}

/** (b) 1,000 messages scheduled for the same second: p99 lateness. */
async function scheduledSecond(origin: string, token: string, databaseUrl: string, checks: Check[], results: Record<string, unknown>): Promise<void> {
  const scheduledAt = new Date(Date.now() + 5_000);
  scheduledAt.setUTCMilliseconds(0);
  const scheduled = await api<{ jobId: string }>(origin, token, 'POST', '/messages/send', {
    type: 'TEXT',
    content: 'Reminder: your appointment is tomorrow',
    recipients: recipients(SCHEDULED_COUNT, '628120'),
    scheduledAt: scheduledAt.toISOString(),
  });
  if (scheduled.status !== 202) throw new Error(`Scheduling answered ${scheduled.status}: ${JSON.stringify(scheduled.json)}`);
  const waited = await waitForJob(origin, token, scheduled.json.jobId, 30_000);
  if (!waited.done) throw new Error(`The scheduled job did not finish: ${JSON.stringify(waited.job)}`);
  const database = await openDatabase({ databaseUrl, dataDir: 'unused', poolSize: 1 });
  const lateness = (
    await database.query<{ ms: number }>(
      `SELECT extract(epoch FROM (sent_at - scheduled_at)) * 1000 AS ms FROM messages WHERE job_id = $1 AND sent_at IS NOT NULL`,
      [scheduled.json.jobId],
    )
  )
    .map((row) => Number(row.ms))
    .sort((a, b) => a - b);
  await database.close();
  const p99 = percentile(lateness, 99);
  results.scheduled = { count: lateness.length, p50: percentile(lateness, 50), p99, max: lateness[lateness.length - 1] };
  checks.push({
    metric: `${SCHEDULED_COUNT} scheduled for one second: p99 lateness`,
    measured: `${p99.toFixed(0)} ms (${lateness.length} sent)`,
    target: `<= ${TARGET_LATENESS_MS} ms`,
    pass: lateness.length === SCHEDULED_COUNT && p99 <= TARGET_LATENESS_MS,
  });
}
