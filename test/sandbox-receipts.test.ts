/**
 * The sandbox network's receipts, read from per-device cursors (SandboxWorld.dueReceipts): each
 * is handed over once, in time order, never before its time, and never skipped, not even when
 * the statement that accepted its message commits after a look has passed its time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bus } from '../src/platform/bus.js';
import type { Database, PreparedStatement } from '../src/platform/database.js';
import { SandboxWorld, type ReceiptLook } from '../src/network/sandbox/world.js';
import type { OutgoingMessage } from '../src/network/network.js';
import { newId } from '../src/platform/ids.js';
import { openTestDatabase } from './helpers.js';

const RECEIPT_MS = 200;
const bus = { publish: async () => undefined } as unknown as Bus;

let database: Database;
beforeAll(async () => {
  database = await openTestDatabase();
});
afterAll(async () => {
  await database.close();
});

function message(n: number): OutgoingMessage {
  return { networkMessageId: `nid-${String(n).padStart(3, '0')}`, to: `62812345${String(1000 + n)}`, type: 'TEXT', content: `message ${n}`, accountId: 'acc_receipts' };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Looks and confirms what it found, as the network does once Waygate has taken it. */
async function take(world: SandboxWorld, deviceId: string, limit?: number): Promise<ReceiptLook> {
  const look = await world.dueReceipts([deviceId], limit);
  await world.markReceipts(look, [deviceId]);
  return look;
}

const ids = (look: ReceiptLook, status: 'DELIVERED' | 'READ'): string[] => look.receipts.filter((r) => r.status === status).map((r) => r.networkMessageId);

describe('sandbox receipts', () => {
  it('hands each receipt over once, in order, not before its time (delivery, then read at twice the delay)', async () => {
    const world = new SandboxWorld(database, bus, RECEIPT_MS);
    const deviceId = newId('dev');
    const sentAt = Date.now();
    const results = await world.accept([1, 2, 3].map((n) => ({ deviceId, message: message(n), at: new Date() })));
    expect(results.every((r) => r.ok)).toBe(true);
    const early = await take(world, deviceId);
    // Nothing is due before its time (unless this machine stalled past it).
    if (Date.now() - sentAt < RECEIPT_MS) expect(early.receipts).toEqual([]);

    await sleep(RECEIPT_MS + 50);
    const delivered = await take(world, deviceId);
    expect([...ids(early, 'DELIVERED'), ...ids(delivered, 'DELIVERED')]).toEqual(['nid-001', 'nid-002', 'nid-003']);
    for (const receipt of delivered.receipts) expect(receipt.at.getTime()).toBeGreaterThanOrEqual(sentAt + RECEIPT_MS - 1);

    await sleep(RECEIPT_MS + 50);
    const read = await take(world, deviceId);
    expect([...ids(early, 'READ'), ...ids(delivered, 'READ'), ...ids(read, 'READ')]).toEqual(['nid-001', 'nid-002', 'nid-003']);
    expect(read.receipts.filter((r) => r.status === 'DELIVERED')).toEqual([]);
    expect((await take(world, deviceId)).receipts).toEqual([]);
  });

  it('takes a full batch at a time, continuing after its last receipt when several share one time', async () => {
    const world = new SandboxWorld(database, bus, 0);
    const deviceId = newId('dev');
    // One statement: all five have the same receipt time, ordered by network message id.
    await world.accept([5, 4, 3, 2, 1].map((n) => ({ deviceId, message: message(n), at: new Date() })));
    await sleep(5);
    const seen: string[] = [];
    let look: ReceiptLook;
    do {
      look = await take(world, deviceId, 2);
      expect(ids(look, 'DELIVERED').length).toBeLessThanOrEqual(2);
      seen.push(...ids(look, 'DELIVERED'));
    } while (look.full);
    expect(seen).toEqual(['nid-001', 'nid-002', 'nid-003', 'nid-004', 'nid-005']);
  });

  it('does not pass the receipts of an accept still in flight: they are handed over once it commits', async () => {
    // The accept statement of message 2 is held back before it runs, past its receipt time.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let holding = false;
    const gated: Database = Object.create(database) as Database;
    gated.queryPrepared = async <T,>(statement: PreparedStatement): Promise<T[]> => {
      if (statement.name === 'sandbox_accept' && holding) await held;
      return database.queryPrepared<T>(statement);
    };
    const world = new SandboxWorld(gated, bus, 50);
    const deviceId = newId('dev');
    await world.accept([{ deviceId, message: message(1), at: new Date() }]);
    // Receipt times are whole milliseconds: an accept that took less than one would share its
    // start with the held one, and message 1's receipt would sit exactly at the look's limit.
    await sleep(3);
    holding = true;
    const late = world.accept([{ deviceId, message: message(2), at: new Date() }]);
    await sleep(150);
    const before = await take(world, deviceId);
    expect(ids(before, 'DELIVERED')).toEqual(['nid-001']);
    // The look stopped at the held accept's receipt time, not at its own.
    expect(before.after.get(deviceId)!.DELIVERED.at.getTime()).toBeLessThan(Date.now() - 50);

    release();
    await late;
    const after = await take(world, deviceId);
    expect(ids(after, 'DELIVERED')).toEqual(['nid-002']);
  });

  it('a resend of a message the phone has acknowledged is acknowledged again (one message, sent twice)', async () => {
    const world = new SandboxWorld(database, bus, 20);
    const deviceId = newId('dev');
    await world.accept([{ deviceId, message: message(1), at: new Date() }]);
    await sleep(60);
    expect(ids(await take(world, deviceId), 'DELIVERED')).toEqual(['nid-001']);
    // The gateway resends it (it took the device over and had the message back in its queue).
    await world.accept([{ deviceId, message: message(1), at: new Date() }]);
    await sleep(60);
    const again = await take(world, deviceId);
    expect(ids(again, 'DELIVERED')).toEqual(['nid-001']);
    const rows = await database.query<{ send_calls: number }>('SELECT send_calls FROM sandbox_messages WHERE device_id = $1', [deviceId]);
    expect(rows).toEqual([{ send_calls: 2 }]);
  });

  it('a session that starts again reads from the stored mark, less a lag: recent receipts are handed over again', async () => {
    const world = new SandboxWorld(database, bus, 0);
    const deviceId = newId('dev');
    await database.query(`INSERT INTO sandbox_phones (device_id, phone_number, state) VALUES ($1, '6281200000001', 'linked')`, [deviceId]);
    await world.accept([1, 2].map((n) => ({ deviceId, message: message(n), at: new Date() })));
    await sleep(5);
    expect(ids(await take(world, deviceId), 'DELIVERED')).toEqual(['nid-001', 'nid-002']);
    const [phone] = await database.query<{ delivered_mark: Date | null }>('SELECT delivered_mark FROM sandbox_phones WHERE device_id = $1', [deviceId]);
    expect(phone?.delivered_mark).toBeInstanceOf(Date);
    expect((await take(world, deviceId)).receipts).toEqual([]);

    // Another process (or a session opened again here) starts from the mark less MARK_LAG_MS.
    world.forgetReceipts(deviceId);
    expect(ids(await take(world, deviceId), 'DELIVERED')).toEqual(['nid-001', 'nid-002']);
    // Receipts more than the lag before the stored mark are not read again.
    await database.query(`UPDATE sandbox_phones SET delivered_mark = now() + interval '1 hour', read_mark = now() + interval '1 hour' WHERE device_id = $1`, [deviceId]);
    const fresh = new SandboxWorld(database, bus, 0);
    expect((await take(fresh, deviceId)).receipts).toEqual([]);
  });
});
