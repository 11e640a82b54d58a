import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTenant, createTestApp, type TestContext } from './helpers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createTestApp({}, { worker: true });
});
afterAll(async () => ctx.close());

it('links a device and sends', async () => {
  const tenant = await createTenant(ctx);
  const created = await ctx.app.inject({ method: 'POST', url: '/devices', headers: tenant.headers, payload: { name: 'phone' } });
  expect(created.statusCode).toBe(201);
  const body = created.json();
  expect(body.qr.code).toMatch(/^sandbox-/);
  const scan = await ctx.app.inject({ method: 'POST', url: '/sandbox/scan', headers: tenant.headers, payload: { code: body.qr.code, phoneNumber: '6281200000001' } });
  expect(scan.statusCode).toBe(200);
  for (let i = 0; i < 50; i++) {
    const d = await ctx.app.inject({ method: 'GET', url: `/devices/${body.data.id}`, headers: tenant.headers });
    if (d.json().data.status === 'CONNECTED') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const send = await ctx.app.inject({ method: 'POST', url: '/messages/send', headers: tenant.headers, payload: { type: 'text', content: 'hi', to: '6281299990000' } });
  console.log(send.statusCode, send.body);
  const send2 = await ctx.app.inject({ method: 'POST', url: '/messages/send', headers: tenant.headers, payload: { type: 'TEXT', content: 'hi', recipients: ['6281299990003', '6281299990005'] } });
  console.log(send2.statusCode, send2.body);
  const bulk = await ctx.app.inject({ method: 'POST', url: '/messages/send', headers: tenant.headers, payload: { type: 'TEXT', content: 'hi', recipients: Array.from({ length: 25 }, (_, i) => `62812999${String(i + 100).padStart(5, '0')}`) } });
  console.log(bulk.statusCode, bulk.body);
  await new Promise((r) => setTimeout(r, 1500));
  const job = await ctx.app.inject({ method: 'GET', url: `/messages/bulk-jobs/${bulk.json().jobId}`, headers: tenant.headers });
  console.log(job.body);
  const sandbox = await ctx.app.inject({ method: 'GET', url: `/sandbox/messages?limit=3`, headers: tenant.headers });
  console.log(sandbox.body);
});
