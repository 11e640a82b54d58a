/**
 * Listings of unbounded tables (src/platform/listing.ts) through the API: the keyset cursor, the
 * capped count and their refusals, on GET /messages, GET /webhooks/:id/deliveries and
 * GET /messages/bulk-jobs. Rows are written by SQL (as the send path and the event writer would
 * leave them), several sharing one created_at so that the order's tie-break on id is exercised.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, type Tenant, type TestContext } from './helpers.js';
import { call, expectFieldError, expectOk } from './messaging-helpers.js';

/** A small cap, so that "more than the cap" is a handful of rows. */
const COUNT_CAP = 5;

interface ListingBody {
  success: true;
  data: { id: string }[];
  meta: { total: number; totalExact: boolean; page: number; limit: number; nextCursor: string | null };
}

let ctx: TestContext;
let serial = 0;

beforeAll(async () => {
  ctx = await createTestApp({ LISTING_COUNT_CAP: String(COUNT_CAP) });
});

afterAll(async () => {
  await ctx.close();
});

/** Inserts `count` messages of the tenant, `perInstant` of them sharing each created_at; returns their ids newest first. */
async function addMessages(tenant: Tenant, count: number, options: { perInstant?: number; status?: string; at?: string } = {}): Promise<string[]> {
  const first = serial;
  serial += count;
  const rows = await ctx.database.query<{ id: string }>(
    `INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, created_at)
     SELECT 'msg_t' || lpad((g + $2)::text, 25, '0'), $1, 'dev_listing', 'out', '6281200000001', 'TEXT', 'hello', $4, 'LIST' || (g + $2),
            ${options.at ?? 'now()'} - (($3 - g) / $5) * interval '1 second'
       FROM generate_series(1, $3) AS g
     RETURNING id`,
    [tenant.accountId, first, count, options.status ?? 'SENT', options.perInstant ?? 1],
  );
  return newestFirst('messages', rows.map((row) => row.id));
}

/** The ids in the listing's documented order (created_at, then id, both descending), read back from the table. */
async function newestFirst(table: string, ids: string[]): Promise<string[]> {
  const rows = await ctx.database.query<{ id: string }>(`SELECT id FROM ${table} WHERE id = ANY($1::text[]) ORDER BY created_at DESC, id DESC`, [ids]);
  return rows.map((row) => row.id);
}

async function createEndpoint(tenant: Tenant): Promise<string> {
  const created = expectOk<{ data: { id: string } }>(await call(ctx, tenant, 'POST', '/webhooks', { url: 'https://1.1.1.1/hooks/listing', active: false }), 201);
  return created.data.id;
}

/** Inserts `count` settled deliveries (each with its event) for the endpoint; returns their ids newest first. */
async function addDeliveries(tenant: Tenant, endpointId: string, count: number, perInstant = 1, status = 'SUCCEEDED'): Promise<string[]> {
  const first = serial;
  serial += count;
  await ctx.database.query(
    `INSERT INTO events (id, account_id, seq, type, data, created_at)
     SELECT 'evt_t' || lpad((g + $2)::text, 25, '0'), $1, g + $2, 'webhook.test', '{}'::jsonb, now() - (($3 - g) / $4) * interval '1 second'
       FROM generate_series(1, $3) AS g`,
    [tenant.accountId, first, count, perInstant],
  );
  const rows = await ctx.database.query<{ id: string }>(
    `INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, status, attempts, created_at)
     SELECT 'whd_t' || lpad((g + $3)::text, 25, '0'), $1, $2, 'evt_t' || lpad((g + $3)::text, 25, '0'), $6, 1, now() - (($4 - g) / $5) * interval '1 second'
       FROM generate_series(1, $4) AS g
     RETURNING id`,
    [tenant.accountId, endpointId, first, count, perInstant, status],
  );
  return newestFirst('webhook_deliveries', rows.map((row) => row.id));
}

async function list(tenant: Tenant, route: string, query: string): Promise<ListingBody> {
  return expectOk<ListingBody>(await call(ctx, tenant, 'GET', `${route}?${query}`));
}

/** Walks the listing by cursor from page 1, calling `between` after each page; returns the pages. */
async function walk(tenant: Tenant, route: string, limit: number, between: () => Promise<unknown> = async () => undefined): Promise<ListingBody[]> {
  const pages = [await list(tenant, route, `limit=${limit}`)];
  for (let cursor = pages[0]!.meta.nextCursor; cursor !== null; cursor = pages.at(-1)!.meta.nextCursor) {
    await between();
    pages.push(await list(tenant, route, `limit=${limit}&cursor=${encodeURIComponent(cursor)}`));
    expect(pages.length, 'the walk ends').toBeLessThan(100);
  }
  return pages;
}

describe('keyset cursor', () => {
  it('GET /messages: a cursor walk returns every row exactly once, in order, while newer rows are inserted', async () => {
    const tenant = await createTenant(ctx);
    const existing = await addMessages(tenant, 23, { perInstant: 4 });
    let inserted = 0;
    const pages = await walk(tenant, '/messages', 5, async () => {
      await addMessages(tenant, 2);
      inserted += 2;
    });
    expect(pages.flatMap((page) => page.data.map((row) => row.id))).toEqual(existing);
    expect(pages.map((page) => page.meta.page)).toEqual([1, 2, 3, 4, 5]);
    expect(pages.map((page) => page.data.length)).toEqual([5, 5, 5, 5, 3]);
    expect(pages.at(-1)!.meta.nextCursor).toBeNull();
    expect(inserted).toBe(8);
    // Offset pages shift as rows arrive (page 2 is rows 6-10 of what exists now); cursor pages do not.
    const offsetPage = await list(tenant, '/messages', 'limit=5&page=2');
    expect(offsetPage.data.map((row) => row.id)).toEqual((await newestFirst('messages', await allIds(tenant))).slice(5, 10));
    expect(offsetPage.meta).toMatchObject({ total: COUNT_CAP, totalExact: false, page: 2 });
  });

  it('GET /webhooks/:id/deliveries: the same walk, with filters, and a cursor continues an offset page', async () => {
    const tenant = await createTenant(ctx);
    const endpointId = await createEndpoint(tenant);
    const succeeded = await addDeliveries(tenant, endpointId, 12, 3);
    const failed = await addDeliveries(tenant, endpointId, 4, 2, 'FAILED');
    const everything = await newestFirst('webhook_deliveries', [...succeeded, ...failed]);
    const route = `/webhooks/${endpointId}/deliveries`;
    const pages = await walk(tenant, route, 3, () => addDeliveries(tenant, endpointId, 1));
    expect(pages.flatMap((page) => page.data.map((row) => row.id))).toEqual(everything);
    const failedPages = [await list(tenant, route, 'status=FAILED&limit=3')];
    failedPages.push(await list(tenant, route, `status=FAILED&limit=3&cursor=${failedPages[0]!.meta.nextCursor}`));
    expect(failedPages.flatMap((page) => page.data.map((row) => row.id))).toEqual(failed);
    expect(failedPages[1]!.meta).toMatchObject({ page: 2, nextCursor: null, total: 4, totalExact: true });

    // Page 2 by offset, then its nextCursor: the rows of page 3.
    const now = await list(tenant, route, 'limit=3');
    const page2 = await list(tenant, route, 'limit=3&page=2');
    const page3 = await list(tenant, route, 'limit=3&page=3');
    const next = await list(tenant, route, `limit=3&cursor=${page2.meta.nextCursor}`);
    expect(now.meta.nextCursor).not.toBeNull();
    expect(next.data.map((row) => row.id)).toEqual(page3.data.map((row) => row.id));
    expect(next.meta.page).toBe(3);
  });

  it('GET /messages/bulk-jobs takes the cursor too', async () => {
    const tenant = await createTenant(ctx);
    const device = expectOk<{ data: { id: string } }>(await call(ctx, tenant, 'POST', '/devices', { name: 'phone' }), 201);
    await ctx.database.query(
      `INSERT INTO bulk_jobs (id, account_id, device_id, status, type, content, total_contacts, created_at)
       SELECT 'job_t' || lpad((g + $2)::text, 25, '0'), $1, $3, 'COMPLETED', 'TEXT', 'hi', 1, now() - g * interval '1 second'
         FROM generate_series(1, 5) AS g`,
      [tenant.accountId, serial, device.data.id],
    );
    serial += 5;
    const pages = await walk(tenant, '/messages/bulk-jobs', 2);
    expect(pages.map((page) => page.data.length)).toEqual([2, 2, 1]);
    expect(new Set(pages.flatMap((page) => page.data.map((row) => row.id))).size).toBe(5);
  });

  it('another account’s cursor shows nothing of theirs: it only positions the walk in the caller’s own rows', async () => {
    const owner = await createTenant(ctx);
    const stranger = await createTenant(ctx);
    const ownerIds = await addMessages(owner, 6);
    const strangerIds = await addMessages(stranger, 6, { at: `now() - interval '1 hour'` });
    const ownerCursor = (await list(owner, '/messages', 'limit=2')).meta.nextCursor!;
    const seen = await list(stranger, '/messages', `limit=100&cursor=${ownerCursor}`);
    // The stranger's rows are all older than the owner's position: all of them, and nothing else.
    expect(seen.data.map((row) => row.id)).toEqual(strangerIds);
    expect(seen.data.some((row) => ownerIds.includes(row.id))).toBe(false);

    const ownerEndpoint = await createEndpoint(owner);
    await addDeliveries(owner, ownerEndpoint, 4);
    const deliveryCursor = (await list(owner, `/webhooks/${ownerEndpoint}/deliveries`, 'limit=2')).meta.nextCursor!;
    expect((await call(ctx, stranger, 'GET', `/webhooks/${ownerEndpoint}/deliveries?cursor=${deliveryCursor}`)).statusCode).toBe(404);
    const strangerEndpoint = await createEndpoint(stranger);
    const strangerDeliveries = await addDeliveries(stranger, strangerEndpoint, 3);
    const own = await list(stranger, `/webhooks/${strangerEndpoint}/deliveries`, `cursor=${deliveryCursor}`);
    expect(own.data.every((row) => strangerDeliveries.includes(row.id))).toBe(true);
  });

  it('refuses a cursor it did not give out: 400 VALIDATION_ERROR on cursor', async () => {
    const tenant = await createTenant(ctx);
    const endpointId = await createEndpoint(tenant);
    await addMessages(tenant, 3);
    await addDeliveries(tenant, endpointId, 3);
    const messagesCursor = (await list(tenant, '/messages', 'limit=1')).meta.nextCursor!;
    const deliveriesCursor = (await list(tenant, `/webhooks/${endpointId}/deliveries`, 'limit=1')).meta.nextCursor!;
    const forge = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const [, page, ms, id] = JSON.parse(Buffer.from(messagesCursor, 'base64url').toString()) as [string, number, number, string];
    const bad = [
      'not a cursor!',
      'abc',
      Buffer.from('{"nope"').toString('base64url'),
      forge({ kind: 'messages' }),
      forge(['messages', page, ms]),
      forge(['messages', 1, ms, id]),
      forge(['messages', 1.5, ms, id]),
      forge(['messages', page, -1, id]),
      forge(['messages', page, 1e20, id]),
      forge(['messages', page, ms, 'msg\u0000x']),
      forge(['messages', page, ms, "x' OR '1'='1"]),
      forge(['messages', page, String(ms), id]),
      'a'.repeat(301),
      deliveriesCursor,
    ];
    for (const cursor of bad) {
      const detail = expectFieldError(await call(ctx, tenant, 'GET', `/messages?cursor=${encodeURIComponent(cursor)}`), 'cursor');
      expect(detail.message.length).toBeGreaterThan(0);
    }
    expect(expectFieldError(await call(ctx, tenant, 'GET', `/webhooks/${endpointId}/deliveries?cursor=${messagesCursor}`), 'cursor').message).toMatch(/another listing/);
    expect(expectFieldError(await call(ctx, tenant, 'GET', `/messages/bulk-jobs?cursor=${messagesCursor}`), 'cursor').message).toMatch(/another listing/);
    // The cursor it gave out still works.
    expect((await list(tenant, '/messages', `limit=1&cursor=${messagesCursor}`)).data).toHaveLength(1);
  });
});

describe('capped count', () => {
  it(`counts exactly up to LISTING_COUNT_CAP (${COUNT_CAP}), then answers the cap with totalExact false`, async () => {
    const tenant = await createTenant(ctx);
    await addMessages(tenant, COUNT_CAP);
    expect((await list(tenant, '/messages', 'limit=2')).meta).toEqual({ total: COUNT_CAP, totalExact: true, page: 1, limit: 2, nextCursor: expect.any(String) });
    await addMessages(tenant, 3, { status: 'FAILED' });
    const capped = await list(tenant, '/messages', 'limit=2');
    expect(capped.meta).toEqual({ total: COUNT_CAP, totalExact: false, page: 1, limit: 2, nextCursor: expect.any(String) });
    // Filters are counted the same way: 3 FAILED are below the cap.
    expect((await list(tenant, '/messages', 'limit=2&status=FAILED')).meta).toMatchObject({ total: 3, totalExact: true });
    // A cursor page counts the whole listing, not what is left after the cursor.
    expect((await list(tenant, '/messages', `limit=2&cursor=${capped.meta.nextCursor}`)).meta).toMatchObject({ total: COUNT_CAP, totalExact: false, page: 2 });
    // The last page by offset sees the end, so it knows the exact total whatever the cap.
    expect((await list(tenant, '/messages', 'limit=3&page=3')).meta).toEqual({ total: 8, totalExact: true, page: 3, limit: 3, nextCursor: null });
    // Past the end: the count is capped again.
    expect((await list(tenant, '/messages', 'limit=3&page=9')).meta).toEqual({ total: COUNT_CAP, totalExact: false, page: 9, limit: 3, nextCursor: null });

    const endpointId = await createEndpoint(tenant);
    await addDeliveries(tenant, endpointId, COUNT_CAP + 1);
    expect((await list(tenant, `/webhooks/${endpointId}/deliveries`, 'limit=1')).meta).toMatchObject({ total: COUNT_CAP, totalExact: false });
  });

  it('documents cursor, totalExact and nextCursor in the OpenAPI document', async () => {
    const document = (await ctx.app.inject({ method: 'GET', url: '/openapi.json' })).json() as {
      paths: Record<string, { get?: { parameters?: { name: string; in: string }[]; responses: Record<string, { content: Record<string, { schema: { properties: { meta: { $ref: string } } } }> }> } }>;
      components: { schemas: Record<string, { properties: Record<string, unknown> }> };
    };
    for (const route of ['/messages', '/messages/bulk-jobs', '/webhooks/{id}/deliveries']) {
      const operation = document.paths[route]?.get;
      expect(operation?.parameters?.some((parameter) => parameter.name === 'cursor' && parameter.in === 'query'), route).toBe(true);
      const metaRef = operation!.responses['200']!.content['application/json']!.schema.properties.meta.$ref;
      const meta = document.components.schemas[metaRef.split('/').pop()!]!.properties;
      expect(Object.keys(meta).sort(), route).toEqual(['limit', 'nextCursor', 'page', 'total', 'totalExact']);
    }
  });
});

describe('sparse filters (a status, device, direction or peer: no index of their own)', () => {
  const SCAN_CAP = 10;
  let scanCtx: TestContext;

  beforeAll(async () => {
    scanCtx = await createTestApp({ LISTING_SCAN_CAP: String(SCAN_CAP) });
  });

  afterAll(async () => {
    await scanCtx.close();
  });

  it(`read at most LISTING_SCAN_CAP (${SCAN_CAP}) rows a page: a rare value is found by following nextCursor, each row once, in order`, async () => {
    const tenant = await createTenant(scanCtx);
    const at = (seconds: number) => `now() - interval '${seconds} seconds'`;
    // Oldest first: 3 FAILED, then 25 SENT, then 1 FAILED, newest.
    const insert = async (count: number, status: string, secondsAgo: number) => {
      const rows = await scanCtx.database.query<{ id: string }>(
        `INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, created_at)
         SELECT 'msg_s' || lpad((g + $2)::text, 25, '0'), $1, 'dev_listing', 'out', '6281200000001', 'TEXT', 'hello', $4, 'SCAN' || (g + $2), ${at(secondsAgo)} + g * interval '1 millisecond'
           FROM generate_series(1, $3) AS g
         RETURNING id`,
        [tenant.accountId, serial, count, status],
      );
      serial += count;
      return rows.map((row) => row.id);
    };
    const oldFailed = await insert(3, 'FAILED', 300);
    await insert(25, 'SENT', 200);
    const newFailed = await insert(1, 'FAILED', 100);
    const failed = [...newFailed, ...oldFailed.reverse()];
    const get = async (query: string) => expectOk<ListingBody>(await call(scanCtx, tenant, 'GET', `/messages?${query}`));

    const first = await get('limit=2&status=FAILED');
    // The newest 10 rows hold one FAILED; the page is not full, yet the scan stopped at the cap.
    expect(first.data.map((row) => row.id)).toEqual(newFailed);
    expect(first.meta).toEqual({ total: 1, totalExact: false, page: 1, limit: 2, nextCursor: expect.any(String) });
    const pages = [first];
    for (let cursor = first.meta.nextCursor; cursor !== null; cursor = pages.at(-1)!.meta.nextCursor) {
      pages.push(await get(`limit=2&status=FAILED&cursor=${encodeURIComponent(cursor)}`));
      expect(pages.length, 'the walk ends').toBeLessThan(10);
    }
    expect(pages.flatMap((page) => page.data.map((row) => row.id))).toEqual(failed);
    // 29 rows: the scans cover 1-10, 11-20 (nothing), 21-29 (two of three: a full page), then the last one.
    expect(pages.map((page) => page.data.length)).toEqual([1, 0, 2, 1]);
    expect(pages.at(-1)!.meta.nextCursor).toBeNull();

    // A value found within the cap answers as any listing: full pages, and an exact total at the end.
    expect((await get('limit=5&status=SENT')).data).toHaveLength(5);
    const sentEnd = await get('limit=30&status=SENT');
    expect(sentEnd.data).toHaveLength(9);
    expect(sentEnd.meta).toEqual({ total: 9, totalExact: false, page: 1, limit: 30, nextCursor: expect.any(String) });
    // The unfiltered listing is not capped by the scan: one page holds all 29.
    expect((await get('limit=50')).meta).toEqual({ total: 29, totalExact: true, page: 1, limit: 50, nextCursor: null });
    // A peer that matches nothing costs the cap too, and says so.
    expect((await get('limit=5&to=6281299999999')).meta).toEqual({ total: 0, totalExact: false, page: 1, limit: 5, nextCursor: expect.any(String) });
  });

  it('the same for a bulk job status and a delivery status other than FAILED (which has an index of its own)', async () => {
    const tenant = await createTenant(scanCtx);
    const device = expectOk<{ data: { id: string } }>(await call(scanCtx, tenant, 'POST', '/devices', { name: 'phone' }), 201);
    // One CANCELLED job, then SCAN_CAP + 2 COMPLETED ones, newer.
    await scanCtx.database.query(
      `INSERT INTO bulk_jobs (id, account_id, device_id, status, type, content, total_contacts, created_at)
       SELECT 'job_s' || lpad((g + $2)::text, 25, '0'), $1, $3, CASE WHEN g = 0 THEN 'CANCELLED' ELSE 'COMPLETED' END, 'TEXT', 'hi', 1, now() - interval '1 hour' + g * interval '1 second'
         FROM generate_series(0, $4) AS g`,
      [tenant.accountId, serial, device.data.id, SCAN_CAP + 2],
    );
    serial += SCAN_CAP + 3;
    const jobs = async (query: string) => expectOk<ListingBody>(await call(scanCtx, tenant, 'GET', `/messages/bulk-jobs?${query}`));
    const firstJobs = await jobs('limit=5&status=CANCELLED');
    expect(firstJobs.data).toEqual([]);
    expect(firstJobs.meta).toMatchObject({ total: 0, totalExact: false, nextCursor: expect.any(String) });
    const lastJobs = await jobs(`limit=5&status=CANCELLED&cursor=${firstJobs.meta.nextCursor}`);
    expect(lastJobs.data.map((job) => job.id)).toEqual([`job_s${String(serial - SCAN_CAP - 3).padStart(25, '0')}`]);
    expect(lastJobs.meta.nextCursor).toBeNull();

    // Deliveries: SCAN_CAP + 1 SUCCEEDED newest, under them 2 PENDING and 2 FAILED.
    const endpoint = expectOk<{ data: { id: string } }>(await call(scanCtx, tenant, 'POST', '/webhooks', { url: 'https://1.1.1.1/hooks/scan', active: false }), 201).data.id;
    const add = async (count: number, status: string, secondsAgo: number) => {
      await scanCtx.database.query(
        `WITH e AS (
           INSERT INTO events (id, account_id, seq, type, data, created_at)
           SELECT 'evt_s' || lpad((g + $2)::text, 25, '0'), $1, g + $2, 'webhook.test', '{}'::jsonb, now() - $4 * interval '1 second' + g * interval '1 millisecond'
             FROM generate_series(1, $3) AS g
           RETURNING id, created_at)
         INSERT INTO webhook_deliveries (id, account_id, endpoint_id, event_id, status, attempts, created_at)
         SELECT 'whd_s' || substr(e.id, 6), $1, $5, e.id, $6, 1, e.created_at FROM e`,
        [tenant.accountId, serial, count, secondsAgo, endpoint, status],
      );
      serial += count;
    };
    await add(2, 'FAILED', 400);
    await add(2, 'PENDING', 300);
    await add(SCAN_CAP + 1, 'SUCCEEDED', 200);
    const deliveries = async (query: string) => expectOk<ListingBody>(await call(scanCtx, tenant, 'GET', `/webhooks/${endpoint}/deliveries?${query}`));
    const pending = await deliveries('limit=5&status=PENDING');
    expect(pending.data).toEqual([]);
    expect(pending.meta).toMatchObject({ total: 0, totalExact: false, nextCursor: expect.any(String) });
    expect((await deliveries(`limit=5&status=PENDING&cursor=${pending.meta.nextCursor}`)).data).toHaveLength(2);
    // FAILED is read along its own index: both on page 1, exactly counted.
    const failed = await deliveries('limit=5&status=FAILED');
    expect(failed.data).toHaveLength(2);
    expect(failed.meta).toMatchObject({ total: 2, totalExact: true, nextCursor: null });
  });
});

async function allIds(tenant: Tenant): Promise<string[]> {
  const rows = await ctx.database.query<{ id: string }>('SELECT id FROM messages WHERE account_id = $1', [tenant.accountId]);
  return rows.map((row) => row.id);
}

describe('filters from a fixed set of values', () => {
  it('match in any case (?status=sent reads as SENT), and a value outside the set is still a 400 listing the set', async () => {
    const tenant = await createTenant(ctx);
    const sent = await addMessages(tenant, 2, { status: 'SENT' });
    await addMessages(tenant, 1, { status: 'FAILED' });
    for (const status of ['sent', 'Sent', 'SENT']) {
      expect((await list(tenant, '/messages', `status=${status}`)).data.map((m) => m.id), status).toEqual(sent);
    }
    expect((await list(tenant, '/v1/messages', 'status=failed&direction=OUT')).data).toHaveLength(1);
    expect((await list(tenant, '/chats', 'type=GROUP')).data).toEqual([]);
    expect((await list(tenant, '/messages/bulk-jobs', 'status=completed')).data).toEqual([]);
    expect((await list(tenant, '/devices', 'status=connected')).data).toEqual([]);
    const refused = expectFieldError(await call(ctx, tenant, 'GET', '/messages?status=sending_soon'), 'status');
    expect(refused.message).toMatch(/^must be one of: SCHEDULED, QUEUED, SENDING/);
  });
});
