/**
 * The claim's walk (waygate_due_rows, drizzle/repeatable/10_message_queue.sql) is a VOLATILE
 * function, so it reads with a snapshot newer than the claim statement's own. A message changed
 * and committed between the two is locked by the walk as a version the statement cannot see:
 * its queue row (unchanged, visible) would be deleted and the message (invisible to the update
 * by address) left QUEUED with no queue row, never to be sent. The claim counts what it dequeued
 * against what it claimed and raises serialization_failure instead (RERUN_IF_SKIPPED), and
 * `retrying` runs it again.
 *
 * To open that window on purpose, the test puts a wrapper in front of the walk that waits for an
 * advisory lock the test holds: the claim statement has taken its snapshot by then, and the
 * walk takes its own after the wait. Files named *.pg.test.ts run only in the PostgreSQL pass.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDue } from '../src/messaging/message-store.js';
import { retrying } from '../src/platform/database.js';
import { createAppWithDevice, type Tenant, type TestContext } from './helpers.js';
import { blockedBy } from './row-locks.js';

const WORKER = 'claim-race-worker';
/** The advisory lock the wrapped walk waits for. */
const PAUSE_KEY = 720_301;

let ctx: TestContext;
let tenant: Tenant;
let deviceId: string;
let pool: pg.Pool;
beforeAll(async () => {
  ({ ctx, tenant, deviceId } = await createAppWithDevice('Claim race'));
  pool = ctx.database.pool!;
  // The real walk keeps its body under another name; the wrapper waits for PAUSE_KEY (shared, so
  // it waits only while the test holds the key), then walks.
  await pool.query('ALTER FUNCTION waygate_due_rows(text, int, int) RENAME TO waygate_due_rows_unpaused');
  await pool.query(`
    CREATE FUNCTION waygate_due_rows(p_device text, p_max_priority int, p_limit int)
    RETURNS TABLE (id text, queue_row tid, message_row tid) LANGUAGE plpgsql VOLATILE ROWS 1 AS $$
    BEGIN
      PERFORM pg_advisory_xact_lock_shared(${PAUSE_KEY});
      RETURN QUERY SELECT * FROM waygate_due_rows_unpaused(p_device, p_max_priority, p_limit);
    END $$`);
});
afterAll(async () => ctx.close());

/** A QUEUED direct send of the device, due now, with its queue row. */
async function queued(label: string): Promise<string> {
  const id = `msg_claim_race_${label}`;
  await pool.query(
    `WITH m AS (
       INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, priority)
       VALUES ($1, $2, $3, 'out', '6281234567890', 'TEXT', 'claim race', 'QUEUED', $4, 0) RETURNING id, device_id, priority)
     INSERT INTO message_queue (id, device_id, priority, due_at) SELECT id, device_id, priority, now() FROM m`,
    [id, tenant.accountId, deviceId, `3EB0CLAIMRACE${label.toUpperCase()}`],
  );
  return id;
}

async function state(id: string): Promise<{ status: string; queued: boolean }> {
  const { rows } = await pool.query<{ status: string; queued: boolean }>(
    'SELECT status, EXISTS (SELECT 1 FROM message_queue q WHERE q.id = m.id) AS queued FROM messages m WHERE m.id = $1',
    [id],
  );
  return rows[0]!;
}

/**
 * Runs `claim` while the walk is paused; once it waits, changes message `id` in a transaction
 * that commits at once (after the claim's snapshot, before the walk's), then lets the walk go on.
 */
async function changedBeforeTheWalk<T>(id: string, claim: () => Promise<T>): Promise<T> {
  const holder = await pool.connect();
  try {
    await holder.query('SELECT pg_advisory_lock($1)', [PAUSE_KEY]);
    const pid = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const result = claim();
    result.catch(() => undefined);
    await blockedBy(pool, pid, 'the claim never reached its walk');
    await pool.query(`UPDATE messages SET content = 'changed while the claim ran' WHERE id = $1`, [id]);
    await holder.query('SELECT pg_advisory_unlock($1)', [PAUSE_KEY]);
    return await result;
  } finally {
    await holder.query('SELECT pg_advisory_unlock_all()').catch(() => undefined);
    holder.release();
  }
}

const claimOnce = (): Promise<Map<string, { id: string }[]>> => claimDue(ctx.database, WORKER, [{ deviceId, limit: 10, onlyDirect: false }]);

describe('a message changed between the claim’s snapshot and its walk (PostgreSQL)', () => {
  it('is neither taken out of the queue nor claimed: the claim raises serialization_failure', async () => {
    const id = await queued('once');
    await expect(changedBeforeTheWalk(id, claimOnce)).rejects.toMatchObject({ code: '40001' });
    expect(await state(id)).toEqual({ status: 'QUEUED', queued: true });
    // Claimed by the next claim, so that the next case starts with an empty queue.
    expect([...(await claimOnce()).values()].flat().map((m) => m.id)).toEqual([id]);
  });

  it('is claimed when the claim runs again, as MessageQueue runs it', async () => {
    const id = await queued('retried');
    const claimed = await changedBeforeTheWalk(id, () => retrying(claimOnce));
    expect([...claimed.values()].flat().map((m) => m.id)).toEqual([id]);
    expect(await state(id)).toEqual({ status: 'SENDING', queued: false });
  });
});
