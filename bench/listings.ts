/**
 * Listings at a million rows, on PostgreSQL: one account with a webhook endpoint that has
 * 1,000,000 deliveries (each with its event and one attempt) and 1,000,000 messages, seeded by
 * set-based SQL and then vacuumed and analysed as autovacuum would leave a settled table.
 *
 * Over HTTP to the API process (`serve --role api`, a child process), LATENCY_CONNECTIONS
 * connections in a closed loop, p95 latency of:
 *   GET /webhooks/:id/deliveries  page 1, page 100 (by offset) and a cursor page 900,000 rows deep
 *   GET /messages                 the same three
 * each target <= 200 ms, at limit 100 (the largest page). The offset page as deep as that cursor
 * is timed once and reported for information: offset cost grows with depth, a cursor's does not.
 * So are filtered page-1 requests, against the same target (2% of the rows FAILED; a `to` that
 * matches nothing): such a filter is checked on at most LISTING_SCAN_CAP rows a page.
 *
 * Before timing, every answer is checked against an independent query (ids of page 1, page 100,
 * the cursor page) and meta against the count cap, so a fast wrong answer cannot pass.
 * The database (waygate_bench_listings) is created anew on each run and dropped at the end.
 */
import type pg from 'pg';
import { loadConfig } from '../src/config.js';
import { openApiFixture } from './lib/api-fixture.js';
import { runLoad, type LoadResult } from './lib/load.js';
import { allPassed, formatTable, writeResults, type Check } from './lib/report.js';
import { api } from './lib/tenant.js';
import type { BenchmarkOptions, BenchmarkOutcome } from './run.js';

const ROWS = Number(process.env.BENCH_LISTING_ROWS ?? 1_000_000);
export const LIMIT = 100;
const DEEP_PAGE = 100;
const TARGET_P95_MS = 200;
const LATENCY_CONNECTIONS = 4;
const COUNT_CAP = loadConfig({}).listingCountCap;

export interface SeedSizes {
  /** Events, each with one delivery to the endpoint and one attempt of it. */
  deliveries: number;
  messages: number;
  /** Bulk jobs of the account (0: none). */
  jobs: number;
  /** Each table's rows are spread evenly over this many days before now, four to a timestamp. */
  spanDays: number;
}

/** Set-based seeding of the account's tables, then VACUUM ANALYZE as autovacuum would leave them. */
export async function seedRows(client: pg.Client, accountId: string, endpointId: string, deviceId: string, sizes: SeedSizes): Promise<void> {
  const step = async (what: string, sql: string, params: unknown[] = []) => {
    const started = Date.now();
    await client.query(sql, params);
    console.log(`  ${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  };
  // Row g of n was created ((n - g) / 4) steps before now: four rows share each timestamp, so the
  // order's tie-break on id is exercised, and the oldest is spanDays old.
  const age = (n: string, total: number) => `((${n} - g) / 4) * ($SPAN::float8 * 86400000 / ${Math.max(1, Math.ceil(total / 4))}) * interval '1 millisecond'`;
  const withSpan = (sql: string, spanParam: number) => sql.replaceAll('$SPAN', `$${spanParam}`);
  const { deliveries, messages, jobs, spanDays } = sizes;
  await step(
    `${deliveries.toLocaleString('en')} events`,
    withSpan(`INSERT INTO events (id, account_id, seq, type, data, created_at)
     SELECT 'evt_' || lpad(g::text, 26, '0'), $1, g, 'message.status', jsonb_build_object('n', g), now() - ${age('$2', deliveries)}
       FROM generate_series(1, $2) AS g`, 3),
    [accountId, deliveries, spanDays],
  );
  await step('account event_seq', 'UPDATE accounts SET event_seq = $2 WHERE id = $1', [accountId, deliveries]);
  await step(
    `${deliveries.toLocaleString('en')} deliveries`,
    withSpan(`INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, status, attempts, last_status_code, last_error, created_at, delivered_at)
     SELECT 'whd_' || lpad(g::text, 26, '0'), $1, $2, 'evt_' || lpad(g::text, 26, '0'),
            CASE WHEN g % 50 = 0 THEN 'FAILED' ELSE 'SUCCEEDED' END, 1,
            CASE WHEN g % 50 = 0 THEN 500 ELSE 204 END, CASE WHEN g % 50 = 0 THEN 'HTTP 500' END,
            now() - ${age('$3', deliveries)},
            CASE WHEN g % 50 <> 0 THEN now() - ${age('$3', deliveries)} + interval '20 ms' END
       FROM generate_series(1, $3) AS g`, 4),
    [accountId, endpointId, deliveries, spanDays],
  );
  await step(
    `${deliveries.toLocaleString('en')} attempts`,
    withSpan(`INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, latency_ms, response_excerpt, error)
     SELECT 'whd_' || lpad(g::text, 26, '0'), now() - ${age('$1', deliveries)} + interval '20 ms',
            CASE WHEN g % 50 = 0 THEN 500 ELSE 204 END, 20, NULL, CASE WHEN g % 50 = 0 THEN 'HTTP 500' END
       FROM generate_series(1, $1) AS g`, 2),
    [deliveries, spanDays],
  );
  // Message ids are the product's: a lowercase ULID whose first ten characters encode the
  // creation time (message-body pruning walks them in that order), then a unique tail.
  await client.query(`CREATE OR REPLACE FUNCTION bench_ulid_time(at timestamptz) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT string_agg(substr('0123456789abcdefghjkmnpqrstvwxyz', (((extract(epoch FROM at) * 1000)::bigint >> (5 * (9 - i))) & 31)::int + 1, 1), '' ORDER BY i)
      FROM generate_series(0, 9) AS i $$`);
  await step(
    `${messages.toLocaleString('en')} messages`,
    withSpan(`INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, attempts, created_at, queued_at, sent_at)
     SELECT 'msg_' || bench_ulid_time(now() - ${age('$3', messages)}) || lpad(g::text, 16, '0'), $1, $2, 'out', '62812' || lpad((g % 10000000)::text, 7, '0'), 'TEXT',
            'Listing bench message ' || g, CASE WHEN g % 50 = 0 THEN 'FAILED' ELSE 'SENT' END, 'BENCH' || g, 1,
            now() - ${age('$3', messages)}, now() - ${age('$3', messages)}, now() - ${age('$3', messages)} + interval '50 ms'
       FROM generate_series(1, $3) AS g`, 4),
    [accountId, deviceId, messages, spanDays],
  );
  if (jobs > 0) {
    await step(
      `${jobs.toLocaleString('en')} bulk jobs`,
      withSpan(`INSERT INTO bulk_jobs (id, account_id, device_id, status, type, content, total_contacts, sent_count, created_at, completed_at)
       SELECT 'job_' || lpad(g::text, 26, '0'), $1, $2, 'COMPLETED', 'TEXT', 'Bench job ' || g, 100, 100,
              now() - ${age('$3', jobs)}, now() - ${age('$3', jobs)} + interval '1 minute'
         FROM generate_series(1, $3) AS g`, 4),
      [accountId, deviceId, jobs, spanDays],
    );
  }
  await step('VACUUM ANALYZE', 'VACUUM ANALYZE events, webhook_deliveries, webhook_attempts, messages, bulk_jobs');
}

interface ListingBody {
  data: { id: string }[];
  meta: { total: number; totalExact: boolean; page: number; limit: number; nextCursor: string | null };
}

/** The ids of rows offset..offset+LIMIT in the listing's order, straight from the table. */
async function expectedIds(client: pg.Client, table: string, column: string, key: string, offset: number): Promise<string[]> {
  const rows = await client.query<{ id: string }>(
    `SELECT id FROM ${table} WHERE ${column} = $1 ORDER BY created_at DESC, id DESC LIMIT ${LIMIT} OFFSET ${offset}`,
    [key],
  );
  return rows.rows.map((row) => row.id);
}

function sameIds(body: ListingBody, expected: string[]): boolean {
  return body.data.length === expected.length && body.data.every((row, i) => row.id === expected[i]);
}

interface Case {
  label: string;
  path: string;
}

export interface Listing {
  name: string;
  route: string;
  table: string;
  column: string;
  key: string;
  /** Query filters, each timed on page 1 against the same target. */
  filters: string[];
  /** Rows in the listing (the seeded count). */
  rows: number;
}

/**
 * Checks each listing's page 1, page DEEP_PAGE and a cursor page nine tenths deep against the
 * table, then times them (p95 against targetMs) and its filters (reported).
 */
export async function measureListings(
  setup: { origin: string; token: string; client: pg.Client; options: BenchmarkOptions; targetMs: number; countCap: number },
  listings: Listing[],
  checks: Check[],
  results: Record<string, unknown>,
): Promise<void> {
  const { origin, token, client, options, targetMs, countCap } = setup;
  for (const listing of listings) {
    // Page DEEP_PAGE, the cursor after the page before it, and one beyond nine tenths must exist.
    if (listing.rows < (DEEP_PAGE + 1) * LIMIT) throw new Error(`${listing.name}: ${listing.rows.toLocaleString('en')} rows are too few to read page ${DEEP_PAGE} at limit ${LIMIT}; seed at least ${((DEEP_PAGE + 1) * LIMIT).toLocaleString('en')}`);
    const get = async (query: string) => {
      const started = performance.now();
      const answer = await api<ListingBody>(origin, token, 'GET', `${listing.route}?limit=${LIMIT}${query}`);
      if (answer.status !== 200) throw new Error(`GET ${listing.route}${query} answered ${answer.status}: ${JSON.stringify(answer.json)}`);
      return { body: answer.json, ms: performance.now() - started };
    };
    // Correctness first: the answers the timed requests will get, against the table itself.
    const first = await get('&page=1');
    const deep = await get(`&page=${DEEP_PAGE}`);
    const beforeDeep = await get(`&page=${DEEP_PAGE - 1}`);
    const viaCursor = await get(`&cursor=${beforeDeep.body.meta.nextCursor}`);
    const cursorDepth = Math.floor((listing.rows * 0.9) / LIMIT) * LIMIT;
    const deepOffsetPage = cursorDepth / LIMIT;
    const deepOffset = await get(`&page=${deepOffsetPage}`);
    const deepCursor = deepOffset.body.meta.nextCursor;
    if (!deepCursor) throw new Error(`page ${deepOffsetPage} of ${listing.name} has no nextCursor`);
    const cursorPage = await get(`&cursor=${deepCursor}`);
    const correct =
      sameIds(first.body, await expectedIds(client, listing.table, listing.column, listing.key, 0)) &&
      sameIds(deep.body, await expectedIds(client, listing.table, listing.column, listing.key, (DEEP_PAGE - 1) * LIMIT)) &&
      sameIds(viaCursor.body, deep.body.data.map((row) => row.id)) &&
      viaCursor.body.meta.page === DEEP_PAGE &&
      sameIds(cursorPage.body, await expectedIds(client, listing.table, listing.column, listing.key, cursorDepth)) &&
      cursorPage.body.meta.page === deepOffsetPage + 1;
    const capped = listing.rows > countCap ? first.body.meta.total === countCap && !first.body.meta.totalExact : first.body.meta.total === listing.rows && first.body.meta.totalExact;
    checks.push({
      metric: `${listing.name}: page 1, page ${DEEP_PAGE}, cursor pages match the table; meta.total`,
      measured: `${correct ? 'match' : 'MISMATCH'}; total ${first.body.meta.total.toLocaleString('en')}, totalExact ${first.body.meta.totalExact}`,
      target: listing.rows > countCap ? `match; total ${countCap.toLocaleString('en')}, totalExact false` : 'match; exact total',
      pass: correct && capped,
    });

    const cases: Case[] = [
      { label: 'page 1', path: `${listing.route}?limit=${LIMIT}&page=1` },
      { label: `page ${DEEP_PAGE} (offset ${((DEEP_PAGE - 1) * LIMIT).toLocaleString('en')})`, path: `${listing.route}?limit=${LIMIT}&page=${DEEP_PAGE}` },
      { label: `cursor page ${cursorDepth.toLocaleString('en')} rows deep`, path: `${listing.route}?limit=${LIMIT}&cursor=${deepCursor}` },
    ];
    for (const item of cases) {
      console.log(`${listing.name}: ${item.label} …`);
      const load: LoadResult = await runLoad({
        title: `${listing.name} ${item.label}`,
        origin,
        requests: [{ path: item.path }],
        headers: { 'x-api-key': token },
        connections: LATENCY_CONNECTIONS,
        durationSeconds: options.durationSeconds,
        warmupSeconds: options.warmupSeconds,
      });
      results[`${listing.name} ${item.label}`] = load;
      const clean = load.non2xx === 0 && load.errors === 0 && load.timeouts === 0 && load.responses > 0;
      checks.push({
        metric: `${listing.name} ${item.label}: p95`,
        measured: `${load.latencyMs.p95} ms (p50 ${load.latencyMs.p50}, ${load.requestsPerSecond}/s${clean ? '' : `, ${load.non2xx} non-2xx, ${load.errors} errors`})`,
        target: `<= ${targetMs} ms`,
        pass: clean && load.latencyMs.p95 <= targetMs,
      });
    }
    // Filters without an index of their own are checked on at most LISTING_SCAN_CAP rows a page
    // and a count, so even a value that matches nothing answers within the same target.
    for (const filter of listing.filters) {
      const load = await runLoad({
        title: `${listing.name} ${filter}`,
        origin,
        requests: [{ path: `${listing.route}?limit=${LIMIT}&${filter}` }],
        headers: { 'x-api-key': token },
        connections: LATENCY_CONNECTIONS,
        durationSeconds: Math.min(options.durationSeconds, 5),
        warmupSeconds: Math.min(options.warmupSeconds, 1),
      });
      results[`${listing.name} ${filter}`] = load;
      checks.push({
        metric: `${listing.name} ?${filter} page 1: p95`,
        measured: `${load.latencyMs.p95} ms (p50 ${load.latencyMs.p50}, ${load.non2xx} non-2xx)`,
        target: `<= ${targetMs} ms`,
        pass: load.non2xx === 0 && load.errors === 0 && load.latencyMs.p95 <= targetMs,
      });
    }
    checks.push({
      metric: `${listing.name} page ${deepOffsetPage.toLocaleString('en')} by offset, once (info)`,
      measured: `${deepOffset.ms.toFixed(0)} ms (the same rows by cursor: ${cursorPage.ms.toFixed(0)} ms)`,
      target: '',
      pass: undefined,
    });
  }
}

export async function run(options: BenchmarkOptions): Promise<BenchmarkOutcome> {
  const checks: Check[] = [];
  const results: Record<string, unknown> = { rows: ROWS, limit: LIMIT, connections: LATENCY_CONNECTIONS, countCap: COUNT_CAP };
  const fixture = await openApiFixture('waygate_bench_listings', { devices: ['bench phone'], endpoints: 1 });
  try {
    const { client, origin, accountId, token, endpointIds, deviceIds } = fixture;
    const [endpointId, deviceId] = [endpointIds[0]!, deviceIds[0]!];
    console.log(`Seeding ${ROWS.toLocaleString('en')} deliveries and messages …`);
    await seedRows(client, accountId, endpointId, deviceId, { deliveries: ROWS, messages: ROWS, jobs: 0, spanDays: ROWS / 4 / 86_400 });

    const listings: Listing[] = [
      { name: 'deliveries', route: `/webhooks/${endpointId}/deliveries`, table: 'webhook_deliveries', column: 'endpoint_id', key: endpointId, filters: ['status=FAILED'], rows: ROWS },
      // 2% FAILED; no message goes to that number, so its filter reads every row of the account.
      { name: 'messages', route: '/messages', table: 'messages', column: 'account_id', key: accountId, filters: ['status=FAILED', 'to=6289999999999'], rows: ROWS },
    ];
    await measureListings({ origin, token, client, options, targetMs: TARGET_P95_MS, countCap: COUNT_CAP }, listings, checks, results);
  } finally {
    await fixture.close();
  }

  console.log(`\n${formatTable(checks)}\n`);
  const file = await writeResults('listings', { at: new Date().toISOString(), checks, results });
  console.log(`Results written to ${file}`);
  return { passed: allPassed(checks) };
}
