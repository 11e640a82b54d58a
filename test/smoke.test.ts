import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, type TestContext } from './helpers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp();
});
afterAll(async () => ctx.close());

describe('smoke', () => {
  it('lists contacts with a fresh tenant', async () => {
    const tenant = await createTenant(ctx);
    const response = await ctx.app.inject({ method: 'GET', url: '/contacts', headers: tenant.headers });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ data: [], meta: { total: 0, page: 1, limit: 50 } });
  });
});
