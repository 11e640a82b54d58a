/**
 * Big tables, on PostgreSQL: one account with 10,000,000 messages (BENCH_TABLE_MESSAGES), an
 * endpoint with 3,000,000 deliveries, each with its event and one attempt (BENCH_TABLE_DELIVERIES),
 * and 100,000 bulk jobs (BENCH_TABLE_JOBS), every table spread over the last 30 days.
 *
 * (a) Listings: page 1, page 100 and a cursor page nine tenths deep of GET /messages,
 *     GET /webhooks/:id/deliveries and GET /messages/bulk-jobs, and GET /events from the start and
 *     nine tenths deep, each checked against the table first, then p95 over 4 connections
 *     (target <= 50 ms each); page 1 of filters without an index of their own, at values that
 *     match 2% of the rows or none, against the same target.
 * (b) Pruning a day of data while sends continue: POST /messages/send (scheduled, so each is one
 *     accept: device, quota, insert) by 4 connections, first alone, then while housekeeping
 *     prunes the oldest day of events, attempts and message bodies (retention 29 days) batch by
 *     batch as the worker does; sends' p99 while pruning (over every send of the windows that ran
 *     while it did) <= 2x the p99 without it; the worst single window's p99 is reported too.
 *
 * The database (waygate_bench_tables) is created anew on each run and dropped at the end.
 */
import pino from 'pino';
import { loadConfig } from '../src/config.js';
import { Housekeeping } from '../src/housekeeping.js';
import { openDatabase } from '../src/platform/database.js';
import { runLoad } from './lib/load.js';
import { mergeWindows, runPostLoad, type PostLoadResult } from './lib/post-load.js';
import { allPassed, formatTable, writeResults, type Check, type Measured } from './lib/report.js';
import { api } from './lib/tenant.js';
import { openApiFixture } from './lib/api-fixture.js';
import { LIMIT, measureListings, seedRows, type Listing } from './listings.js';
import type { BenchmarkOptions, BenchmarkOutcome } from './run.js';

const MESSAGES = Number(process.env.BENCH_TABLE_MESSAGES ?? 10_000_000);
const DELIVERIES = Number(process.env.BENCH_TABLE_DELIVERIES ?? 3_000_000);
const JOBS = Number(process.env.BENCH_TABLE_JOBS ?? 100_000);
const SPAN_DAYS = 30;
/** Retention that leaves the oldest of the 30 days to prune. */
const RETENTION_DAYS = SPAN_DAYS - 1;
const TARGET_P95_MS = 50;
const PRUNE_P99_FACTOR = 2;
const CONNECTIONS = 4;
const COUNT_CAP = loadConfig({}).listingCountCap;

interface EventsBody {
  data: { id: string; seq: number }[];
}

export async function run(options: BenchmarkOptions): Promise<BenchmarkOutcome> {
  const { checks, results } = await measure(options);
  console.log(`\n${formatTable(checks)}\n`);
  const file = await writeResults('tables', { at: new Date().toISOString(), checks, results });
  console.log(`Results written to ${file}`);
  return { passed: allPassed(checks) };
}

/** (a) and (b): their checks and figures (bench/scale runs them too). */
export async function measure(options: BenchmarkOptions): Promise<Measured> {
  const checks: Check[] = [];
  const results: Record<string, unknown> = { messages: MESSAGES, deliveries: DELIVERIES, jobs: JOBS, spanDays: SPAN_DAYS, limit: LIMIT, connections: CONNECTIONS };
  const fixture = await openApiFixture('waygate_bench_tables', { devices: ['bench phone'], endpoints: 1 });
  try {
    const { client, origin, accountId, token, endpointIds, deviceIds, databaseUrl } = fixture;
    const [endpointId, deviceId] = [endpointIds[0]!, deviceIds[0]!];
    // A linked number momentarily offline: sends are accepted and wait for it (no worker runs here).
    await client.query(`UPDATE devices SET status = 'DISCONNECTED', phone_number = '6281100000001' WHERE id = $1`, [deviceId]);
    console.log(`Seeding ${MESSAGES.toLocaleString('en')} messages, ${DELIVERIES.toLocaleString('en')} deliveries and attempts, ${JOBS.toLocaleString('en')} jobs …`);
    await seedRows(client, accountId, endpointId, deviceId, { deliveries: DELIVERIES, messages: MESSAGES, jobs: JOBS, spanDays: SPAN_DAYS });

    // (a) Listings.
    const listings: Listing[] = [
      // Filters without an index of their own, at their worst: a value that matches nothing.
      { name: 'messages', route: '/messages', table: 'messages', column: 'account_id', key: accountId, filters: ['status=FAILED', 'to=6289999999999', 'status=QUEUED'], rows: MESSAGES },
      { name: 'deliveries', route: `/webhooks/${endpointId}/deliveries`, table: 'webhook_deliveries', column: 'endpoint_id', key: endpointId, filters: ['status=FAILED', 'status=PENDING'], rows: DELIVERIES },
      { name: 'bulk jobs', route: '/messages/bulk-jobs', table: 'bulk_jobs', column: 'account_id', key: accountId, filters: ['status=CANCELLED'], rows: JOBS },
    ];
    await measureListings({ origin, token, client, options, targetMs: TARGET_P95_MS, countCap: COUNT_CAP }, listings, checks, results);
    const deepSeq = Math.floor(DELIVERIES * 0.9);
    for (const [label, after] of [['from the start', 0], [`after seq ${deepSeq.toLocaleString('en')}`, deepSeq]] as const) {
      const path = `/events?after=${after}&limit=${LIMIT}`;
      const answer = await api<EventsBody>(origin, token, 'GET', path);
      const expected = await client.query<{ id: string }>('SELECT id FROM events WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3', [accountId, after, LIMIT]);
      const correct = answer.status === 200 && answer.json.data.length === LIMIT && answer.json.data.every((row, i) => row.id === expected.rows[i]?.id);
      const load = await runLoad({ title: `events ${label}`, origin, requests: [{ path }], headers: { 'x-api-key': token }, connections: CONNECTIONS, durationSeconds: options.durationSeconds, warmupSeconds: options.warmupSeconds });
      results[`events ${label}`] = load;
      const clean = load.non2xx === 0 && load.errors === 0 && load.responses > 0;
      checks.push({
        metric: `events ${label}: matches the table; p95`,
        measured: `${correct ? 'match' : 'MISMATCH'}; ${load.latencyMs.p95} ms (p50 ${load.latencyMs.p50}, ${load.requestsPerSecond}/s)`,
        target: `match; <= ${TARGET_P95_MS} ms`,
        pass: correct && clean && load.latencyMs.p95 <= TARGET_P95_MS,
      });
    }

    // (b) Sends alone, then sends while the oldest day is pruned.
    const sendLoad = (title: string): Promise<PostLoadResult> =>
      runPostLoad({
        title,
        origin,
        path: '/messages/send',
        body: JSON.stringify({ type: 'TEXT', content: 'While pruning', recipients: ['6281234567890'], scheduledAt: new Date(Date.now() + 7 * 86_400_000).toISOString() }),
        headers: { 'x-api-key': token },
        connections: CONNECTIONS,
        durationSeconds: options.durationSeconds,
        warmupSeconds: options.warmupSeconds,
      });
    console.log('sends without pruning …');
    const alone = await sendLoad('sends alone');
    results['sends alone'] = alone;

    // What was expired when pruning began must all be gone when it ends. (Rows keep expiring
    // while it runs, a few a second at this size; the next housekeeping turn takes those.)
    const { rows: clock } = await client.query<{ at: Date }>('SELECT now() AS at');
    const pruneFrom = clock[0]!.at;
    const expired = async () => {
      const { rows } = await client.query<{ events: number; attempts: number; bodies: number }>(
        `SELECT (SELECT count(*) FROM events WHERE account_id = $1 AND created_at < $3::timestamptz - $2::int * interval '1 day')::int AS events,
                (SELECT count(*) FROM webhook_attempts WHERE attempted_at < $3::timestamptz - $2::int * interval '1 day')::int AS attempts,
                (SELECT count(*) FROM messages WHERE account_id = $1 AND created_at < $3::timestamptz - $2::int * interval '1 day' AND content <> '')::int AS bodies`,
        [accountId, RETENTION_DAYS, pruneFrom],
      );
      return rows[0]!;
    };
    const before = await expired();
    const database = await openDatabase({ databaseUrl, dataDir: 'unused', poolSize: 2, applicationName: 'waygate-bench-housekeeping' });
    const housekeeping = new Housekeeping(database, { eventRetentionDays: RETENTION_DAYS, attemptRetentionDays: RETENTION_DAYS, messageBodyRetentionDays: RETENTION_DAYS, mediaRetentionDays: RETENTION_DAYS }, pino({ level: 'warn' }));
    let pruning = true;
    const pruneStarted = performance.now();
    const pruner = housekeeping.drain().then((pruned) => ({ pruned, ms: performance.now() - pruneStarted })).finally(() => (pruning = false));
    console.log('sends while pruning …');
    const during: PostLoadResult[] = [];
    do during.push(await sendLoad('sends while pruning'));
    while (pruning);
    const { pruned, ms: pruneMs } = await pruner;
    await database.close();
    const after = await expired();
    results['sends while pruning'] = during;
    results.pruned = { ...pruned, ms: Math.round(pruneMs), before, after };
    // The sends' p99 while pruning: over every send of the windows that ran while it did. The
    // worst single window's p99 is reported beside it: the worst of many windows is higher than
    // one window's even with nothing running beside it, so it is not compared with `alone`'s.
    const whilePruning = mergeWindows(during);
    const worstP99 = Math.max(...during.map((load) => load.latencyMs.p99));
    const clean = [alone, ...during].every((load) => load.non2xx === 0 && load.errors === 0 && load.responses > 0);
    checks.push({
      metric: `pruning the oldest day: rows expired when it began left`,
      measured: `${pruned.events.toLocaleString('en')} events, ${pruned.attempts.toLocaleString('en')} attempts, ${pruned.messageBodies.toLocaleString('en')} message bodies in ${(pruneMs / 1000).toFixed(1)} s (${pruned.passes} rounds); left ${after.events}/${after.attempts}/${after.bodies}`,
      target: 'none left',
      pass: before.events > 0 && before.bodies > 0 && after.events === 0 && after.attempts === 0 && after.bodies === 0,
    });
    checks.push({
      metric: `sends' p99 while pruning vs alone`,
      measured: `${whilePruning.latencyMs.p99} ms vs ${alone.latencyMs.p99} ms = ${(whilePruning.latencyMs.p99 / alone.latencyMs.p99).toFixed(2)}x (${during.length} load window(s) of ${options.durationSeconds} s, ${whilePruning.responses} sends; ${during.map((load) => load.requestsPerSecond).join(', ')}/s vs ${alone.requestsPerSecond}/s)`,
      target: `<= ${PRUNE_P99_FACTOR}x`,
      pass: clean && whilePruning.latencyMs.p99 <= PRUNE_P99_FACTOR * alone.latencyMs.p99,
    });
    checks.push({
      metric: `sends' p99 of the worst window while pruning`,
      measured: `${worstP99} ms (${(worstP99 / alone.latencyMs.p99).toFixed(2)}x alone's; windows ${during.map((load) => load.latencyMs.p99).join(', ')} ms)`,
      target: '',
      pass: undefined,
    });
  } finally {
    await fixture.close();
  }
  return { checks, results };
}
