/**
 * A receipt for a message its worker handed over carries the message's id (MessageQueue keeps
 * the network ids of what it handed over), and its statement locks the message by that key
 * instead of looking it up by device and network id. The key is checked against both: a receipt
 * applies to the message it names only if that message is the device's, with that network id,
 * outgoing and still receivable, exactly as the look-up would have found it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyReceipts } from '../src/messaging/outcomes.js';
import { createTenant, createTestApp, json, type Tenant, type TestContext } from './helpers.js';

let ctx: TestContext;
let tenant: Tenant;
let deviceId: string;
let otherDeviceId: string;
beforeAll(async () => {
  ctx = await createTestApp();
  tenant = await createTenant(ctx);
  const device = async (name: string): Promise<string> =>
    json<{ data: { id: string } }>(await ctx.app.inject({ method: 'POST', url: '/devices', headers: tenant.headers, payload: { name } })).data.id;
  deviceId = await device('Receipts by id');
  otherDeviceId = await device('Another device');
});
afterAll(async () => ctx.close());

/** A SENT message of `device` with network id `nid`. */
async function sentMessage(id: string, nid: string, device = deviceId): Promise<void> {
  await ctx.database.query(
    `INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, attempts, queued_at, sent_at)
     VALUES ($1, $2, $3, 'out', '6281234567890', 'TEXT', 'receipt by id', 'SENT', $4, 1, now(), now())`,
    [id, tenant.accountId, device, nid],
  );
}

async function statusOf(id: string): Promise<{ status: string; events: number }> {
  const [row] = await ctx.database.query<{ status: string; events: number }>(
    `SELECT m.status, (SELECT count(*)::int FROM events e WHERE e.type = 'message.status' AND e.data->>'id' = m.id AND e.data->>'status' = 'DELIVERED') AS events
       FROM messages m WHERE m.id = $1`,
    [id],
  );
  return row!;
}

describe('receipts for messages the worker handed over', () => {
  it('applies a receipt by the id it carries, beside one looked up by network id, each with its event', async () => {
    await sentMessage('msg_byid_known', '3EB0BYIDKNOWN');
    await sentMessage('msg_byid_lookup', '3EB0BYIDLOOKUP');
    const at = new Date();
    await applyReceipts(ctx.database, 'DELIVERED', [
      { deviceId, networkMessageId: '3EB0BYIDKNOWN', status: 'DELIVERED', at, messageId: 'msg_byid_known' },
      { deviceId, networkMessageId: '3EB0BYIDLOOKUP', status: 'DELIVERED', at },
    ]);
    expect(await statusOf('msg_byid_known')).toEqual({ status: 'DELIVERED', events: 1 });
    expect(await statusOf('msg_byid_lookup')).toEqual({ status: 'DELIVERED', events: 1 });
  });

  it("changes nothing when the id names another device's message, or one with another network id", async () => {
    await sentMessage('msg_byid_other_device', '3EB0BYIDOTHERDEV', otherDeviceId);
    await sentMessage('msg_byid_other_nid', '3EB0BYIDOTHERNID');
    const at = new Date();
    await applyReceipts(ctx.database, 'DELIVERED', [
      // The device's receipt for a network id that is the other device's message.
      { deviceId, networkMessageId: '3EB0BYIDOTHERDEV', status: 'DELIVERED', at, messageId: 'msg_byid_other_device' },
      // A network id that is not this message's.
      { deviceId, networkMessageId: '3EB0BYIDNOSUCH', status: 'DELIVERED', at, messageId: 'msg_byid_other_nid' },
    ]);
    expect(await statusOf('msg_byid_other_device')).toEqual({ status: 'SENT', events: 0 });
    expect(await statusOf('msg_byid_other_nid')).toEqual({ status: 'SENT', events: 0 });
  });

  it('moves a message forward only, by id as by look-up: a DELIVERED after READ changes nothing', async () => {
    await sentMessage('msg_byid_read', '3EB0BYIDREAD');
    const at = new Date();
    await applyReceipts(ctx.database, 'READ', [{ deviceId, networkMessageId: '3EB0BYIDREAD', status: 'READ', at, messageId: 'msg_byid_read' }]);
    await applyReceipts(ctx.database, 'DELIVERED', [{ deviceId, networkMessageId: '3EB0BYIDREAD', status: 'DELIVERED', at, messageId: 'msg_byid_read' }]);
    const [row] = await ctx.database.query<{ status: string; n: number }>(
      `SELECT m.status, (SELECT count(*)::int FROM events e WHERE e.type = 'message.status' AND e.data->>'id' = m.id) AS n FROM messages m WHERE m.id = $1`,
      ['msg_byid_read'],
    );
    // READ over SENT writes the DELIVERED step it skipped, then READ; the late DELIVERED nothing.
    expect(row).toEqual({ status: 'READ', n: 2 });
  });
});
