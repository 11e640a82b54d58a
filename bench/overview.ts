/**
 * The account overview at a million messages, on PostgreSQL: one account with two devices and
 * 1,000,000 messages over the last 90 days (outgoing READ, DELIVERED, SENT and FAILED with three
 * error codes, and a tenth incoming), seeded by set-based SQL with the daily counts the outcome
 * statements keep (src/messaging/message-days.ts) built from them, then vacuumed and analysed.
 *
 * Over HTTP to the API process (`serve --role api`, a child process), LATENCY_CONNECTIONS
 * connections in a closed loop, p95 latency of GET /account/overview?days=7, 30 and 90, each
 * target <= 200 ms. Before timing, the 90-day answer is checked against counts taken straight
 * from the messages table, so a fast wrong answer cannot pass.
 * The database (waygate_bench_overview) is created anew on each run and dropped at the end
 * (lib/api-fixture.ts).
 */
import type pg from 'pg';
import type { OverviewJson } from '../src/messaging/overview-record.js';
import { openApiFixture } from './lib/api-fixture.js';
import { runLoad } from './lib/load.js';
import { allPassed, formatTable, writeResults, type Check } from './lib/report.js';
import { api } from './lib/tenant.js';
import type { BenchmarkOptions, BenchmarkOutcome } from './run.js';

const ROWS = Number(process.env.BENCH_OVERVIEW_ROWS ?? 1_000_000);
const TARGET_P95_MS = 200;
const LATENCY_CONNECTIONS = 4;

/**
 * Message g: device g % 2; created (g % 90) days ago; one in ten incoming; of the outgoing, one
 * in fifty FAILED (codes by g % 3), then READ, DELIVERED and SENT in turn. Each outcome's
 * timestamp is a few seconds after creation, so it falls on the same UTC day but near midnight.
 */
async function seed(client: pg.Client, accountId: string, devices: string[]): Promise<void> {
  const step = async (what: string, sql: string, params: unknown[] = []) => {
    const started = Date.now();
    await client.query(sql, params);
    console.log(`  ${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  };
  await step(
    `${ROWS.toLocaleString('en')} messages`,
    `WITH g AS (
       SELECT g, date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - (g % 90) * interval '1 day' + ((g / 90) % 80000) * interval '1 second' AS at,
              CASE WHEN g % 10 = 0 THEN 'in' ELSE 'out' END AS direction,
              CASE WHEN g % 10 = 0 THEN 'RECEIVED' WHEN g % 50 = 1 THEN 'FAILED' WHEN g % 3 = 0 THEN 'READ' WHEN g % 3 = 1 THEN 'DELIVERED' ELSE 'SENT' END AS status
         FROM generate_series(1, $1) AS g)
     INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, attempts, created_at,
                           sent_at, delivered_at, read_at, failed_at, received_at, error_code, error_message)
     SELECT 'msg_' || lpad(g::text, 26, '0'), $2, ($3::text[])[1 + g % 2], direction, '62812' || lpad((g % 10000000)::text, 7, '0'), 'TEXT',
            'Overview bench message ' || g, status, 'BENCH' || g, CASE WHEN direction = 'out' THEN 1 ELSE 0 END, at,
            CASE WHEN status IN ('SENT', 'DELIVERED', 'READ') THEN at + interval '1 second' END,
            CASE WHEN status IN ('DELIVERED', 'READ') THEN at + interval '2 seconds' END,
            CASE WHEN status = 'READ' THEN at + interval '3 seconds' END,
            CASE WHEN status = 'FAILED' THEN at + interval '1 second' END,
            CASE WHEN direction = 'in' THEN at END,
            CASE WHEN status = 'FAILED' THEN (ARRAY['RECIPIENT_NOT_ON_NETWORK', 'NETWORK_TEMPORARY_FAILURE', 'MEDIA_UPLOAD_FAILED'])[1 + g % 3] END,
            CASE WHEN status = 'FAILED' THEN 'bench failure' END
       FROM g`,
    [ROWS, accountId, devices],
  );
  // What the outcome statements would have added, outcome by outcome, on each outcome's day.
  await step(
    'daily counts',
    `INSERT INTO message_days (account_id, day, device_id, sent, delivered, read, failed, incoming)
     SELECT account_id, (created_at AT TIME ZONE 'UTC')::date, device_id,
            count(*) FILTER (WHERE sent_at IS NOT NULL), count(*) FILTER (WHERE delivered_at IS NOT NULL), count(*) FILTER (WHERE read_at IS NOT NULL),
            count(*) FILTER (WHERE failed_at IS NOT NULL), count(*) FILTER (WHERE direction = 'in')
       FROM messages WHERE account_id = $1 GROUP BY 1, 2, 3`,
    [accountId],
  );
  await step(
    'daily failures',
    `INSERT INTO message_day_failures (account_id, day, error_code, failed)
     SELECT account_id, (failed_at AT TIME ZONE 'UTC')::date, error_code, count(*) FROM messages WHERE account_id = $1 AND failed_at IS NOT NULL GROUP BY 1, 2, 3`,
    [accountId],
  );
  await step('VACUUM ANALYZE', 'VACUUM ANALYZE messages, message_days, message_day_failures');
}

/** The 90-day totals and failures counted straight from the messages table. */
async function expected(client: pg.Client, accountId: string): Promise<{ totals: OverviewJson['totals']; failures: OverviewJson['failuresByCode'] }> {
  const since = `(now() AT TIME ZONE 'UTC')::date - 89`;
  const [totals] = (
    await client.query<OverviewJson['totals']>(
      `SELECT count(*) FILTER (WHERE (sent_at AT TIME ZONE 'UTC')::date >= ${since})::int AS sent,
              count(*) FILTER (WHERE (delivered_at AT TIME ZONE 'UTC')::date >= ${since})::int AS delivered,
              count(*) FILTER (WHERE (read_at AT TIME ZONE 'UTC')::date >= ${since})::int AS read,
              count(*) FILTER (WHERE (failed_at AT TIME ZONE 'UTC')::date >= ${since})::int AS failed,
              count(*) FILTER (WHERE (received_at AT TIME ZONE 'UTC')::date >= ${since})::int AS incoming
         FROM messages WHERE account_id = $1`,
      [accountId],
    )
  ).rows;
  const failures = (
    await client.query<{ code: string; count: number }>(
      `SELECT error_code AS code, count(*)::int AS count FROM messages
        WHERE account_id = $1 AND (failed_at AT TIME ZONE 'UTC')::date >= ${since} GROUP BY error_code ORDER BY count DESC, code`,
      [accountId],
    )
  ).rows;
  return { totals: totals!, failures };
}

export async function run(options: BenchmarkOptions): Promise<BenchmarkOutcome> {
  const checks: Check[] = [];
  const results: Record<string, unknown> = { rows: ROWS, connections: LATENCY_CONNECTIONS };
  const fixture = await openApiFixture('waygate_bench_overview', { devices: ['Shop phone', 'Support phone'] });
  try {
    const { client, origin, accountId, token, deviceIds: devices } = fixture;
    console.log(`Seeding ${ROWS.toLocaleString('en')} messages …`);
    await seed(client, accountId, devices);

    const answer = await api<{ data: OverviewJson }>(origin, token, 'GET', '/account/overview?days=90');
    if (answer.status !== 200) throw new Error(`GET /account/overview answered ${answer.status}: ${JSON.stringify(answer.json)}`);
    const want = await expected(client, accountId);
    const got = answer.json.data;
    const correct = JSON.stringify(got.totals) === JSON.stringify(want.totals) && JSON.stringify(got.failuresByCode) === JSON.stringify(want.failures) && got.daily.length === 90;
    checks.push({
      metric: '90-day totals and failures by code match the messages table',
      measured: `${correct ? 'match' : 'MISMATCH'}: ${JSON.stringify(got.totals)}`,
      target: 'match',
      pass: correct,
    });

    for (const days of [7, 30, 90]) {
      console.log(`GET /account/overview?days=${days} …`);
      const load = await runLoad({
        title: `overview ${days} days`,
        origin,
        requests: [{ path: `/account/overview?days=${days}` }],
        headers: { 'x-api-key': token },
        connections: LATENCY_CONNECTIONS,
        durationSeconds: options.durationSeconds,
        warmupSeconds: options.warmupSeconds,
      });
      results[`overview ${days} days`] = load;
      const clean = load.non2xx === 0 && load.errors === 0 && load.timeouts === 0 && load.responses > 0;
      checks.push({
        metric: `GET /account/overview?days=${days} at ${ROWS.toLocaleString('en')} messages: p95`,
        measured: `${load.latencyMs.p95} ms (p50 ${load.latencyMs.p50}, ${load.requestsPerSecond}/s${clean ? '' : `, ${load.non2xx} non-2xx, ${load.errors} errors`})`,
        target: `<= ${TARGET_P95_MS} ms`,
        pass: clean && load.latencyMs.p95 <= TARGET_P95_MS,
      });
    }
  } finally {
    await fixture.close();
  }

  console.log(`\n${formatTable(checks)}\n`);
  const file = await writeResults('overview', { at: new Date().toISOString(), checks, results });
  console.log(`Results written to ${file}`);
  return { passed: allPassed(checks) };
}
