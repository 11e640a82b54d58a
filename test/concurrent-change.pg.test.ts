/**
 * A statement that locks messages and then writes them writes every one it locked, even one that
 * another transaction changed after the statement's snapshot was taken: the statement waits for
 * that change and locks the newest version, which its snapshot cannot see, so its write by the
 * row's address skipped it without a word (a receipt that waited for its message's outcome was
 * lost and the message stayed SENT; an outcome that waited left its message SENDING, to be sent
 * again after a restart). Now the statement raises serialization_failure and `retrying`
 * (platform/database.ts) runs it again. A job it counts into is updated by id, so a change of
 * the job while the statement waited is followed (EvalPlanQual). Files named *.pg.test.ts run
 * only in the PostgreSQL pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyReceipts, failWaiting, writeOutcomes } from '../src/messaging/outcomes.js';
import { retrying } from '../src/platform/database.js';
import { createAppWithDevice, type Tenant, type TestContext } from './helpers.js';
import { whileRowChanged } from './row-locks.js';

const WORKER = 'concurrent-change-worker';

let ctx: TestContext;
let tenant: Tenant;
let deviceId: string;
beforeAll(async () => {
  ({ ctx, tenant, deviceId } = await createAppWithDevice('Concurrent change'));
});
afterAll(async () => ctx.close());

/** A message of the device in `status`, claimed by WORKER while SENDING; returns its ids. */
async function message(label: string, status: 'SENDING' | 'SENT' | 'DELIVERED', priority = 0): Promise<{ id: string; nid: string }> {
  const m = { id: `msg_change_${label}`, nid: `3EB0CHANGE${label.toUpperCase()}` };
  await ctx.database.pool!.query(
    `INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, claimed_by, attempts, queued_at, sent_at, delivered_at, priority)
     VALUES ($1, $2, $3, 'out', '6281234567890', 'TEXT', 'concurrent change', $5, $4, CASE WHEN $5 = 'SENDING' THEN $6 END, 1, now(),
             CASE WHEN $5 <> 'SENDING' THEN now() END, CASE WHEN $5 = 'DELIVERED' THEN now() END, $7)`,
    [m.id, tenant.accountId, deviceId, m.nid, status, WORKER, priority],
  );
  return m;
}

async function statusOf(id: string): Promise<string> {
  const { rows } = await ctx.database.pool!.query<{ status: string }>('SELECT status FROM messages WHERE id = $1', [id]);
  return rows[0]!.status;
}

async function eventStatuses(id: string): Promise<string[]> {
  const { rows } = await ctx.database.pool!.query<{ status: string }>(
    `SELECT data->>'status' AS status FROM events WHERE type = 'message.status' AND data->>'id' = $1 ORDER BY seq`,
    [id],
  );
  return rows.map((r) => r.status);
}

describe('a row changed by another transaction while a statement waits for it (PostgreSQL)', () => {
  it('a delivery receipt that waited for its message’s outcome is applied', async () => {
    const m = await message('outcome', 'SENDING');
    const at = new Date();
    await whileRowChanged(ctx.database.pool!, 'messages', m.id, `status = 'SENT', sent_at = now(), claimed_by = NULL`, () =>
      retrying(() => applyReceipts(ctx.database, 'DELIVERED', [{ deviceId, networkMessageId: m.nid, status: 'DELIVERED', at, messageId: m.id }])),
    );
    expect(await statusOf(m.id)).toBe('DELIVERED');
    expect(await eventStatuses(m.id)).toEqual(['DELIVERED']);
  });

  it('a receipt looked up by network id that waited for a change is applied', async () => {
    const m = await message('lookup', 'SENT');
    await whileRowChanged(ctx.database.pool!, 'messages', m.id, `content = content`, () =>
      retrying(() => applyReceipts(ctx.database, 'DELIVERED', [{ deviceId, networkMessageId: m.nid, status: 'DELIVERED', at: new Date() }])),
    );
    expect(await statusOf(m.id)).toBe('DELIVERED');
  });

  it('a read receipt that waited for the delivery receipt is applied', async () => {
    const m = await message('read', 'SENT');
    await whileRowChanged(ctx.database.pool!, 'messages', m.id, `status = 'DELIVERED', delivered_at = now()`, () =>
      retrying(() => applyReceipts(ctx.database, 'READ', [{ deviceId, networkMessageId: m.nid, status: 'READ', at: new Date(), messageId: m.id }])),
    );
    expect(await statusOf(m.id)).toBe('READ');
    expect(await eventStatuses(m.id)).toEqual(['READ']);
  });

  it('an outcome that waited for a change of its message is written and answered', async () => {
    const m = await message('sent', 'SENDING');
    const rows = await whileRowChanged(ctx.database.pool!, 'messages', m.id, `peer = peer`, () =>
      retrying(() => writeOutcomes(ctx.database, WORKER, [{ id: m.id, at: new Date() }], [], [])),
    );
    expect(await statusOf(m.id)).toBe('SENT');
    expect(rows.map((r) => r.id)).toEqual([m.id]);
    expect(await eventStatuses(m.id)).toEqual(['SENT']);
  });

  it('a bulk message’s outcome (no row to answer) that waited for a change is written', async () => {
    const m = await message('bulk', 'SENDING', 1);
    const rows = await whileRowChanged(ctx.database.pool!, 'messages', m.id, `peer = peer`, () =>
      retrying(() => writeOutcomes(ctx.database, WORKER, [], [{ id: m.id, code: 'NETWORK_ERROR', message: 'refused' }], [])),
    );
    expect(rows).toEqual([]);
    expect(await statusOf(m.id)).toBe('FAILED');
    expect(await eventStatuses(m.id)).toEqual(['FAILED']);
  });

  it('an outcome counted into a job that changed while it waited is counted', async () => {
    const pool = ctx.database.pool!;
    const job = `job_change_${tenant.accountId}`;
    await pool.query(`INSERT INTO bulk_jobs (id, account_id, device_id, status, type, content, total_contacts) VALUES ($1, $2, $3, 'PROCESSING', 'TEXT', 'x', 100)`, [
      job,
      tenant.accountId,
      deviceId,
    ]);
    const m = await message('job', 'SENDING', 1);
    await pool.query('UPDATE messages SET job_id = $2 WHERE id = $1', [m.id, job]);
    await whileRowChanged(pool, 'bulk_jobs', job, 'delivered_count = delivered_count + 1', () =>
      retrying(() => writeOutcomes(ctx.database, WORKER, [{ id: m.id, at: new Date() }], [], [], { jobs: true })),
    );
    expect(await statusOf(m.id)).toBe('SENT');
    const { rows } = await pool.query('SELECT sent_count, delivered_count FROM bulk_jobs WHERE id = $1', [job]);
    expect(rows[0]).toEqual({ sent_count: 1, delivered_count: 1 });
  });

  it("failing a device's waiting messages fails one that changed while it waited", async () => {
    const other = (await ctx.app.inject({ method: 'POST', url: '/devices', headers: tenant.headers, payload: { name: 'Failing' } })).json<{ data: { id: string } }>().data.id;
    const id = 'msg_change_fail';
    await ctx.database.pool!.query(
      `INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, queued_at)
       VALUES ($1, $2, $3, 'out', '6281234567890', 'TEXT', 'waiting', 'QUEUED', '3EB0CHANGEFAIL', now())`,
      [id, tenant.accountId, other],
    );
    const failed = await whileRowChanged(ctx.database.pool!, 'messages', id, `content = 'changed'`, () =>
      retrying(() => failWaiting(ctx.database, other, 'DEVICE_LOGGED_OUT', 'logged out')),
    );
    expect(failed).toBe(1);
    expect(await statusOf(id)).toBe('FAILED');
  });
});
