/**
 * NETWORK=whatsapp end to end through the API: a real device supervisor, dispatch and bulk
 * fan-out driving the WhatsApp adapter, with Baileys' socket faked (test/whatsapp/fake-socket.ts).
 * Linking by QR code and by pairing code, sending and receipts, incoming messages, warnings as
 * device.status events, the warm-up cap leaving bulk messages QUEUED, unlinking.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { SocksProxyAgent } from 'socks-proxy-agent';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { DeviceService } from '../src/devices/device-service.js';
import type { GuardedHttp } from '../src/outbound/ssrf.js';
import { DeviceSupervisor } from '../src/devices/device-supervisor.js';
import { expectError, json, type Tenant, type TestContext } from './helpers.js';
import { call, getDevice, getJob, getMessage, listMessages, send, sendBulk, sleep, waitFor, type DeviceBody, type QrBody } from './messaging-helpers.js';
import { FakeBaileys, type FakeSocket } from './whatsapp/fake-socket.js';
import { encryptVote, fakeNetwork, startWhatsAppHarness, type WhatsAppApp } from './whatsapp/harness.js';

let app: WhatsAppApp | undefined;
let ctx: TestContext;
let tenant: Tenant;
let fake: FakeBaileys;
let supervisor: DeviceSupervisor;
let http: GuardedHttp;

const ENV = { NETWORK: 'whatsapp', BULK_DELAY_MS: '20-40', WHATSAPP_WARMUP: '3,6', WHATSAPP_ACK_TIMEOUT_MS: '2000' };

beforeAll(async () => {
  app = await startWhatsAppHarness(ENV, { bulkFanout: true });
  ({ ctx, tenant, fake, supervisor, http } = app);
});

afterAll(async () => {
  await app?.close();
});

async function api<T>(method: 'GET' | 'POST' | 'DELETE', url: string, payload?: unknown): Promise<{ status: number; body: T; raw: Awaited<ReturnType<TestContext['app']['inject']>> }> {
  const raw = await ctx.app.inject({ method, url, headers: tenant.headers, ...(payload === undefined ? {} : { payload: payload as object }) });
  return { status: raw.statusCode, body: json<T>(raw), raw };
}

async function addDevice(): Promise<{ device: DeviceBody; qr: QrBody | null; socket: FakeSocket }> {
  const before = fake.sockets.length;
  const { status, body } = await api<{ data: DeviceBody; qr: QrBody | null }>('POST', '/devices', { name: 'shop phone' });
  expect(status).toBe(201);
  const socket = await fake.waitForSockets(before + 1);
  return { device: body.data, qr: body.qr, socket };
}

async function link(socket: FakeSocket, phone: string): Promise<FakeSocket> {
  const before = fake.sockets.length;
  fake.script = (s) => s.open();
  socket.pairSuccess(phone);
  const next = await fake.waitForSockets(before + 1);
  fake.script = (s) => s.showQr();
  return next;
}

async function events(type: string): Promise<{ type: string; data: Record<string, unknown> }[]> {
  const { body } = await api<{ data: { type: string; data: Record<string, unknown> }[] }>('GET', `/events?type=${type}&limit=1000`);
  return body.data;
}

describe('NETWORK=whatsapp through the API', () => {
  let deviceId: string;
  let socket: FakeSocket;

  it('POST /devices shows the QR code Baileys produced; GET /devices/:id/qr follows its rotation', async () => {
    const added = await addDevice();
    deviceId = added.device.id;
    expect(added.device.status).toBe('PENDING');
    expect(added.qr?.code).toContain(',noise,identity,adv');
    expect(added.qr?.image).toMatch(/^data:image\/png;base64,/);
    const next = added.socket.showQr();
    await waitFor(async () => (await api<{ data: QrBody }>('GET', `/devices/${deviceId}/qr`)).body.data.code === next, 3_000, 'rotated QR');
    socket = added.socket;
  });

  it('links when the phone scans: CONNECTED with the number, one device.status event per change', async () => {
    socket = await link(socket, '6281377777777');
    const device = await waitFor(async () => {
      const d = await getDevice(ctx, tenant, deviceId);
      return d.status === 'CONNECTED' && d;
    }, 3_000, 'CONNECTED');
    expect(device.phoneNumber).toBe('6281377777777');
    const statuses = (await events('device.status')).filter((e) => e.data.id === deviceId).map((e) => e.data.status);
    expect(statuses).toEqual(['CONNECTED']);
  });

  it('sends a direct TEXT: handed over with the message\'s network id, SENT on the server ack, then DELIVERED and READ from receipts', async () => {
    const response = await send(ctx, tenant, { recipients: ['6281200000011'], type: 'TEXT', content: 'your order shipped', deviceId });
    expect(response.statusCode, response.body).toBe(200);
    const message = json<{ message: { id: string; status: string } }>(response).message;
    expect(message.status).toBe('SENT');
    const handed = socket.sent.find((s) => s.jid === '6281200000011@s.whatsapp.net')!;
    expect(handed.content).toEqual({ text: 'your order shipped', linkPreview: null });
    const [row] = await ctx.database.query<{ network_message_id: string }>('SELECT network_message_id FROM messages WHERE id = $1', [message.id]);
    expect(handed.options.messageId).toBe(row!.network_message_id);

    // READ overtakes DELIVERED: the message lands READ and stays there.
    socket.statusUpdate(handed.options.messageId, 4);
    socket.statusUpdate(handed.options.messageId, 3);
    const read = await waitFor(async () => {
      const m = await getMessage(ctx, tenant, message.id);
      return m.status === 'READ' && m;
    }, 3_000, 'READ');
    await sleep(100);
    expect((await getMessage(ctx, tenant, message.id)).status).toBe('READ');
    expect(read.deliveredAt).not.toBeNull();
  });

  it('a recipient not on WhatsApp ends FAILED at once (permanent)', async () => {
    socket.notOnWhatsApp.add('6281200000012');
    const response = await send(ctx, tenant, { recipients: ['6281200000012'], type: 'TEXT', content: 'hello', deviceId });
    const message = json<{ message: { id: string; status: string; error: { code: string } } }>(response).message;
    expect(message.status).toBe('FAILED');
    expect(message.error.code).toBe('RECIPIENT_NOT_ON_NETWORK');
  });

  it('sends IMAGE and DOCUMENT media fetched from mediaUrl, with the server\'s mimetype and the document\'s file name', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    const pdf = Buffer.from('%PDF-1.4 test document');
    const server = createServer((request, response) => {
      if (request.url === '/cat.png') {
        response.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
        response.end(png);
      } else {
        response.writeHead(200, { 'content-type': 'application/pdf; charset=binary', 'content-disposition': 'attachment; filename="invoice-42.pdf"' });
        response.end(pdf);
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const image = await send(ctx, tenant, { recipients: ['6281200000015'], type: 'IMAGE', mediaUrl: `${base}/cat.png`, content: 'new stock', deviceId });
      expect(image.statusCode, image.body).toBe(200);
      expect(json<{ message: { status: string } }>(image).message.status).toBe('SENT');
      const doc = await send(ctx, tenant, { recipients: ['6281200000015'], type: 'DOCUMENT', mediaUrl: `${base}/download?id=42`, content: 'your invoice', deviceId });
      expect(json<{ message: { status: string } }>(doc).message.status).toBe('SENT');
    } finally {
      server.close();
    }
    const sent = socket.sent.filter((s) => s.jid === '6281200000015@s.whatsapp.net').map((s) => s.content);
    expect(sent).toEqual([
      { image: png, mimetype: 'image/png', caption: 'new stock' },
      { document: pdf, mimetype: 'application/pdf', fileName: 'invoice-42.pdf', caption: 'your invoice' },
    ]);
  });

  it('sends a file uploaded with POST /media: Baileys gets its bytes, type and name from the media store', async () => {
    const pdf = Buffer.from('%PDF-1.4 an uploaded price list');
    const uploaded = await ctx.app.inject({
      method: 'POST',
      url: '/media?fileName=prices.pdf',
      headers: { ...tenant.headers, 'content-type': 'application/pdf' },
      payload: pdf,
    });
    expect(uploaded.statusCode, uploaded.body).toBe(201);
    const { mediaUrl } = json<{ data: { mediaUrl: string } }>(uploaded).data;
    const doc = await send(ctx, tenant, { recipients: ['6281200000016'], type: 'DOCUMENT', mediaUrl, content: 'our prices', deviceId });
    expect(json<{ message: { status: string } }>(doc).message.status).toBe('SENT');
    const sent = socket.sent.filter((s) => s.jid === '6281200000016@s.whatsapp.net').map((s) => s.content);
    expect(sent).toEqual([{ document: pdf, mimetype: 'application/pdf', fileName: 'prices.pdf', caption: 'our prices' }]);
  });

  it('stores an incoming message and writes message.received with the sender\'s number (a @lid sender mapped)', async () => {
    socket.incoming([
      { key: { remoteJid: '6281388888888@s.whatsapp.net', id: 'INCOMING-1', fromMe: false }, message: { conversation: 'is it in stock?' } },
      { key: { remoteJid: '5550001@lid', id: 'INCOMING-2', fromMe: false, remoteJidAlt: '6281399999999@s.whatsapp.net', addressingMode: 'lid' }, message: { imageMessage: { mimetype: 'image/jpeg', caption: 'this one', fileLength: 48213 } } },
    ]);
    const received = await waitFor(async () => {
      const list = await events('message.received');
      return list.length === 2 && list;
    }, 3_000, 'two message.received events');
    // Both addresses of a sender WhatsApp addressed by its LID: the number in `from`, the LID in `fromLid`.
    expect(received.map((e) => [e.data.from, e.data.fromLid, e.data.type, e.data.content])).toEqual([
      ['6281388888888', null, 'TEXT', 'is it in stock?'],
      ['6281399999999', '5550001@lid', 'IMAGE', 'this one'],
    ]);
    // The media's metadata is stored and shown; this message names no file to download (no url or
    // directPath), which the record says (downloads: test/whatsapp-media.test.ts).
    expect(received.map((e) => e.data.media)).toEqual([
      null,
      { mimeType: 'image/jpeg', sizeBytes: 48213, status: 'FAILED', error: { code: 'MEDIA_MISSING', message: expect.stringMatching(/no url or directPath/) } },
    ]);
    const { body: stored } = await api<{ data: { media: unknown; direction: string } }>('GET', `/messages/${String(received[1]!.data.id)}`);
    expect(stored.data).toMatchObject({ direction: 'in', from: '6281399999999', fromLid: '5550001@lid', media: { mimeType: 'image/jpeg', sizeBytes: 48213 } });
    // A redelivery of the same message is not stored twice.
    socket.incoming([{ key: { remoteJid: '6281388888888@s.whatsapp.net', id: 'INCOMING-1', fromMe: false }, message: { conversation: 'is it in stock?' } }], 'append');
    await sleep(200);
    expect(await events('message.received')).toHaveLength(2);
  });

  it('edit, delete for everyone and read receipts reach Baileys through the device\'s worker; the other side\'s edit and a poll vote land on the record', async () => {
    const sent = json<{ message: { id: string } }>(await send(ctx, tenant, { recipients: ['6281200000021'], type: 'TEXT', content: 'see you at 5', deviceId })).message;
    const [row] = await ctx.database.query<{ network_message_id: string }>('SELECT network_message_id FROM messages WHERE id = $1', [sent.id]);
    const key = { remoteJid: '6281200000021@s.whatsapp.net', fromMe: true, id: row!.network_message_id };
    expect((await call(ctx, tenant, 'PATCH', `/messages/${sent.id}`, { content: 'see you at 6' })).statusCode).toBe(200);
    await waitFor(() => socket.sent.some((s) => 'edit' in s.content && s.content.text === 'see you at 6'), 3_000, 'the edit handed to Baileys');
    expect(socket.sent.find((s) => 'edit' in s.content)!.content).toEqual({ text: 'see you at 6', linkPreview: null, edit: key });
    expect((await call(ctx, tenant, 'DELETE', `/messages/${sent.id}`)).statusCode).toBe(200);
    await waitFor(() => socket.sent.some((s) => 'delete' in s.content), 3_000, 'the delete handed to Baileys');
    expect(socket.sent.find((s) => 'delete' in s.content)!.content).toEqual({ delete: key });
    // Both done: nothing left in the queue of actions.
    await waitFor(async () => (await ctx.database.query('SELECT 1 FROM message_actions WHERE message_id = $1', [sent.id])).length === 0, 3_000, 'the actions done');

    // The incoming INCOMING-1 (above): read receipt, then its sender edits it.
    const incoming = (await listMessages(ctx, tenant, 'direction=in&to=6281388888888')).data[0]!;
    expect((await call(ctx, tenant, 'POST', `/messages/${incoming.id}/read`)).statusCode).toBe(200);
    await waitFor(() => socket.reads.some((k) => k.id === 'INCOMING-1'), 3_000, 'the read receipt');
    expect(socket.reads.find((k) => k.id === 'INCOMING-1')).toEqual({ remoteJid: '6281388888888@s.whatsapp.net', fromMe: false, id: 'INCOMING-1' });
    socket.incoming([
      {
        key: { remoteJid: '6281388888888@s.whatsapp.net', id: 'EDIT-1', fromMe: false },
        message: { protocolMessage: { key: { remoteJid: '6281388888888@s.whatsapp.net', fromMe: true, id: 'INCOMING-1' }, type: 14, editedMessage: { conversation: 'is it in stock in blue?' } } },
      },
    ]);
    const edited = await waitFor(async () => (await events('message.edited')).find((e) => e.data.id === incoming.id), 3_000, 'message.edited');
    expect(edited.data).toMatchObject({ content: 'is it in stock in blue?', from: '6281388888888' });

    // A poll and a vote on it, decrypted with the secret stored when it went out.
    const poll = json<{ message: { id: string } }>(await send(ctx, tenant, { recipients: ['6281388888888'], type: 'POLL', content: 'Colour?', poll: { options: ['Red', 'Blue'] }, deviceId })).message;
    const [pollRow] = await ctx.database.query<{ network_message_id: string; secret: Uint8Array }>(
      'SELECT m.network_message_id, p.secret FROM messages m JOIN whatsapp_polls p ON p.device_id = m.device_id AND p.message_id = m.network_message_id WHERE m.id = $1',
      [poll.id],
    );
    const vote = await encryptVote(['Blue'], { pollCreatorJid: '6281377777777@s.whatsapp.net', pollMsgId: pollRow!.network_message_id, pollEncKey: pollRow!.secret, voterJid: '6281388888888@s.whatsapp.net' });
    socket.incoming([
      {
        key: { remoteJid: '6281388888888@s.whatsapp.net', id: 'VOTE-1', fromMe: false },
        message: { pollUpdateMessage: { pollCreationMessageKey: { remoteJid: '6281388888888@s.whatsapp.net', fromMe: true, id: pollRow!.network_message_id }, vote } },
      },
    ]);
    const voted = await waitFor(async () => (await events('poll.vote')).find((e) => e.data.messageId === poll.id), 3_000, 'poll.vote');
    expect(voted.data).toEqual({ messageId: poll.id, voter: '6281388888888', options: ['Blue'] });
    expect((await getMessage(ctx, tenant, poll.id)).poll?.votes).toEqual([{ option: 'Red', count: 0 }, { option: 'Blue', count: 1 }]);
  });

  it('a rate limit becomes a device.status event carrying the warning; the message is retried, not failed', async () => {
    socket.ack = { kind: 'error-ack', error: '429' };
    const response = await send(ctx, tenant, { recipients: ['6281200000013'], type: 'TEXT', content: 'hi', deviceId });
    const message = json<{ message: { id: string; status: string } }>(response).message;
    const warned = await waitFor(async () => {
      const list = (await events('device.status')).filter((e) => typeof e.data.lastError === 'string' && (e.data.lastError as string).startsWith('RATE_LIMITED'));
      return list.length > 0 && list;
    }, 3_000, 'device.status with RATE_LIMITED');
    expect(warned[0]!.data.status).toBe('CONNECTED');
    expect((await getDevice(ctx, tenant, deviceId)).lastError).toMatch(/^RATE_LIMITED: /);
    socket.ack = { kind: 'server-ack' };
    await waitFor(async () => (await getMessage(ctx, tenant, message.id)).status === 'SENT', 15_000, 'SENT after the retry');
  });

  it('warm-up: a newly linked number sends at most the day\'s cap of bulk messages; the rest stay QUEUED, direct sends still go', async () => {
    const recipients = Array.from({ length: 12 }, (_, i) => `62813000001${String(i).padStart(2, '0')}`);
    const { jobId } = await sendBulk(ctx, tenant, { recipients, type: 'TEXT', content: 'promo', deviceId });
    await waitFor(async () => (await getJob(ctx, tenant, jobId)).sentCount === 3, 5_000, 'three bulk messages sent');
    await sleep(500);
    expect((await getJob(ctx, tenant, jobId)).sentCount).toBe(3);
    const queued = await listMessages(ctx, tenant, `jobId=${jobId}&status=QUEUED&limit=100`);
    expect(queued.meta.total).toBe(9);
    const direct = await send(ctx, tenant, { recipients: ['6281200000014'], type: 'TEXT', content: 'direct', deviceId });
    expect(json<{ message: { status: string } }>(direct).message.status).toBe('SENT');
    const [row] = await ctx.database.query<{ warmup_sent: number }>('SELECT warmup_sent FROM whatsapp_devices WHERE device_id = $1', [deviceId]);
    expect(row!.warmup_sent).toBe(3);
  });

  it('a transient drop: DISCONNECTED with the reason, the runner reconnects (one new socket), CONNECTED again', async () => {
    const before = fake.sockets.length;
    fake.script = (s) => s.open();
    socket.close(428, 'Connection Terminated');
    const down = await waitFor(async () => {
      const d = await getDevice(ctx, tenant, deviceId);
      return d.status === 'DISCONNECTED' && d;
    }, 3_000, 'DISCONNECTED');
    expect(down.lastError).toContain('428');
    socket = await fake.waitForSockets(before + 1, 5_000);
    await waitFor(async () => (await getDevice(ctx, tenant, deviceId)).status === 'CONNECTED', 5_000, 'CONNECTED again');
    await sleep(300);
    expect(fake.sockets).toHaveLength(before + 1);
    fake.script = (s) => s.showQr();
  });

  it('a proxy set on the device: the session is reopened through it at once, and dropped again when it is cleared', async () => {
    expect(socket.agent).toBeUndefined();
    const before = fake.sockets.length;
    fake.script = (s) => s.open();
    const patched = await ctx.app.inject({ method: 'PATCH', url: `/devices/${deviceId}`, headers: tenant.headers, payload: { proxyUrl: 'socks5://shop:s3cret@127.0.0.1:1080' } });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(json<{ data: DeviceBody }>(patched).data.proxyUrl).toBe('socks5://shop:***@127.0.0.1:1080');
    socket = await fake.waitForSockets(before + 1, 5_000);
    expect(socket.agent).toBeInstanceOf(SocksProxyAgent);
    expect((socket.agent as SocksProxyAgent).proxy).toMatchObject({ host: '127.0.0.1', port: 1080, userId: 'shop', password: 's3cret' });
    await waitFor(async () => (await getDevice(ctx, tenant, deviceId)).status === 'CONNECTED', 5_000, 'CONNECTED through the proxy');
    // Restored from the stored credentials, not linked anew: the same number, no new QR code.
    expect((await getDevice(ctx, tenant, deviceId)).phoneNumber).toBe('6281377777777');

    const cleared = await ctx.app.inject({ method: 'PATCH', url: `/devices/${deviceId}`, headers: tenant.headers, payload: { proxyUrl: null } });
    expect(json<{ data: DeviceBody }>(cleared).data.proxyUrl).toBeNull();
    socket = await fake.waitForSockets(before + 2, 5_000);
    expect(socket.agent).toBeUndefined();
    await waitFor(async () => (await getDevice(ctx, tenant, deviceId)).status === 'CONNECTED', 5_000, 'CONNECTED directly');
    fake.script = (s) => s.showQr();
  });

  it('a refused account (403): DISCONNECTED with ACCOUNT_REFUSED and no reconnect; POST /devices/:id/reconnect resumes it', async () => {
    const before = fake.sockets.length;
    socket.close(403, 'Connection Failure');
    const down = await waitFor(async () => {
      const d = await getDevice(ctx, tenant, deviceId);
      return d.status === 'DISCONNECTED' && d;
    }, 3_000, 'DISCONNECTED');
    expect(down.lastError).toMatch(/^ACCOUNT_REFUSED: WhatsApp refused the account \(403/);
    // The runner's first reconnect would come after 1 s: none comes.
    await sleep(2_500);
    expect(fake.sockets).toHaveLength(before);
    fake.script = (s) => s.open();
    const { status } = await api('POST', `/devices/${deviceId}/reconnect`);
    expect(status).toBe(200);
    socket = await fake.waitForSockets(before + 1, 5_000);
    await waitFor(async () => (await getDevice(ctx, tenant, deviceId)).status === 'CONNECTED', 5_000, 'CONNECTED again');
    fake.script = (s) => s.showQr();
  });

  it('unlinked on the phone (401): LOGGED_OUT, credentials deleted, waiting messages failed', async () => {
    socket.close(401, 'Connection Failure');
    await waitFor(async () => (await getDevice(ctx, tenant, deviceId)).status === 'LOGGED_OUT', 3_000, 'LOGGED_OUT');
    expect(await ctx.database.query('SELECT 1 FROM whatsapp_auth WHERE device_id = $1', [deviceId])).toHaveLength(0);
    // The bulk messages the warm-up held back cannot go out any more.
    const failed = await waitFor(async () => {
      const page = await listMessages(ctx, tenant, `status=FAILED&limit=100`);
      return page.data.filter((m) => m.error?.code === 'DEVICE_LOGGED_OUT').length === 9 && page;
    }, 3_000, 'held-back bulk messages FAILED');
    expect(failed.data.length).toBeGreaterThanOrEqual(9);
  });
});

describe('pairing code', () => {
  it('POST /devices/:id/pairing-code answers the code the network gave for the number; the phone enters it and the device links', async () => {
    const { device, socket } = await addDevice();
    const { status, body } = await api<{ data: { code: string; phoneNumber: string; expiresAt: string } }>('POST', `/devices/${device.id}/pairing-code`, {
      phoneNumber: '+62 813-1234-5678',
    });
    expect(status).toBe(200);
    expect(body.data.code).toBe('ABCD1234');
    expect(body.data.phoneNumber).toBe('6281312345678');
    expect(new Date(body.data.expiresAt).getTime()).toBeGreaterThan(Date.now());
    const asked = fake.sockets.flatMap((s) => s.pairingRequests);
    expect(asked).toContain('6281312345678');
    const latest = fake.sockets.filter((s) => s.pairingRequests.length > 0).at(-1) ?? socket;
    await link(latest, '6281312345678');
    await waitFor(async () => (await getDevice(ctx, tenant, device.id)).status === 'CONNECTED', 3_000, 'CONNECTED by pairing code');
    // Not PENDING any more: 409.
    expectError((await api('POST', `/devices/${device.id}/pairing-code`, { phoneNumber: '6281312345678' })).raw, 409, 'CONFLICT');
    expectError((await api('POST', `/devices/${device.id}/pairing-code`, { phoneNumber: '12' })).raw, 400, 'VALIDATION_ERROR');

    // DELETE /devices/:id logs the device out of WhatsApp and deletes its credentials.
    const current = fake.last;
    expect((await api('DELETE', `/devices/${device.id}`)).status).toBe(200);
    await waitFor(() => current.loggedOut, 20_000, 'logout sent to WhatsApp');
    await waitFor(async () => (await ctx.database.query('SELECT 1 FROM whatsapp_auth WHERE device_id = $1', [device.id])).length === 0, 3_000, 'credentials deleted');
  });

  it('is documented in the OpenAPI document', async () => {
    const spec = json<{ paths: Record<string, Record<string, unknown>> }>(await ctx.app.inject({ method: 'GET', url: '/openapi.json' }));
    expect(spec.paths['/devices/{id}/pairing-code']?.post).toBeTruthy();
  });
});

describe('takeover', () => {
  it('another worker restores a linked device from the credentials in the database when the lease moves (the first worker stopped)', async () => {
    const { device, socket: first } = await addDevice();
    const linkedSocket = await link(first, '6281355500000');
    await waitFor(async () => (await getDevice(ctx, tenant, device.id)).status === 'CONNECTED', 3_000, 'CONNECTED on the first worker');

    // A second worker with its own network (its own fake sockets); the first one stops and releases its leases.
    const otherFake = new FakeBaileys();
    otherFake.script = (s) => s.open();
    const log = pino({ level: 'silent' });
    const otherNetwork = await fakeNetwork(ctx, otherFake, log, loadConfig({ ...ENV }).whatsapp);
    const otherSupervisor = new DeviceSupervisor(ctx.database, ctx.services.bus, otherNetwork, http, ctx.config, log);
    try {
      await supervisor.stop();
      otherSupervisor.start();
      const restored = await waitFor(() => otherFake.sockets.find((s) => (s.auth.creds.me as { id?: string } | undefined)?.id?.startsWith('6281355500000')), 10_000, 'a session on the second worker');
      expect(restored.auth.creds.account).toEqual(linkedSocket.auth.creds.account);
      expect(restored.auth.creds.noiseKey).toEqual(linkedSocket.auth.creds.noiseKey);
      await waitFor(async () => {
        const [row] = await ctx.database.query<{ lease_owner: string | null }>('SELECT lease_owner FROM devices WHERE id = $1', [device.id]);
        return row?.lease_owner === otherSupervisor.workerId;
      }, 5_000, 'the lease on the second worker');
      expect((await getDevice(ctx, tenant, device.id)).status).toBe('CONNECTED');
      // The device sends from its new worker.
      const response = await send(ctx, tenant, { recipients: ['6281200000016'], type: 'TEXT', content: 'after takeover', deviceId: device.id });
      expect(json<{ message: { status: string } }>(response).message.status).toBe('SENT');
      expect(restored.sent.map((m) => m.jid)).toContain('6281200000016@s.whatsapp.net');
    } finally {
      await otherSupervisor.stop();
      await otherNetwork.close();
    }
  });
});

describe('sandbox network', () => {
  it('answers 409 to a pairing-code request: it links by QR code only', async () => {
    const devices = new DeviceService(ctx.database, ctx.services.bus); // as createServices builds it for NETWORK=sandbox
    const [dev] = await ctx.database.query<{ id: string }>(`INSERT INTO devices (id, account_id, name, status) VALUES ('dev_pairing_sandbox', $1, 'x', 'PENDING') RETURNING id`, [
      tenant.accountId,
    ]);
    await expect(devices.pairingCode(tenant.accountId, dev!.id, '6281312345678')).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('QR code') });
  });
});
