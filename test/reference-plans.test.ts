/**
 * The look-ups of the message a send or an action refers to (a reply's quote, a reaction's
 * target, the message an edit changes) read that message alone, whatever the statistics of
 * messages say: the send's own check, the claim of the queue (its generic plan, with the walk that
 * locks each due message) and the claim of the actions. The worst statistics they can meet are
 * those of a table analysed with pages and no rows (an account's messages deleted, then
 * autovacuum): the planner then takes messages for one row however many it holds, and a look-up
 * could as well walk an index of the whole table. Here messages is analysed so, filled with one
 * account's messages, and each statement's pages and plan rows are counted (plan-cost.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimActions } from '../src/messaging/action-store.js';
import { claimDue, getReferenced } from '../src/messaging/message-store.js';
import { createAppWithDevice, emptyMessagesStatistics, queueMessages, storeSentMessages, type Tenant, type TestContext } from './helpers.js';
import { explaining } from './plan-cost.js';

const STORED = 4_000;
const REPLIES = 200;

let ctx: TestContext;
let tenant: Tenant;
let deviceId: string;
beforeAll(async () => {
  ({ ctx, tenant, deviceId } = await createAppWithDevice('Reference plans'));
  await emptyMessagesStatistics(ctx, tenant, deviceId, 'msg_rplan_gone_', STORED);
  await storeSentMessages(ctx, tenant, deviceId, 'msg_rplan_', STORED);
  // Replies to the oldest of them, queued, and edits of them, due (the device is not linked, so
  // nothing claims either meanwhile). One more of each than a test claims under EXPLAIN.
  await queueMessages(ctx, tenant, deviceId, 'msg_rplan_reply_', REPLIES + 1, 'msg_rplan_');
  await ctx.database.query(
    `INSERT INTO message_actions (account_id, device_id, message_id, action, content, due_at)
     SELECT $1, $2, 'msg_rplan_' || lpad(n::text, 6, '0'), 'edit', 'edited', now() - interval '1 minute' FROM generate_series(1, $3::int) AS n`,
    [tenant.accountId, deviceId, REPLIES + 1],
  );
}, 60_000);
afterAll(async () => ctx.close());

describe('the referenced message’s look-up under an empty table’s statistics', () => {
  it('reads the one message, not the account’s messages', async () => {
    const explained = explaining(ctx.database);
    // The oldest of the account's messages: last in a walk of its newest-first index.
    await getReferenced(explained, tenant.accountId, 'msg_rplan_000001');
    const { cost } = explained;
    const found = await getReferenced(ctx.database, tenant.accountId, 'msg_rplan_000001');
    expect(found?.network_message_id).toBe('msg_rplan_1');
    expect(await getReferenced(ctx.database, 'acc_someone_else', 'msg_rplan_000001')).toBeUndefined();
    // One descent of the primary key and the row's page: 3 pages, 1 plan row. A look-up that
    // cannot use the primary key filters the account's messages: 4,000 plan rows, 683 pages.
    expect(cost.rows, 'plan rows').toBeLessThan(10);
    expect(cost.pages, 'pages').toBeLessThan(50);
  });

  it('the claim looks up each claimed reply’s quote by its key, in the claim’s generic plan', async () => {
    const explained = explaining(ctx.database);
    await claimDue(explained, 'worker-rplan', [{ deviceId, limit: REPLIES, onlyDirect: false }]);
    const { cost } = explained;
    const [claimed] = await ctx.database.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE id LIKE 'msg_rplan_reply_%' AND status = 'SENDING'`);
    expect(claimed!.n).toBe(REPLIES);
    // The last reply, claimed as the worker does, comes with its quote.
    const last = (await claimDue(ctx.database, 'worker-rplan', [{ deviceId, limit: REPLIES, onlyDirect: false }])).get(deviceId);
    expect(last?.map((m) => [m.id, m.reference?.networkMessageId])).toEqual([[`msg_rplan_reply_000${REPLIES + 1}`, `msg_rplan_${REPLIES + 1}`]]);
    // The walk, the dequeue, the update and a key look-up a quote: 2,201 plan rows and about
    // 5,200 pages (the update's CTE counted twice, see plan-cost.ts). With each due message found
    // by its queue row in a join, and each quote in a join, both walked the primary key once a
    // row on these statistics: 41,901 plan rows and 177,000 pages; with only the quotes in a join
    // 19,900 of the plan rows, with only the walk's messages 58,000 of the pages.
    expect(cost.rows, 'plan rows').toBeLessThan(REPLIES * 20);
    expect(cost.pages, 'pages').toBeLessThan(REPLIES * 100);
  });

  it('the claim of the actions looks up each action’s message by its key', async () => {
    const explained = explaining(ctx.database);
    await claimActions(explained, deviceId, REPLIES);
    const { cost } = explained;
    const [claimed] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM message_actions WHERE attempts = 1');
    expect(claimed!.n).toBe(REPLIES);
    const last = await claimActions(ctx.database, deviceId, REPLIES);
    expect(last.map((a) => a.target?.networkMessageId)).toEqual([`msg_rplan_${REPLIES + 1}`]);
    // The walk, the update and a key look-up an action's message: 1,402 plan rows. With the
    // messages in a join, a walk of their primary key filtered by it: 9,604.
    expect(cost.rows, 'plan rows').toBeLessThan(REPLIES * 10);
    expect(cost.pages, 'pages').toBeLessThan(REPLIES * 40);
  });
});
