/**
 * Group membership under concurrent writes, on PostgreSQL (row locks and pg_stat_activity are
 * what make the race reproducible). Files named *.pg.test.ts run only in the PostgreSQL pass.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, json, randomPhone, type TestContext, expectError } from './helpers.js';
import { blockedBy } from './row-locks.js';

interface DataBody<T> {
  data: T;
}
interface ContactBody {
  id: string;
}
interface GroupBody {
  id: string;
  contactsCount: number;
}

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp();
});
afterAll(async () => ctx.close());

describe('concurrency on PostgreSQL', () => {
  it('adding a contact that another transaction is deleting answers 400 naming it, not 500', async () => {
    const pool = ctx.database.pool!;
    const tenant = await createTenant(ctx);
    const headers = tenant.headers;
    const created = await ctx.app.inject({ method: 'POST', url: '/contacts', headers, payload: { name: 'Vanishing', phoneNumber: randomPhone() } });
    const contact = json<DataBody<ContactBody>>(created).data;
    const group = json<DataBody<GroupBody>>(await ctx.app.inject({ method: 'POST', url: '/groups', headers, payload: { name: 'Race' } })).data;

    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('DELETE FROM contacts WHERE id = $1', [contact.id]);
      const [{ pid }] = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }];
      const pending = ctx.app.inject({ method: 'POST', url: `/groups/${group.id}/contacts`, headers, payload: { contactIds: [contact.id] } });
      await blockedBy(pool, pid, 'the request never blocked behind the delete');
      await client.query('COMMIT');
      const body = expectError(await pending, 400, 'VALIDATION_ERROR');
      expect(body.error.message).toContain(contact.id);
    } finally {
      client.release();
    }
    const after = json<DataBody<GroupBody>>(await ctx.app.inject({ method: 'GET', url: `/groups/${group.id}`, headers })).data;
    expect(after.contactsCount).toBe(0);
  });
});
