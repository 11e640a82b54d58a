/**
 * The statements that write what became of sent messages (the network's answers, the receipts)
 * read about the messages they write on the statistics of a messages table analysed with pages
 * and no rows (every message deleted, then autovacuum): the planner then takes messages for one
 * row however many it holds, and any join on it, or any index that starts with the device, could
 * serve a look-up as well as its key. The plans measured are the ones their connections keep: the
 * outcome's generic plan, and the receipts' generic plan, which PostgreSQL may keep for the named
 * statement after five runs. Each statement's pages and plan rows are counted (plan-cost.ts).
 * claimDue's plan on these statistics is reference-plans.test.ts'.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDue } from '../src/messaging/message-store.js';
import { applyReceipts, writeOutcomes } from '../src/messaging/outcomes.js';
import { createAppWithDevice, emptyMessagesStatistics, queueMessages, storeSentMessages, type Tenant, type TestContext } from './helpers.js';
import { explaining } from './plan-cost.js';

const STORED = 4_000;
const TAKEN = 200;
const WORKER = 'worker-eplan';

let ctx: TestContext;
let tenant: Tenant;
let deviceId: string;
/** The messages claimed by WORKER: what the outcome and the receipts write. */
let claimed: { id: string; networkMessageId: string }[];
beforeAll(async () => {
  ({ ctx, tenant, deviceId } = await createAppWithDevice('Emptied plans'));
  await emptyMessagesStatistics(ctx, tenant, deviceId, 'msg_eplan_gone_', STORED);
  // The device's other messages, then TAKEN queued ones, claimed as the worker does (the device
  // is not linked, so nothing else claims them).
  await storeSentMessages(ctx, tenant, deviceId, 'msg_eplan_', STORED);
  await queueMessages(ctx, tenant, deviceId, 'msg_eplan_queued_', TAKEN);
  const byDevice = await claimDue(ctx.database, WORKER, [{ deviceId, limit: TAKEN, onlyDirect: false }]);
  claimed = (byDevice.get(deviceId) ?? []).map((m) => ({ id: m.id, networkMessageId: m.networkMessageId }));
  expect(claimed).toHaveLength(TAKEN);
}, 60_000);
afterAll(async () => ctx.close());

async function statusCount(status: string): Promise<number> {
  const [row] = await ctx.database.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE id LIKE 'msg_eplan_queued_%' AND status = $1`, [status]);
  return row!.n;
}

describe('outcomes and receipts under an emptied table’s statistics', () => {
  // In order: the receipts are for the messages the outcome marked SENT.
  it('the outcome reads a few pages a message', async () => {
    const explained = explaining(ctx.database);
    const at = new Date();
    await writeOutcomes(explained, WORKER, claimed.map(({ id }) => ({ id, at })), [], [], { jobs: false });
    const { cost } = explained;
    expect(await statusCount('SENT')).toBe(TAKEN);
    // Each message locked by its key and updated by its address, with its event and the day's
    // counts: 5,009 plan rows and about 6,500 pages for 200. A walk of the device's messages for
    // each would read 4,000 rows a message.
    expect(cost.rows, 'plan rows').toBeLessThan(TAKEN * 50);
    expect(cost.pages, 'pages').toBeLessThan(TAKEN * 100);
  });

  it('the receipts look each message up by its network id, a few pages a message', async () => {
    const explained = explaining(ctx.database, { generic: true });
    const at = new Date();
    // By network id alone, as a network's receipts come: each message found by its device and
    // network id (the unique index), not by a walk of the device's messages.
    await applyReceipts(explained, 'DELIVERED', claimed.map((m) => ({ deviceId, networkMessageId: m.networkMessageId, status: 'DELIVERED' as const, at })));
    const { cost } = explained;
    expect(await statusCount('DELIVERED')).toBe(TAKEN);
    // 7,012 plan rows and about 13,000 pages for 200 (the receipts' CTEs read one another, so
    // their pages are counted more than once, see plan-cost.ts). With the look-up merged into a
    // join (its OFFSET 0 left out): 46,712 plan rows.
    expect(cost.rows, 'plan rows').toBeLessThan(TAKEN * 100);
    expect(cost.pages, 'pages').toBeLessThan(TAKEN * 200);
  });
});
