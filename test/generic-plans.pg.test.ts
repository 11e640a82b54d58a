/**
 * A statement planned once and kept (a genericPlan statement on its connections, a named
 * statement on the others once PostgreSQL settles on a generic plan, a PL/pgSQL function's query)
 * stays fast after a bulk job fills the tables it was planned on. Its plan is costed on the
 * statistics of the moment: a database analysed while empty (autovacuum on a new install) shows
 * messages as one row, and a claim, an outcome and a receipt then each read the whole table once
 * per message (a 100,000-recipient job on such a database ran at 66 messages a second). The
 * fan-out analyses messages when its statistics are smaller than a chunk it added, and an import
 * of contacts does the same for contacts (table-statistics.ts), which makes every connection plan
 * these statements again.
 *
 * Here the tables are analysed empty, each statement runs once on a connection opened as the
 * product opens them (so its plan is made then), a job is fanned out, and each statement's pages
 * and plan rows are counted (plan-cost.ts) as it runs again on that connection. Without the
 * analysis: a claim of 200 read 86,933 pages (3.2 million plan rows), the outcome 42,498, the
 * receipts 742,294. Files named *.pg.test.ts run only in the PostgreSQL pass: PGlite has no
 * autovacuum, and its tables stay unanalysed.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { BulkFanout } from '../src/messaging/bulk-fanout.js';
import { pageOfContacts } from '../src/directory/contact-store.js';
import { claimDue } from '../src/messaging/message-store.js';
import { applyReceipts, writeOutcomes } from '../src/messaging/outcomes.js';
import { GENERIC_PLAN_SETTINGS, type Database, type PreparedStatement } from '../src/platform/database.js';
import { createAppWithDevice, type Tenant, type TestContext } from './helpers.js';
import { costOf, executeSql, type PlanCost } from './plan-cost.js';

const QUEUED = 4_000;
const TAKEN = 200;
const CONTACTS = 5_000;
const PAGE = 50;
/** Matches one contact in seven. */
const SEARCHED = 'ali';
const WORKER = 'worker-gplan';

let ctx: TestContext;
let tenant: Tenant;
let deviceId: string;
/** A connection as the generic plans' pool opens them. */
let generic: pg.Client;
/** A connection as the main pool opens them (plan_cache_mode auto). */
let plain: pg.Client;

type Db = Pick<Database, 'queryPrepared'>;

/** Runs named statements on `client`, as node-postgres does on a pool's connection: prepared once, then executed. */
const on = (client: pg.Client): Db => ({
  queryPrepared: async <T,>(statement: PreparedStatement): Promise<T[]> => {
    const { genericPlan: _, ...query } = statement;
    return (await client.query(query)).rows as T[];
  },
});

/** Runs a named statement on `client` with the plan it already has, under EXPLAIN: `cost` is what it read. */
function measuring(client: pg.Client, into: (cost: PlanCost) => void): Db {
  return {
    queryPrepared: async <T,>(statement: PreparedStatement): Promise<T[]> => {
      into(await costOf({ query: async (text) => (await client.query(text)).rows }, executeSql(statement.name, statement.values), []));
      return [];
    },
  };
}

beforeAll(async () => {
  ({ ctx, tenant, deviceId } = await createAppWithDevice('Generic plans'));
  await ctx.database.query('ANALYZE');
  const connectionString = (ctx.database.pool!.options as { connectionString: string }).connectionString;
  generic = new pg.Client({ connectionString, options: GENERIC_PLAN_SETTINGS });
  plain = new pg.Client({ connectionString });
  await Promise.all([generic.connect(), plain.connect()]);

  // Each statement's plan, made on the empty tables.
  const at = new Date();
  await claimDue(on(generic), WORKER, [{ deviceId, limit: TAKEN, onlyDirect: false }]);
  await writeOutcomes(on(generic), WORKER, [{ id: 'msg_gplan_none', at }], [], [], { jobs: true });
  // PostgreSQL makes its own generic plan of a named statement after five runs, and keeps it while
  // it looks no dearer than the custom plans it made.
  for (let i = 0; i < 6; i++) {
    await applyReceipts(on(plain), 'DELIVERED', [{ deviceId, networkMessageId: 'GPLAN_NONE', status: 'DELIVERED', at }]);
    for (const needle of [undefined, SEARCHED]) await pageOfContacts(on(plain), tenant.accountId, PAGE, 0, needle);
  }

  // An import of contacts, as a client sends it.
  const csv = ['name,phoneNumber', ...Array.from({ length: CONTACTS }, (_, i) => `Person ${i} ${i % 7 === 0 ? 'Alice' : 'Bob'},62813${String(i).padStart(8, '0')}`)];
  const imported = await ctx.app.inject({ method: 'POST', url: '/contacts/import', headers: { ...tenant.headers, 'content-type': 'text/csv' }, payload: csv.join('\n') });
  expect(imported.statusCode, imported.body).toBe(200);

  // A job for the device, fanned out as the worker does. The device is marked connected, which
  // the job needs; no worker runs here, so nothing claims its messages meanwhile.
  await ctx.database.query(`UPDATE devices SET status = 'CONNECTED' WHERE id = $1`, [deviceId]);
  const accepted = await ctx.app.inject({
    method: 'POST',
    url: '/messages/send',
    headers: tenant.headers,
    payload: { type: 'TEXT', content: 'generic plans', recipients: Array.from({ length: QUEUED }, (_, i) => `62812${String(i + 1).padStart(8, '0')}`), deviceId },
  });
  expect(accepted.statusCode, accepted.body).toBe(202);
  const fanout = new BulkFanout(ctx.database, ctx.services.bus, pino({ level: 'silent' }));
  while (await fanout.step());
  expect(await statusCount('QUEUED')).toBe(QUEUED);
}, 60_000);
afterAll(async () => {
  await Promise.all([generic?.end(), plain?.end()]);
  await ctx.close();
});

async function statusCount(status: string): Promise<number> {
  const [row] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM messages WHERE device_id = $1 AND status = $2', [deviceId, status]);
  return row!.n;
}

describe('statements planned on empty tables, run on full ones', () => {
  // In order: each step works on the messages the one before it moved on.
  it('claim, outcome and receipt each read a few pages a message', async () => {
    let cost: PlanCost = { pages: 0, rows: 0, scanned: {} };
    const keep = (measured: PlanCost): void => {
      cost = measured;
    };

    await claimDue(measuring(generic, keep), WORKER, [{ deviceId, limit: TAKEN, onlyDirect: false }]);
    expect(await statusCount('SENDING')).toBe(TAKEN);
    // The walk, the dequeue, the messages' update and their look-ups: a handful of pages a
    // message. A walk of messages for each claimed one reads them all (4,000 rows) each time.
    expect(cost.pages, 'claim: pages').toBeLessThan(TAKEN * 100);
    expect(cost.rows, 'claim: plan rows').toBeLessThan(TAKEN * 20);

    const taken = await ctx.database.query<{ id: string; network_message_id: string }>(
      `SELECT id, network_message_id FROM messages WHERE device_id = $1 AND status = 'SENDING'`,
      [deviceId],
    );
    const at = new Date();
    await writeOutcomes(measuring(generic, keep), WORKER, taken.map(({ id }) => ({ id, at })), [], [], { jobs: true });
    expect(await statusCount('SENT')).toBe(TAKEN);
    // With the jobs' counts, the events and the day's counts: some thirty plan rows a message.
    expect(cost.pages, 'outcome: pages').toBeLessThan(TAKEN * 100);
    expect(cost.rows, 'outcome: plan rows').toBeLessThan(TAKEN * 50);

    const receipts = taken.map((m) => ({ deviceId, networkMessageId: m.network_message_id, status: 'DELIVERED' as const, at }));
    await applyReceipts(measuring(plain, keep), 'DELIVERED', receipts);
    expect(await statusCount('DELIVERED')).toBe(TAKEN);
    // The receipts' CTEs read one another, so their pages are counted more than once (plan-cost.ts).
    expect(cost.pages, 'receipts: pages').toBeLessThan(TAKEN * 200);
    expect(cost.rows, 'receipts: plan rows').toBeLessThan(TAKEN * 100);
  });

  it('a page of contacts, listed or searched, reads the page after an import', async () => {
    let cost: PlanCost = { pages: 0, rows: 0, scanned: {} };
    const keep = (measured: PlanCost): void => {
      cost = measured;
    };
    // A walk of the newest-first index: the page's rows (151 plan rows listed, 548 searched).
    // Plans made on the empty table read and sorted every contact: 5,151 and 7,323 plan rows.
    // Plan rows only: at this size the pages are too few to tell from the catalog pages a
    // connection may read again (plan-cost.ts).
    await pageOfContacts(measuring(plain, keep), tenant.accountId, PAGE, 0);
    expect(cost.rows, 'list: plan rows').toBeLessThan(PAGE * 10);
    await pageOfContacts(measuring(plain, keep), tenant.accountId, PAGE, 0, SEARCHED);
    expect(cost.rows, 'search: plan rows').toBeLessThan(PAGE * 20);
  });
});
