/**
 * What a real phone needs beyond the basics, through the fake socket (payloads as Baileys 7
 * emits them): the acknowledgement clock after the upload and the upload's own timeout, 463 as a
 * permanent refusal that pauses bulk traffic, retry requests answered for every kind from what
 * was stored, onWhatsApp answers kept in the database, the cap on unattended QR cycles, the
 * outdated-client stop (405) with one retry on a freshly read version, and the version every
 * socket announces.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { OutgoingMessage } from '../src/network/network.js';
import { WaVersionSource, type WaVersion } from '../src/network/whatsapp/version.js';
import { sleep, waitFor } from './messaging-helpers.js';
import { createHarness, eventsOf, insertDevice, realHelpers, TEST_WA_VERSION, whatsAppTestFile, type Harness } from './whatsapp/harness.js';
import type { FakeSocket } from './whatsapp/fake-socket.js';

const wa = whatsAppTestFile();

async function harness(config: Parameters<typeof createHarness>[1] = {}, version?: WaVersionSource): Promise<Harness> {
  const created = await createHarness(wa.ctx, config, undefined, undefined, version);
  wa.track(created);
  return created;
}

async function linked(h: Harness, phone = '6281234567001'): Promise<{ deviceId: string; socket: FakeSocket }> {
  const device = await insertDevice(wa.ctx, wa.tenant.accountId);
  await h.open(device);
  const first = await h.fake.waitForSockets(1);
  first.pairSuccess(phone);
  h.fake.script = (socket) => socket.open();
  const socket = await h.fake.waitForSockets(2);
  await waitFor(() => eventsOf(h.events, 'connected').length === 1, 2_000, 'connected');
  return { deviceId: device.id, socket };
}

function message(id: string, overrides: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return { networkMessageId: id, to: '6281200000001', type: 'TEXT', content: 'hello', accountId: wa.tenant.accountId, ...overrides };
}

describe('sending big media', () => {
  it('starts the acknowledgement clock after sendMessage (which uploads) returned: a slow upload is not an ACK_TIMEOUT', async () => {
    const h = await harness({ ackTimeoutMs: 200 });
    const { deviceId, socket } = await linked(h);
    // The upload takes three times the acknowledgement timeout, then the server acknowledges at once.
    socket.sendDelayMs = 600;
    const media = { data: Buffer.alloc(64, 1), mimeType: 'application/pdf', fileName: 'big.pdf' };
    await expect(h.network.sessionOf(deviceId)!.send(message('3EB0AAAAAAAAAAAAAAAAAA', { type: 'DOCUMENT', content: '', media }))).resolves.toEqual({ ok: true });
    expect(socket.sent).toHaveLength(1);
    // Baileys is told the upload's own timeout.
    expect(socket.sent[0]!.options).toEqual({ messageId: '3EB0AAAAAAAAAAAAAAAAAA', mediaUploadTimeoutMs: 300_000 });
  });

  it('an upload that outlasts its own timeout fails as MEDIA_UPLOAD_FAILED (transient)', async () => {
    const h = await harness({ ackTimeoutMs: 200, uploadTimeoutMs: 300, connectTimeoutMs: 200 });
    const { deviceId, socket } = await linked(h);
    socket.sendDelayMs = 3_000;
    const started = Date.now();
    const result = await h.network.sessionOf(deviceId)!.send(message('3EB0BBBBBBBBBBBBBBBBBB', { type: 'IMAGE', content: '', media: { data: Buffer.alloc(8), mimeType: 'image/png' } }));
    expect(result).toMatchObject({ ok: false, permanent: false, code: 'MEDIA_UPLOAD_FAILED' });
    expect(Date.now() - started).toBeLessThan(2_500);
  });
});

describe('463', () => {
  it('is a permanent failure, raises one warning and pauses the device\'s bulk traffic (kept for the next worker)', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    const session = h.network.sessionOf(deviceId)!;
    expect(session.bulkPolicy.allowance()).toBeNull();
    socket.ack = { kind: 'error-ack', error: '463' };
    await expect(session.send(message('3EB0CCCCCCCCCCCCCCCCCC'))).resolves.toMatchObject({ ok: false, permanent: true, code: 'NEW_CONTACT_REFUSED' });
    await waitFor(() => eventsOf(h.events, 'warning').length === 1, 2_000, 'warning');
    expect(eventsOf(h.events, 'warning')[0]).toMatchObject({ code: 'NEW_CONTACT_REFUSED' });
    const allowance = session.bulkPolicy.allowance();
    expect(allowance?.remaining).toBe(0);
    expect(allowance!.resumeAt.getTime() - Date.now()).toBeGreaterThan(50 * 60_000);
    await waitFor(
      async () => (await wa.ctx.database.query('SELECT 1 FROM whatsapp_devices WHERE device_id = $1 AND bulk_paused_until > now()', [deviceId])).length === 1,
      2_000,
      'pause stored',
    );
  });
});

describe('retry requests (getMessage)', () => {
  it('answer for every kind with what was sent (media with its keys), from the database', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    const session = h.network.sessionOf(deviceId)!;
    const png = Buffer.alloc(16, 2);
    await session.send(message('3EB0D00000000000000001'));
    await session.send(message('3EB0D00000000000000002', { type: 'IMAGE', content: 'a cat', media: { data: png, mimeType: 'image/png' } }));
    await session.send(message('3EB0D00000000000000003', { type: 'DOCUMENT', content: '', media: { data: png, mimeType: 'application/pdf', fileName: 'q.pdf' } }));
    const text = (await socket.getMessage({ id: '3EB0D00000000000000001', remoteJid: '6281200000001@s.whatsapp.net', fromMe: true })) as { extendedTextMessage: { text: string } };
    expect(text.extendedTextMessage.text).toBe('hello');
    const image = (await socket.getMessage({ id: '3EB0D00000000000000002' })) as { imageMessage: { caption: string; mediaKey: Uint8Array; url: string; mimetype: string } };
    expect(image.imageMessage).toMatchObject({ caption: 'a cat', mimetype: 'image/png', url: 'https://mmg.whatsapp.net/v/t62.7118-24/fake.enc' });
    expect(Buffer.from(image.imageMessage.mediaKey)).toEqual(Buffer.alloc(32, 7));
    const document = (await socket.getMessage({ id: '3EB0D00000000000000003' })) as { documentMessage: { fileName: string } };
    expect(document.documentMessage.fileName).toBe('q.pdf');
    expect(await socket.getMessage({ id: 'UNKNOWN' })).toBeUndefined();
    // Real protobuf: what is stored decodes with Baileys' own proto.Message.
    const helpers = await realHelpers();
    const [row] = await wa.ctx.database.query<{ content: Uint8Array }>('SELECT content FROM whatsapp_sent_messages WHERE device_id = $1 AND message_id = $2', [deviceId, '3EB0D00000000000000002']);
    expect((helpers.decodeMessage(row!.content) as { imageMessage: { caption: string } }).imageMessage.caption).toBe('a cat');
  });
});

describe('onWhatsApp', () => {
  it('is asked once per number and device, kept in the database across sessions (another worker does not ask again)', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    const session = h.network.sessionOf(deviceId)!;
    socket.notOnWhatsApp.add('6281200000099');
    await session.send(message('3EB0E00000000000000001'));
    await session.send(message('3EB0E00000000000000002'));
    await expect(session.send(message('3EB0E00000000000000003', { to: '6281200000099' }))).resolves.toMatchObject({ code: 'RECIPIENT_NOT_ON_NETWORK' });
    await expect(session.send(message('3EB0E00000000000000004', { to: '6281200000099' }))).resolves.toMatchObject({ code: 'RECIPIENT_NOT_ON_NETWORK' });
    expect(socket.onWhatsAppCalls).toBe(2);
    const rows = await wa.ctx.database.query<{ phone_number: string; jid: string | null }>('SELECT phone_number, jid FROM whatsapp_numbers WHERE device_id = $1 ORDER BY phone_number', [deviceId]);
    expect(rows).toEqual([
      { phone_number: '6281200000001', jid: '6281200000001@s.whatsapp.net' },
      { phone_number: '6281200000099', jid: null },
    ]);
    // A new network (another worker) restores the device and sends: no new look-up.
    const device = { id: deviceId, accountId: wa.tenant.accountId, phoneNumber: '6281234567001', status: 'CONNECTED' as const };
    await h.network.sessionOf(deviceId)!.close();
    const other = await harness();
    other.fake.script = (s) => s.open();
    await other.open(device);
    const restored = await other.fake.waitForSockets(1);
    await waitFor(() => eventsOf(other.events, 'connected').length === 1, 2_000, 'connected');
    await expect(other.network.sessionOf(deviceId)!.send(message('3EB0E00000000000000005'))).resolves.toEqual({ ok: true });
    expect(restored.onWhatsAppCalls).toBe(0);
  });
});

describe('unattended QR codes', () => {
  it('stop after WHATSAPP_MAX_QR_CYCLES unscanned cycles (device keeps PENDING, QR_EXPIRED); a pairing request starts again', async () => {
    const h = await harness({ maxQrCycles: 2 });
    // Each socket shows its codes, then Baileys gives up on them (408 after the last one).
    h.fake.script = (socket) => {
      socket.showQr();
      setTimeout(() => socket.close(408, 'QR refs attempts ended'), 20);
    };
    const device = await insertDevice(wa.ctx, wa.tenant.accountId);
    await h.open(device);
    await waitFor(() => eventsOf(h.events, 'stopped').length === 1, 5_000, 'stopped');
    expect(eventsOf(h.events, 'stopped')[0]).toMatchObject({ code: 'QR_EXPIRED' });
    expect(h.fake.sockets).toHaveLength(2);
    await sleep(1_500);
    expect(h.fake.sockets).toHaveLength(2);
    // Someone asks for a pairing code: linking starts again.
    h.fake.script = (socket) => socket.showQr();
    const code = await h.network.sessionOf(device.id)!.requestPairingCode('6281234567002');
    expect(code.code).toBe('ABCD1234');
    expect(h.fake.sockets).toHaveLength(3);
  });
});

describe('the web version', () => {
  it('every socket announces the version in use', async () => {
    const h = await harness();
    await linked(h);
    expect(h.fake.sockets.map((s) => s.version)).toEqual([TEST_WA_VERSION, TEST_WA_VERSION]);
  });

  it('405 (outdated client): the version is read again and tried once; refused again, the session stops with CLIENT_OUTDATED', async () => {
    const versions: WaVersion[] = [
      [2, 3000, 1000000001],
      [2, 3000, 1000000002],
      [2, 3000, 1000000002],
    ];
    let reads = 0;
    const source = new WaVersionSource({ waVersion: 'auto', webVersionUrl: 'http://127.0.0.1:9/sw.js' }, [2, 3000, 1], pino({ level: 'silent' }), async () => versions[reads++]!);
    await source.refresh();
    const h = await harness({}, source);
    h.fake.script = (socket) => socket.close(405, 'Connection Failure');
    const device = await insertDevice(wa.ctx, wa.tenant.accountId);
    await h.open(device);
    await waitFor(() => eventsOf(h.events, 'stopped').length === 1, 3_000, 'stopped');
    expect(eventsOf(h.events, 'stopped')[0]).toMatchObject({ code: 'CLIENT_OUTDATED' });
    expect(h.fake.sockets.map((s) => s.version[2])).toEqual([1000000001, 1000000002]);
    expect(reads).toBe(2);
    await sleep(300);
    expect(h.fake.sockets).toHaveLength(2);
  });
});
