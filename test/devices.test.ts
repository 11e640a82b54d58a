/**
 * Devices through the real app and a real worker on the sandbox network: adding a device and its
 * QR code, listing and reading, QR rotation and expiry, linking by scan, transient drops that heal
 * by themselves, unlinking from the phone (waiting messages fail and are refunded), relinking,
 * removal, the plan's device limit, tenancy and scopes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestContext } from './helpers.js';
import {
  createMessagingApp,
  addDevice,
  call,
  expectError,
  expectFieldError,
  expectOk,
  getDevice,
  getMessage,
  ISO_MS,
  isoIn,
  linkDevice,
  phone,
  scan,
  scanCurrent,
  send,
  sendDirect,
  sleep,
  usedMessages,
  waitFor,
  waitForDevice,
  waitForStatus,
  type CreatedDeviceBody,
  type DataBody,
  type DeviceBody,
  type DirectSendBody,
  type PageBody,
  type QrBody,
} from './messaging-helpers.js';

let ctx: TestContext;
beforeAll(async () => {
  ctx = await createMessagingApp();
});
afterAll(async () => ctx.close());

describe('adding and reading devices', () => {
  it('POST /devices answers 201 with the PENDING device and its first QR code (PNG data URL)', async () => {
    const tenant = await createTenant(ctx);
    const before = Date.now();
    const response = await call(ctx, tenant, 'POST', '/devices', { name: '  Sales phone ' });
    const body = expectOk<CreatedDeviceBody>(response, 201);
    expect(body.success).toBe(true);
    expect(body.data).toMatchObject({ name: 'Sales phone', status: 'PENDING', phoneNumber: null, connectedAt: null, removedAt: null });
    expect(body.data.id).toMatch(/^dev_/);
    expect(body.data.createdAt).toMatch(ISO_MS);
    expect(body.qr).not.toBeNull();
    const qr = body.qr!;
    expect(qr.code).toMatch(/^sandbox-/);
    expect(qr.image).toMatch(/^data:image\/png;base64,[A-Za-z0-9+/]+=*$/);
    // The data URL decodes to a PNG.
    const png = Buffer.from(qr.image.split(',')[1]!, 'base64');
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    expect(qr.expiresAt).toMatch(ISO_MS);
    expect(new Date(qr.expiresAt).getTime()).toBeGreaterThan(before);
  });

  it('POST /devices validates its body', async () => {
    const tenant = await createTenant(ctx);
    expectFieldError(await call(ctx, tenant, 'POST', '/devices', {}), 'name');
    expectFieldError(await call(ctx, tenant, 'POST', '/devices', { name: '   ' }), 'name');
    expectFieldError(await call(ctx, tenant, 'POST', '/devices', { name: 'x', extra: 1 }), 'extra');
  });

  it('GET /devices is paginated {success, data, meta}, newest first; GET /devices/:id reads one', async () => {
    const tenant = await createTenant(ctx);
    const empty = expectOk<PageBody<DeviceBody>>(await call(ctx, tenant, 'GET', '/devices'));
    expect(empty).toEqual({ success: true, data: [], meta: { total: 0, page: 1, limit: 50 } });

    const first = (await addDevice(ctx, tenant, 'first')).device;
    const second = (await addDevice(ctx, tenant, 'second')).device;
    const list = expectOk<PageBody<DeviceBody>>(await call(ctx, tenant, 'GET', '/devices'));
    expect(list.success).toBe(true);
    expect(list.meta).toEqual({ total: 2, page: 1, limit: 50 });
    expect(list.data.map((d) => d.id)).toEqual([second.id, first.id]);

    const page2 = expectOk<PageBody<DeviceBody>>(await call(ctx, tenant, 'GET', '/devices?page=2&limit=1'));
    expect(page2.meta).toEqual({ total: 2, page: 2, limit: 1 });
    expect(page2.data.map((d) => d.id)).toEqual([first.id]);
    const beyond = expectOk<PageBody<DeviceBody>>(await call(ctx, tenant, 'GET', '/devices?page=3&limit=1'));
    expect(beyond.data).toEqual([]);
    expect(beyond.meta.total).toBe(2);

    const clamped = expectOk<PageBody<DeviceBody>>(await call(ctx, tenant, 'GET', '/devices?limit=1000'));
    expect(clamped.meta.limit).toBe(100);
    expectFieldError(await call(ctx, tenant, 'GET', '/devices?page=0'), 'page');
    expectFieldError(await call(ctx, tenant, 'GET', '/devices?limit=abc'), 'limit');

    const pending = expectOk<PageBody<DeviceBody>>(await call(ctx, tenant, 'GET', '/devices?status=PENDING'));
    expect(pending.meta.total).toBe(2);
    const connected = expectOk<PageBody<DeviceBody>>(await call(ctx, tenant, 'GET', '/devices?status=CONNECTED'));
    expect(connected).toMatchObject({ data: [], meta: { total: 0 } });

    const one = expectOk<DataBody<DeviceBody>>(await call(ctx, tenant, 'GET', `/devices/${first.id}`));
    expect(one.success).toBe(true);
    expect(one.data).toMatchObject({ id: first.id, name: 'first', status: 'PENDING' });
    expectError(await call(ctx, tenant, 'GET', '/devices/dev_nope'), 404, 'NOT_FOUND');
  });

  it('GET /devices/:id/qr shows the current code while PENDING and answers 409 CONFLICT once linked', async () => {
    const tenant = await createTenant(ctx);
    const { device, qr } = await addDevice(ctx, tenant);
    const current = expectOk<DataBody<QrBody>>(await call(ctx, tenant, 'GET', `/devices/${device.id}/qr`));
    expect(current.data.code).toMatch(/^sandbox-/);
    expect(current.data.image).toMatch(/^data:image\/png;base64,/);
    expect(current.data.expiresAt).toMatch(ISO_MS);

    await scanCurrent(ctx, tenant, device.id, phone(), qr.code);
    await waitForDevice(ctx, tenant, device.id, 'CONNECTED');
    const conflict = expectError(await call(ctx, tenant, 'GET', `/devices/${device.id}/qr`), 409, 'CONFLICT');
    expect(conflict.error.details).toEqual({ status: 'CONNECTED' });
  });
});

describe('linking', () => {
  it('scanning the QR code links the device: CONNECTED with the phone number', async () => {
    const tenant = await createTenant(ctx);
    const { device, qr } = await addDevice(ctx, tenant);
    const number = phone();
    const scanned = expectOk<DataBody<{ deviceId: string; phoneNumber: string }>>(
      await scanCurrent(ctx, tenant, device.id, `+${number.slice(0, 2)} ${number.slice(2)}`, qr.code),
    );
    expect(scanned.data).toEqual({ deviceId: device.id, phoneNumber: number });
    const connected = await waitForDevice(ctx, tenant, device.id, 'CONNECTED');
    expect(connected.phoneNumber).toBe(number);
    expect(connected.connectedAt).toMatch(ISO_MS);
    expect(connected.lastError).toBeNull();
    const listed = expectOk<PageBody<DeviceBody>>(await call(ctx, tenant, 'GET', '/devices?status=CONNECTED'));
    expect(listed.data.map((d) => d.id)).toEqual([device.id]);

    // The code is used up; an unknown code and a bad number are refused.
    expectError(await scan(ctx, tenant, qr.code, phone()), 404, 'NOT_FOUND');
    expectError(await scan(ctx, tenant, 'sandbox-nope', phone()), 404, 'NOT_FOUND');
    const { qr: other } = await addDevice(ctx, tenant, 'other');
    expectFieldError(await scan(ctx, tenant, other.code, '12ab'), 'phoneNumber');
  });

  it('linkDevice helper: a linked device sends', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const sent = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'hello', recipients: [phone()] });
    expect(sent.message.deviceId).toBe(device.id);
    expect(['SENT', 'DELIVERED', 'READ']).toContain(sent.message.status);
  });
});

describe('connection drops and unlinking', () => {
  it('a dropped connection (reason network) goes DISCONNECTED, then back to CONNECTED by itself', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const dropped = expectOk<DataBody<{ deviceId: string; reason: string }>>(
      await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/disconnect`, { reason: 'network' }),
    );
    expect(dropped.data).toEqual({ deviceId: device.id, reason: 'network' });
    const down = await waitForDevice(ctx, tenant, device.id, 'DISCONNECTED');
    expect(down.disconnectedAt).toMatch(ISO_MS);
    expect(down.lastError).toBeTruthy();
    expect(down.phoneNumber).toBe(device.phoneNumber);
    const up = await waitForDevice(ctx, tenant, device.id, 'CONNECTED', 8_000);
    expect(up.phoneNumber).toBe(device.phoneNumber);
    expect(new Date(up.connectedAt!).getTime()).toBeGreaterThanOrEqual(new Date(down.disconnectedAt!).getTime());
    expect(up.lastError).toBeNull();

    // It sends again.
    const sent = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'back', recipients: [phone()] });
    expect(sent.message.deviceId).toBe(device.id);
  });

  it('a held drop outlasts the reconnect attempts until POST /sandbox/devices/:id/restore ends it', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    expectError(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/restore`), 409, 'CONFLICT');
    expectError(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/disconnect`, { reason: 'logout', hold: true }), 400, 'VALIDATION_ERROR');
    expectOk(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/disconnect`, { reason: 'network', hold: true }));
    await waitForDevice(ctx, tenant, device.id, 'DISCONNECTED');
    // The first reconnect attempt comes 1 s after the drop; the phone is still unreachable then.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await waitForDevice(ctx, tenant, device.id, 'DISCONNECTED')).status).toBe('DISCONNECTED');

    const restored = expectOk<DataBody<{ deviceId: string }>>(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/restore`));
    expect(restored.data).toEqual({ deviceId: device.id });
    await waitForDevice(ctx, tenant, device.id, 'CONNECTED', 8_000);
    expectError(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/restore`), 409, 'CONFLICT');
  });

  it('an unlink (reason logout) ends LOGGED_OUT; waiting messages fail with DEVICE_LOGGED_OUT and are refunded', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const scheduled = expectOk<DirectSendBody>(await send(ctx, tenant, { type: 'TEXT', content: 'later', recipients: [phone(), phone()], scheduledAt: isoIn(3_600_000) }), 202);
    expect(scheduled.messages.map((m) => m.status)).toEqual(['SCHEDULED', 'SCHEDULED']);
    const delivered = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'now', recipients: [phone()] });
    expect(await usedMessages(ctx, tenant)).toBe(3);

    expectOk(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/disconnect`, { reason: 'logout' }));
    const out = await waitForDevice(ctx, tenant, device.id, 'LOGGED_OUT');
    expect(out.loggedOutAt).toMatch(ISO_MS);
    expect(out.removedAt).toBeNull();

    for (const message of scheduled.messages) {
      const failed = await waitForStatus(ctx, tenant, message.id, 'FAILED');
      expect(failed.error?.code).toBe('DEVICE_LOGGED_OUT');
      expect(failed.failedAt).toMatch(ISO_MS);
    }
    // The message already sent keeps its state; only the two that never left are refunded.
    expect((await getMessage(ctx, tenant, delivered.message.id)).status).not.toBe('FAILED');
    expect(await usedMessages(ctx, tenant)).toBe(1);

    // A logged-out device is not linked: nothing to disconnect, nothing to send from.
    expectError(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/disconnect`, { reason: 'network' }), 409, 'CONFLICT');
    expectError(await send(ctx, tenant, { type: 'TEXT', content: 'x', recipients: [phone()] }), 409, 'NO_CONNECTED_DEVICE');
    expectError(await send(ctx, tenant, { type: 'TEXT', content: 'x', recipients: [phone()], deviceId: device.id }), 409, 'NO_CONNECTED_DEVICE');
  });

  it('POST /devices/:id/reconnect on a LOGGED_OUT device starts over: PENDING with a new QR code that links it again', async () => {
    const tenant = await createTenant(ctx);
    const first = await addDevice(ctx, tenant);
    await scanCurrent(ctx, tenant, first.device.id, phone(), first.qr.code);
    await waitForDevice(ctx, tenant, first.device.id, 'CONNECTED');
    expectOk(await call(ctx, tenant, 'POST', `/sandbox/devices/${first.device.id}/disconnect`, { reason: 'logout' }));
    await waitForDevice(ctx, tenant, first.device.id, 'LOGGED_OUT');

    const reconnected = expectOk<DataBody<DeviceBody>>(await call(ctx, tenant, 'POST', `/devices/${first.device.id}/reconnect`));
    expect(reconnected.data).toMatchObject({ id: first.device.id, status: 'PENDING', phoneNumber: null });
    const qr = expectOk<DataBody<QrBody>>(await call(ctx, tenant, 'GET', `/devices/${first.device.id}/qr`)).data;
    expect(qr.code).toMatch(/^sandbox-/);
    expect(qr.code).not.toBe(first.qr.code);
    // It stays PENDING (the old unlink is not replayed) until the new code is scanned.
    await sleep(300);
    expect((await getDevice(ctx, tenant, first.device.id)).status).toBe('PENDING');

    const number = phone();
    await scanCurrent(ctx, tenant, first.device.id, number, qr.code);
    const linked = await waitForDevice(ctx, tenant, first.device.id, 'CONNECTED');
    expect(linked.phoneNumber).toBe(number);
    const sent = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'again', recipients: [phone()] });
    expect(sent.message.deviceId).toBe(first.device.id);
  });

  it('DELETE /devices/:id logs the device out and removes it from listings; it keeps its history', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const sent = await sendDirect(ctx, tenant, { type: 'TEXT', content: 'kept', recipients: [phone()] });
    const waiting = expectOk<DirectSendBody>(await send(ctx, tenant, { type: 'TEXT', content: 'later', recipients: [phone()], scheduledAt: isoIn(3_600_000) }), 202);
    expect(await usedMessages(ctx, tenant)).toBe(2);

    const removed = expectOk<DataBody<DeviceBody>>(await call(ctx, tenant, 'DELETE', `/devices/${device.id}`));
    expect(removed.data).toMatchObject({ id: device.id, status: 'LOGGED_OUT' });
    expect(removed.data.removedAt).toMatch(ISO_MS);
    expect(removed.data.loggedOutAt).toMatch(ISO_MS);

    const list = expectOk<PageBody<DeviceBody>>(await call(ctx, tenant, 'GET', '/devices'));
    expect(list).toMatchObject({ data: [], meta: { total: 0 } });
    const read = await getDevice(ctx, tenant, device.id);
    expect(read).toMatchObject({ status: 'LOGGED_OUT', removedAt: removed.data.removedAt });

    // History stays; the waiting message fails and is refunded.
    expect((await getMessage(ctx, tenant, sent.message.id)).deviceId).toBe(device.id);
    const failed = await waitForStatus(ctx, tenant, waiting.message.id, 'FAILED');
    expect(failed.error?.code).toBe('DEVICE_REMOVED');
    expect(await usedMessages(ctx, tenant)).toBe(1);

    // The phone is unlinked on the network too, and the device can no longer be used.
    await waitFor(async () => {
      const number = device.phoneNumber!;
      const rows = await ctx.database.query<{ state: string }>('SELECT state FROM sandbox_phones WHERE device_id = $1 AND phone_number = $2', [device.id, number]);
      return rows[0]?.state === 'unlinked';
    }, 5_000, 'the sandbox phone to be unlinked');
    expectError(await send(ctx, tenant, { type: 'TEXT', content: 'x', recipients: [phone()] }), 409, 'NO_CONNECTED_DEVICE');
    expectError(await send(ctx, tenant, { type: 'TEXT', content: 'x', recipients: [phone()], deviceId: device.id }), 404, 'NOT_FOUND');
    expectError(await call(ctx, tenant, 'POST', `/devices/${device.id}/reconnect`), 404, 'NOT_FOUND');
    expectError(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/disconnect`, { reason: 'network' }), 404, 'NOT_FOUND');
    // A second DELETE changes nothing.
    const again = expectOk<DataBody<DeviceBody>>(await call(ctx, tenant, 'DELETE', `/devices/${device.id}`));
    expect(again.data.removedAt).toBe(removed.data.removedAt);
  });
});

describe('removing a device that was never linked', () => {
  it('DELETE of a PENDING device stops its QR codes: the code shown before cannot link it (404)', async () => {
    const tenant = await createTenant(ctx);
    const { device, qr } = await addDevice(ctx, tenant);
    const removed = expectOk<DataBody<DeviceBody>>(await call(ctx, tenant, 'DELETE', `/devices/${device.id}`));
    expect(removed.data).toMatchObject({ status: 'LOGGED_OUT', phoneNumber: null });
    expectError(await call(ctx, tenant, 'GET', `/devices/${device.id}/qr`), 409, 'CONFLICT');
    expectError(await scan(ctx, tenant, qr.code, phone()), 404, 'NOT_FOUND');
    await sleep(300);
    expect(await getDevice(ctx, tenant, device.id)).toMatchObject({ status: 'LOGGED_OUT', phoneNumber: null });
    expectError(await send(ctx, tenant, { type: 'TEXT', content: 'x', recipients: [phone()] }), 409, 'NO_CONNECTED_DEVICE');
  });
});

describe('plan limit, tenancy and scopes', () => {
  it("the plan's device limit (free: 1) answers 403 PLAN_LIMIT; removed and logged-out devices free the slot", async () => {
    const tenant = await createTenant(ctx, { plan: 'free' });
    const device = await linkDevice(ctx, tenant);
    const limited = expectError(await call(ctx, tenant, 'POST', '/devices', { name: 'second' }), 403, 'PLAN_LIMIT');
    expect(limited.error.details).toEqual({ limit: 1, used: 1 });

    // A LOGGED_OUT device does not count.
    expectOk(await call(ctx, tenant, 'POST', `/sandbox/devices/${device.id}/disconnect`, { reason: 'logout' }));
    await waitForDevice(ctx, tenant, device.id, 'LOGGED_OUT');
    const second = await addDevice(ctx, tenant, 'second');
    // Relinking the logged-out one would make two: refused.
    expectError(await call(ctx, tenant, 'POST', `/devices/${device.id}/reconnect`), 403, 'PLAN_LIMIT');
    expect((await getDevice(ctx, tenant, device.id)).status).toBe('LOGGED_OUT');

    // A removed device does not count either.
    expectOk(await call(ctx, tenant, 'DELETE', `/devices/${second.device.id}`));
    await addDevice(ctx, tenant, 'third');
    expectError(await call(ctx, tenant, 'POST', '/devices', { name: 'fourth' }), 403, 'PLAN_LIMIT');
  });

  it("another account's device answers 404 on every device route and every sandbox route", async () => {
    const owner = await createTenant(ctx);
    const stranger = await createTenant(ctx);
    const linked = await linkDevice(ctx, owner);
    const pending = await addDevice(ctx, owner, 'pending');

    for (const id of [linked.id, pending.device.id]) {
      expectError(await call(ctx, stranger, 'GET', `/devices/${id}`), 404, 'NOT_FOUND');
      expectError(await call(ctx, stranger, 'GET', `/devices/${id}/qr`), 404, 'NOT_FOUND');
      expectError(await call(ctx, stranger, 'POST', `/devices/${id}/reconnect`), 404, 'NOT_FOUND');
      expectError(await call(ctx, stranger, 'DELETE', `/devices/${id}`), 404, 'NOT_FOUND');
      expectError(await call(ctx, stranger, 'POST', `/sandbox/devices/${id}/disconnect`, { reason: 'logout' }), 404, 'NOT_FOUND');
      expectError(await call(ctx, stranger, 'POST', '/sandbox/incoming', { deviceId: id, from: phone(), content: 'hi' }), 404, 'NOT_FOUND');
      expectError(await call(ctx, stranger, 'POST', '/messages/send', { type: 'TEXT', content: 'x', recipients: [phone()], deviceId: id }), 404, 'NOT_FOUND');
    }
    // The stranger cannot scan the owner's code either, and sees none of the owner's devices.
    expectError(await scan(ctx, stranger, pending.qr.code, phone()), 404, 'NOT_FOUND');
    const listed = expectOk<PageBody<DeviceBody>>(await call(ctx, stranger, 'GET', '/devices'));
    expect(listed.meta.total).toBe(0);
    const sandbox = expectOk<PageBody<unknown>>(await call(ctx, stranger, 'GET', `/sandbox/messages?deviceId=${linked.id}`));
    expect(sandbox.meta.total).toBe(0);

    // Nothing changed for the owner.
    expect((await getDevice(ctx, owner, linked.id)).status).toBe('CONNECTED');
    expect((await getDevice(ctx, owner, pending.device.id)).status).toBe('PENDING');
    expectOk(await call(ctx, owner, 'GET', `/devices/${pending.device.id}/qr`));
  });

  it('device routes need the devices scopes', async () => {
    const reader = await createTenant(ctx, { scopes: ['devices:read'] });
    expectOk(await call(ctx, reader, 'GET', '/devices'));
    const forbidden = expectError(await call(ctx, reader, 'POST', '/devices', { name: 'x' }), 403, 'FORBIDDEN');
    expect(forbidden.error.details).toEqual({ requiredScope: 'devices:write' });
    const writerOnly = await createTenant(ctx, { scopes: ['messages:read'] });
    expectError(await call(ctx, writerOnly, 'GET', '/devices'), 403, 'FORBIDDEN');
  });

  it('answers at /v1 identically', async () => {
    const tenant = await createTenant(ctx);
    const created = await ctx.app.inject({ method: 'POST', url: '/v1/devices', headers: { 'X-API-Key': tenant.token }, payload: { name: 'v1' } });
    const body = expectOk<CreatedDeviceBody>(created, 201);
    const read = expectOk<DataBody<DeviceBody>>(await call(ctx, tenant, 'GET', `/v1/devices/${body.data.id}`));
    expect(read.data.id).toBe(body.data.id);
  });
});

describe('QR rotation (SANDBOX_QR_MS=1000)', () => {
  it('shows a new code before the current one expires; an expired code is refused with 400; the current one links', async () => {
    const tenant = await createTenant(ctx);
    const { device, qr: first } = await addDevice(ctx, tenant);
    const firstExpires = new Date(first.expiresAt).getTime();
    expect(firstExpires - Date.now()).toBeLessThanOrEqual(1_000);

    const second = await waitFor(
      async () => {
        const qr = expectOk<DataBody<QrBody>>(await call(ctx, tenant, 'GET', `/devices/${device.id}/qr`)).data;
        return qr.code !== first.code ? { qr, seenAt: Date.now() } : undefined;
      },
      15_000,
      'a new QR code',
      20,
    );
    // Shown before the old one expired: it was issued (expiresAt - 1 s) before firstExpires. (The
    // server's own times, so a slow poll on a busy machine does not blur the check.)
    const secondExpires = new Date(second.qr.expiresAt).getTime();
    expect(secondExpires - 1_000, 'the new code is issued before the old one expires').toBeLessThan(firstExpires);
    expect(secondExpires).toBeGreaterThan(firstExpires);
    expect(second.seenAt, 'and shown in time to be scanned').toBeLessThan(secondExpires);

    // Wait past the first code's expiry and for yet another rotation, so the sandbox has had a
    // chance to clean up: an expired code must still be told apart from an unknown one.
    await waitFor(() => Date.now() > firstExpires + 50, 3_000, 'the first code to expire');
    await waitFor(
      async () => {
        const qr = expectOk<DataBody<QrBody>>(await call(ctx, tenant, 'GET', `/devices/${device.id}/qr`)).data;
        return qr.code !== first.code && qr.code !== second.qr.code;
      },
      15_000,
      'a third QR code',
      20,
    );
    const expired = expectFieldError(await scan(ctx, tenant, first.code, phone()), 'code');
    expect(expired.message).toMatch(/expired/);
    expect((await getDevice(ctx, tenant, device.id)).status).toBe('PENDING');

    await scanCurrent(ctx, tenant, device.id, phone());
    await waitForDevice(ctx, tenant, device.id, 'CONNECTED');
  });
});
