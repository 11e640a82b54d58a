/**
 * A closed-loop HTTP load on a loopback server with autocannon: N connections each send one request
 * at a time for a bounded duration, after a warm-up whose numbers are thrown away. Latency
 * percentiles are computed from every response time (autocannon's own summary has no p95).
 */
import autocannon from 'autocannon';

export interface LoadRequest {
  path: string;
}

export interface LoadOptions {
  title: string;
  /** http://127.0.0.1:PORT; anything not on the loopback interface is refused. */
  origin: string;
  /** Sent in turn by every connection; connection k starts at request k, so the mix is spread. */
  requests: LoadRequest[];
  headers?: Record<string, string>;
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  /** Caps the requests per second over all connections (an offered load below saturation); unset: as fast as answered. */
  overallRate?: number;
}

export interface LoadResult {
  title: string;
  connections: number;
  durationSeconds: number;
  responses: number;
  requestsPerSecond: number;
  latencyMs: { mean: number; p50: number; p95: number; p99: number; max: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodes: Record<string, number>;
}

export function assertLoopback(origin: string): void {
  const url = new URL(origin);
  if (url.protocol !== 'http:' || url.hostname !== '127.0.0.1') {
    throw new Error(`Benchmarks only talk to http://127.0.0.1 (got ${origin})`);
  }
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[rank - 1]!;
}

function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

async function fire(options: LoadOptions, durationSeconds: number): Promise<LoadResult> {
  const times: number[] = [];
  const started = process.hrtime.bigint();
  const requests = options.requests.map((request) => ({ method: 'GET', path: request.path }));
  let nextConnection = 0;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.origin,
        connections: options.connections,
        duration: durationSeconds,
        timeout: 30,
        headers: options.headers ?? {},
        ...(options.overallRate ? { overallRate: options.overallRate } : {}),
        requests,
        setupClient: (client) => {
          const shift = nextConnection++ % requests.length;
          client.setRequests([...requests.slice(shift), ...requests.slice(0, shift)]);
        },
      },
      (error, outcome) => (error ? reject(error) : resolve(outcome)),
    );
    instance.on('response', (_client, _statusCode, _bytes, responseTime) => {
      times.push(responseTime);
    });
  });
  const elapsedSeconds = Number(process.hrtime.bigint() - started) / 1e9;
  times.sort((a, b) => a - b);
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, stats]) => [code, stats.count]));
  return {
    title: options.title,
    connections: options.connections,
    durationSeconds: round(elapsedSeconds),
    responses: times.length,
    requestsPerSecond: round(times.length / elapsedSeconds, 1),
    latencyMs: {
      mean: round(times.reduce((sum, t) => sum + t, 0) / Math.max(1, times.length)),
      p50: round(percentile(times, 50)),
      p95: round(percentile(times, 95)),
      p99: round(percentile(times, 99)),
      max: round(times[times.length - 1] ?? Number.NaN),
    },
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    statusCodes,
  };
}

/** Warms up, then measures. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  assertLoopback(options.origin);
  if (options.requests.length === 0) throw new Error('runLoad needs at least one request');
  if (options.warmupSeconds > 0) await fire(options, options.warmupSeconds);
  return fire(options, options.durationSeconds);
}
