/**
 * The claim of a device's actions (edits, deletes for everyone, read receipts on their way to the
 * network) reads about what it claims when the table's statistics are those of an empty queue.
 * Done actions are deleted, so message_actions is nearly empty whenever it is analysed, and the
 * planner then takes it for one row whatever it holds (as it did the message queue, see
 * queue-plans.test.ts). Here the table is analysed with pages and no rows, then filled, and the
 * claim's pages and plan rows are counted (plan-cost.ts): bounded by the actions claimed, never
 * by the device's due actions or by their product with the actions claimed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimActions } from '../src/messaging/action-store.js';
import { createAppWithDevice, storeSentMessages, type Tenant, type TestContext } from './helpers.js';
import { explaining } from './plan-cost.js';

const WAITING = 4_000;
const TAKEN = 200;

let ctx: TestContext;
let tenant: Tenant;
let deviceId: string;
beforeAll(async () => {
  ({ ctx, tenant, deviceId } = await createAppWithDevice('Action plans'));
  // Statistics of a queue of actions that had rows and has none: the pages are still there.
  const fill = (content: string): Promise<unknown> =>
    ctx.database.query(
      `INSERT INTO message_actions (account_id, device_id, message_id, action, content, due_at)
       SELECT $1, $2, 'msg_aplan_' || lpad(n::text, 6, '0'), 'edit', $4, now() - interval '1 minute' FROM generate_series(1, $3::int) AS n`,
      [tenant.accountId, deviceId, WAITING, content],
    );
  await fill('gone');
  await ctx.database.query('DELETE FROM message_actions');
  await ctx.database.query('ANALYZE message_actions');
  // The messages the actions are about (the claim returns each with its message), then the actions.
  await storeSentMessages(ctx, tenant, deviceId, 'msg_aplan_', WAITING);
  await fill('edited');
}, 60_000);
afterAll(async () => ctx.close());

describe('the actions’ claim under an empty queue’s statistics', () => {
  it('claims with a few pages per action, not a scan of the table per action', async () => {
    const explained = explaining(ctx.database);
    await claimActions(explained, deviceId, TAKEN);
    const { cost } = explained;
    const [claimed] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM message_actions WHERE attempts = 1');
    expect(claimed!.n).toBe(TAKEN);
    // The walk stops at the oldest 200 (an ordered index walk, see waygate_due_actions, about
    // 250 pages), then each claimed action is updated (a new version and its index entries, the
    // due time being indexed) and its message looked up: 1,401 plan rows, seven nodes of 200.
    // The pages (about 5,100) count the update's CTE twice (see plan-cost.ts). On these
    // statistics a walk the planner chose read and sorted every due action of the device (6,000
    // plan rows), and an update joined with the due ids by id compared every row with every id
    // (1,609,600 plan rows).
    expect(cost.rows, 'plan rows').toBeLessThan(TAKEN * 10);
    expect(cost.pages, 'pages').toBeLessThan(TAKEN * 40);
  });
});
