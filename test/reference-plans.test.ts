/**
 * The look-up of the message a send refers to (a reply's quote, a reaction's target) reads that
 * message alone, whatever the statistics of messages say. The worst statistics it can meet are
 * those of a table analysed with pages and no rows (an account's messages deleted, then
 * autovacuum): the planner then takes messages for one row however many it holds, and a look-up
 * by id and account could as well walk the account's messages by its index. Here messages is
 * analysed so, filled with one account's messages, and the look-up's pages and plan rows are
 * counted (plan-cost.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getReferenced } from '../src/messaging/message-store.js';
import { createAppWithDevice, storeSentMessages, type Tenant, type TestContext } from './helpers.js';
import { explaining } from './plan-cost.js';

const STORED = 4_000;

let ctx: TestContext;
let tenant: Tenant;
let deviceId: string;
beforeAll(async () => {
  ({ ctx, tenant, deviceId } = await createAppWithDevice('Reference plans'));
  // Statistics of a messages table that had rows and has none: its pages are still there.
  await storeSentMessages(ctx, tenant, deviceId, 'msg_rplan_gone_', STORED);
  await ctx.database.query(`DELETE FROM messages WHERE id LIKE 'msg_rplan_gone_%'`);
  await ctx.database.query('ANALYZE messages');
  await storeSentMessages(ctx, tenant, deviceId, 'msg_rplan_', STORED);
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
});
