/**
 * Scheduled sends through the real app and a real worker: a direct send scheduled a moment ahead
 * is answered 202 SCHEDULED and goes out within a second of its time; a scheduled bulk job is
 * SCHEDULED, then PROCESSING, then COMPLETED, its messages going out on time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestContext } from './helpers.js';
import { nextDueAt } from '../src/messaging/queue-store.js';
import {
  createMessagingApp,
  expectOk,
  getJob,
  getMessage,
  linkDevice,
  listMessages,
  phone,
  phones,
  send,
  sendBulk,
  time,
  usedMessages,
  waitFor,
  waitForJob,
  waitForMessage,
  type DirectSendBody,
  type JobStatus,
} from './messaging-helpers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createMessagingApp();
});
afterAll(async () => ctx.close());

const OUT = ['SENT', 'DELIVERED', 'READ'];

describe('a scheduled direct send', () => {
  it('is answered 202 SCHEDULED and goes out within a second of its time, not before', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    // Far enough ahead that the messages are still SCHEDULED when listed on a busy machine.
    const scheduledAt = new Date(Date.now() + 5_000);
    const response = await send(ctx, tenant, { type: 'TEXT', content: 'on time', recipients: phones(2), scheduledAt: scheduledAt.toISOString() });
    const body = expectOk<DirectSendBody>(response, 202);
    expect(body.async).toBe(false);
    for (const message of body.messages) {
      expect(message).toMatchObject({ status: 'SCHEDULED', sentAt: null, queuedAt: null, attempts: 0 });
      expect(time(message.scheduledAt)).toBe(scheduledAt.getTime());
    }
    expect(await usedMessages(ctx, tenant)).toBe(2);
    expect((await listMessages(ctx, tenant, 'status=SCHEDULED')).meta.total).toBe(2);

    for (const message of body.messages) {
      const sent = await waitForMessage(ctx, tenant, message.id, (m) => OUT.includes(m.status), 'sent', 20_000);
      const lateBy = time(sent.sentAt) - scheduledAt.getTime();
      expect(lateBy, `sent ${lateBy} ms after its time`).toBeGreaterThanOrEqual(0);
      expect(lateBy, `sent ${lateBy} ms after its time`).toBeLessThan(1_000);
      expect(sent.attempts).toBe(1);
    }
  });

  it('a message scheduled just now (within the 60 s tolerance, or at this instant) is sent at once', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const response = await send(ctx, tenant, { type: 'TEXT', content: 'now', to: phone(), scheduledAt: new Date().toISOString() });
    expect(response.statusCode, response.body).toBe(200);
    expect(OUT).toContain((response.json() as DirectSendBody).message.status);
  });
});

describe("a device's next due time", () => {
  it('is its earliest waiting message of either priority, and null when none waits', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    expect(await nextDueAt(ctx.database, device.id)).toBeNull();
    const at = (seconds: number): Date => new Date(Math.ceil(Date.now() / 1000) * 1000 + seconds * 1000);
    const schedule = async (when: Date): Promise<string> => {
      const body = expectOk<DirectSendBody>(await send(ctx, tenant, { type: 'TEXT', content: 'later', recipients: phones(1), scheduledAt: when.toISOString(), deviceId: device.id }), 202);
      return body.messages[0]!.id;
    };
    const later = at(600);
    await schedule(later);
    expect((await nextDueAt(ctx.database, device.id))?.getTime()).toBe(later.getTime());
    // A bulk message (the queue's second priority) due before the direct send.
    const sooner = at(300);
    const bulkId = await schedule(sooner);
    // The message and its queue row carry the priority; the queue's index orders by it.
    await ctx.database.query('UPDATE messages SET priority = 1 WHERE id = $1', [bulkId]);
    await ctx.database.query('UPDATE message_queue SET priority = 1 WHERE id = $1', [bulkId]);
    expect((await nextDueAt(ctx.database, device.id))?.getTime()).toBe(sooner.getTime());
    await ctx.database.query('DELETE FROM message_queue WHERE device_id = $1', [device.id]);
    expect(await nextDueAt(ctx.database, device.id)).toBeNull();
  });
});

describe('a scheduled bulk job', () => {
  it('is SCHEDULED, then PROCESSING, then COMPLETED; its messages go out within a second of its time', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    // Far enough ahead that the messages are still SCHEDULED when listed on a busy machine.
    const scheduledAt = new Date(Date.now() + 5_000);
    // A 0003 recipient waits about a second for its retry, so PROCESSING lasts long enough to be seen.
    const flaky = phone('0003');
    const recipients = [...phones(14), flaky];
    const created = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'later', recipients, scheduledAt: scheduledAt.toISOString() });
    expect(created).toMatchObject({ status: 'SCHEDULED', totalContacts: 15 });
    expect(created.message).toMatch(/\b15 recipients\b/);
    expect(created.message).toContain(scheduledAt.toISOString());

    const job = await getJob(ctx, tenant, created.jobId);
    expect(job).toMatchObject({ status: 'SCHEDULED', totalContacts: 15, sentCount: 0, failedCount: 0 });
    expect(time(job.scheduledAt)).toBe(scheduledAt.getTime());
    // Fanned out ahead of time into SCHEDULED messages.
    const fanned = await waitFor(async () => {
      const page = await listMessages(ctx, tenant, `jobId=${created.jobId}&limit=100`);
      return page.meta.total === 15 ? page : undefined;
    }, 5_000, 'the fan-out into 15 messages');
    expect(fanned.data.every((m) => m.status === 'SCHEDULED' && time(m.scheduledAt) === scheduledAt.getTime())).toBe(true);
    expect((await getJob(ctx, tenant, created.jobId)).status).toBe('SCHEDULED');

    const seen: JobStatus[] = [];
    const done = await waitForJob(
      ctx,
      tenant,
      created.jobId,
      (j) => {
        if (seen[seen.length - 1] !== j.status) seen.push(j.status);
        if (Date.now() < scheduledAt.getTime() - 50) expect(j.status).toBe('SCHEDULED');
        return j.status === 'COMPLETED';
      },
      'COMPLETED',
      8_000,
    );
    expect(seen).toEqual(['SCHEDULED', 'PROCESSING', 'COMPLETED']);
    expect(done).toMatchObject({ totalContacts: 15, sentCount: 15, failedCount: 0 });
    expect(time(done.completedAt)).toBeGreaterThanOrEqual(scheduledAt.getTime());

    const messages = await listMessages(ctx, tenant, `jobId=${created.jobId}&limit=100`);
    for (const message of messages.data) {
      const lateBy = time(message.sentAt) - scheduledAt.getTime();
      expect(lateBy).toBeGreaterThanOrEqual(0);
      // The 0003 one is retried about a second after its first attempt.
      if (message.to !== flaky) expect(lateBy, `${message.to} sent ${lateBy} ms after its time`).toBeLessThan(1_000);
    }
    expect((await getMessage(ctx, tenant, messages.data.find((m) => m.to === flaky)!.id)).attempts).toBe(2);
  });
});
