/**
 * A closed-loop POST load with autocannon on a loopback server: N connections, each sending one
 * request at a time for a bounded duration after a warm-up. Latency percentiles come from every
 * response time.
 */
import autocannon from 'autocannon';
import { assertLoopback, percentile } from './load.js';
import { startCpuMeter, type ProcessGroups } from './cpu-meter.js';

export interface PostLoadOptions {
  title: string;
  origin: string;
  path: string;
  body: string;
  headers: Record<string, string>;
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  /** Processes whose CPU time over the measured window (not the warm-up) goes in `cpuMs`, beside PostgreSQL's and the load generator's. */
  cpu?: ProcessGroups;
}

export interface PostLoadResult {
  title: string;
  responses: number;
  requestsPerSecond: number;
  latencyMs: { p50: number; p95: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  statusCodes: Record<string, number>;
  /** CPU milliseconds by process group over the measured window (when asked for and /proc is there). */
  cpuMs?: Record<string, number>;
}

const round = (value: number): number => Math.round(value * 100) / 100;

/**
 * The least warm-up before a throughput comparison with the bare route: the rate compared is the
 * steady one, after V8 has optimised the send path. The bare route's little code is optimised
 * within a second; Waygate's send path needs about 15 s of load (at ~1,000 sends/s, `perf`: V8's
 * optimising compiler took 25–46% of the api processes' CPU through a window that followed 3 s of
 * warm-up, and the in-process server's share fell from 28% to under 5% over the first 15 s).
 */
const STEADY_WARMUP_SECONDS = 15;

/** The warm-up of a throughput comparison with the bare route: what was asked for, at least STEADY_WARMUP_SECONDS. */
export const steadyWarmupSeconds = (requested: number): number => Math.max(requested, STEADY_WARMUP_SECONDS);

async function fire(options: PostLoadOptions, durationSeconds: number): Promise<PostLoadResult> {
  const times: number[] = [];
  const started = process.hrtime.bigint();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${options.origin}${options.path}`,
        method: 'POST',
        connections: options.connections,
        duration: durationSeconds,
        timeout: 30,
        headers: { 'content-type': 'application/json', ...options.headers },
        requests: [{ method: 'POST', path: options.path, body: options.body }],
      },
      (error, outcome) => (error ? reject(error) : resolve(outcome)),
    );
    instance.on('response', (_client, _status, _bytes, responseTime) => {
      times.push(responseTime);
    });
  });
  const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
  times.sort((a, b) => a - b);
  return {
    title: options.title,
    responses: times.length,
    requestsPerSecond: round(times.length / elapsed),
    latencyMs: { p50: round(percentile(times, 50)), p95: round(percentile(times, 95)), p99: round(percentile(times, 99)), max: round(times[times.length - 1] ?? NaN) },
    non2xx: result.non2xx,
    errors: result.errors,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, stats]) => [code, stats.count])),
  };
}

export async function runPostLoad(options: PostLoadOptions): Promise<PostLoadResult> {
  assertLoopback(options.origin);
  if (options.warmupSeconds > 0) await fire(options, options.warmupSeconds);
  const meter = options.cpu && startCpuMeter(options.cpu);
  const result = await fire(options, options.durationSeconds);
  const cpuMs = meter?.stop();
  return cpuMs ? { ...result, cpuMs } : result;
}
