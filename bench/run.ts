/**
 * Runs one benchmark by name: `npm run bench -- <name> [--duration=S] [--warmup=S] [--connections=N]`.
 * Each benchmark prints a table (metric, measured, target, result), writes bench/results/<name>.json
 * and makes the process exit non-zero when a target is missed.
 */

export interface BenchmarkOptions {
  /** Measured seconds per load run. */
  durationSeconds: number;
  /** Seconds of load before each measured run, thrown away. */
  warmupSeconds: number;
  /** Concurrent HTTP connections of each load run. */
  connections: number;
}

export interface BenchmarkOutcome {
  passed: boolean;
}

interface Benchmark {
  description: string;
  load(): Promise<{ run(options: BenchmarkOptions): Promise<BenchmarkOutcome> }>;
}

const BENCHMARKS: Record<string, Benchmark> = {
  chats: {
    description: 'GET /chats and a chat history at 1,000,000 messages over 20,000 chats: p95 of page 1, a deep cursor page, the newest and a 90%-back history page',
    load: () => import('./chats.js'),
  },
  contacts: {
    description: 'GET /contacts at 1,000,000 contacts: search p95 latency, page-1 throughput against a bare Fastify route',
    load: () => import('./contacts.js'),
  },
  listings: {
    description: 'GET /webhooks/:id/deliveries and GET /messages at 1,000,000 rows: p95 of page 1, page 100 and a deep cursor page',
    load: () => import('./listings.js'),
  },
  messaging: {
    description: 'direct sends against a bare INSERT route, 1,000 scheduled messages, a 100,000-recipient bulk job (rate, RSS)',
    load: () => import('./messaging.js'),
  },
  overview: {
    description: 'GET /account/overview at 1,000,000 messages in one account: p95 of 7, 30 and 90 days, figures checked against the messages table',
    load: () => import('./overview.js'),
  },
  scale: {
    description: 'many numbers: 1,000 sandbox devices across 2 worker processes (split, takeover, rejoin), RSS per device, paced bulk lateness, cluster direct sends, then tables (BENCH_SCALE_TABLES=0 skips it)',
    load: () => import('./scale.js'),
  },
  starvation: {
    description: 'on the embedded database: /healthz under a 100,000-delivery refused backlog, API p99 during a 30,000 job, fresh events beside 50,000 retries',
    load: () => import('./starvation.js'),
  },
  tables: {
    description: 'big tables alone (also part of scale): listings at 10,000,000 messages and 3,000,000 deliveries (p95 <= 50 ms), pruning a day while sends continue',
    load: () => import('./tables.js'),
  },
  webhooks: {
    description: 'webhook deliveries/s to a local receiver, commit-to-receipt p50, a dead endpoint beside a healthy one',
    load: () => import('./webhooks.js'),
  },
};

const DEFAULTS: BenchmarkOptions = { durationSeconds: 10, warmupSeconds: 3, connections: 20 };

function usage(): string {
  const names = Object.entries(BENCHMARKS).map(([name, benchmark]) => `  ${name.padEnd(10)} ${benchmark.description}`);
  return ['Usage: npm run bench -- <name> [--duration=S] [--warmup=S] [--connections=N]', '', 'Benchmarks:', ...names].join('\n');
}

function parseOptions(args: string[]): BenchmarkOptions {
  const options = { ...DEFAULTS };
  const keys: Record<string, keyof BenchmarkOptions> = { duration: 'durationSeconds', warmup: 'warmupSeconds', connections: 'connections' };
  for (const arg of args) {
    const match = /^--(\w+)=(\d+)$/.exec(arg);
    const key = match ? keys[match[1]!] : undefined;
    if (!match || !key) throw new Error(`Unknown option ${arg}\n\n${usage()}`);
    options[key] = Number(match[2]);
  }
  if (options.durationSeconds < 1 || options.connections < 1) throw new Error('--duration and --connections must be at least 1');
  return options;
}

async function main(): Promise<number> {
  const [name, ...args] = process.argv.slice(2);
  const benchmark = name ? BENCHMARKS[name] : undefined;
  if (!benchmark) {
    console.error(name ? `Unknown benchmark "${name}"\n\n${usage()}` : usage());
    return 2;
  }
  const options = parseOptions(args);
  const module = await benchmark.load();
  const outcome = await module.run(options);
  console.log(outcome.passed ? `${name}: every target met` : `${name}: TARGET MISSED`);
  return outcome.passed ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : error);
    process.exit(1);
  },
);
