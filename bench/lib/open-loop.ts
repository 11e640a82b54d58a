/**
 * An open-loop load: requests are sent at a fixed rate, evenly spaced, whether or not earlier
 * ones have been answered (as independent users would), over a pool of keep-alive connections
 * on loopback. Latency is measured from the moment each request was due, so queueing inside the
 * load generator counts against the server, never for it.
 */
import { Pool } from 'undici';
import { assertLoopback, percentile } from './load.js';

export interface OpenLoopOptions {
  title: string;
  origin: string;
  paths: string[];
  headers?: Record<string, string>;
  /** Requests per second, spread evenly. */
  rate: number;
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
}

export interface OpenLoopResult {
  title: string;
  rate: number;
  sent: number;
  answered: number;
  failed: number;
  latencyMs: { p50: number; p95: number; p99: number; max: number };
}

const round = (value: number): number => Math.round(value * 100) / 100;

async function fire(pool: Pool, options: OpenLoopOptions, seconds: number): Promise<OpenLoopResult> {
  const total = Math.round(options.rate * seconds);
  const intervalMs = 1000 / options.rate;
  const times: number[] = [];
  let failed = 0;
  const start = performance.now();
  const inFlight: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + i * intervalMs;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    const path = options.paths[i % options.paths.length]!;
    inFlight.push(
      pool
        .request({ method: 'GET', path, headers: options.headers ?? {} })
        .then(async (response) => {
          await response.body.dump();
          if (response.statusCode >= 200 && response.statusCode < 300) times.push(performance.now() - due);
          else failed++;
        })
        .catch(() => {
          failed++;
        }),
    );
  }
  await Promise.all(inFlight);
  times.sort((a, b) => a - b);
  return {
    title: options.title,
    rate: options.rate,
    sent: total,
    answered: times.length,
    failed,
    latencyMs: { p50: round(percentile(times, 50)), p95: round(percentile(times, 95)), p99: round(percentile(times, 99)), max: round(times[times.length - 1] ?? NaN) },
  };
}

export async function runOpenLoop(options: OpenLoopOptions): Promise<OpenLoopResult> {
  assertLoopback(options.origin);
  const pool = new Pool(options.origin, { connections: options.connections, pipelining: 1 });
  try {
    if (options.warmupSeconds > 0) await fire(pool, options, options.warmupSeconds);
    return await fire(pool, options, options.durationSeconds);
  } finally {
    await pool.close();
  }
}
