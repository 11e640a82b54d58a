import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenService } from '../src/directory/tokens.js';
import { AppError } from '../src/platform/errors.js';
import { createTenant, createTestApp, expectError, type TestContext } from './helpers.js';

let ctx: TestContext;
const logLines: string[] = [];
beforeAll(async () => {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  // Log everything, to prove that a token in the query string never reaches a log line.
  ctx = await createTestApp({ LOG_LEVEL: 'trace' }, { logStream: sink });
});
afterAll(async () => ctx.close());

describe('authentication', () => {
  it('refuses a request without a token', async () => {
    const response = await ctx.app.inject({ method: 'GET', url: '/contacts' });
    expectError(response, 401, 'UNAUTHORIZED');
  });

  it('refuses an unknown token and a malformed one', async () => {
    expectError(await ctx.app.inject({ method: 'GET', url: '/contacts', headers: { 'x-api-key': 'wg_doesnotexist' } }), 401, 'UNAUTHORIZED');
    expectError(await ctx.app.inject({ method: 'GET', url: '/contacts', headers: { 'x-api-key': 'garbage' } }), 401, 'UNAUTHORIZED');
  });

  it('accepts the header in any case (X-API-Key) and at /v1', async () => {
    const tenant = await createTenant(ctx);
    const response = await ctx.app.inject({ method: 'GET', url: '/v1/contacts', headers: { 'X-API-Key': tenant.token } });
    expect(response.statusCode).toBe(200);
  });

  it('accepts ?token= with a warning header and never logs the value', async () => {
    const tenant = await createTenant(ctx);
    const response = await ctx.app.inject({ method: 'GET', url: `/contacts?token=${tenant.token}&page=1` });
    expect(response.statusCode).toBe(200);
    expect(response.headers.warning).toMatch(/less secure/);
    const failed = await ctx.app.inject({ method: 'GET', url: `/contacts?token=${tenant.token}&page=0` });
    expect(failed.statusCode).toBe(400);
    const logs = logLines.join('');
    expect(logs).toContain('token=[REDACTED]');
    expect(logs).not.toContain(tenant.token);
  });

  it('does not warn when the header is used', async () => {
    const tenant = await createTenant(ctx);
    const response = await ctx.app.inject({ method: 'GET', url: '/contacts', headers: tenant.headers });
    expect(response.headers.warning).toBeUndefined();
    expect(response.headers['x-request-id']).toMatch(/^req_/);
  });

  it('refuses a revoked token on the next request', async () => {
    const tenant = await createTenant(ctx);
    const created = await ctx.app.inject({ method: 'POST', url: '/tokens', headers: tenant.headers, payload: { name: 'short-lived' } });
    expect(created.statusCode).toBe(201);
    const { id, token } = created.json().data as { id: string; token: string };
    expect((await ctx.app.inject({ method: 'GET', url: '/account', headers: { 'x-api-key': token } })).statusCode).toBe(200);
    const revoked = await ctx.app.inject({ method: 'DELETE', url: `/tokens/${id}`, headers: tenant.headers });
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json().data.revokedAt).toMatch(/Z$/);
    const after = await ctx.app.inject({ method: 'GET', url: '/account', headers: { 'x-api-key': token } });
    expectError(after, 401, 'UNAUTHORIZED');
    expect(after.json().error.message).toMatch(/revoked/);
  });

  it('a token revoked elsewhere (another process, the CLI) is refused by a process that had it cached', async () => {
    const tenant = await createTenant(ctx);
    // A second TokenService plays another process: its own cache, the same database and bus.
    const otherProcess = new TokenService(ctx.database, ctx.services.bus);
    const { token, record } = await ctx.services.tokens.create(tenant.accountId, { name: 'shared' });
    expect((await otherProcess.authenticate(token)).tokenId).toBe(record.id);
    // Revoked as the CLI does it (revokeById, its own TokenService, no bus of its own).
    await new TokenService(ctx.database).revokeById(record.id);
    const deadline = Date.now() + 1_000;
    let refused: unknown;
    while (!refused && Date.now() < deadline) {
      refused = await otherProcess.authenticate(token).then(
        () => undefined,
        (error: unknown) => error,
      );
      if (!refused) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(refused).toBeInstanceOf(AppError);
    expect((refused as AppError).message).toMatch(/revoked/);
  });

  it('refuses an expired token (even one this process has just read and cached)', async () => {
    const tenant = await createTenant(ctx);
    const expiresAt = new Date(Date.now() + 800);
    const { token } = await ctx.services.tokens.create(tenant.accountId, { name: 'soon', expiresAt });
    expect((await ctx.app.inject({ method: 'GET', url: '/account', headers: { 'x-api-key': token } })).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, expiresAt.getTime() - Date.now() + 20));
    const response = await ctx.app.inject({ method: 'GET', url: '/account', headers: { 'x-api-key': token } });
    expectError(response, 401, 'UNAUTHORIZED');
    expect(response.json().error.message).toMatch(/expired/);
  });

  it('answers 403 FORBIDDEN when the scope is too narrow', async () => {
    const tenant = await createTenant(ctx, { scopes: ['contacts:read'] });
    expect((await ctx.app.inject({ method: 'GET', url: '/contacts', headers: tenant.headers })).statusCode).toBe(200);
    const response = await ctx.app.inject({ method: 'GET', url: '/account', headers: tenant.headers });
    expectError(response, 403, 'FORBIDDEN');
    expect(response.json().error.message).toMatch(/account:read/);
    expectError(await ctx.app.inject({ method: 'GET', url: '/tokens', headers: tenant.headers }), 403, 'FORBIDDEN');
  });

  it('records lastUsedAt', async () => {
    const tenant = await createTenant(ctx);
    await ctx.app.inject({ method: 'GET', url: '/account', headers: tenant.headers });
    const list = await ctx.app.inject({ method: 'GET', url: '/tokens', headers: tenant.headers });
    const [token] = list.json().data as { lastUsedAt: string | null }[];
    expect(token?.lastUsedAt).not.toBeNull();
  });
});

describe('tokens', () => {
  it('creates a token shown once, then lists it with prefix and last4 only', async () => {
    const tenant = await createTenant(ctx);
    const created = await ctx.app.inject({
      method: 'POST',
      url: '/tokens',
      headers: tenant.headers,
      payload: { name: 'CI', scopes: ['contacts:read', 'groups:read'], expiresAt: new Date(Date.now() + 86_400_000).toISOString() },
    });
    expect(created.statusCode).toBe(201);
    const data = created.json().data as Record<string, unknown> & { token: string };
    expect(data.token).toMatch(/^wg_[0-9A-Za-z]{43}$/);
    expect(data.prefix).toBe(data.token.slice(0, 7));
    expect(data.last4).toBe(data.token.slice(-4));
    expect(data.scopes).toEqual(['contacts:read', 'groups:read']);
    expect(data.expiresAt).toMatch(/\.\d{3}Z$/);

    const list = await ctx.app.inject({ method: 'GET', url: '/tokens', headers: tenant.headers });
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(data.token);
    const items = list.json().data as { id: string; token?: string }[];
    expect(items.map((item) => item.id)).toContain(data.id);
    expect(items.every((item) => item.token === undefined)).toBe(true);

    const [row] = await ctx.database.query<{ token_hash: string }>('SELECT token_hash FROM api_tokens WHERE id = $1', [data.id]);
    expect(row?.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row?.token_hash).not.toContain(data.token);
  });

  it('validates token input', async () => {
    const tenant = await createTenant(ctx);
    const post = (payload: unknown) => ctx.app.inject({ method: 'POST', url: '/tokens', headers: tenant.headers, payload: payload as object });
    expectError(await post({}), 400, 'VALIDATION_ERROR');
    expectError(await post({ name: '' }), 400, 'VALIDATION_ERROR');
    expectError(await post({ name: 'x', scopes: ['nope:read'] }), 400, 'VALIDATION_ERROR');
    expectError(await post({ name: 'x', scopes: [] }), 400, 'VALIDATION_ERROR');
    expectError(await post({ name: 'x', expiresAt: 'tomorrow' }), 400, 'VALIDATION_ERROR');
    expectError(await post({ name: 'x', expiresAt: '2001-01-01T00:00:00Z' }), 400, 'VALIDATION_ERROR');
    expectError(await post({ name: 'x', extra: true }), 400, 'VALIDATION_ERROR');
  });

  it('does not let a narrow token mint a wider one', async () => {
    const tenant = await createTenant(ctx, { scopes: ['tokens:write', 'tokens:read'] });
    const response = await ctx.app.inject({ method: 'POST', url: '/tokens', headers: tenant.headers, payload: { name: 'wider' } });
    expectError(response, 403, 'FORBIDDEN');
    const ok = await ctx.app.inject({ method: 'POST', url: '/tokens', headers: tenant.headers, payload: { name: 'same', scopes: ['tokens:read'] } });
    expect(ok.statusCode).toBe(201);
  });

  it('answers 404 for another account\'s token and an unknown id', async () => {
    const alice = await createTenant(ctx);
    const bob = await createTenant(ctx);
    const bobTokens = await ctx.app.inject({ method: 'GET', url: '/tokens', headers: bob.headers });
    const bobTokenId = (bobTokens.json().data as { id: string }[])[0]!.id;
    expectError(await ctx.app.inject({ method: 'DELETE', url: `/tokens/${bobTokenId}`, headers: alice.headers }), 404, 'NOT_FOUND');
    expectError(await ctx.app.inject({ method: 'DELETE', url: '/tokens/tok_unknown', headers: alice.headers }), 404, 'NOT_FOUND');
    // Bob's token still works.
    expect((await ctx.app.inject({ method: 'GET', url: '/account', headers: bob.headers })).statusCode).toBe(200);
  });
});

describe('account', () => {
  it('shows plan, period, usage and limits', async () => {
    const tenant = await createTenant(ctx, { plan: 'pro' });
    await ctx.app.inject({ method: 'POST', url: '/contacts', headers: tenant.headers, payload: { name: 'A', phoneNumber: '+14155550123' } });
    const response = await ctx.app.inject({ method: 'GET', url: '/account', headers: tenant.headers });
    expect(response.statusCode).toBe(200);
    const data = response.json().data;
    expect(data.id).toBe(tenant.accountId);
    expect(data.plan).toEqual({ id: 'pro', name: 'Pro', messageQuota: 1000, period: 'month', maxDevices: 1, maxWebhooks: 1, maxUploadBytes: 1073741824 });
    expect(data.limits).toEqual({ messages: 1000, devices: 1, activeWebhooks: 1, uploadBytes: 1073741824 });
    expect(data.usage).toEqual({ messages: 0, contacts: 1, uploadBytes: 0 });
    const start = new Date(data.period.start).getTime();
    const end = new Date(data.period.end).getTime();
    expect(start).toBeLessThanOrEqual(Date.now());
    expect(end).toBeGreaterThan(Date.now());
  });

  it('seeds the plans exactly', async () => {
    const plans = await ctx.services.accounts.listPlans();
    expect(plans).toEqual([
      { id: 'free', name: 'Free', messageQuota: 50, period: 'month', maxDevices: 1, maxWebhooks: 1, maxUploadBytes: 104857600 },
      { id: 'pro', name: 'Pro', messageQuota: 1000, period: 'month', maxDevices: 1, maxWebhooks: 1, maxUploadBytes: 1073741824 },
      { id: 'unlimited', name: 'Unlimited', messageQuota: null, period: 'month', maxDevices: null, maxWebhooks: null, maxUploadBytes: null },
      { id: 'yearly', name: 'Yearly', messageQuota: 12000, period: 'year', maxDevices: 1, maxWebhooks: 2, maxUploadBytes: 2147483648 },
    ]);
  });

  it('changes plan and re-anchors the period', async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    await ctx.services.accounts.setPlan(tenant.accountId, 'yearly');
    const data = (await ctx.app.inject({ method: 'GET', url: '/account', headers: tenant.headers })).json().data;
    expect(data.plan.id).toBe('yearly');
    const start = new Date(data.period.start);
    const end = new Date(data.period.end);
    expect(end.getUTCFullYear() - start.getUTCFullYear()).toBe(1);
    await expect(ctx.services.accounts.setPlan(tenant.accountId, 'platinum')).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
  });

  it('rejects duplicate emails and weak passwords', async () => {
    const tenant = await createTenant(ctx);
    await expect(ctx.services.accounts.createAccount({ email: tenant.email.toUpperCase(), password: 'long enough' })).rejects.toMatchObject({ code: 'CONFLICT' });
    await expect(ctx.services.accounts.createAccount({ email: 'new@example.test', password: 'short' })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await expect(ctx.services.accounts.createAccount({ email: 'not-an-email', password: 'long enough' })).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
  });
});
