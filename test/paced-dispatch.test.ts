/**
 * Paced bulk traffic on the sandbox (BULK_DELAY_MS fixed): a device hands its bulk messages to
 * the network one at a time, each at least the pace after the one before, every one once; two
 * devices are paced side by side, not one after the other; a direct send to a device whose bulk
 * job is being paced goes at once. Direct sends go through the queue here (no in-process
 * hand-over), as with separate api and worker processes, so the paced loop claims them itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, type TestContext } from './helpers.js';
import { linkDevice, MESSAGING_ENV, phone, phones, sandboxMessages, sendBulk, sendDirect, waitForJob, type SandboxMessageBody } from './messaging-helpers.js';

const PACE_MS = 300;
/**
 * The runner times a hand-over a statement before the network stamps it (acceptedAt), so a gap
 * between stamps may fall short of the pace by as long as the process was off the CPU between
 * the two.
 */
const TIMING_SLACK_MS = 60;
const BULK_SIZE = 11;

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp({ ...MESSAGING_ENV, BULK_DELAY_MS: `${PACE_MS}-${PACE_MS}` }, { worker: true, directHandOver: false });
});
afterAll(async () => ctx.close());

/** The gaps between the network's receipt of consecutive messages, in ms. */
function gaps(received: SandboxMessageBody[]): number[] {
  const times = received.map((m) => Date.parse(m.acceptedAt)).sort((a, b) => a - b);
  return times.slice(1).map((time, i) => time - times[i]!);
}

describe('paced bulk traffic', () => {
  it('hands the messages of a job over one at a time, each at least the pace after the last, every one once; two devices are paced side by side', async () => {
    const tenant = await createTenant(ctx);
    const [first, second] = [await linkDevice(ctx, tenant), await linkDevice(ctx, tenant)];
    const started = Date.now();
    const jobs = await Promise.all(
      [first, second].map((device) => sendBulk(ctx, tenant, { type: 'TEXT', content: `paced on ${device.id}`, recipients: phones(BULK_SIZE), deviceId: device.id })),
    );
    for (const job of jobs) await waitForJob(ctx, tenant, job.jobId, (j) => j.sentCount === BULK_SIZE, 'every message sent');
    const elapsed = Date.now() - started;
    for (const device of [first, second]) {
      const received = (await sandboxMessages(ctx, tenant, { deviceId: device.id })).data.filter((m) => m.content === `paced on ${device.id}`);
      expect(received).toHaveLength(BULK_SIZE);
      expect(received.every((m) => m.sendCalls === 1)).toBe(true);
      for (const gap of gaps(received)) expect(gap).toBeGreaterThanOrEqual(PACE_MS - TIMING_SLACK_MS);
    }
    // Side by side: both jobs together take about one job's time (ten paces), not two jobs' (twenty).
    expect(elapsed).toBeLessThan(2 * (BULK_SIZE - 1) * PACE_MS);
  });

  it('a direct send to a device whose bulk job is being paced goes at once, and the job keeps its pace', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const job = await sendBulk(ctx, tenant, { type: 'TEXT', content: 'paced around a direct send', recipients: phones(BULK_SIZE), deviceId: device.id });
    await waitForJob(ctx, tenant, job.jobId, (j) => j.sentCount >= 2, 'two messages sent');
    const askedAt = Date.now();
    const direct = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'not behind the job', recipients: [phone()], deviceId: device.id });
    expect(['SENT', 'DELIVERED', 'READ']).toContain(direct.message.status);
    // The job still has most of its messages to pace; the direct send did not wait for them.
    const running = await waitForJob(ctx, tenant, job.jobId, () => true, 'read');
    expect(running.sentCount, `answered after ${Date.now() - askedAt} ms`).toBeLessThan(BULK_SIZE);
    await waitForJob(ctx, tenant, job.jobId, (j) => j.sentCount === BULK_SIZE && j.status === 'COMPLETED', 'every message sent');
    const received = (await sandboxMessages(ctx, tenant, { deviceId: device.id })).data.filter((m) => m.content === 'paced around a direct send');
    expect(received).toHaveLength(BULK_SIZE);
    for (const gap of gaps(received)) expect(gap).toBeGreaterThanOrEqual(PACE_MS - TIMING_SLACK_MS);
  });
});
