/**
 * Requests in the forms other clients send them.
 *
 * JSON request bodies (src/http/json-bodies.ts): an empty body sent as application/json is no
 * body on a route that takes none, as clients that send the header on every request expect; a
 * route with a body schema, a malformed body and a poisoned one are answered as before. A body in
 * another form on a route that reads a JSON object is told how to send one (error-handler.ts).
 * Paths with a trailing slash reach the route without it, except the dashboard's and the docs'
 * (src/http/trailing-slash.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withoutTrailingSlash } from '../src/http/trailing-slash.js';
import { createTenant, createTestApp, expectError, json, type Tenant, type TestContext } from './helpers.js';

let ctx: TestContext;
let tenant: Tenant;

beforeAll(async () => {
  ctx = await createTestApp();
  tenant = await createTenant(ctx);
});
afterAll(async () => ctx.close());

const withJsonType = (contentType = 'application/json') => ({ ...tenant.headers, 'content-type': contentType });

async function createContact(phoneNumber: string): Promise<string> {
  const created = await ctx.app.inject({ method: 'POST', url: '/contacts', headers: tenant.headers, payload: { name: 'Ana', phoneNumber } });
  expect(created.statusCode).toBe(201);
  return json<{ data: { id: string } }>(created).data.id;
}

describe('an empty body sent as application/json', () => {
  it('is no body on routes that take none: DELETE and a body-less POST run as without the header', async () => {
    const contactId = await createContact('6281234500001');
    const deleted = await ctx.app.inject({ method: 'DELETE', url: `/contacts/${contactId}`, headers: withJsonType(), payload: '' });
    expect(deleted.statusCode).toBe(200);
    expectError(await ctx.app.inject({ method: 'GET', url: `/contacts/${contactId}`, headers: tenant.headers }), 404, 'NOT_FOUND');

    const token = await ctx.app.inject({ method: 'POST', url: '/tokens', headers: tenant.headers, payload: { name: 'short-lived' } });
    const tokenId = json<{ data: { id: string } }>(token).data.id;
    const revoked = await ctx.app.inject({ method: 'DELETE', url: `/v1/tokens/${tokenId}`, headers: withJsonType('application/json; charset=utf-8'), payload: '' });
    expect(revoked.statusCode).toBe(200);
    expect(json<{ data: { revokedAt: string } }>(revoked).data.revokedAt).toMatch(/Z$/);

    // A body-less POST reaches its route: an unknown job is the route's 404, not a 400 for the body.
    expectError(await ctx.app.inject({ method: 'POST', url: '/messages/bulk-jobs/job_unknown/cancel', headers: withJsonType(), payload: '' }), 404, 'NOT_FOUND');
  });

  it('is still refused where the route takes a body', async () => {
    const refused = expectError(await ctx.app.inject({ method: 'POST', url: '/contacts', headers: withJsonType(), payload: '' }), 400, 'VALIDATION_ERROR');
    expect(refused.error.message).toBe('The request body is empty; send a JSON object');
  });
});

describe('a body that is not empty', () => {
  it('is parsed on every route: malformed JSON is refused even where the route reads no body', async () => {
    const contactId = await createContact('6281234500002');
    const malformed = expectError(await ctx.app.inject({ method: 'DELETE', url: `/contacts/${contactId}`, headers: withJsonType(), payload: '{nope' }), 400, 'VALIDATION_ERROR');
    expect(malformed.error.message).toBe('The request body is not valid JSON');
    expect((await ctx.app.inject({ method: 'GET', url: `/contacts/${contactId}`, headers: tenant.headers })).statusCode).toBe(200);
  });

  it('keeps the prototype- and constructor-poisoning checks', async () => {
    for (const poison of ['"__proto__":{"admin":true}', '"constructor":{"prototype":{"admin":true}}']) {
      const payload = `{"name":"Ana","phoneNumber":"6281234500003",${poison}}`;
      const refused = expectError(await ctx.app.inject({ method: 'POST', url: '/contacts', headers: withJsonType(), payload }), 400, 'VALIDATION_ERROR');
      expect(refused.error.message).toBe('The request body is not valid JSON');
    }
  });
});

describe('a body in another form than JSON, on a route that reads a JSON object', () => {
  it('says how to send it: no body, text, and form fields (curl -d without a Content-Type)', async () => {
    const none = expectError(await ctx.app.inject({ method: 'POST', url: '/contacts', headers: tenant.headers }), 400, 'VALIDATION_ERROR');
    expect(none.error.message).toBe('The request has no Content-Type; send a JSON object with Content-Type: application/json');
    expect(none.error.details).toEqual([{ field: 'body', message: none.error.message }]);

    const payload = '{"name":"Ana","phoneNumber":"6281234500004"}';
    const text = expectError(await ctx.app.inject({ method: 'POST', url: '/contacts', headers: { ...tenant.headers, 'content-type': 'text/plain' }, payload }), 400, 'VALIDATION_ERROR');
    expect(text.error.message).toBe('The body is text/plain; send a JSON object with Content-Type: application/json');

    const form = { ...tenant.headers, 'content-type': 'application/x-www-form-urlencoded' };
    const refused = expectError(await ctx.app.inject({ method: 'POST', url: '/v1/contacts', headers: form, payload }), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expect(refused.error.message).toBe('Unsupported Content-Type: application/x-www-form-urlencoded; send a JSON object with Content-Type: application/json');
  });

  it('keeps the field-by-field answer for JSON that is not an object, and gives no JSON hint where the route reads a CSV file', async () => {
    const array = expectError(await ctx.app.inject({ method: 'POST', url: '/contacts', headers: withJsonType(), payload: '[1]' }), 400, 'VALIDATION_ERROR');
    expect(array.error.message).toBe('body must be object');
    const csv = expectError(
      await ctx.app.inject({ method: 'POST', url: '/contacts/import', headers: { ...tenant.headers, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'a=b' }),
      415,
      'UNSUPPORTED_MEDIA_TYPE',
    );
    expect(csv.error.message).not.toMatch(/JSON/);
  });
});

describe('a path with a trailing slash', () => {
  it('reaches the route without it, on / and /v1, with its query string', async () => {
    const listed = await ctx.app.inject({ method: 'GET', url: '/devices/', headers: tenant.headers });
    expect(listed.statusCode).toBe(200);
    expect(json<{ data: unknown[] }>(listed).data).toEqual([]);
    expect((await ctx.app.inject({ method: 'GET', url: '/v1/contacts//?limit=1', headers: tenant.headers })).statusCode).toBe(200);
    const limited = expectError(await ctx.app.inject({ method: 'GET', url: '/messages/?limit=abc', headers: tenant.headers }), 400, 'VALIDATION_ERROR');
    expect(limited.error.details).toEqual([expect.objectContaining({ field: 'limit' })]);

    const contactId = await createContact('6281234500005');
    const fetched = await ctx.app.inject({ method: 'GET', url: `/contacts/${contactId}/`, headers: tenant.headers });
    expect(json<{ data: { id: string } }>(fetched).data.id).toBe(contactId);
    const sent = await ctx.app.inject({ method: 'POST', url: '/messages/send/', headers: tenant.headers, payload: { type: 'TEXT', content: 'hi', recipients: ['6281234500006'] } });
    // No device is linked: the route's own answer, not a 404 for the path.
    expectError(sent, 409, 'NO_CONNECTED_DEVICE');
  });

  it('keeps the slash where it means something: the root, the dashboard and the docs', () => {
    expect(withoutTrailingSlash('/')).toBe('/');
    expect(withoutTrailingSlash('/dashboard/')).toBe('/dashboard/');
    expect(withoutTrailingSlash('/dashboard/messages/')).toBe('/dashboard/messages/');
    expect(withoutTrailingSlash('/docs/')).toBe('/docs/');
    expect(withoutTrailingSlash('/dashboards/')).toBe('/dashboards');
    expect(withoutTrailingSlash('//')).toBe('/');
    expect(withoutTrailingSlash('/messages?next=/a/')).toBe('/messages?next=/a/');
    expect(withoutTrailingSlash('/messages/?next=/a/')).toBe('/messages?next=/a/');
  });
});
