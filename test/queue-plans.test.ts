/**
 * The queue's statements keep their plans when its statistics are stale. A queue is nearly empty
 * whenever it is analysed, so the planner takes message_queue for one row whatever it holds; as a
 * join, a dequeue then walked the whole queue once per id (a claim of 1,000 from a queue of
 * 100,000 took about a second instead of milliseconds). Here the queue is analysed empty, then
 * filled, and each statement's page reads and plan rows are counted (plan-cost.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDue } from '../src/messaging/message-store.js';
import { DEQUEUE_SQL } from '../src/messaging/queue-store.js';
import { createAppWithDevice, queueMessages, type Tenant, type TestContext } from './helpers.js';
import { costOf, explaining } from './plan-cost.js';

const QUEUED = 4_000;
const TAKEN = 200;

let ctx: TestContext;
let tenant: Tenant;
let deviceId: string;
beforeAll(async () => {
  ({ ctx, tenant, deviceId } = await createAppWithDevice('Queue plans'));
  // Statistics of a queue that had rows and has none (its pages are still there, as after a
  // burst the claims took), then a queue of QUEUED messages (the device is not linked, so nothing
  // claims them meanwhile).
  await ctx.database.query(
    `INSERT INTO message_queue (id, device_id, priority, due_at) SELECT 'msg_qplan_gone_' || n, 'dev_qplan_gone', 1, now() FROM generate_series(1, $1::int) AS n`,
    [QUEUED],
  );
  await ctx.database.query(`DELETE FROM message_queue WHERE device_id = 'dev_qplan_gone'`);
  await ctx.database.query('ANALYZE message_queue');
  await queueMessages(ctx, tenant, deviceId, 'msg_qplan_', QUEUED);
}, 60_000);
afterAll(async () => ctx.close());

async function queueCount(): Promise<number> {
  const [row] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM message_queue WHERE device_id = $1', [deviceId]);
  return row!.n;
}

describe('queue statements under an empty queue’s statistics', () => {
  it('dequeues by id with a few pages per id, not a walk of the queue per id', async () => {
    const ids = Array.from({ length: TAKEN }, (_, i) => `msg_qplan_${String(QUEUED - i).padStart(6, '0')}`);
    const before = await queueCount();
    const cost = await costOf(ctx.database, DEQUEUE_SQL('SELECT unnest($1::text[])'), [ids]);
    expect(await queueCount()).toBe(before - TAKEN);
    // One descent of the primary key and one heap page an id; a walk of the queue's index for
    // each id reads about 45 at this size, a join of the queue with the ids compares every pair.
    expect(cost.pages).toBeLessThan(TAKEN * 25);
    expect(cost.rows).toBeLessThan(TAKEN * 10);
  });

  it('claims with a few pages per message, the dequeue included', async () => {
    const explained = explaining(ctx.database);
    const before = await queueCount();
    await claimDue(explained, 'worker-qplan', [{ deviceId, limit: TAKEN, onlyDirect: false }]);
    const { cost } = explained;
    expect(await queueCount()).toBe(before - TAKEN);
    // The walk, the dequeue, the messages' update and their look-ups: a handful of pages a message.
    expect(cost.pages).toBeLessThan(TAKEN * 100);
    expect(cost.rows).toBeLessThan(TAKEN * 20);
  });
});
