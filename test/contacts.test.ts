/**
 * Contacts through the real app (app.inject, real database): the seed's listing shape, pagination,
 * search, validation, phone normalisation, uniqueness, tenancy, scopes and the /v1 prefix.
 * Every test creates its own tenant, so nothing depends on another test or on global counts.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, json, randomPhone, type Tenant, type TestContext, expectError, ISO_MS, type ErrorBody, type FieldError } from './helpers.js';

interface ContactBody {
  id: string;
  name: string;
  phoneNumber: string;
  createdAt: string;
  updatedAt: string;
}
interface ListBody {
  data: ContactBody[];
  meta: { total: number; page: number; limit: number };
}
interface CreatedBody {
  success: true;
  data: ContactBody;
}


let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp();
});
afterAll(async () => ctx.close());

function fieldErrors(body: ErrorBody): FieldError[] {
  const details = body.error.details;
  expect(Array.isArray(details), JSON.stringify(body)).toBe(true);
  const list = details as FieldError[];
  expect(list.length).toBeGreaterThan(0);
  for (const item of list) {
    expect(typeof item.field).toBe('string');
    expect(typeof item.message).toBe('string');
  }
  return list;
}

for (const prefix of ['', '/v1']) {
  describe(`contacts at ${prefix || '/'}`, () => {
    const url = (path: string): string => `${prefix}${path}`;

    const list = (tenant: Tenant, query = ''): Promise<LightMyRequestResponse> =>
      ctx.app.inject({ method: 'GET', url: url(`/contacts${query}`), headers: tenant.headers });

    const post = (tenant: Tenant, payload: unknown): Promise<LightMyRequestResponse> =>
      ctx.app.inject({ method: 'POST', url: url('/contacts'), headers: tenant.headers, payload: payload as Record<string, unknown> });

    async function create(tenant: Tenant, name: string, phoneNumber = randomPhone()): Promise<ContactBody> {
      const response = await post(tenant, { name, phoneNumber });
      expect(response.statusCode, response.body).toBe(201);
      return json<CreatedBody>(response).data;
    }

    /** Creates contacts one after the other (so their order is known) and returns them oldest first. */
    async function createMany(tenant: Tenant, names: string[]): Promise<ContactBody[]> {
      const created: ContactBody[] = [];
      for (const name of names) created.push(await create(tenant, name));
      return created;
    }

    async function listBody(tenant: Tenant, query = ''): Promise<ListBody> {
      const response = await list(tenant, query);
      expect(response.statusCode, response.body).toBe(200);
      return json<ListBody>(response);
    }

    describe('GET /contacts', () => {
      it('has exactly the seed shape with defaults page 1, limit 50 and no success key', async () => {
        const tenant = await createTenant(ctx);
        const contact = await create(tenant, 'Alice', '+62 812 3456 7890');
        const response = await list(tenant);
        expect(response.statusCode).toBe(200);
        expect(response.headers['content-type']).toMatch(/^application\/json/);
        const body = json<ListBody>(response);
        expect(Object.keys(body).sort()).toEqual(['data', 'meta']);
        expect(body).not.toHaveProperty('success');
        expect(body.meta).toEqual({ total: 1, page: 1, limit: 50 });
        expect(body.data).toEqual([contact]);
        const [item] = body.data;
        expect(Object.keys(item!).sort()).toEqual(['createdAt', 'id', 'name', 'phoneNumber', 'updatedAt']);
        expect(item!.id).toMatch(/^ct_/);
        expect(item!.phoneNumber).toBe('6281234567890');
        expect(item!.createdAt).toMatch(ISO_MS);
        expect(typeof body.meta.total).toBe('number');
      });

      it('returns an empty page for a new account', async () => {
        const tenant = await createTenant(ctx);
        expect(await listBody(tenant)).toEqual({ data: [], meta: { total: 0, page: 1, limit: 50 } });
      });

      it('clamps limit above 100 to 100 and says so in meta.limit', async () => {
        const tenant = await createTenant(ctx);
        const csv = ['name,phoneNumber', ...Array.from({ length: 105 }, (_, i) => `Person ${i},${6281200000000 + i}`)].join('\n');
        await ctx.services.contacts.importCsv(tenant.accountId, csv);
        const body = await listBody(tenant, '?limit=500');
        expect(body.meta).toEqual({ total: 105, page: 1, limit: 100 });
        expect(body.data).toHaveLength(100);
        const second = await listBody(tenant, '?limit=500&page=2');
        expect(second.meta).toEqual({ total: 105, page: 2, limit: 100 });
        expect(second.data).toHaveLength(5);
        const exact = await listBody(tenant, '?limit=100');
        expect(exact.meta.limit).toBe(100);
      });

      it.each([
        ['page=0', 'page'],
        ['page=-1', 'page'],
        ['limit=0', 'limit'],
        ['limit=-5', 'limit'],
        ['page=abc', 'page'],
        ['limit=abc', 'limit'],
        ['limit=1.5', 'limit'],
        ['page=2.5', 'page'],
        ['page=', 'page'],
        ['page=1e300', 'page'],
        ['page=2147483648', 'page'],
        ['page=1e300&search=a', 'page'],
      ])('rejects %s with 400 VALIDATION_ERROR naming the field', async (query, field) => {
        const tenant = await createTenant(ctx);
        const body = expectError(await list(tenant, `?${query}`), 400, 'VALIDATION_ERROR');
        expect(fieldErrors(body).map((d) => d.field)).toContain(field);
      });

      it('rejects an unknown query parameter with 400', async () => {
        const tenant = await createTenant(ctx);
        const body = expectError(await list(tenant, '?pgae=2'), 400, 'VALIDATION_ERROR');
        expect(fieldErrors(body)).toContainEqual({ field: 'pgae', message: 'is not a known field' });
      });

      it('rejects a search longer than 100 characters', async () => {
        const tenant = await createTenant(ctx);
        const body = expectError(await list(tenant, `?search=${'a'.repeat(101)}`), 400, 'VALIDATION_ERROR');
        expect(fieldErrors(body).map((d) => d.field)).toContain('search');
      });

      it('accepts the token in the query string without treating it as an unknown parameter', async () => {
        const tenant = await createTenant(ctx);
        await create(tenant, 'Query Token');
        const response = await ctx.app.inject({ method: 'GET', url: url(`/contacts?token=${tenant.token}&limit=10`) });
        expect(response.statusCode, response.body).toBe(200);
        expect(json<ListBody>(response).meta).toEqual({ total: 1, page: 1, limit: 10 });
      });

      it('paginates newest first with no overlap and an exact total', async () => {
        const tenant = await createTenant(ctx);
        const created = await createMany(tenant, ['c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7']);
        const newestFirst = [...created].reverse().map((c) => c.id);

        const pages: string[][] = [];
        for (let page = 1; page <= 3; page += 1) {
          const body = await listBody(tenant, `?page=${page}&limit=3`);
          expect(body.meta).toEqual({ total: 7, page, limit: 3 });
          pages.push(body.data.map((c) => c.id));
        }
        expect(pages.map((p) => p.length)).toEqual([3, 3, 1]);
        expect(pages.flat()).toEqual(newestFirst);
        expect(new Set(pages.flat()).size).toBe(7);

        const beyond = await listBody(tenant, '?page=4&limit=3');
        expect(beyond).toEqual({ data: [], meta: { total: 7, page: 4, limit: 3 } });
        const farBeyond = await listBody(tenant, '?page=1000&limit=100');
        expect(farBeyond).toEqual({ data: [], meta: { total: 7, page: 1000, limit: 100 } });
        const largest = await listBody(tenant, '?page=2147483647&limit=100');
        expect(largest).toEqual({ data: [], meta: { total: 7, page: 2147483647, limit: 100 } });
        const huge = await listBody(tenant, '?limit=1e300');
        expect(huge.meta).toEqual({ total: 7, page: 1, limit: 100 });
      });

      it('keeps the total exact after creates and deletes', async () => {
        const tenant = await createTenant(ctx);
        const created = await createMany(tenant, ['a', 'b', 'c']);
        expect((await listBody(tenant)).meta.total).toBe(3);
        const removed = await ctx.app.inject({ method: 'DELETE', url: url(`/contacts/${created[1]!.id}`), headers: tenant.headers });
        expect(removed.statusCode).toBe(200);
        const body = await listBody(tenant);
        expect(body.meta.total).toBe(2);
        expect(body.data.map((c) => c.id)).toEqual([created[2]!.id, created[0]!.id]);
      });

      it('only lists the contacts of the calling account', async () => {
        const a = await createTenant(ctx);
        const b = await createTenant(ctx);
        await createMany(a, ['A one', 'A two']);
        const bContact = await create(b, 'B one');
        const body = await listBody(b);
        expect(body.meta.total).toBe(1);
        expect(body.data).toEqual([bContact]);
        expect((await listBody(b, '?search=one')).data.map((c) => c.id)).toEqual([bContact.id]);
      });

      describe('search', () => {
        it('matches a case-insensitive substring of the name', async () => {
          const tenant = await createTenant(ctx);
          const [alice, alicia] = await createMany(tenant, ['Alice Wonder', 'ALICIA Keys', 'Bob Marley', 'Nikola']);
          const lower = await listBody(tenant, '?search=ali');
          expect(lower.data.map((c) => c.id)).toEqual([alicia!.id, alice!.id]);
          expect(lower.meta).toEqual({ total: 2, page: 1, limit: 50 });
          const upper = await listBody(tenant, '?search=ALI');
          expect(upper.data.map((c) => c.id)).toEqual([alicia!.id, alice!.id]);
          const middle = await listBody(tenant, '?search=kOL');
          expect(middle.data.map((c) => c.name)).toEqual(['Nikola']);
          const spaced = await listBody(tenant, `?search=${encodeURIComponent('e w')}`);
          expect(spaced.data.map((c) => c.name)).toEqual(['Alice Wonder']);
        });

        it('trims the search and treats an empty search as no search', async () => {
          const tenant = await createTenant(ctx);
          await createMany(tenant, ['Alice', 'Bob']);
          expect((await listBody(tenant, `?search=${encodeURIComponent('  alice  ')}`)).data.map((c) => c.name)).toEqual(['Alice']);
          expect((await listBody(tenant, '?search=')).meta.total).toBe(2);
          expect((await listBody(tenant, `?search=${encodeURIComponent('   ')}`)).meta.total).toBe(2);
        });

        it('matches a substring of the phone digits', async () => {
          const tenant = await createTenant(ctx);
          const indo = await create(tenant, 'Indo', '6281234567890');
          const indo2 = await create(tenant, 'Indo Two', '6285550001111');
          await create(tenant, 'US', '14155552671');
          expect((await listBody(tenant, '?search=3456')).data.map((c) => c.id)).toEqual([indo.id]);
          const both = await listBody(tenant, '?search=628');
          expect(both.data.map((c) => c.id)).toEqual([indo2.id, indo.id]);
          expect(both.meta.total).toBe(2);
          expect((await listBody(tenant, '?search=999999')).meta.total).toBe(0);
        });

        it('matches a phone fragment typed with +, spaces, dashes and parentheses', async () => {
          const tenant = await createTenant(ctx);
          const indo = await create(tenant, 'Indo', '6281234567890');
          await create(tenant, 'US', '14155552671');
          for (const fragment of ['+62 812', '+62-812', '(812) 345', '+62 812 3456 7890', '812.345']) {
            const body = await listBody(tenant, `?search=${encodeURIComponent(fragment)}`);
            expect(body.data.map((c) => c.id), fragment).toEqual([indo.id]);
            expect(body.meta.total, fragment).toBe(1);
          }
          const us = await listBody(tenant, `?search=${encodeURIComponent('+1 415')}`);
          expect(us.data.map((c) => c.name)).toEqual(['US']);
        });

        it('matches digits inside a name too', async () => {
          const tenant = await createTenant(ctx);
          const agent = await create(tenant, 'Agent 007', '6281234567890');
          expect((await listBody(tenant, '?search=007')).data.map((c) => c.id)).toEqual([agent.id]);
        });

        it('treats LIKE wildcards % and _ (and backslash) literally', async () => {
          const tenant = await createTenant(ctx);
          await createMany(tenant, ['100% real', '1000 real', 'a_b', 'axb', 'back\\slash', 'plain']);
          const names = async (search: string): Promise<string[]> =>
            (await listBody(tenant, `?search=${encodeURIComponent(search)}`)).data.map((c) => c.name);
          expect(await names('%')).toEqual(['100% real']);
          expect(await names('0%')).toEqual(['100% real']);
          expect(await names('_')).toEqual(['a_b']);
          expect(await names('a_b')).toEqual(['a_b']);
          expect(await names('\\')).toEqual(['back\\slash']);
          expect(await names('%%')).toEqual([]);
        });

        it('gives an exact total for a search across pages and past the end', async () => {
          const tenant = await createTenant(ctx);
          const created = await createMany(tenant, ['Sam 1', 'Other 1', 'Sam 2', 'Sam 3', 'Other 2', 'Sam 4', 'Sam 5', 'Other 3']);
          const sams = created.filter((c) => c.name.startsWith('Sam')).reverse().map((c) => c.id);

          const seen: string[] = [];
          for (let page = 1; page <= 3; page += 1) {
            const body = await listBody(tenant, `?search=sam&limit=2&page=${page}`);
            expect(body.meta).toEqual({ total: 5, page, limit: 2 });
            seen.push(...body.data.map((c) => c.id));
          }
          expect(seen).toEqual(sams);
          expect(await listBody(tenant, '?search=sam&limit=2&page=4')).toEqual({ data: [], meta: { total: 5, page: 4, limit: 2 } });
          expect(await listBody(tenant, '?search=sam&limit=2&page=99')).toEqual({ data: [], meta: { total: 5, page: 99, limit: 2 } });
          expect(await listBody(tenant, '?search=nobody&page=1')).toEqual({ data: [], meta: { total: 0, page: 1, limit: 50 } });
          expect(await listBody(tenant, '?search=nobody&page=3')).toEqual({ data: [], meta: { total: 0, page: 3, limit: 50 } });
        });

        it('matches names case-insensitively beyond ASCII', async () => {
          const tenant = await createTenant(ctx);
          const elodie = await create(tenant, 'ÉLODIE Durand');
          await create(tenant, 'Other');
          expect((await listBody(tenant, `?search=${encodeURIComponent('élodie')}`)).data.map((c) => c.id)).toEqual([elodie.id]);
        });

        it('answers 400 (not 500) for a search with a NUL byte or other control character', async () => {
          const tenant = await createTenant(ctx);
          for (const search of ['a%00b', '%01', 'x%0Ay']) {
            const body = expectError(await list(tenant, `?search=${search}`), 400, 'VALIDATION_ERROR');
            expect(fieldErrors(body).map((d) => d.field)).toEqual(['search']);
          }
        });

        it('clamps the limit of a search too', async () => {
          const tenant = await createTenant(ctx);
          await create(tenant, 'Someone');
          expect((await listBody(tenant, '?search=some&limit=1000')).meta).toEqual({ total: 1, page: 1, limit: 100 });
        });
      });
    });

    describe('POST /contacts', () => {
      it('creates a contact: 201 {success, data} with ISO timestamps with milliseconds', async () => {
        const tenant = await createTenant(ctx);
        const before = Date.now();
        const response = await post(tenant, { name: 'Budi Santoso', phoneNumber: '+62 (812) 3456-7890' });
        expect(response.statusCode, response.body).toBe(201);
        const body = json<CreatedBody>(response);
        expect(Object.keys(body).sort()).toEqual(['data', 'success']);
        expect(body.success).toBe(true);
        expect(Object.keys(body.data).sort()).toEqual(['createdAt', 'id', 'name', 'phoneNumber', 'updatedAt']);
        expect(body.data).toMatchObject({ name: 'Budi Santoso', phoneNumber: '6281234567890' });
        expect(body.data.id).toMatch(/^ct_[0-9a-z]{26}$/);
        expect(body.data.createdAt).toMatch(ISO_MS);
        expect(body.data.updatedAt).toMatch(ISO_MS);
        expect(Math.abs(Date.parse(body.data.createdAt) - before)).toBeLessThan(60_000);

        const fetched = await ctx.app.inject({ method: 'GET', url: url(`/contacts/${body.data.id}`), headers: tenant.headers });
        expect(json<CreatedBody>(fetched).data).toEqual(body.data);
      });

      it.each([
        ['6281234567890', '6281234567890'],
        ['+6281234567890', '6281234567890'],
        ['+62 812-3456-7890', '6281234567890'],
        ['62.812.3456.7890', '6281234567890'],
        ['+1 (415) 555-2671', '14155552671'],
        ['  +44 20 7946 0958  ', '442079460958'],
      ])('normalises %j to %s', async (input, digits) => {
        const tenant = await createTenant(ctx);
        const response = await post(tenant, { name: 'N', phoneNumber: input });
        expect(response.statusCode, response.body).toBe(201);
        expect(json<CreatedBody>(response).data.phoneNumber).toBe(digits);
      });

      it('trims the name and turns line breaks and tabs into one space', async () => {
        const tenant = await createTenant(ctx);
        expect((await create(tenant, '  Padded Name  ')).name).toBe('Padded Name');
        expect((await create(tenant, 'Two\r\nLines\tand tab')).name).toBe('Two Lines and tab');
        expect((await create(tenant, 'José Müller 李小龍')).name).toBe('José Müller 李小龍');
      });

      it('answers 400 (not 500) for a name with a NUL byte or another control character', async () => {
        const tenant = await createTenant(ctx);
        for (const name of ['nul\u0000byte', 'bell\u0007', 'sep\u0001arator']) {
          const body = expectError(await post(tenant, { name, phoneNumber: randomPhone() }), 400, 'VALIDATION_ERROR');
          expect(fieldErrors(body)).toEqual([{ field: 'name', message: 'must not contain control characters' }]);
        }
        const contact = await create(tenant, 'Clean');
        const patched = await ctx.app.inject({
          method: 'PATCH',
          url: url(`/contacts/${contact.id}`),
          headers: tenant.headers,
          payload: { name: 'dirty\u0000' },
        });
        expectError(patched, 400, 'VALIDATION_ERROR');
        expect((await listBody(tenant)).data).toEqual([contact]);
      });

      it.each([
        ['letters', '62812abc4567'],
        ['too short', '12345'],
        ['too long', '1234567890123456'],
        ['a leading 0 trunk prefix', '081234567890'],
        ['an unknown country code', '+999 123 4567'],
        ['only punctuation', '+ ( ) -'],
        ['an empty string', ''],
      ])('rejects a phone with %s: 400 on phoneNumber', async (_label, phoneNumber) => {
        const tenant = await createTenant(ctx);
        const body = expectError(await post(tenant, { name: 'Bad Phone', phoneNumber }), 400, 'VALIDATION_ERROR');
        expect(fieldErrors(body).map((d) => d.field)).toEqual(['phoneNumber']);
        expect((await listBody(tenant)).meta.total).toBe(0);
      });

      it.each([
        ['a missing name', { phoneNumber: '6281234567890' }, 'name'],
        ['a missing phoneNumber', { name: 'No Phone' }, 'phoneNumber'],
        ['an empty name', { name: '', phoneNumber: '6281234567890' }, 'name'],
        ['a blank name', { name: '   ', phoneNumber: '6281234567890' }, 'name'],
        ['a numeric name', { name: 123, phoneNumber: '6281234567890' }, 'name'],
        ['a numeric phoneNumber', { name: 'Numeric', phoneNumber: 6281234567890 }, 'phoneNumber'],
        ['a null name', { name: null, phoneNumber: '6281234567890' }, 'name'],
        ['an over-long name', { name: 'x'.repeat(201), phoneNumber: '6281234567890' }, 'name'],
        ['an unknown field', { name: 'Extra', phoneNumber: '6281234567890', email: 'x@example.com' }, 'email'],
      ])('rejects %s with 400 naming the field', async (_label, payload, field) => {
        const tenant = await createTenant(ctx);
        const body = expectError(await post(tenant, payload), 400, 'VALIDATION_ERROR');
        expect(fieldErrors(body).map((d) => d.field)).toContain(field);
        expect((await listBody(tenant)).meta.total).toBe(0);
      });

      it('rejects a body that is not an object', async () => {
        const tenant = await createTenant(ctx);
        for (const payload of ['[]', '"text"', '42']) {
          const response = await ctx.app.inject({
            method: 'POST',
            url: url('/contacts'),
            headers: { ...tenant.headers, 'content-type': 'application/json' },
            payload,
          });
          expectError(response, 400, 'VALIDATION_ERROR');
        }
      });

      it('answers malformed JSON with 400 VALIDATION_ERROR', async () => {
        const tenant = await createTenant(ctx);
        const response = await ctx.app.inject({
          method: 'POST',
          url: url('/contacts'),
          headers: { ...tenant.headers, 'content-type': 'application/json' },
          payload: '{"name": "Broken", "phoneNumber": ',
        });
        expectError(response, 400, 'VALIDATION_ERROR');
      });

      it('answers a missing body with 400', async () => {
        const tenant = await createTenant(ctx);
        const response = await ctx.app.inject({ method: 'POST', url: url('/contacts'), headers: tenant.headers });
        expectError(response, 400, 'VALIDATION_ERROR');
      });

      it('answers a body over the 5 MB limit with 413 PAYLOAD_TOO_LARGE', async () => {
        const tenant = await createTenant(ctx);
        const payload = JSON.stringify({ name: 'x'.repeat(5 * 1024 * 1024 + 10), phoneNumber: '6281234567890' });
        const response = await ctx.app.inject({
          method: 'POST',
          url: url('/contacts'),
          headers: { ...tenant.headers, 'content-type': 'application/json' },
          payload,
        });
        expectError(response, 413, 'PAYLOAD_TOO_LARGE');
        expect((await listBody(tenant)).meta.total).toBe(0);
      });

      it('answers a duplicate phone with 409 CONTACT_EXISTS, also when written differently', async () => {
        const tenant = await createTenant(ctx);
        const first = await create(tenant, 'First', '6281234567890');
        for (const phoneNumber of ['6281234567890', '+62 812-3456-7890', '+62 (812) 3456.7890']) {
          const body = expectError(await post(tenant, { name: 'Second', phoneNumber }), 409, 'CONTACT_EXISTS');
          expect(body.error.message).toContain('6281234567890');
        }
        const listed = await listBody(tenant);
        expect(listed.meta.total).toBe(1);
        expect(listed.data).toEqual([first]);
      });

      it('lets two different accounts have the same phone number', async () => {
        const a = await createTenant(ctx);
        const b = await createTenant(ctx);
        const inA = await create(a, 'In A', '6281234567890');
        const inB = await create(b, 'In B', '+62 812 3456 7890');
        expect(inA.phoneNumber).toBe(inB.phoneNumber);
        expect(inA.id).not.toBe(inB.id);
      });

      it('creates exactly one contact when the same phone is posted concurrently', async () => {
        const tenant = await createTenant(ctx);
        const responses = await Promise.all(
          Array.from({ length: 5 }, (_, i) => post(tenant, { name: `Racer ${i}`, phoneNumber: '+62 812 0000 1111' })),
        );
        const statuses = responses.map((r) => r.statusCode).sort();
        expect(statuses).toEqual([201, 409, 409, 409, 409]);
        for (const r of responses.filter((x) => x.statusCode === 409)) expect(json<ErrorBody>(r).error.code).toBe('CONTACT_EXISTS');
        expect((await listBody(tenant)).meta.total).toBe(1);
      });
    });

    describe('GET/PATCH/DELETE /contacts/:id', () => {
      it('reads one contact', async () => {
        const tenant = await createTenant(ctx);
        const contact = await create(tenant, 'Reader');
        const response = await ctx.app.inject({ method: 'GET', url: url(`/contacts/${contact.id}`), headers: tenant.headers });
        expect(response.statusCode).toBe(200);
        expect(json(response)).toEqual({ success: true, data: contact });
      });

      it('updates the name and keeps the phone', async () => {
        const tenant = await createTenant(ctx);
        const contact = await create(tenant, 'Old Name', '6281234567890');
        const response = await ctx.app.inject({
          method: 'PATCH',
          url: url(`/contacts/${contact.id}`),
          headers: tenant.headers,
          payload: { name: '  New Name ' },
        });
        expect(response.statusCode, response.body).toBe(200);
        const body = json<CreatedBody>(response);
        expect(body.success).toBe(true);
        expect(body.data).toMatchObject({ id: contact.id, name: 'New Name', phoneNumber: '6281234567890', createdAt: contact.createdAt });
        expect(body.data.updatedAt).toMatch(ISO_MS);
        expect(Date.parse(body.data.updatedAt)).toBeGreaterThanOrEqual(Date.parse(contact.updatedAt));
        const fetched = await ctx.app.inject({ method: 'GET', url: url(`/contacts/${contact.id}`), headers: tenant.headers });
        expect(json<CreatedBody>(fetched).data).toEqual(body.data);
      });

      it('updates the phone (normalised) and both fields at once', async () => {
        const tenant = await createTenant(ctx);
        const contact = await create(tenant, 'Mover', '6281234567890');
        const phoneOnly = await ctx.app.inject({
          method: 'PATCH',
          url: url(`/contacts/${contact.id}`),
          headers: tenant.headers,
          payload: { phoneNumber: '+1 (415) 555-2671' },
        });
        expect(phoneOnly.statusCode, phoneOnly.body).toBe(200);
        expect(json<CreatedBody>(phoneOnly).data).toMatchObject({ name: 'Mover', phoneNumber: '14155552671' });
        const both = await ctx.app.inject({
          method: 'PATCH',
          url: url(`/contacts/${contact.id}`),
          headers: tenant.headers,
          payload: { name: 'Both', phoneNumber: '+62 812 3456 7899' },
        });
        expect(json<CreatedBody>(both).data).toMatchObject({ name: 'Both', phoneNumber: '6281234567899' });
        // The old number is free again.
        expect((await post(tenant, { name: 'Reuse', phoneNumber: '6281234567890' })).statusCode).toBe(201);
      });

      it('allows setting a contact to its own phone written differently', async () => {
        const tenant = await createTenant(ctx);
        const contact = await create(tenant, 'Self', '6281234567890');
        const response = await ctx.app.inject({
          method: 'PATCH',
          url: url(`/contacts/${contact.id}`),
          headers: tenant.headers,
          payload: { phoneNumber: '+62 812-3456-7890' },
        });
        expect(response.statusCode, response.body).toBe(200);
        expect(json<CreatedBody>(response).data.phoneNumber).toBe('6281234567890');
      });

      it('answers 409 CONTACT_EXISTS when the new phone belongs to another contact, and changes nothing', async () => {
        const tenant = await createTenant(ctx);
        const a = await create(tenant, 'A', '6281234567890');
        const b = await create(tenant, 'B', '6281234567891');
        const body = expectError(
          await ctx.app.inject({
            method: 'PATCH',
            url: url(`/contacts/${b.id}`),
            headers: tenant.headers,
            payload: { name: 'B renamed', phoneNumber: '+62 812 3456 7890' },
          }),
          409,
          'CONTACT_EXISTS',
        );
        expect(body.error.message).toContain('6281234567890');
        const fetched = await ctx.app.inject({ method: 'GET', url: url(`/contacts/${b.id}`), headers: tenant.headers });
        expect(json<CreatedBody>(fetched).data).toEqual(b);
        const fetchedA = await ctx.app.inject({ method: 'GET', url: url(`/contacts/${a.id}`), headers: tenant.headers });
        expect(json<CreatedBody>(fetchedA).data).toEqual(a);
      });

      it.each([
        ['an empty body', {}, undefined],
        ['an unknown field', { nickname: 'x' }, 'nickname'],
        ['an empty name', { name: '' }, 'name'],
        ['a blank name', { name: '   ' }, 'name'],
        ['a numeric name', { name: 5 }, 'name'],
        ['an invalid phone', { phoneNumber: '0812' }, 'phoneNumber'],
      ])('rejects a PATCH with %s: 400 and no change', async (_label, payload, field) => {
        const tenant = await createTenant(ctx);
        const contact = await create(tenant, 'Stable');
        const body = expectError(
          await ctx.app.inject({ method: 'PATCH', url: url(`/contacts/${contact.id}`), headers: tenant.headers, payload }),
          400,
          'VALIDATION_ERROR',
        );
        const fields = fieldErrors(body).map((d) => d.field);
        if (field) expect(fields).toContain(field);
        const fetched = await ctx.app.inject({ method: 'GET', url: url(`/contacts/${contact.id}`), headers: tenant.headers });
        expect(json<CreatedBody>(fetched).data).toEqual(contact);
      });

      it('deletes a contact', async () => {
        const tenant = await createTenant(ctx);
        const keep = await create(tenant, 'Keep');
        const gone = await create(tenant, 'Gone');
        const response = await ctx.app.inject({ method: 'DELETE', url: url(`/contacts/${gone.id}`), headers: tenant.headers });
        expect(response.statusCode).toBe(200);
        expect(json(response)).toEqual({ success: true });
        expectError(await ctx.app.inject({ method: 'GET', url: url(`/contacts/${gone.id}`), headers: tenant.headers }), 404, 'NOT_FOUND');
        expectError(await ctx.app.inject({ method: 'DELETE', url: url(`/contacts/${gone.id}`), headers: tenant.headers }), 404, 'NOT_FOUND');
        const listed = await listBody(tenant);
        expect(listed.data).toEqual([keep]);
        expect(listed.meta.total).toBe(1);
        // The number can be used again.
        expect((await post(tenant, { name: 'Again', phoneNumber: gone.phoneNumber })).statusCode).toBe(201);
      });

      it('answers 404 NOT_FOUND for an unknown id on GET, PATCH and DELETE', async () => {
        const tenant = await createTenant(ctx);
        const id = 'ct_01jzzzzzzzzzzzzzzzzzzzzzzz';
        expectError(await ctx.app.inject({ method: 'GET', url: url(`/contacts/${id}`), headers: tenant.headers }), 404, 'NOT_FOUND');
        expectError(
          await ctx.app.inject({ method: 'PATCH', url: url(`/contacts/${id}`), headers: tenant.headers, payload: { name: 'X' } }),
          404,
          'NOT_FOUND',
        );
        expectError(await ctx.app.inject({ method: 'DELETE', url: url(`/contacts/${id}`), headers: tenant.headers }), 404, 'NOT_FOUND');
        expectError(await ctx.app.inject({ method: 'GET', url: url('/contacts/not-even-an-id'), headers: tenant.headers }), 404, 'NOT_FOUND');
        // An id with a NUL byte cannot exist (and must not reach the database as a 500).
        for (const method of ['GET', 'DELETE'] as const) {
          expectError(await ctx.app.inject({ method, url: url('/contacts/ct_%00x'), headers: tenant.headers }), 404, 'NOT_FOUND');
        }
        expectError(
          await ctx.app.inject({ method: 'PATCH', url: url('/contacts/ct_%00x'), headers: tenant.headers, payload: { name: 'X' } }),
          404,
          'NOT_FOUND',
        );
      });

      it("answers 404 for another account's contact and leaves it untouched", async () => {
        const owner = await createTenant(ctx);
        const intruder = await createTenant(ctx);
        const contact = await create(owner, 'Private', '6281234567890');
        const path = url(`/contacts/${contact.id}`);

        const read = expectError(await ctx.app.inject({ method: 'GET', url: path, headers: intruder.headers }), 404, 'NOT_FOUND');
        const patch = expectError(
          await ctx.app.inject({ method: 'PATCH', url: path, headers: intruder.headers, payload: { name: 'Hacked', phoneNumber: '14155552671' } }),
          404,
          'NOT_FOUND',
        );
        const del = expectError(await ctx.app.inject({ method: 'DELETE', url: path, headers: intruder.headers }), 404, 'NOT_FOUND');
        // Same answer as for an id that does not exist at all: nothing leaks.
        const unknown = expectError(
          await ctx.app.inject({ method: 'GET', url: url('/contacts/ct_01jzzzzzzzzzzzzzzzzzzzzzzz'), headers: intruder.headers }),
          404,
          'NOT_FOUND',
        );
        expect(read.error.message).toBe(unknown.error.message);
        expect(patch.error.message).toBe(unknown.error.message);
        expect(del.error.message).toBe(unknown.error.message);

        const fetched = await ctx.app.inject({ method: 'GET', url: path, headers: owner.headers });
        expect(fetched.statusCode).toBe(200);
        expect(json<CreatedBody>(fetched).data).toEqual(contact);
        expect((await listBody(owner)).meta.total).toBe(1);
        expect((await listBody(intruder)).meta.total).toBe(0);
      });
    });

    describe('authentication and scopes', () => {
      it('answers 401 without a token and with an unknown token', async () => {
        expectError(await ctx.app.inject({ method: 'GET', url: url('/contacts') }), 401, 'UNAUTHORIZED');
        expectError(
          await ctx.app.inject({ method: 'GET', url: url('/contacts'), headers: { 'x-api-key': 'wg_not-a-real-token' } }),
          401,
          'UNAUTHORIZED',
        );
        expectError(await ctx.app.inject({ method: 'POST', url: url('/contacts'), payload: { name: 'X', phoneNumber: '6281234567890' } }), 401, 'UNAUTHORIZED');
      });

      it('a contacts:read token can list and read but gets 403 FORBIDDEN on writes and on groups', async () => {
        const full = await createTenant(ctx);
        const contact = await create(full, 'Readable');
        const { token } = await ctx.services.tokens.create(full.accountId, { name: 'read-only', scopes: ['contacts:read'] });
        const headers = { 'x-api-key': token };

        const listed = await ctx.app.inject({ method: 'GET', url: url('/contacts'), headers });
        expect(listed.statusCode).toBe(200);
        expect(json<ListBody>(listed).data).toEqual([contact]);
        expect((await ctx.app.inject({ method: 'GET', url: url(`/contacts/${contact.id}`), headers })).statusCode).toBe(200);

        expectError(await ctx.app.inject({ method: 'POST', url: url('/contacts'), headers, payload: { name: 'No', phoneNumber: randomPhone() } }), 403, 'FORBIDDEN');
        expectError(await ctx.app.inject({ method: 'PATCH', url: url(`/contacts/${contact.id}`), headers, payload: { name: 'No' } }), 403, 'FORBIDDEN');
        expectError(await ctx.app.inject({ method: 'DELETE', url: url(`/contacts/${contact.id}`), headers }), 403, 'FORBIDDEN');
        expectError(
          await ctx.app.inject({ method: 'POST', url: url('/contacts/import'), headers: { ...headers, 'content-type': 'text/csv' }, payload: 'name,phoneNumber\nA,6281234567890\n' }),
          403,
          'FORBIDDEN',
        );
        expectError(await ctx.app.inject({ method: 'GET', url: url('/groups'), headers }), 403, 'FORBIDDEN');
        expect((await listBody(full)).data).toEqual([contact]);
      });

      it('createTenant with scopes gives a token limited to them', async () => {
        const tenant = await createTenant(ctx, { scopes: ['contacts:read'] });
        expect((await list(tenant)).statusCode).toBe(200);
        expectError(await post(tenant, { name: 'No', phoneNumber: randomPhone() }), 403, 'FORBIDDEN');
        expectError(await ctx.app.inject({ method: 'GET', url: url('/groups'), headers: tenant.headers }), 403, 'FORBIDDEN');
      });
    });
  });
}
