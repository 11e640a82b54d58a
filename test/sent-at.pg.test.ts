/**
 * A message's sentAt is when the network took it, not when its outcome was written: under paced
 * traffic a device goes on handing messages over while their outcome writes wait behind the
 * account's other writes (its lock orders the event log). On PostgreSQL, where a second
 * connection can hold that lock while the network takes the messages.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, type TestContext } from './helpers.js';
import { getJob, linkDevice, listMessages, MESSAGING_ENV, phones, sandboxMessages, sendBulk, sleep, waitFor, waitForJob } from './messaging-helpers.js';

const PACE_MS = 100;
const BULK_SIZE = 11;
/** How long the outcome writes are kept waiting. */
const HELD_MS = 3_000;
/**
 * Taken and not yet written while the lock is held: two writes blocked, two more waiting for them
 * (PACED_WRITES is 4). Some may have been taken just before the lock was, their writes caught on
 * their way to it, so they are counted as taken minus sent, not as taken since the lock.
 */
const TAKEN_WHILE_HELD = 4;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp({ ...MESSAGING_ENV, BULK_DELAY_MS: `${PACE_MS}-${PACE_MS}` }, { worker: true });
});
afterAll(async () => ctx.close());

describe('sentAt', () => {
  it('is the time the network took the message, even when writing its outcome waited', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const content = 'stamped when taken';
    const job = await sendBulk(ctx, tenant, { type: 'TEXT', content, recipients: phones(BULK_SIZE), deviceId: device.id });
    await waitForJob(ctx, tenant, job.jobId, (j) => j.sentCount >= 1, 'the first message sent');
    const taken = async (): Promise<number> => (await sandboxMessages(ctx, tenant, { deviceId: device.id })).data.filter((m) => m.content === content).length;
    const unwritten = async (): Promise<number> => (await taken()) - (await getJob(ctx, tenant, job.jobId)).sentCount;
    const client = await ctx.database.pool!.connect();
    let released = 0;
    try {
      await client.query('BEGIN');
      // The lock every event-writing statement of the account takes (the events' seq).
      await client.query('SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE', [tenant.accountId]);
      await waitFor(async () => (await unwritten()) >= TAKEN_WHILE_HELD, 10_000, 'messages taken while the outcome writes wait');
      await sleep(HELD_MS);
      released = Date.now();
      await client.query('COMMIT');
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
    await waitForJob(ctx, tenant, job.jobId, (j) => j.sentCount === BULK_SIZE, 'every message sent');
    const received = new Map((await sandboxMessages(ctx, tenant, { deviceId: device.id })).data.filter((m) => m.content === content).map((m) => [m.to, Date.parse(m.acceptedAt)]));
    const messages = (await listMessages(ctx, tenant, `limit=100`)).data.filter((m) => m.jobId === job.jobId);
    expect(messages).toHaveLength(BULK_SIZE);
    let heldBack = 0;
    for (const message of messages) {
      const sentAt = Date.parse(message.sentAt!);
      const takenAt = received.get(message.to!)!;
      const detail = `${message.to}: sentAt ${message.sentAt}, taken at ${new Date(takenAt).toISOString()}, lock released at ${new Date(released).toISOString()}`;
      expect(sentAt, detail).toBeGreaterThanOrEqual(Date.parse(message.createdAt));
      expect(Math.abs(sentAt - takenAt), detail).toBeLessThan(HELD_MS / 2);
      if (takenAt < released - HELD_MS) heldBack++;
    }
    // Some were taken a whole hold before their outcome could be written.
    expect(heldBack).toBeGreaterThanOrEqual(TAKEN_WHILE_HELD - 1);
  });
});
