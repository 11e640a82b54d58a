/**
 * NETWORK=whatsapp with the real Baileys package and no WhatsApp to reach: WHATSAPP_WS_URL points
 * at a local port that accepts TCP connections and drops them at once (deterministic, no
 * internet). The server starts and answers, the devices show a clear connection error, nothing
 * crashes, and connection attempts back off instead of spinning.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../src/platform/ids.js';
import { createTenant, createTestApp, json, type Tenant, type TestContext } from './helpers.js';
import { getDevice, sleep, waitFor, type DeviceBody } from './messaging-helpers.js';
import { realHelpers } from './whatsapp/harness.js';

let ctx: TestContext;
let tenant: Tenant;
let server: net.Server;
const attempts: number[] = [];

beforeAll(async () => {
  server = net.createServer((socket) => {
    attempts.push(Date.now());
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  ctx = await createTestApp({ NETWORK: 'whatsapp', WHATSAPP_WS_URL: `ws://127.0.0.1:${port}/ws/chat`, WHATSAPP_CONNECT_TIMEOUT_MS: '2000' }, { worker: true });
  tenant = await createTenant(ctx);
});

afterAll(async () => {
  await ctx?.close();
  await new Promise((resolve) => server?.close(resolve));
});

describe('NETWORK=whatsapp without a reachable network', () => {
  it('starts, shows the connection error on the devices, and retries with backoff (no tight loop)', async () => {
    expect((await ctx.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await ctx.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);

    // A device that was linked before (stored credentials): it goes DISCONNECTED with the reason.
    // Device and credentials in one transaction: the running worker must not pick the device up in between.
    const helpers = await realHelpers();
    const creds = { ...helpers.initAuthCreds(), me: { id: '6281234500000:3@s.whatsapp.net', name: 'x' }, account: { details: Buffer.from('d') }, registered: true };
    const linked = { id: newId('dev') };
    await ctx.database.transaction(async (tx) => {
      await tx.query(`INSERT INTO devices (id, account_id, name, status, phone_number) VALUES ($1, $2, 'old phone', 'CONNECTED', '6281234500000')`, [linked.id, tenant.accountId]);
      await tx.query(`INSERT INTO whatsapp_auth (device_id, category, key_id, value) VALUES ($1, 'creds', '', $2)`, [linked.id, JSON.stringify(creds, helpers.BufferJSON.replacer)]);
    });

    // A new device: no QR code can be shown, POST /devices still answers (qr null) and the device says why.
    const started = Date.now();
    const response = await ctx.app.inject({ method: 'POST', url: '/devices', headers: tenant.headers, payload: { name: 'new phone' } });
    expect(response.statusCode).toBe(201);
    const created = json<{ data: DeviceBody; qr: unknown }>(response);
    expect(created.qr).toBeNull();

    // A pairing code cannot be had either: 503, saying why (asked while the window below runs).
    const pairing = ctx.app.inject({ method: 'POST', url: `/devices/${created.data.id}/pairing-code`, headers: tenant.headers, payload: { phoneNumber: '6281234500001' } });

    const pending = await waitFor(async () => {
      const d = await getDevice(ctx, tenant, created.data.id);
      return d.lastError ? d : undefined;
    }, 5_000, 'lastError on the new device');
    expect(pending.status).toBe('PENDING');
    expect(pending.lastError).toMatch(/^CONNECTION_FAILED: Could not connect to WhatsApp/);

    const down = await waitFor(async () => {
      const d = await getDevice(ctx, tenant, linked.id);
      return d.status === 'DISCONNECTED' && d;
    }, 5_000, 'the linked device DISCONNECTED');
    expect(down.lastError).toMatch(/connection to WhatsApp/i);

    const qr = await ctx.app.inject({ method: 'GET', url: `/devices/${created.data.id}/qr`, headers: tenant.headers });
    expect(qr.statusCode).toBe(503);

    // Over ~12 s, two devices with backoff 1 s, 2 s, 5 s, 10 s (±20 %) make a handful of attempts each (one more for the pairing request), not hundreds.
    await sleep(Math.max(0, 12_000 - (Date.now() - started)));
    const inWindow = attempts.filter((at) => at >= started - 1_000);
    expect(inWindow.length).toBeGreaterThanOrEqual(4);
    expect(inWindow.length).toBeLessThanOrEqual(14);
    const refused = await pairing;
    expect(refused.statusCode, refused.body).toBe(503);
    expect(json<{ error: { message: string } }>(refused).error.message).toContain('NOT_CONNECTED');
    expect((await getDevice(ctx, tenant, linked.id)).status).toBe('DISCONNECTED');
    expect((await getDevice(ctx, tenant, created.data.id)).status).toBe('PENDING');
  }, 40_000);
});
