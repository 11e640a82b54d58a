/**
 * Contact search at a million contacts rests on state that triggers keep (migration 0004):
 * contacts.search_text, and contact_search_grams, the per-account counts of every 1-, 2- and
 * 3-character substring that give short searches their exact total. These tests hold the counts to
 * a recount after every kind of write, and every page of a search to a plain reference scan, on
 * both plans the search statement chooses between (walking the newest-first index, or taking the
 * trigram matches and sorting them).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, json, randomPhone, type Tenant, type TestContext } from './helpers.js';

interface ContactBody {
  id: string;
  name: string;
  phoneNumber: string;
}
interface ListBody {
  data: ContactBody[];
  meta: { total: number; page: number; limit: number };
}

const FIRST = ['Anna', 'Hannah', 'Joanna', 'Ann', 'Budi', 'Maria', 'Mariam', 'Élodie', 'ÅSA', 'Zed'];
const LAST = ['Santoso', 'Anderson', 'Lee', 'Nguyen', 'Müller', 'de la Cruz'];

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp();
});
afterAll(async () => ctx.close());

async function create(tenant: Tenant, name: string, phoneNumber = randomPhone()): Promise<ContactBody> {
  const response = await ctx.app.inject({ method: 'POST', url: '/contacts', headers: tenant.headers, payload: { name, phoneNumber } });
  expect(response.statusCode, response.body).toBe(201);
  return json<{ data: ContactBody }>(response).data;
}

async function createPeople(tenant: Tenant, count: number): Promise<ContactBody[]> {
  const created: ContactBody[] = [];
  for (let i = 0; i < count; i += 1) created.push(await create(tenant, `${FIRST[i % FIRST.length]} ${LAST[(i * 7) % LAST.length]}`));
  return created;
}

async function list(tenant: Tenant, query: string): Promise<ListBody> {
  const response = await ctx.app.inject({ method: 'GET', url: `/contacts${query}`, headers: tenant.headers });
  expect(response.statusCode, response.body).toBe(200);
  return json<ListBody>(response);
}

/** The stored counts and a recount from the contacts themselves, as sorted "gram=count" lines. */
async function gramCounts(accountId: string): Promise<{ stored: string[]; recounted: string[] }> {
  const lines = (rows: { gram: string; contacts: number }[]) => rows.map((row) => `${JSON.stringify(row.gram)}=${row.contacts}`).sort();
  const stored = await ctx.database.query<{ gram: string; contacts: number }>(
    'SELECT gram, contacts FROM contact_search_grams WHERE account_id = $1',
    [accountId],
  );
  const recounted = await ctx.database.query<{ gram: string; contacts: number }>(
    `SELECT x.gram, count(*)::int AS contacts
       FROM contacts c CROSS JOIN LATERAL waygate_search_grams(lower(c.name) || chr(1) || c.phone_number) AS x(gram)
      WHERE c.account_id = $1 GROUP BY x.gram`,
    [accountId],
  );
  return { stored: lines(stored), recounted: lines(recounted) };
}

async function expectExactGrams(tenant: Tenant): Promise<void> {
  const { stored, recounted } = await gramCounts(tenant.accountId);
  expect(stored).toEqual(recounted);
}

/** Every match of `needle`, newest first, by a plain scan that uses neither index nor grams. */
async function reference(accountId: string, needle: string): Promise<string[]> {
  const rows = await ctx.database.query<{ id: string }>(
    `SELECT id FROM contacts
      WHERE account_id = $1 AND (strpos(lower(name), lower($2)) > 0 OR strpos(phone_number, $2) > 0)
      ORDER BY created_at DESC, id DESC`,
    [accountId, needle],
  );
  return rows.map((row) => row.id);
}

describe('contact_search_grams', () => {
  it('equals a recount after creates, updates, deletes and imports', async () => {
    const tenant = await createTenant(ctx);
    const bystander = await createTenant(ctx);
    await createPeople(bystander, 5);
    const bystanderBefore = await gramCounts(bystander.accountId);

    const people = await createPeople(tenant, 24);
    await expectExactGrams(tenant);

    const patch = async (id: string, payload: Record<string, string>) => {
      const response = await ctx.app.inject({ method: 'PATCH', url: `/contacts/${id}`, headers: tenant.headers, payload });
      expect(response.statusCode, response.body).toBe(200);
    };
    await patch(people[0]!.id, { name: 'Completely Different' });
    await expectExactGrams(tenant);
    await patch(people[1]!.id, { phoneNumber: randomPhone() });
    await expectExactGrams(tenant);
    await patch(people[2]!.id, { name: 'Zed Zzyzx', phoneNumber: randomPhone() });
    await expectExactGrams(tenant);
    await patch(people[3]!.id, { name: people[3]!.name });
    await expectExactGrams(tenant);

    for (const person of people.slice(4, 7)) {
      const response = await ctx.app.inject({ method: 'DELETE', url: `/contacts/${person.id}`, headers: tenant.headers });
      expect(response.statusCode, response.body).toBe(200);
    }
    await expectExactGrams(tenant);

    const rows = Array.from({ length: 150 }, (_, i) => `${FIRST[(i * 3) % FIRST.length]} ${LAST[i % LAST.length]} ${i},${randomPhone()}`);
    rows.push(`Duplicate Row,${people[10]!.phoneNumber}`);
    const imported = await ctx.app.inject({
      method: 'POST',
      url: '/contacts/import',
      headers: { ...tenant.headers, 'content-type': 'text/csv' },
      payload: ['name,phoneNumber', ...rows].join('\n'),
    });
    expect(imported.statusCode, imported.body).toBe(200);
    await expectExactGrams(tenant);

    // Several rows in one statement, as a bulk clean-up would.
    await ctx.database.query(`DELETE FROM contacts WHERE account_id = $1 AND name LIKE 'Ann%'`, [tenant.accountId]);
    await ctx.database.query(`UPDATE contacts SET name = name || ' Jr' WHERE account_id = $1 AND name LIKE 'B%'`, [tenant.accountId]);
    await expectExactGrams(tenant);

    expect(await gramCounts(bystander.accountId)).toEqual(bystanderBefore);
  });

  it('drops every gram once no contact has it, and goes with its account', async () => {
    const tenant = await createTenant(ctx);
    const people = await createPeople(tenant, 3);
    for (const person of people) await ctx.app.inject({ method: 'DELETE', url: `/contacts/${person.id}`, headers: tenant.headers });
    expect((await gramCounts(tenant.accountId)).stored).toEqual([]);

    await createPeople(tenant, 4);
    await ctx.database.query('DELETE FROM accounts WHERE id = $1', [tenant.accountId]);
    expect((await gramCounts(tenant.accountId)).stored).toEqual([]);
  });
});

describe('search', () => {
  it('answers every page exactly like a plain scan, on both plans', async () => {
    const tenant = await createTenant(ctx);
    await createPeople(tenant, 30);
    await create(tenant, 'Xavier Quixote');
    await createPeople(tenant, 30);
    const limit = 7;
    const needles = ['xav', 'quixote', 'a', 'n', 'an', 'AN', 'ann', 'nna', 'mar', 'é', 'él', 'åsa', 'a s', 'zed', 'zzz', 'anna', 'anderson', 'de la', 'ee'];
    const totals: number[] = [];
    for (const needle of needles) {
      const expected = await reference(tenant.accountId, needle);
      totals.push(expected.length);
      const pages = Math.max(1, Math.ceil(expected.length / limit)) + 1;
      for (let page = 1; page <= pages; page += 1) {
        const body = await list(tenant, `?search=${encodeURIComponent(needle)}&limit=${limit}&page=${page}`);
        expect(body.meta, `"${needle}" page ${page}`).toEqual({ total: expected.length, page, limit });
        expect(body.data.map((c) => c.id), `"${needle}" page ${page}`).toEqual(expected.slice((page - 1) * limit, page * limit));
      }
    }
    // Both plans were needed: rare needles (trigram path) and common ones (newest-first walk).
    expect(Math.min(...totals.filter((total) => total > 0))).toBeLessThanOrEqual(3);
    expect(Math.max(...totals)).toBeGreaterThanOrEqual(40);
  });

  it('finds phone digits, typed with punctuation, through the same exact totals', async () => {
    const tenant = await createTenant(ctx);
    const a = await create(tenant, 'Phone A', '+62 812-3456-0001');
    const b = await create(tenant, 'Phone B', '+62 813 3456 0002');
    await createPeople(tenant, 10);
    // Typed with punctuation, a phone fragment searches its digits; random numbers may match too.
    for (const [typed, digits] of [['3456', '3456'], ['+62 812', '62812'], ['(0002)', '0002'], ['000', '000']] as const) {
      const expected = await reference(tenant.accountId, digits);
      const body = await list(tenant, `?search=${encodeURIComponent(typed)}`);
      expect(body.meta.total, typed).toBe(expected.length);
      expect(body.data.map((c) => c.id), typed).toEqual(expected);
    }
    expect(await reference(tenant.accountId, '3456')).toEqual(expect.arrayContaining([a.id, b.id]));
    expect(await reference(tenant.accountId, '62812')).toContain(a.id);
  });
});
