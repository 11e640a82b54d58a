/**
 * Groups through the real app: listing and reading, create with members, rename, delete,
 * membership (paginated members, idempotent adds, removal), exact contactsCount in every
 * situation (including deleting a contact), tenancy, scopes and the /v1 prefix.
 */
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, json, randomPhone, type Tenant, type TestContext, expectError, ISO_MS, type ErrorBody, type FieldError } from './helpers.js';

interface GroupBody {
  id: string;
  name: string;
  contactsCount: number;
  createdAt: string;
  updatedAt: string;
}
interface ContactBody {
  id: string;
  name: string;
  phoneNumber: string;
  createdAt: string;
  updatedAt: string;
}
interface MemberBody extends ContactBody {
  addedAt: string;
}
interface Meta {
  total: number;
  page: number;
  limit: number;
}
interface PageBody<T> {
  success: true;
  data: T[];
  meta: Meta;
}
interface DataBody<T> {
  success: true;
  data: T;
}


let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp();
});
afterAll(async () => ctx.close());

function fieldErrors(body: ErrorBody): FieldError[] {
  expect(Array.isArray(body.error.details), JSON.stringify(body)).toBe(true);
  return body.error.details as FieldError[];
}

for (const prefix of ['', '/v1']) {
  describe(`groups at ${prefix || '/'}`, () => {
    const url = (path: string): string => `${prefix}${path}`;

    const request = (
      tenant: Tenant,
      method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
      path: string,
      payload?: Record<string, unknown>,
    ): Promise<LightMyRequestResponse> =>
      ctx.app.inject({ method, url: url(path), headers: tenant.headers, ...(payload === undefined ? {} : { payload }) });

    async function ok<T>(response: LightMyRequestResponse, status = 200): Promise<T> {
      expect(response.statusCode, response.body).toBe(status);
      return json<T>(response);
    }

    async function createContact(tenant: Tenant, name: string): Promise<ContactBody> {
      const body = await ok<DataBody<ContactBody>>(await request(tenant, 'POST', '/contacts', { name, phoneNumber: randomPhone() }), 201);
      return body.data;
    }

    async function createContacts(tenant: Tenant, count: number, prefixName = 'Member'): Promise<ContactBody[]> {
      const created: ContactBody[] = [];
      for (let i = 0; i < count; i += 1) created.push(await createContact(tenant, `${prefixName} ${i}`));
      return created;
    }

    async function createGroup(tenant: Tenant, name: string, contactIds?: string[]): Promise<GroupBody> {
      const payload = contactIds === undefined ? { name } : { name, contactIds };
      return (await ok<DataBody<GroupBody>>(await request(tenant, 'POST', '/groups', payload), 201)).data;
    }

    async function getGroup(tenant: Tenant, id: string): Promise<GroupBody> {
      return (await ok<DataBody<GroupBody>>(await request(tenant, 'GET', `/groups/${id}`))).data;
    }

    async function members(tenant: Tenant, id: string, query = ''): Promise<PageBody<MemberBody>> {
      return ok<PageBody<MemberBody>>(await request(tenant, 'GET', `/groups/${id}/contacts${query}`));
    }

    async function listGroups(tenant: Tenant, query = ''): Promise<PageBody<GroupBody>> {
      return ok<PageBody<GroupBody>>(await request(tenant, 'GET', `/groups${query}`));
    }

    describe('GET /groups', () => {
      it('answers {success, data, meta} and an empty list for a new account', async () => {
        const tenant = await createTenant(ctx);
        const body = await listGroups(tenant);
        expect(body).toEqual({ success: true, data: [], meta: { total: 0, page: 1, limit: 50 } });
      });

      it('lists groups newest first with their fields and exact counts', async () => {
        const tenant = await createTenant(ctx);
        const contacts = await createContacts(tenant, 3);
        const first = await createGroup(tenant, 'First', [contacts[0]!.id]);
        const second = await createGroup(tenant, 'Second', contacts.map((c) => c.id));
        const body = await listGroups(tenant);
        expect(Object.keys(body).sort()).toEqual(['data', 'meta', 'success']);
        expect(body.meta).toEqual({ total: 2, page: 1, limit: 50 });
        expect(body.data).toEqual([second, first]);
        expect(body.data.map((g) => g.contactsCount)).toEqual([3, 1]);
        for (const group of body.data) {
          expect(Object.keys(group).sort()).toEqual(['contactsCount', 'createdAt', 'id', 'name', 'updatedAt']);
          expect(group.id).toMatch(/^grp_/);
          expect(group.createdAt).toMatch(ISO_MS);
        }
      });

      it('paginates, clamps limit to 100 and answers past the end with the right total', async () => {
        const tenant = await createTenant(ctx);
        const created: GroupBody[] = [];
        for (let i = 0; i < 5; i += 1) created.push(await createGroup(tenant, `G${i}`));
        const ids: string[] = [];
        for (let page = 1; page <= 3; page += 1) {
          const body = await listGroups(tenant, `?page=${page}&limit=2`);
          expect(body.meta).toEqual({ total: 5, page, limit: 2 });
          ids.push(...body.data.map((g) => g.id));
        }
        expect(ids).toEqual(created.reverse().map((g) => g.id));
        expect(await listGroups(tenant, '?page=4&limit=2')).toEqual({ success: true, data: [], meta: { total: 5, page: 4, limit: 2 } });
        expect((await listGroups(tenant, '?limit=1000')).meta).toEqual({ total: 5, page: 1, limit: 100 });
      });

      it.each(['page=0', 'limit=0', 'page=abc', 'limit=1.5', 'search=x', 'page=1e300'])('rejects %s with 400', async (query) => {
        const tenant = await createTenant(ctx);
        const body = expectError(await request(tenant, 'GET', `/groups?${query}`), 400, 'VALIDATION_ERROR');
        expect(fieldErrors(body).length).toBeGreaterThan(0);
      });

      it('lists only the groups of the calling account', async () => {
        const a = await createTenant(ctx);
        const b = await createTenant(ctx);
        await createGroup(a, 'Of A');
        const ofB = await createGroup(b, 'Of B');
        expect((await listGroups(b)).data).toEqual([ofB]);
      });
    });

    describe('POST /groups', () => {
      it('creates an empty group: 201 {success, data} with contactsCount 0', async () => {
        const tenant = await createTenant(ctx);
        const response = await request(tenant, 'POST', '/groups', { name: '  Customers  ' });
        expect(response.statusCode, response.body).toBe(201);
        const body = json<DataBody<GroupBody>>(response);
        expect(body.success).toBe(true);
        expect(body.data).toMatchObject({ name: 'Customers', contactsCount: 0 });
        expect(body.data.createdAt).toMatch(ISO_MS);
        expect(await getGroup(tenant, body.data.id)).toEqual(body.data);
      });

      it('creates a group with members and an exact contactsCount, ignoring repeated ids', async () => {
        const tenant = await createTenant(ctx);
        const contacts = await createContacts(tenant, 4);
        const ids = contacts.map((c) => c.id);
        const group = await createGroup(tenant, 'VIP', [...ids, ids[0]!, ids[1]!]);
        expect(group.contactsCount).toBe(4);
        const listed = await members(tenant, group.id);
        expect(listed.meta.total).toBe(4);
        expect(listed.data.map((m) => m.id).sort()).toEqual([...ids].sort());
      });

      it('accepts an empty contactIds list', async () => {
        const tenant = await createTenant(ctx);
        expect((await createGroup(tenant, 'Empty', [])).contactsCount).toBe(0);
      });

      it("answers 400 naming another account's or an unknown contact id, and creates nothing", async () => {
        const tenant = await createTenant(ctx);
        const other = await createTenant(ctx);
        const mine = await createContact(tenant, 'Mine');
        const theirs = await createContact(other, 'Theirs');
        for (const bad of [theirs.id, 'ct_01jzzzzzzzzzzzzzzzzzzzzzzz']) {
          const body = expectError(await request(tenant, 'POST', '/groups', { name: 'Bad', contactIds: [mine.id, bad] }), 400, 'VALIDATION_ERROR');
          expect(body.error.message).toContain(bad);
          expect(fieldErrors(body)).toEqual([{ field: 'contactIds[1]', message: expect.stringContaining(bad) }]);
        }
        // An id with NUL is refused by the rule on every string of a request, naming the field.
        const nul = expectError(await request(tenant, 'POST', '/groups', { name: 'Bad', contactIds: [mine.id, 'ct_nul\u0000'] }), 400, 'VALIDATION_ERROR');
        expect(fieldErrors(nul)).toEqual([{ field: 'contactIds[1]', message: 'must not contain control characters' }]);
        expect((await listGroups(tenant)).meta.total).toBe(0);
        expect((await listGroups(other)).meta.total).toBe(0);
      });

      it.each([
        ['a missing name', { contactIds: [] }, 'name'],
        ['an empty name', { name: '' }, 'name'],
        ['a blank name', { name: '   ' }, 'name'],
        ['a numeric name', { name: 7 }, 'name'],
        ['a name over 200 characters', { name: 'g'.repeat(201) }, 'name'],
        ['a name with a NUL byte', { name: 'a\u0000b' }, 'name'],
        ['contactIds not an array', { name: 'G', contactIds: 'ct_1' }, 'contactIds'],
        ['an empty contact id', { name: 'G', contactIds: [''] }, 'contactIds[0]'],
        ['an unknown field', { name: 'G', members: [] }, 'members'],
      ])('rejects %s with 400', async (_label, payload, field) => {
        const tenant = await createTenant(ctx);
        const body = expectError(await request(tenant, 'POST', '/groups', payload), 400, 'VALIDATION_ERROR');
        expect(fieldErrors(body).map((d) => d.field)).toContain(field);
        expect((await listGroups(tenant)).meta.total).toBe(0);
      });
    });

    describe('GET, PATCH and DELETE /groups/:id', () => {
      it('reads a group', async () => {
        const tenant = await createTenant(ctx);
        const group = await createGroup(tenant, 'Readable');
        const response = await request(tenant, 'GET', `/groups/${group.id}`);
        expect(json(response)).toEqual({ success: true, data: group });
      });

      it('renames a group and keeps its members', async () => {
        const tenant = await createTenant(ctx);
        const contacts = await createContacts(tenant, 2);
        const group = await createGroup(tenant, 'Old', contacts.map((c) => c.id));
        const renamed = await ok<DataBody<GroupBody>>(await request(tenant, 'PATCH', `/groups/${group.id}`, { name: ' New ' }));
        expect(renamed.success).toBe(true);
        expect(renamed.data).toMatchObject({ id: group.id, name: 'New', contactsCount: 2, createdAt: group.createdAt });
        expect(Date.parse(renamed.data.updatedAt)).toBeGreaterThanOrEqual(Date.parse(group.updatedAt));
        expect(await getGroup(tenant, group.id)).toEqual(renamed.data);
      });

      it.each([
        ['an empty body', {}],
        ['an empty name', { name: '' }],
        ['a blank name', { name: '  ' }],
        ['an unknown field', { name: 'X', colour: 'red' }],
      ])('rejects a rename with %s', async (_label, payload) => {
        const tenant = await createTenant(ctx);
        const group = await createGroup(tenant, 'Stays');
        expectError(await request(tenant, 'PATCH', `/groups/${group.id}`, payload), 400, 'VALIDATION_ERROR');
        expect(await getGroup(tenant, group.id)).toEqual(group);
      });

      it('deletes a group; its contacts survive', async () => {
        const tenant = await createTenant(ctx);
        const contacts = await createContacts(tenant, 2);
        const group = await createGroup(tenant, 'Doomed', contacts.map((c) => c.id));
        const other = await createGroup(tenant, 'Other', [contacts[0]!.id]);
        const response = await request(tenant, 'DELETE', `/groups/${group.id}`);
        expect(response.statusCode).toBe(200);
        expect(json(response)).toEqual({ success: true });
        expectError(await request(tenant, 'GET', `/groups/${group.id}`), 404, 'NOT_FOUND');
        expectError(await request(tenant, 'GET', `/groups/${group.id}/contacts`), 404, 'NOT_FOUND');
        expectError(await request(tenant, 'DELETE', `/groups/${group.id}`), 404, 'NOT_FOUND');
        const listed = json<{ data: ContactBody[]; meta: Meta }>(await request(tenant, 'GET', '/contacts'));
        expect(listed.meta.total).toBe(2);
        expect(listed.data.map((c) => c.id).sort()).toEqual(contacts.map((c) => c.id).sort());
        expect(await getGroup(tenant, other.id)).toEqual(other);
        expect((await listGroups(tenant)).data).toEqual([other]);
      });

      it('answers 404 NOT_FOUND for unknown ids on every group route', async () => {
        const tenant = await createTenant(ctx);
        const contact = await createContact(tenant, 'Someone');
        for (const id of ['grp_01jzzzzzzzzzzzzzzzzzzzzzzz', 'grp_%00x']) {
          expectError(await request(tenant, 'GET', `/groups/${id}`), 404, 'NOT_FOUND');
          expectError(await request(tenant, 'PATCH', `/groups/${id}`, { name: 'X' }), 404, 'NOT_FOUND');
          expectError(await request(tenant, 'DELETE', `/groups/${id}`), 404, 'NOT_FOUND');
          expectError(await request(tenant, 'GET', `/groups/${id}/contacts`), 404, 'NOT_FOUND');
          expectError(await request(tenant, 'POST', `/groups/${id}/contacts`, { contactIds: [contact.id] }), 404, 'NOT_FOUND');
          expectError(await request(tenant, 'DELETE', `/groups/${id}/contacts/${contact.id}`), 404, 'NOT_FOUND');
        }
      });
    });

    describe('membership', () => {
      it('?contactIds= lists only those of the named contacts that are members (unknown and other accounts\' ids just do not match)', async () => {
        const tenant = await createTenant(ctx);
        const [a, b, c] = await createContacts(tenant, 3);
        const group = await createGroup(tenant, 'Some', [a!.id, c!.id]);
        const other = await createTenant(ctx);
        const [foreign] = await createContacts(other, 1);
        const found = await members(tenant, group.id, `?contactIds=${[a!.id, b!.id, c!.id, foreign!.id, 'ct_unknown'].join(',')}`);
        expect(found.data.map((m) => m.id).sort()).toEqual([a!.id, c!.id].sort());
        expect(found.meta.total).toBe(2);
        expect((await members(tenant, group.id, `?contactIds=${b!.id}`)).data).toEqual([]);
        const tooMany = Array.from({ length: 101 }, (_, i) => `ct_${i}`).join(',');
        const refused = expectError(await request(tenant, 'GET', `/groups/${group.id}/contacts?contactIds=${tooMany}`), 400, 'VALIDATION_ERROR');
        expect(fieldErrors(refused).map((d) => d.field)).toContain('contactIds');
      });

      it('lists members paginated, most recently added first, as contact records with addedAt', async () => {
        const tenant = await createTenant(ctx);
        const contacts = await createContacts(tenant, 5);
        const group = await createGroup(tenant, 'Paged');
        // Added one request at a time, so the order of addition is known.
        for (const contact of contacts) {
          const added = await ok<DataBody<{ added: number; group: GroupBody }>>(
            await request(tenant, 'POST', `/groups/${group.id}/contacts`, { contactIds: [contact.id] }),
          );
          expect(added.data.added).toBe(1);
        }
        const first = await members(tenant, group.id, '?limit=2');
        expect(Object.keys(first).sort()).toEqual(['data', 'meta', 'success']);
        expect(first.success).toBe(true);
        expect(first.meta).toEqual({ total: 5, page: 1, limit: 2 });
        const member = first.data[0]!;
        expect(Object.keys(member).sort()).toEqual(['addedAt', 'createdAt', 'id', 'name', 'phoneNumber', 'updatedAt']);
        const contact = contacts[4]!;
        expect(member).toEqual({ ...contact, addedAt: expect.stringMatching(ISO_MS) });

        const ids = [...first.data.map((m) => m.id)];
        for (let page = 2; page <= 3; page += 1) {
          const body = await members(tenant, group.id, `?limit=2&page=${page}`);
          expect(body.meta).toEqual({ total: 5, page, limit: 2 });
          ids.push(...body.data.map((m) => m.id));
        }
        expect(ids).toEqual([...contacts].reverse().map((c) => c.id));
        expect(await members(tenant, group.id, '?limit=2&page=4')).toEqual({ success: true, data: [], meta: { total: 5, page: 4, limit: 2 } });
        expect((await members(tenant, group.id, '?limit=500')).meta).toEqual({ total: 5, page: 1, limit: 100 });
        expectError(await request(tenant, 'GET', `/groups/${group.id}/contacts?page=0`), 400, 'VALIDATION_ERROR');
        expectError(await request(tenant, 'GET', `/groups/${group.id}/contacts?page=1e300`), 400, 'VALIDATION_ERROR');
        expectError(await request(tenant, 'GET', `/groups/${group.id}/contacts?nope=1`), 400, 'VALIDATION_ERROR');
      });

      it('adds members idempotently and keeps contactsCount exact', async () => {
        const tenant = await createTenant(ctx);
        const [a, b, c] = await createContacts(tenant, 3);
        const group = await createGroup(tenant, 'Idem', [a!.id]);

        const add = async (contactIds: string[]): Promise<{ added: number; group: GroupBody }> =>
          (await ok<DataBody<{ added: number; group: GroupBody }>>(await request(tenant, 'POST', `/groups/${group.id}/contacts`, { contactIds }))).data;

        const first = await add([a!.id, b!.id, b!.id]);
        expect(first.added).toBe(1);
        expect(first.group).toMatchObject({ id: group.id, contactsCount: 2 });
        const again = await add([a!.id, b!.id]);
        expect(again.added).toBe(0);
        expect(again.group.contactsCount).toBe(2);
        const more = await add([c!.id, a!.id]);
        expect(more.added).toBe(1);
        expect(more.group.contactsCount).toBe(3);
        expect((await getGroup(tenant, group.id)).contactsCount).toBe(3);
        expect((await members(tenant, group.id)).meta.total).toBe(3);
      });

      it('keeps contactsCount exact when the same contacts are added concurrently', async () => {
        const tenant = await createTenant(ctx);
        const contacts = await createContacts(tenant, 4);
        const group = await createGroup(tenant, 'Race');
        const ids = contacts.map((c) => c.id);
        const responses = await Promise.all([0, 1, 2, 3].map(() => request(tenant, 'POST', `/groups/${group.id}/contacts`, { contactIds: ids })));
        const added = responses.map((r) => {
          expect(r.statusCode, r.body).toBe(200);
          return json<DataBody<{ added: number }>>(r).data.added;
        });
        expect(added.reduce((sum, n) => sum + n, 0)).toBe(4);
        expect((await getGroup(tenant, group.id)).contactsCount).toBe(4);
      });

      it("answers 400 naming another account's or an unknown contact id, and adds nothing", async () => {
        const tenant = await createTenant(ctx);
        const other = await createTenant(ctx);
        const [mine, mine2] = await createContacts(tenant, 2);
        const theirs = await createContact(other, 'Theirs');
        const group = await createGroup(tenant, 'Guarded', [mine!.id]);
        for (const bad of [theirs.id, 'ct_01jzzzzzzzzzzzzzzzzzzzzzzz']) {
          const body = expectError(
            await request(tenant, 'POST', `/groups/${group.id}/contacts`, { contactIds: [mine2!.id, bad] }),
            400,
            'VALIDATION_ERROR',
          );
          expect(body.error.message).toContain(bad);
          expect(fieldErrors(body)).toEqual([{ field: 'contactIds[1]', message: expect.stringContaining(bad) }]);
        }
        expect((await getGroup(tenant, group.id)).contactsCount).toBe(1);
        expect((await members(tenant, group.id)).data.map((m) => m.id)).toEqual([mine!.id]);
      });

      it.each([
        ['an empty list', { contactIds: [] }],
        ['a missing list', {}],
        ['a non-string id', { contactIds: [1] }],
        ['an unknown field', { contactIds: ['x'], extra: true }],
      ])('rejects an add with %s', async (_label, payload) => {
        const tenant = await createTenant(ctx);
        const group = await createGroup(tenant, 'G');
        expectError(await request(tenant, 'POST', `/groups/${group.id}/contacts`, payload), 400, 'VALIDATION_ERROR');
      });

      it('removes a member; removing again or a non-member is 404', async () => {
        const tenant = await createTenant(ctx);
        const [a, b, outsider] = await createContacts(tenant, 3);
        const group = await createGroup(tenant, 'Shrinking', [a!.id, b!.id]);
        const response = await request(tenant, 'DELETE', `/groups/${group.id}/contacts/${a!.id}`);
        const body = await ok<DataBody<GroupBody>>(response);
        expect(body).toMatchObject({ success: true, data: { id: group.id, contactsCount: 1 } });
        expect((await members(tenant, group.id)).data.map((m) => m.id)).toEqual([b!.id]);
        expectError(await request(tenant, 'DELETE', `/groups/${group.id}/contacts/${a!.id}`), 404, 'NOT_FOUND');
        expectError(await request(tenant, 'DELETE', `/groups/${group.id}/contacts/${outsider!.id}`), 404, 'NOT_FOUND');
        expectError(await request(tenant, 'DELETE', `/groups/${group.id}/contacts/ct_%00`), 404, 'NOT_FOUND');
        expect((await getGroup(tenant, group.id)).contactsCount).toBe(1);
        // The contact itself still exists.
        expect((await request(tenant, 'GET', `/contacts/${a!.id}`)).statusCode).toBe(200);
      });

      it('deleting a contact decrements contactsCount of every group it was in', async () => {
        const tenant = await createTenant(ctx);
        const [shared, onlyOne, other] = await createContacts(tenant, 3);
        const g1 = await createGroup(tenant, 'G1', [shared!.id, onlyOne!.id]);
        const g2 = await createGroup(tenant, 'G2', [shared!.id, other!.id]);
        const g3 = await createGroup(tenant, 'G3', [other!.id]);
        expect((await request(tenant, 'DELETE', `/contacts/${shared!.id}`)).statusCode).toBe(200);
        expect((await getGroup(tenant, g1.id)).contactsCount).toBe(1);
        expect((await getGroup(tenant, g2.id)).contactsCount).toBe(1);
        expect((await getGroup(tenant, g3.id)).contactsCount).toBe(1);
        expect((await members(tenant, g1.id)).data.map((m) => m.id)).toEqual([onlyOne!.id]);
        expect((await members(tenant, g2.id)).data.map((m) => m.id)).toEqual([other!.id]);
        const listed = await listGroups(tenant);
        expect(Object.fromEntries(listed.data.map((g) => [g.name, g.contactsCount]))).toEqual({ G1: 1, G2: 1, G3: 1 });
      });

      it('shows the current contact data in member records after a contact is edited', async () => {
        const tenant = await createTenant(ctx);
        const contact = await createContact(tenant, 'Before');
        const group = await createGroup(tenant, 'Live', [contact.id]);
        await ok(await request(tenant, 'PATCH', `/contacts/${contact.id}`, { name: 'After', phoneNumber: '+1 415 555 2671' }));
        const [member] = (await members(tenant, group.id)).data;
        expect(member).toMatchObject({ id: contact.id, name: 'After', phoneNumber: '14155552671' });
        expect((await getGroup(tenant, group.id)).contactsCount).toBe(1);
      });
    });

    describe('tenancy and scopes', () => {
      it("answers 404 on every route for another account's group and changes nothing", async () => {
        const owner = await createTenant(ctx);
        const intruder = await createTenant(ctx);
        const [member, nonMember] = await createContacts(owner, 2);
        const intruderContact = await createContact(intruder, 'Intruder');
        const group = await createGroup(owner, 'Private', [member!.id]);
        const path = `/groups/${group.id}`;

        expectError(await request(intruder, 'GET', path), 404, 'NOT_FOUND');
        expectError(await request(intruder, 'PATCH', path, { name: 'Pwned' }), 404, 'NOT_FOUND');
        expectError(await request(intruder, 'GET', `${path}/contacts`), 404, 'NOT_FOUND');
        expectError(await request(intruder, 'POST', `${path}/contacts`, { contactIds: [intruderContact.id] }), 404, 'NOT_FOUND');
        expectError(await request(intruder, 'POST', `${path}/contacts`, { contactIds: [nonMember!.id] }), 404, 'NOT_FOUND');
        expectError(await request(intruder, 'DELETE', `${path}/contacts/${member!.id}`), 404, 'NOT_FOUND');
        expectError(await request(intruder, 'DELETE', path), 404, 'NOT_FOUND');

        expect(await getGroup(owner, group.id)).toEqual(group);
        expect((await members(owner, group.id)).data.map((m) => m.id)).toEqual([member!.id]);
        expect((await listGroups(intruder)).meta.total).toBe(0);
      });

      it('a contacts:read token gets 403 FORBIDDEN on GET /groups; a groups:read token can read but not write', async () => {
        const contactsOnly = await createTenant(ctx, { scopes: ['contacts:read'] });
        expectError(await request(contactsOnly, 'GET', '/groups'), 403, 'FORBIDDEN');
        expectError(await request(contactsOnly, 'POST', '/groups', { name: 'No' }), 403, 'FORBIDDEN');

        const full = await createTenant(ctx);
        const group = await createGroup(full, 'Readable');
        const { token } = await ctx.services.tokens.create(full.accountId, { name: 'groups-read', scopes: ['groups:read'] });
        const reader: Tenant = { ...full, token, headers: { 'x-api-key': token } };
        expect((await listGroups(reader)).data).toEqual([group]);
        expect(await getGroup(reader, group.id)).toEqual(group);
        expect((await members(reader, group.id)).meta.total).toBe(0);
        expectError(await request(reader, 'POST', '/groups', { name: 'No' }), 403, 'FORBIDDEN');
        expectError(await request(reader, 'PATCH', `/groups/${group.id}`, { name: 'No' }), 403, 'FORBIDDEN');
        expectError(await request(reader, 'DELETE', `/groups/${group.id}`), 403, 'FORBIDDEN');
        expectError(await request(reader, 'POST', `/groups/${group.id}/contacts`, { contactIds: ['ct_x'] }), 403, 'FORBIDDEN');
        expectError(await request(reader, 'DELETE', `/groups/${group.id}/contacts/ct_x`), 403, 'FORBIDDEN');
        expect(await getGroup(full, group.id)).toEqual(group);
      });

      it('answers 401 without a token', async () => {
        expectError(await ctx.app.inject({ method: 'GET', url: url('/groups') }), 401, 'UNAUTHORIZED');
      });
    });
  });
}
