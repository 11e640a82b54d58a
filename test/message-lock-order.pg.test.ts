/**
 * Statements that lock several messages at once (outcomes, receipts, failing a device's waiting
 * messages) lock them in id order, on PostgreSQL. Outcomes and receipts of one account run side
 * by side and a receipt may overtake its outcome; before, an outcome locked its messages in its
 * join's order and a receipt in network id order, so each could hold a message the other waited
 * for, and an outcome that lost the deadlock three times released its messages to be sent again.
 * Each case holds the message first in id order, starts the statement with its input naming the
 * other first (and that other stored first, so a scan meets it first), and checks with NOWAIT
 * that the waiting statement holds nothing on the other. Files named *.pg.test.ts run only in the
 * PostgreSQL pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyReceipts, failWaiting, writeOutcomes } from '../src/messaging/outcomes.js';
import { createAppWithDevice, type Tenant, type TestContext } from './helpers.js';
import { whileRowHeld } from './row-locks.js';

const WORKER = 'lock-order-worker';

let ctx: TestContext;
let tenant: Tenant;
let deviceId: string;
beforeAll(async () => {
  ({ ctx, tenant, deviceId } = await createAppWithDevice('Lock order'));
});
afterAll(async () => ctx.close());

interface Pair {
  /** First in id order; its network id sorts last. */
  first: { id: string; nid: string };
  second: { id: string; nid: string };
}

/** Two SENDING messages of the device claimed by WORKER, `second` stored first and created last. */
async function pair(label: string): Promise<Pair> {
  const first = { id: `msg_lock_${label}_a`, nid: `3EB0${label.toUpperCase()}Z` };
  const second = { id: `msg_lock_${label}_b`, nid: `3EB0${label.toUpperCase()}A` };
  // `second` is also the newer, for a scan of newest first.
  for (const [message, age] of [[second, '0 s'], [first, '1 min']] as const) {
    await ctx.database.pool!.query(
      `INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, claimed_by, attempts, queued_at, created_at)
       VALUES ($1, $2, $3, 'out', '6281234567890', 'TEXT', 'lock order', 'SENDING', $4, $5, 1, now(), now() - $6::interval)`,
      [message.id, tenant.accountId, deviceId, message.nid, WORKER, age],
    );
  }
  return { first, second };
}

async function statuses(ids: string[]): Promise<string[]> {
  const { rows } = await ctx.database.pool!.query<{ status: string }>('SELECT status FROM messages WHERE id = ANY($1::text[]) ORDER BY id', [ids]);
  return rows.map((r) => r.status);
}

describe('locking several messages on PostgreSQL', () => {
  it('an outcome locks its messages in id order, whatever the order it names them in', async () => {
    const { first, second } = await pair('outcome');
    const at = new Date();
    const rows = await whileRowHeld(ctx.database.pool!, 'messages', { held: first.id, other: second.id }, () =>
      writeOutcomes(ctx.database, WORKER, [{ id: second.id, at }, { id: first.id, at }], [], []),
    );
    // Priority 0: direct sends, whose rows go back to their waiting requests.
    expect(rows.map((r) => r.id).sort()).toEqual([first.id, second.id]);
    expect(await statuses([first.id, second.id])).toEqual(['SENT', 'SENT']);
  });

  it('a receipt locks its messages in id order, not in network id order', async () => {
    const { first, second } = await pair('receipt');
    const at = new Date();
    await whileRowHeld(ctx.database.pool!, 'messages', { held: first.id, other: second.id }, () =>
      applyReceipts(ctx.database, 'DELIVERED', [
        { deviceId, networkMessageId: second.nid, status: 'DELIVERED', at },
        { deviceId, networkMessageId: first.nid, status: 'DELIVERED', at },
      ]),
    );
    expect(await statuses([first.id, second.id])).toEqual(['DELIVERED', 'DELIVERED']);
  });

  it('a receipt that names its messages by id (the worker handed them over) locks them in id order too', async () => {
    const { first, second } = await pair('known');
    const at = new Date();
    await whileRowHeld(ctx.database.pool!, 'messages', { held: first.id, other: second.id }, () =>
      applyReceipts(ctx.database, 'DELIVERED', [
        { deviceId, networkMessageId: second.nid, status: 'DELIVERED', at, messageId: second.id },
        { deviceId, networkMessageId: first.nid, status: 'DELIVERED', at },
      ]),
    );
    expect(await statuses([first.id, second.id])).toEqual(['DELIVERED', 'DELIVERED']);
  });

  it("failing a device's waiting messages locks them in id order", async () => {
    const { first, second } = await pair('fail');
    const failed = await whileRowHeld(ctx.database.pool!, 'messages', { held: first.id, other: second.id }, () => failWaiting(ctx.database, deviceId, 'DEVICE_LOGGED_OUT', 'logged out'));
    expect(failed).toBe(2);
    expect(await statuses([first.id, second.id])).toEqual(['FAILED', 'FAILED']);
  });
});
