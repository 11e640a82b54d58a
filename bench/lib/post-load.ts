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
  /** The measured window, in seconds (the sum of the windows, for merged results). */
  seconds: number;
  requestsPerSecond: number;
  latencyMs: { p50: number; p95: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  statusCodes: Record<string, number>;
  /** CPU milliseconds by process group over the measured window (when asked for and /proc is there). */
  cpuMs?: Record<string, number>;
}

const round = (value: number): number => Math.round(value * 100) / 100;

/** Each result's response times, sorted, for merging windows (kept out of the results written to disk). */
const responseTimes = new WeakMap<PostLoadResult, number[]>();

/**
 * The least warm-up before a throughput comparison with the bare route: the rate compared is the
 * steady one, after V8 has optimised the send path. The bare route's little code is optimised
 * within a second; Waygate's send path needs about 15 s of load (at ~1,000 sends/s, `perf`: V8's
 * optimising compiler took 25–46% of the api processes' CPU through a window that followed 3 s of
 * warm-up, and the in-process server's share fell from 28% to under 5% over the first 15 s).
 */
const STEADY_WARMUP_SECONDS = 15;

/** The warm-up of a throughput comparison with the bare route: what was asked for, at least STEADY_WARMUP_SECONDS. */
const steadyWarmupSeconds = (requested: number): number => Math.max(requested, STEADY_WARMUP_SECONDS);

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
  return summarise(options.title, times, elapsed, {
    non2xx: result.non2xx,
    errors: result.errors,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, stats]) => [code, stats.count])),
  });
}

function summarise(title: string, times: number[], seconds: number, outcome: Pick<PostLoadResult, 'non2xx' | 'errors' | 'statusCodes' | 'cpuMs'>): PostLoadResult {
  times.sort((a, b) => a - b);
  const summary: PostLoadResult = {
    title,
    responses: times.length,
    seconds: round(seconds),
    requestsPerSecond: round(times.length / seconds),
    latencyMs: { p50: round(percentile(times, 50)), p95: round(percentile(times, 95)), p99: round(percentile(times, 99)), max: round(times[times.length - 1] ?? NaN) },
    ...outcome,
  };
  responseTimes.set(summary, times);
  return summary;
}

/** Windows of the same load as one: responses, seconds, errors and CPU added up, latencies over every response. */
export function mergeWindows(windows: PostLoadResult[]): PostLoadResult {
  const add = (pick: (w: PostLoadResult) => Record<string, number> | undefined): Record<string, number> | undefined => {
    const parts = windows.map(pick);
    if (parts.some((part) => part === undefined)) return undefined;
    const total: Record<string, number> = {};
    for (const part of parts) for (const [key, value] of Object.entries(part!)) total[key] = (total[key] ?? 0) + value;
    return total;
  };
  const cpuMs = add((w) => w.cpuMs);
  return summarise(
    windows[0]!.title,
    windows.flatMap((w) => responseTimes.get(w) ?? []),
    windows.reduce((sum, w) => sum + w.seconds, 0),
    {
      non2xx: windows.reduce((sum, w) => sum + w.non2xx, 0),
      errors: windows.reduce((sum, w) => sum + w.errors, 0),
      statusCodes: add((w) => w.statusCodes)!,
      ...(cpuMs ? { cpuMs } : {}),
    },
  );
}

export async function runPostLoad(options: PostLoadOptions): Promise<PostLoadResult> {
  assertLoopback(options.origin);
  if (options.warmupSeconds > 0) await fire(options, options.warmupSeconds);
  const meter = options.cpu && startCpuMeter(options.cpu);
  const result = await fire(options, options.durationSeconds);
  const cpuMs = meter?.stop();
  if (cpuMs) result.cpuMs = cpuMs;
  return result;
}

/** One side of an alternating comparison: a load (or several at once) run for a window. */
export interface ComparedSide {
  /** Runs the side's load(s) over one window after a warm-up; one result per load run at once. */
  run(durationSeconds: number, warmupSeconds: number): Promise<PostLoadResult[]>;
  /** The warm-up of every window after the first (which has the steady warm-up). */
  rewarmSeconds: number;
  /** Idle seconds after each of its windows: the work the load leaves behind (receipts) done before the other side runs. */
  settleSeconds: number;
}

export interface AlternatingResult {
  /** Each side's windows merged, one per load run at once. */
  baseline: PostLoadResult[];
  subject: PostLoadResult[];
  /** subject / baseline requests per second, over all rounds and per round. */
  ratio: number;
  roundRatios: number[];
}

/** Rounds of an alternating comparison. */
const COMPARISON_ROUNDS = 3;

/**
 * The seconds a direct-send window is preceded by load and followed by rest: the sandbox's
 * delivery receipt comes `receiptMs` after a send and its read receipt twice that, so the window
 * starts once they flow and the other side's once they have stopped. Receipts pushed beyond
 * half a minute (to measure without them) never come in a window.
 */
export const receiptsSeconds = (receiptMs: number): number => (receiptMs <= 30_000 ? (2 * receiptMs) / 1000 + 1 : 0);

/** The overall ratio and each round's, as the benchmarks' tables print them. */
export const formatRatio = ({ ratio, roundRatios }: AlternatingResult): string =>
  `${(ratio * 100).toFixed(1)}% (rounds ${roundRatios.map((r) => (r * 100).toFixed(1)).join(', ')})`;

const requestsPerSecond = (loads: PostLoadResult[]): number => loads.reduce((sum, load) => sum + load.responses, 0) / Math.max(...loads.map((load) => load.seconds));

/**
 * A throughput comparison on a shared machine: the baseline's and the subject's windows
 * alternate over COMPARISON_ROUNDS rounds, so a machine that slows down or speeds up weighs on
 * both sides alike, and the spread of the rounds' ratios shows how steady the machine was. Each
 * side's first window follows the steady warm-up.
 */
export async function alternate(baseline: ComparedSide, subject: ComparedSide, options: { durationSeconds: number; warmupSeconds: number }): Promise<AlternatingResult> {
  const windows: { baseline: PostLoadResult[][]; subject: PostLoadResult[][] } = { baseline: [], subject: [] };
  const roundRatios: number[] = [];
  const pause = (seconds: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  for (let round = 0; round < COMPARISON_ROUNDS; round++) {
    const warmup = (side: ComparedSide): number => (round === 0 ? steadyWarmupSeconds(options.warmupSeconds) : side.rewarmSeconds);
    const base = await baseline.run(options.durationSeconds, warmup(baseline));
    await pause(baseline.settleSeconds);
    const measured = await subject.run(options.durationSeconds, warmup(subject));
    await pause(subject.settleSeconds);
    windows.baseline.push(base);
    windows.subject.push(measured);
    roundRatios.push(requestsPerSecond(measured) / requestsPerSecond(base));
  }
  const merged = (side: PostLoadResult[][]): PostLoadResult[] => side[0]!.map((_, load) => mergeWindows(side.map((window) => window[load]!)));
  const result = { baseline: merged(windows.baseline), subject: merged(windows.subject) };
  return { ...result, ratio: requestsPerSecond(result.subject) / requestsPerSecond(result.baseline), roundRatios };
}
