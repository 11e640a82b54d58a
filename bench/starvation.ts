/**
 * Nothing starves, on the embedded database (PGlite) a new user starts with, the server run as
 * `waygate serve` in a child process, everything on 127.0.0.1. The product is built first and run
 * as `npm start` runs it (`node dist/cli.js serve`); BENCH_STARVATION_SERVER=tsx runs src/cli.ts
 * through the tsx loader instead (no build; the loader adds about 60 MB of resident memory).
 *
 *   (a) the webhook-backlog hang at full scale: BACKLOG deliveries due to an endpoint whose URL
 *       is refused at once (a private address, ALLOW_PRIVATE_URLS off). /healthz p99 ≤ 100 ms
 *       while it is worked through, peak RSS (VmHWM, the process's whole life) ≤ 400 MB,
 *       SIGTERM exits within 10 s.
 *   (b) a JOB-recipient bulk job, with a webhook endpoint receiving its events: the API's p99
 *       (/healthz, GET /messages/bulk-jobs/:id, GET /devices/:id in turn) while it runs ≤ 250 ms;
 *       the same probes on the idle server, measured first in the same run, are the baseline.
 *   (c) fresh events beside a backlog: RETRIES older deliveries due again to a healthy
 *       endpoint; while they are sent, incoming messages make fresh message.received events,
 *       each of which must reach the endpoint within 2 s of its commit.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  buildProduct,
  createEmbeddedTenant,
  probeLatencies,
  seedWebhookBacklog,
  startEmbeddedServer,
  withEmbeddedDatabase,
  type EmbeddedServer,
  type EmbeddedTenant,
} from './lib/embedded.js';
import { percentile } from './lib/load.js';
import { allPassed, formatTable, writeResults, type Check } from './lib/report.js';
import { api, linkDevice, recipients } from './lib/tenant.js';
import type { BenchmarkOptions, BenchmarkOutcome } from './run.js';

const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 100_000);
const JOB = Number(process.env.BENCH_JOB ?? 30_000);
const RETRIES = Number(process.env.BENCH_RETRIES ?? 50_000);
const FRESH_EVENTS = 40;
const SERVER = process.env.BENCH_STARVATION_SERVER ?? 'built';
if (SERVER !== 'built' && SERVER !== 'tsx') throw new Error(`BENCH_STARVATION_SERVER must be built or tsx, not ${SERVER}`);
const START = { built: SERVER === 'built' };

const ms = (value: number): string => `${value.toFixed(0)} ms`;
const summary = (latencies: number[]): { p50: number; p99: number; max: number } => {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted[sorted.length - 1] ?? 0 };
};

/** A receiver that answers 204 at once and notes when each fresh (non-backlog) event arrived. */
async function startReceiver(): Promise<{ url: string; received: () => number; fresh: { createdAt: number; at: number }[]; close(): Promise<void> }> {
  let received = 0;
  const fresh: { createdAt: number; at: number }[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received++;
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { timestamp: string; data: { content?: string } };
      if (body.data.content?.startsWith('fresh ')) fresh.push({ createdAt: Date.parse(body.timestamp), at: Date.now() });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received: () => received,
    fresh,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

async function withTenant<T>(prefix: string, work: (tenant: EmbeddedTenant, servers: EmbeddedServer[]) => Promise<T>): Promise<T> {
  const tenant = await createEmbeddedTenant(prefix);
  const servers: EmbeddedServer[] = [];
  try {
    return await work(tenant, servers);
  } finally {
    for (const server of servers) await server.terminate(5_000);
    fs.rmSync(tenant.dataDir, { recursive: true, force: true });
  }
}

async function backlogHang(checks: Check[]): Promise<void> {
  await withTenant('waygate-bench-backlog', async (tenant, servers) => {
    const endpointId = await withEmbeddedDatabase(tenant, (database) => seedWebhookBacklog(database, tenant.accountId, { url: 'http://127.0.0.1:9/hook', count: BACKLOG }));
    const server = await startEmbeddedServer(tenant, { ALLOW_PRIVATE_URLS: 'false' }, START);
    servers.push(server);
    // The same server idle first: PGlite alone is most of a process's memory.
    await probeLatencies(`${server.origin}/healthz`, 3_000);
    const idleRss = server.rssMb();
    const patched = await api(server.origin, tenant.token, 'PATCH', `/webhooks/${endpointId}`, { active: true });
    if (patched.status !== 200) throw new Error(`PATCH /webhooks answered ${patched.status}`);
    const started = Date.now();
    // The resident set now, every 250 ms while the backlog is worked through, beside the peak.
    let sampledMax = 0;
    let split = server.rssSplitMb();
    const sampler = setInterval(() => {
      const now = server.rssMb();
      if (now >= sampledMax) {
        sampledMax = now;
        split = server.rssSplitMb();
      }
    }, 250);
    const latencies = await probeLatencies(`${server.origin}/healthz`, 20_000, { timeoutMs: 10_000 });
    clearInterval(sampler);
    const seconds = (Date.now() - started) / 1000;
    const rss = server.peakRssMb();
    const exitMs = await server.terminate(20_000);
    const [attempted] = await withEmbeddedDatabase(tenant, (database) =>
      database.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND attempts > 0', [endpointId]),
    );
    const { p50, p99, max } = summary(latencies);
    checks.push(
      { metric: `(a) backlog of ${BACKLOG.toLocaleString('en')} refused: /healthz p99 (p50, max)`, measured: `${ms(p99)} (${ms(p50)}, ${ms(max)}; ${latencies.length} probes in ${seconds.toFixed(0)} s)`, target: '<= 100 ms', pass: p99 <= 100 },
      { metric: '(a) refused attempts recorded meanwhile', measured: `${attempted!.n.toLocaleString('en')} (${Math.round(attempted!.n / seconds).toLocaleString('en')}/s)`, target: '', pass: undefined },
      { metric: `(a) server peak RSS (VmHWM), ${SERVER === 'built' ? 'node dist/cli.js' : 'through tsx'}`, measured: `${rss.toFixed(0)} MB (idle before: ${idleRss.toFixed(0)} MB)`, target: '<= 400 MB', pass: rss <= 400 },
      {
        metric: '(a) RSS sampled during the backlog: highest (anonymous + file)',
        measured: `${sampledMax.toFixed(0)} MB (${split.anonymous.toFixed(0)} + ${split.file.toFixed(0)} MB)`,
        target: '',
        pass: undefined,
      },
      { metric: '(a) SIGTERM to exit', measured: Number.isFinite(exitMs) ? ms(exitMs) : 'killed after 20 s', target: '<= 10000 ms', pass: exitMs <= 10_000 },
    );
  });
}

async function jobLatency(checks: Check[]): Promise<void> {
  const receiver = await startReceiver();
  try {
    await withTenant('waygate-bench-job', async (tenant, servers) => {
      const server = await startEmbeddedServer(tenant, { ALLOW_PRIVATE_URLS: 'true', RATE_LIMIT_PER_MINUTE: '10000000', SANDBOX_RECEIPT_MS: '500' }, START);
      servers.push(server);
      const { origin } = server;
      const deviceId = await linkDevice(origin, tenant.token);
      const hook = await api(origin, tenant.token, 'POST', '/webhooks', { url: receiver.url });
      if (hook.status !== 201) throw new Error(`POST /webhooks answered ${hook.status}`);
      const small = await api<{ jobId: string }>(origin, tenant.token, 'POST', '/messages/send', { type: 'TEXT', content: 'warm-up', recipients: recipients(20, '62813') });
      const headers = { 'x-api-key': tenant.token };
      const probe = (jobId: string) => async (duration: number, until?: () => Promise<boolean>): Promise<number[]> => {
        const targets = ['/healthz', `/messages/bulk-jobs/${jobId}`, `/devices/${deviceId}`];
        const all: number[] = [];
        const end = Date.now() + duration;
        for (let i = 0; Date.now() < end; i++) {
          all.push(...(await probeLatencies(`${origin}${targets[i % targets.length]!}`, 1, { intervalMs: 20, timeoutMs: 10_000, headers })));
          if (until && i % 25 === 0 && (await until())) break;
        }
        return all;
      };
      const idle = await probe(small.json.jobId)(8_000);
      const accepted = Date.now();
      const job = await api<{ jobId: string }>(origin, tenant.token, 'POST', '/messages/send', { type: 'TEXT', content: 'bulk', recipients: recipients(JOB, '62812') });
      if (job.status !== 202) throw new Error(`the bulk send answered ${job.status}`);
      let completedAt = 0;
      const done = async (): Promise<boolean> => {
        const state = await api<{ data: { status: string } }>(origin, tenant.token, 'GET', `/messages/bulk-jobs/${job.json.jobId}`);
        if (state.json.data.status === 'COMPLETED' && !completedAt) completedAt = Date.now();
        return completedAt > 0;
      };
      const busy = await probe(job.json.jobId)(180_000, done);
      const base = summary(idle);
      const load = summary(busy);
      checks.push(
        { metric: '(b) API p99 on the idle server (p50, max): baseline', measured: `${ms(base.p99)} (${ms(base.p50)}, ${ms(base.max)}; ${idle.length} probes)`, target: '', pass: undefined },
        {
          metric: `(b) API p99 while a ${JOB.toLocaleString('en')}-recipient job runs (p50, max)`,
          measured: `${ms(load.p99)} (${ms(load.p50)}, ${ms(load.max)}; ${busy.length} probes)`,
          target: '<= 250 ms',
          pass: load.p99 <= 250,
        },
        {
          metric: '(b) the job: every message SENT, rate',
          measured: completedAt ? `${Math.round(JOB / ((completedAt - accepted) / 1000)).toLocaleString('en')} msg/s (${((completedAt - accepted) / 1000).toFixed(1)} s)` : 'not completed within 180 s',
          target: '',
          pass: completedAt ? undefined : false,
        },
        { metric: '(b) webhook deliveries received by then', measured: receiver.received().toLocaleString('en'), target: '', pass: undefined },
      );
    });
  } finally {
    await receiver.close();
  }
}

async function freshBesideBacklog(checks: Check[]): Promise<void> {
  const receiver = await startReceiver();
  try {
    await withTenant('waygate-bench-fresh', async (tenant, servers) => {
      await withEmbeddedDatabase(tenant, (database) => seedWebhookBacklog(database, tenant.accountId, { url: receiver.url, count: RETRIES, attempts: 1, active: true }));
      const server = await startEmbeddedServer(tenant, { ALLOW_PRIVATE_URLS: 'true', RATE_LIMIT_PER_MINUTE: '10000000' }, START);
      servers.push(server);
      const { origin } = server;
      const deviceId = await linkDevice(origin, tenant.token);
      const started = Date.now();
      const receivedAtStart = receiver.received();
      for (let i = 0; i < FRESH_EVENTS; i++) {
        await api(origin, tenant.token, 'POST', '/sandbox/incoming', { deviceId, from: '6281200000009', content: `fresh ${i}` });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      const deadline = Date.now() + 10_000;
      while (receiver.fresh.length < FRESH_EVENTS && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      const seconds = (Date.now() - started) / 1000;
      const backlogSent = receiver.received() - receivedAtStart - receiver.fresh.length;
      const lags = receiver.fresh.map((f) => f.at - f.createdAt);
      const { p50, max } = summary(lags);
      checks.push(
        {
          metric: `(c) fresh event to a healthy endpoint beside ${RETRIES.toLocaleString('en')} retries: max (p50)`,
          measured: `${ms(max)} (${ms(p50)}; ${receiver.fresh.length}/${FRESH_EVENTS} arrived)`,
          target: '<= 2000 ms',
          pass: receiver.fresh.length === FRESH_EVENTS && max <= 2_000,
        },
        {
          metric: '(c) backlog retries delivered meanwhile',
          measured: `${backlogSent.toLocaleString('en')} in ${seconds.toFixed(1)} s (${Math.round(backlogSent / seconds).toLocaleString('en')}/s)${backlogSent >= RETRIES ? ': the backlog ran out first, the check proves little' : ''}`,
          target: '',
          pass: undefined,
        },
      );
    });
  } finally {
    await receiver.close();
  }
}

export async function run(_options: BenchmarkOptions): Promise<BenchmarkOutcome> {
  const checks: Check[] = [];
  const only = process.env.BENCH_STARVATION_ONLY;
  if (START.built) buildProduct();
  if (!only || only === 'a') await backlogHang(checks);
  if (!only || only === 'b') await jobLatency(checks);
  if (!only || only === 'c') await freshBesideBacklog(checks);
  console.log(formatTable(checks));
  await writeResults('starvation', { backlog: BACKLOG, job: JOB, retries: RETRIES, server: SERVER, checks });
  return { passed: allPassed(checks) };
}
