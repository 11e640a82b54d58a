/**
 * The WhatsApp adapter driven through a fake of Baileys' socket (test/whatsapp/fake-socket.ts):
 * linking (QR rotation, pairing, restart after pairing, pairing code), each disconnect reason,
 * sends and their acknowledgements, receipts in and out of order, incoming messages and @lid
 * senders, and what the logs leave out. The database is real (auth state, LID pairs).
 */
import { describe, expect, it } from 'vitest';
import type { DeviceInfo, NetworkEvent, OutgoingMessage } from '../src/network/network.js';
import { sleep, waitFor } from './messaging-helpers.js';
import { createHarness, eventsOf, insertDevice, whatsAppTestFile, type Harness } from './whatsapp/harness.js';
import type { FakeSocket } from './whatsapp/fake-socket.js';

const wa = whatsAppTestFile();

async function harness(config: Parameters<typeof createHarness>[1] = {}): Promise<Harness> {
  const created = await createHarness(wa.ctx, config);
  wa.track(created);
  return created;
}

const PHONE = '6281234567001';

/** A device linked through the fake: QR shown, phone scans, restart, open. */
async function linked(h: Harness, phone = PHONE): Promise<{ deviceId: string; socket: FakeSocket; device: DeviceInfo }> {
  const device = await insertDevice(wa.ctx, wa.tenant.accountId);
  await h.open(device);
  const first = await h.fake.waitForSockets(1);
  first.pairSuccess(phone);
  h.fake.script = (socket) => socket.open();
  const socket = await h.fake.waitForSockets(2);
  await waitFor(() => eventsOf(h.events, 'connected').length === 1, 2_000, 'connected');
  return { deviceId: device.id, socket, device };
}

function text(id: string, to = '6281200000001', content = 'hello there'): OutgoingMessage {
  return { networkMessageId: id, to, type: 'TEXT', content, accountId: wa.tenant.accountId };
}

describe('linking', () => {
  it('reports each QR code Baileys shows, the first valid 60 s and the next ones 20 s', async () => {
    const h = await harness();
    const device = await insertDevice(wa.ctx, wa.tenant.accountId);
    await h.open(device);
    const socket = await h.fake.waitForSockets(1);
    const second = socket.showQr();
    const third = socket.showQr();
    await waitFor(() => eventsOf(h.events, 'qr').length === 3, 2_000, 'three QR events');
    const qrs = eventsOf(h.events, 'qr');
    expect(qrs[1]!.code).toBe(second);
    expect(qrs[2]!.code).toBe(third);
    expect(new Set(qrs.map((q) => q.code)).size).toBe(3);
    const now = Date.now();
    expect(qrs[0]!.expiresAt.getTime() - now).toBeGreaterThan(55_000);
    expect(qrs[1]!.expiresAt.getTime() - now).toBeLessThanOrEqual(20_000);
    expect(qrs[1]!.expiresAt.getTime() - now).toBeGreaterThan(15_000);
    expect(eventsOf(h.events, 'connected')).toHaveLength(0);
    // Fresh credentials for a new link; nothing is logged in yet.
    expect(socket.auth.creds.account).toBeUndefined();
  });

  it('after a scan, follows the restart WhatsApp asks for (515) without reporting a disconnect, then reports the number', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    expect(h.fake.sockets).toHaveLength(2);
    expect(eventsOf(h.events, 'disconnected')).toHaveLength(0);
    expect(eventsOf(h.events, 'connected')[0]!.phoneNumber).toBe(PHONE);
    // The second socket logs in with the credentials the pairing produced (same keys).
    expect(socket.auth.creds.account).toBeTruthy();
    expect(socket.auth.creds.noiseKey).toEqual(h.fake.sockets[0]!.auth.creds.noiseKey);
    const [row] = await wa.ctx.database.query<{ n: number }>(`SELECT count(*)::int AS n FROM whatsapp_auth WHERE device_id = $1 AND category = 'creds'`, [deviceId]);
    expect(row!.n).toBe(1);
  });

  it('gives a pairing code for a phone number on a socket in its QR phase', async () => {
    const h = await harness();
    const device = await insertDevice(wa.ctx, wa.tenant.accountId);
    const session = await h.open(device);
    const socket = await h.fake.waitForSockets(1);
    const { code, expiresAt } = await session.requestPairingCode('6281234567002');
    expect(code).toMatch(/^[A-Z0-9]{8}$/);
    expect(socket.pairingRequests).toEqual(['6281234567002']);
    expect(expiresAt.getTime()).toBeGreaterThan(Date.now() + 100_000);
    // The phone enters it: the same pairing flow as a scan.
    socket.pairSuccess('6281234567002');
    h.fake.script = (s) => s.open();
    await waitFor(() => eventsOf(h.events, 'connected')[0]?.phoneNumber === '6281234567002', 2_000, 'connected by pairing code');
  });

  it('asks for a pairing code on a new socket when the current one cannot take it, and refuses once linked', async () => {
    const h = await harness();
    const device = await insertDevice(wa.ctx, wa.tenant.accountId);
    h.fake.script = () => undefined; // connecting, no QR yet
    const session = await h.open(device);
    await h.fake.waitForSockets(1);
    const pending = session.requestPairingCode('6281234567003');
    await sleep(30);
    h.fake.last.showQr();
    await expect(pending).resolves.toMatchObject({ code: 'ABCD1234' });
    expect(h.fake.sockets).toHaveLength(1);

    const other = await harness();
    const { deviceId } = await linked(other);
    const sessionOfLinked = other.network.sessionOf(deviceId)!;
    await expect(sessionOfLinked.requestPairingCode('6281234567004')).rejects.toMatchObject({ code: 'ALREADY_LINKED' });
  });

  it('starts a new link when unlinked credentials are refused (a pairing code that was never entered)', async () => {
    const h = await harness();
    const device = await insertDevice(wa.ctx, wa.tenant.accountId);
    const session = await h.open(device);
    const first = await h.fake.waitForSockets(1);
    await session.requestPairingCode('6281234567005');
    first.close(401, 'Connection Failure');
    const second = await h.fake.waitForSockets(2);
    expect(second.auth.creds.me).toBeUndefined();
    expect(second.auth.creds.noiseKey).not.toEqual(first.auth.creds.noiseKey);
    expect(eventsOf(h.events, 'disconnected')).toHaveLength(0);
  });

  it('shows new QR codes after a socket\'s codes ran out (408), without a warning', async () => {
    const h = await harness();
    const device = await insertDevice(wa.ctx, wa.tenant.accountId);
    await h.open(device);
    const first = await h.fake.waitForSockets(1);
    first.close(408, 'QR refs attempts ended');
    await h.fake.waitForSockets(2, 3_000);
    await waitFor(() => eventsOf(h.events, 'qr').length === 2, 2_000, 'a QR code from the new socket');
    expect(eventsOf(h.events, 'warning')).toHaveLength(0);
    expect(eventsOf(h.events, 'disconnected')).toHaveLength(0);
  });

  it('while linking, retries a network that cannot be reached with growing delays and one warning', async () => {
    const h = await harness();
    const device = await insertDevice(wa.ctx, wa.tenant.accountId);
    h.fake.script = (socket) => socket.close(undefined, 'WebSocket Error (connect ECONNREFUSED 127.0.0.1:9)');
    await h.open(device);
    await h.fake.waitForSockets(4, 3_000);
    const warnings = eventsOf(h.events, 'warning');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.code).toBe('CONNECTION_FAILED');
    expect(warnings[0]!.message).toContain('ECONNREFUSED');
    // Backoff 40, 80, 160 ms (±20 %): 4 sockets take at least ~220 ms, and it does not spin.
    const started = Date.now();
    await sleep(400);
    expect(h.fake.sockets.length).toBeLessThanOrEqual(6);
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    expect(eventsOf(h.events, 'disconnected')).toHaveLength(0);
  });
});

describe('disconnects of a linked device', () => {
  const cases: [number, string, NetworkEvent['type'], string | undefined][] = [
    [428, 'Connection Terminated', 'disconnected', 'network'],
    [408, 'Connection was lost', 'disconnected', 'network'],
    [503, 'Service unavailable', 'disconnected', 'network'],
    [440, 'Stream Errored (conflict)', 'disconnected', 'replaced'],
    [500, 'Bad session', 'disconnected', 'error'],
    [411, 'Multi-device mismatch', 'disconnected', 'error'],
  ];
  for (const [code, message, type, reason] of cases) {
    it(`${code} (${message}) → ${type} ${reason}, and no reconnect until the runner asks`, async () => {
      const h = await harness();
      const { socket } = await linked(h);
      socket.close(code, message);
      await waitFor(() => eventsOf(h.events, 'disconnected').length === 1, 2_000, 'disconnected');
      const event = eventsOf(h.events, 'disconnected')[0]!;
      expect(event.reason).toBe(reason);
      expect(event.message).toContain(String(code));
      await sleep(300);
      expect(h.fake.sockets).toHaveLength(2);
    });
  }

  it('401 (unlinked on the phone) → logout, credentials and LID pairs deleted, no reconnect', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    socket.emit('lid-mapping.update', { lid: '123456@lid', pn: '6281299999999@s.whatsapp.net' });
    await waitFor(async () => (await wa.ctx.database.query('SELECT 1 FROM whatsapp_lids WHERE device_id = $1', [deviceId])).length === 1, 2_000, 'lid stored');
    // A bulk pause of this link does not outlive it.
    await h.network.sessionOf(deviceId)!.bulkPolicy.pause(new Date(Date.now() + 60_000));
    socket.close(401, 'Connection Failure');
    await waitFor(() => eventsOf(h.events, 'disconnected')[0]?.reason === 'logout', 2_000, 'logout');
    const [row] = await wa.ctx.database.query<{ bulk_paused_until: Date | null }>('SELECT bulk_paused_until FROM whatsapp_devices WHERE device_id = $1', [deviceId]);
    expect(row!.bulk_paused_until).toBeNull();
    const auth = await wa.ctx.database.query('SELECT 1 FROM whatsapp_auth WHERE device_id = $1', [deviceId]);
    expect(auth).toHaveLength(0);
    expect(await wa.ctx.database.query('SELECT 1 FROM whatsapp_lids WHERE device_id = $1', [deviceId])).toHaveLength(0);
    await sleep(200);
    expect(h.fake.sockets).toHaveLength(2);
  });

  for (const code of [402, 403, 406]) {
    it(`${code} (a refused account) → stopped, not reconnected, still stopped in a new session, resumed by reconnect()`, async () => {
      const h = await harness();
      const { deviceId, socket, device } = await linked(h);
      socket.close(code, 'Connection Failure');
      await waitFor(() => eventsOf(h.events, 'stopped').length === 1, 2_000, 'stopped');
      expect(eventsOf(h.events, 'stopped')[0]).toMatchObject({ code: 'ACCOUNT_REFUSED' });
      expect(eventsOf(h.events, 'stopped')[0]!.message).toContain(String(code));
      expect(eventsOf(h.events, 'disconnected')).toHaveLength(0);
      await sleep(300);
      expect(h.fake.sockets).toHaveLength(2);
      // Another worker (a restart, a takeover) does not retry it either.
      await h.network.sessionOf(deviceId)!.close();
      const again = await h.open({ ...device, status: 'DISCONNECTED' });
      await sleep(200);
      expect(h.fake.sockets).toHaveLength(2);
      expect(eventsOf(h.events, 'stopped')).toHaveLength(2);
      // Someone reconnects the device: it connects again.
      h.fake.script = (s) => s.open();
      await again.reconnect();
      expect(h.fake.sockets).toHaveLength(3);
      await waitFor(() => eventsOf(h.events, 'connected').length === 2, 2_000, 'connected again');
      const [row] = await wa.ctx.database.query<{ stopped_code: string | null }>('SELECT stopped_code FROM whatsapp_devices WHERE device_id = $1', [deviceId]);
      expect(row!.stopped_code).toBeNull();
    });
  }

  it('reconnect() opens one new socket and resolves once the attempt settled; a second call while connecting does nothing', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    const session = h.network.sessionOf(deviceId)!;
    socket.close(428, 'Connection Terminated');
    await waitFor(() => eventsOf(h.events, 'disconnected').length === 1, 2_000, 'disconnected');
    h.fake.script = (s) => s.close(428, 'still down');
    await session.reconnect();
    expect(h.fake.sockets).toHaveLength(3);
    expect(eventsOf(h.events, 'disconnected')).toHaveLength(2);
    h.fake.script = (s) => s.open();
    const first = session.reconnect();
    const second = session.reconnect();
    await Promise.all([first, second]);
    expect(h.fake.sockets).toHaveLength(4);
    expect(eventsOf(h.events, 'connected')).toHaveLength(2);
  });

  it('a connection that keeps closing right after it opens makes reconnect() wait longer each time (the runner\'s backoff restarts on every connect)', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    const session = h.network.sessionOf(deviceId)!;
    socket.close(428, 'Connection Terminated');
    await waitFor(() => eventsOf(h.events, 'disconnected').length === 1, 2_000, 'disconnected');
    h.fake.script = (s) => {
      s.open();
      setTimeout(() => s.close(428, 'Connection Terminated'), 5);
    };
    const durations: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      await session.reconnect();
      durations.push(Date.now() - started);
      await waitFor(() => eventsOf(h.events, 'disconnected').length === i + 2, 2_000, 'closed again');
    }
    // Flap backoff 150, 300, 600 ms in this harness (5 s, 15 s, 30 s, 60 s by default).
    expect(durations[0]).toBeGreaterThanOrEqual(140);
    expect(durations[1]).toBeGreaterThanOrEqual(290);
    expect(durations[2]).toBeGreaterThanOrEqual(590);
  });

  it('restores a linked device from the database in a new session (another worker took the lease)', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    await wa.close(h);
    const next = await harness();
    next.fake.script = (s) => s.open();
    await next.open({ id: deviceId, accountId: wa.tenant.accountId, phoneNumber: PHONE, status: 'CONNECTED' });
    const restored = await next.fake.waitForSockets(1);
    expect(restored.auth.creds.account).toEqual(socket.auth.creds.account);
    expect(restored.auth.creds.signedIdentityKey).toEqual(socket.auth.creds.signedIdentityKey);
    await waitFor(() => eventsOf(next.events, 'connected')[0]?.phoneNumber === PHONE, 2_000, 'connected again');
  });

  it('a linked device without stored credentials is reported logged out (it needs a new link)', async () => {
    const h = await harness();
    const device = await insertDevice(wa.ctx, wa.tenant.accountId, 'CONNECTED', PHONE);
    await h.open(device);
    expect(eventsOf(h.events, 'disconnected')[0]).toMatchObject({ reason: 'logout' });
    expect(h.fake.sockets).toHaveLength(0);
  });

  it('logout() asks WhatsApp to remove the device and deletes its credentials', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    const session = h.network.sessionOf(deviceId)!;
    await session.logout();
    expect(socket.loggedOut).toBe(true);
    expect(await wa.ctx.database.query('SELECT 1 FROM whatsapp_auth WHERE device_id = $1', [deviceId])).toHaveLength(0);
  });
});

describe('sending', () => {
  it('sends TEXT to the number\'s JID with Waygate\'s message id and resolves on the server ack', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    const session = h.network.sessionOf(deviceId)!;
    await expect(session.send(text('WG01TEXT'))).resolves.toEqual({ ok: true });
    expect(socket.sent[0]).toMatchObject({ jid: '6281200000001@s.whatsapp.net', content: { text: 'hello there', linkPreview: null }, options: { messageId: 'WG01TEXT' } });
    // A resend (after a crash) carries the same id, so WhatsApp de-duplicates it.
    await expect(session.send(text('WG01TEXT'))).resolves.toEqual({ ok: true });
    expect(socket.sent[1]!.options.messageId).toBe('WG01TEXT');
  });

  it('sends IMAGE, VIDEO and DOCUMENT with the media bytes, mimetype, caption and file name', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    const session = h.network.sessionOf(deviceId)!;
    const data = Buffer.from('media-bytes');
    const base = { to: '6281200000002', accountId: wa.tenant.accountId };
    await session.send({ ...base, networkMessageId: 'WG1', type: 'IMAGE', content: 'a cat', media: { data, mimeType: 'image/png' } });
    await session.send({ ...base, networkMessageId: 'WG2', type: 'VIDEO', content: '', media: { data, mimeType: 'video/mp4' } });
    await session.send({ ...base, networkMessageId: 'WG3', type: 'DOCUMENT', content: 'the report', media: { data, mimeType: 'application/pdf', fileName: 'q3.pdf' } });
    await session.send({ ...base, networkMessageId: 'WG4', type: 'DOCUMENT', content: '', media: { data, mimeType: 'application/pdf' } });
    expect(socket.sent.map((s) => s.content)).toEqual([
      { image: data, mimetype: 'image/png', caption: 'a cat' },
      { video: data, mimetype: 'video/mp4' },
      { document: data, mimetype: 'application/pdf', fileName: 'q3.pdf', caption: 'the report' },
      { document: data, mimetype: 'application/pdf', fileName: 'document.pdf' },
    ]);
  });

  it('maps failures: not on WhatsApp (permanent), error acks, thrown errors, no ack, not connected; warnings for rate limits and restrictions', async () => {
    const h = await harness({ ackTimeoutMs: 200 });
    const { deviceId, socket } = await linked(h);
    const session = h.network.sessionOf(deviceId)!;

    socket.notOnWhatsApp.add('6281200000009');
    await expect(session.send(text('WGA', '6281200000009'))).resolves.toMatchObject({ ok: false, permanent: true, code: 'RECIPIENT_NOT_ON_NETWORK' });
    expect(socket.sent).toHaveLength(0);

    socket.ack = { kind: 'error-ack', error: '463' };
    await expect(session.send(text('WGB'))).resolves.toMatchObject({ ok: false, permanent: true, code: 'NEW_CONTACT_REFUSED' });
    socket.ack = { kind: 'error-ack', error: '479' };
    await expect(session.send(text('WGC'))).resolves.toMatchObject({ ok: false, permanent: true, code: 'MESSAGE_REJECTED' });

    socket.ack = { kind: 'throw', error: Object.assign(new Error('rate-overlimit'), { data: 429, output: { statusCode: 500 } }) };
    await expect(session.send(text('WGD'))).resolves.toMatchObject({ ok: false, permanent: false, code: 'RATE_LIMITED' });

    socket.ack = { kind: 'none' };
    await expect(session.send(text('WGE'))).resolves.toMatchObject({ ok: false, permanent: false, code: 'ACK_TIMEOUT' });

    // An ERROR status in messages.update fails the pending send too.
    const pending = session.send(text('WGF'));
    await waitFor(() => socket.sent.some((s) => s.options.messageId === 'WGF'), 1_000, 'handed over');
    socket.statusUpdate('WGF', 0, undefined, ['479']);
    await expect(pending).resolves.toMatchObject({ ok: false, code: 'MESSAGE_REJECTED' });

    await waitFor(() => eventsOf(h.events, 'warning').length === 2, 2_000, 'two warnings');
    expect(eventsOf(h.events, 'warning').map((w) => w.code).sort()).toEqual(['NEW_CONTACT_REFUSED', 'RATE_LIMITED']);

    socket.close(428, 'Connection Terminated');
    await waitFor(() => eventsOf(h.events, 'disconnected').length === 1, 2_000, 'disconnected');
    await expect(session.send(text('WGG'))).resolves.toMatchObject({ ok: false, permanent: false, code: 'DEVICE_NOT_CONNECTED' });
  });

  it('a send waiting for its ack fails (transient) when the connection drops', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    const session = h.network.sessionOf(deviceId)!;
    socket.ack = { kind: 'none' };
    const pending = session.send(text('WGH'));
    await waitFor(() => socket.sent.length === 1, 1_000, 'handed over');
    socket.close(408, 'Connection was lost');
    await expect(pending).resolves.toMatchObject({ ok: false, permanent: false, code: 'DEVICE_NOT_CONNECTED' });
  });
});

describe('receipts', () => {
  it('maps DELIVERY_ACK → DELIVERED and READ / PLAYED → READ, in the order they arrive (even READ before DELIVERED)', async () => {
    const h = await harness();
    const { socket } = await linked(h);
    socket.statusUpdate('WGR1', 4); // READ first
    socket.statusUpdate('WGR1', 3); // then the DELIVERED it overtook
    socket.statusUpdate('WGR2', 3);
    socket.statusUpdate('WGR3', 5); // PLAYED (voice, video)
    socket.statusUpdate('WGR4', 2); // SERVER_ACK: not a receipt
    await waitFor(() => eventsOf(h.events, 'receipts').length === 4, 2_000, 'four receipt events');
    const receipts = eventsOf(h.events, 'receipts').flatMap((e) => e.receipts.map((r) => `${r.networkMessageId}:${r.status}`));
    expect(receipts).toEqual(['WGR1:READ', 'WGR1:DELIVERED', 'WGR2:DELIVERED', 'WGR3:READ']);
  });

  it('maps per-recipient receipts (message-receipt.update) with their timestamps', async () => {
    const h = await harness();
    const { socket } = await linked(h);
    socket.emit('message-receipt.update', [
      { key: { id: 'WGU1', fromMe: true, remoteJid: '1203@g.us' }, receipt: { userJid: '6281200000001@s.whatsapp.net', receiptTimestamp: 1_700_000_000 } },
      { key: { id: 'WGU2', fromMe: true, remoteJid: '1203@g.us' }, receipt: { userJid: '6281200000001@s.whatsapp.net', readTimestamp: 1_700_000_100 } },
    ]);
    await waitFor(() => eventsOf(h.events, 'receipts').length === 1, 2_000, 'receipts');
    expect(eventsOf(h.events, 'receipts')[0]!.receipts).toEqual([
      { networkMessageId: 'WGU1', status: 'DELIVERED', at: new Date(1_700_000_000_000) },
      { networkMessageId: 'WGU2', status: 'READ', at: new Date(1_700_000_100_000) },
    ]);
  });
});

describe('incoming messages', () => {
  it('reports text and media (metadata and caption) with the sender\'s number, a group member\'s message in its group chat; skips own, status and reaction messages', async () => {
    const h = await harness();
    const { socket } = await linked(h);
    socket.incoming([
      { key: { remoteJid: '6281311111111@s.whatsapp.net', id: 'IN1', fromMe: false }, message: { conversation: 'hi' }, messageTimestamp: 1_700_000_000 },
      { key: { remoteJid: '6281311111111@s.whatsapp.net', id: 'IN2', fromMe: false }, message: { extendedTextMessage: { text: 'a link https://x.test' } } },
      {
        key: { remoteJid: '6281311111111@s.whatsapp.net', id: 'IN3', fromMe: false },
        message: { imageMessage: { mimetype: 'image/jpeg', caption: 'look', fileLength: 2048, url: 'https://mmg.whatsapp.net/x' } },
      },
      {
        key: { remoteJid: '6281311111111@s.whatsapp.net', id: 'IN4', fromMe: false },
        message: { documentWithCaptionMessage: { message: { documentMessage: { mimetype: 'application/pdf', fileName: 'a.pdf', caption: 'doc', fileLength: { toNumber: () => 99 } } } } },
      },
      { key: { remoteJid: '6281311111111@s.whatsapp.net', id: 'IN5', fromMe: false }, message: { ephemeralMessage: { message: { videoMessage: { mimetype: 'video/mp4', seconds: 12 } } } } },
      { key: { remoteJid: '6281311111111@s.whatsapp.net', id: 'OWN', fromMe: true }, message: { conversation: 'sent from the phone' } },
      { key: { remoteJid: '1203630@g.us', id: 'GRP', fromMe: false, participant: '6281311111111@s.whatsapp.net' }, message: { conversation: 'group' } },
      { key: { remoteJid: 'status@broadcast', id: 'STS', fromMe: false }, message: { conversation: 'status' } },
      { key: { remoteJid: '6281311111111@s.whatsapp.net', id: 'RCT', fromMe: false }, message: { reactionMessage: { text: '👍' } } },
    ]);
    await waitFor(() => eventsOf(h.events, 'incoming').length === 6, 2_000, 'six incoming');
    await sleep(50);
    const incoming = eventsOf(h.events, 'incoming');
    expect(incoming.map((m) => m.networkMessageId)).toEqual(['IN1', 'IN2', 'IN3', 'IN4', 'IN5', 'GRP']);
    expect(incoming.every((m) => m.from === '6281311111111')).toBe(true);
    expect(incoming[5]).toMatchObject({ messageType: 'TEXT', content: 'group', chat: '1203630@g.us' });
    expect(incoming[0]).toMatchObject({ messageType: 'TEXT', content: 'hi', at: new Date(1_700_000_000_000) });
    expect(incoming[1]).toMatchObject({ messageType: 'TEXT', content: 'a link https://x.test' });
    expect(incoming[2]).toMatchObject({ messageType: 'IMAGE', content: 'look', media: { mimeType: 'image/jpeg', sizeBytes: 2048 } });
    // The file is downloaded by whoever stores the message (test/whatsapp-media.test.ts).
    expect(typeof incoming[2]!.download).toBe('function');
    expect(incoming[3]).toMatchObject({ messageType: 'DOCUMENT', content: 'doc', media: { mimeType: 'application/pdf', fileName: 'a.pdf', sizeBytes: 99 } });
    expect(incoming[4]).toMatchObject({ messageType: 'VIDEO', content: '', media: { mimeType: 'video/mp4', seconds: 12 } });
  });

  it('maps @lid senders to numbers from every source Baileys 7 gives (remoteJidAlt, lid-mapping.update, contacts, its LID store), with both in the event', async () => {
    const h = await harness();
    const { deviceId, socket } = await linked(h);
    socket.incoming([{ key: { remoteJid: '111@lid', remoteJidAlt: '6281322222222@s.whatsapp.net', addressingMode: 'lid', id: 'L1', fromMe: false }, message: { conversation: 'a' } }]);
    socket.emit('lid-mapping.update', { lid: '222@lid', pn: '6281333333333@s.whatsapp.net' });
    // Baileys 7 contacts: id in either form, the other one in lid / phoneNumber.
    socket.emit('contacts.upsert', [{ id: '333@lid', phoneNumber: '6281344444444@s.whatsapp.net' }]);
    socket.emit('contacts.update', [{ id: '6281355555555@s.whatsapp.net', lid: '555@lid' }]);
    socket.lidStore.set('666@lid', '6281366666666:4@s.whatsapp.net');
    // The initial history sync's pairs (Baileys 7: messaging-history.set lidPnMappings).
    socket.emit('messaging-history.set', { contacts: [], lidPnMappings: [{ lid: '888@lid', pn: '6281388888888@s.whatsapp.net' }] });
    socket.incoming([
      { key: { remoteJid: '222:3@lid', id: 'L2', fromMe: false }, message: { conversation: 'b' } },
      { key: { remoteJid: '333@lid', id: 'L3', fromMe: false }, message: { conversation: 'c' } },
      { key: { remoteJid: '111@lid', id: 'L4', fromMe: false }, message: { conversation: 'd' } },
      { key: { remoteJid: '444@lid', id: 'L5', fromMe: false }, message: { conversation: 'e' } },
      { key: { remoteJid: '555@lid', id: 'L6', fromMe: false }, message: { conversation: 'f' } },
      { key: { remoteJid: '666@lid', id: 'L7', fromMe: false }, message: { conversation: 'g' } },
      // A sender addressed by number whose LID WhatsApp also gives.
      { key: { remoteJid: '6281377777777@s.whatsapp.net', remoteJidAlt: '777@lid', addressingMode: 'pn', id: 'L8', fromMe: false }, message: { conversation: 'h' } },
      { key: { remoteJid: '888@lid', id: 'L9', fromMe: false }, message: { conversation: 'i' } },
    ]);
    await waitFor(() => eventsOf(h.events, 'incoming').length === 9, 2_000, 'nine incoming');
    expect(eventsOf(h.events, 'incoming').map((m) => `${m.networkMessageId}:${m.from}:${m.fromLid ?? '-'}`)).toEqual([
      'L1:6281322222222:111@lid',
      'L2:6281333333333:222@lid',
      'L3:6281344444444:333@lid',
      'L4:6281322222222:111@lid',
      'L5:444@lid:444@lid',
      'L6:6281355555555:555@lid',
      'L7:6281366666666:666@lid',
      'L8:6281377777777:777@lid',
      'L9:6281388888888:888@lid',
    ]);
    // Kept in the database: a worker that takes the device over knows them too.
    const rows = await wa.ctx.database.query<{ lid: string; phone_number: string }>('SELECT lid, phone_number FROM whatsapp_lids WHERE device_id = $1 ORDER BY lid', [deviceId]);
    expect(rows.map((r) => `${r.lid}=${r.phone_number}`)).toEqual([
      '111@lid=6281322222222',
      '222@lid=6281333333333',
      '333@lid=6281344444444',
      '555@lid=6281355555555',
      '666@lid=6281366666666',
      '777@lid=6281377777777',
      '888@lid=6281388888888',
    ]);
  });

  it('hands incoming messages over one at a time: the next waits until the previous one was stored', async () => {
    const h = await harness();
    const { socket } = await linked(h);
    h.hold(true);
    socket.incoming([{ key: { remoteJid: '6281355555555@s.whatsapp.net', id: 'S1', fromMe: false }, message: { conversation: 'one' } }]);
    socket.incoming([{ key: { remoteJid: '6281355555555@s.whatsapp.net', id: 'S2', fromMe: false }, message: { conversation: 'two' } }]);
    await waitFor(() => eventsOf(h.events, 'incoming').length === 1, 2_000, 'first incoming');
    await sleep(100);
    expect(eventsOf(h.events, 'incoming')).toHaveLength(1);
    h.release();
    await waitFor(() => eventsOf(h.events, 'incoming').length === 2, 2_000, 'second incoming');
    h.hold(false);
    h.release();
  });
});

describe('logs', () => {
  it('say what happened to the link without message content, QR or pairing codes, or keys', async () => {
    const h = await harness();
    const device = await insertDevice(wa.ctx, wa.tenant.accountId);
    const session = await h.open(device);
    const first = await h.fake.waitForSockets(1);
    const qr = eventsOf(h.events, 'qr')[0]?.code ?? (await waitFor(() => eventsOf(h.events, 'qr')[0]?.code, 2_000, 'qr'));
    const { code } = await session.requestPairingCode('6281234567099');
    first.pairSuccess('6281234567099');
    h.fake.script = (s) => s.open();
    const socket = await h.fake.waitForSockets(2);
    await waitFor(() => eventsOf(h.events, 'connected').length === 1, 2_000, 'connected');
    await session.send(text('WGLOG', '6281200000077', 'top secret content'));
    socket.incoming([{ key: { remoteJid: '6281366666666@s.whatsapp.net', id: 'LOGIN', fromMe: false }, message: { conversation: 'incoming secret words' } }]);
    await waitFor(() => eventsOf(h.events, 'incoming').length === 1, 2_000, 'incoming');
    socket.close(428, 'Connection Terminated');
    await waitFor(() => eventsOf(h.events, 'disconnected').length === 1, 2_000, 'disconnected');

    const all = h.logs.join('');
    for (const phrase of ['QR code shown', 'connecting to WhatsApp', 'paired with the phone', 'WhatsApp connection open', 'WhatsApp connection closed', '"statusCode":428', '"statusCode":515']) {
      expect(all).toContain(phrase);
    }
    const creds = socket.auth.creds as { noiseKey: { private: Buffer }; advSecretKey: string };
    for (const secret of ['top secret content', 'incoming secret words', qr, code, creds.advSecretKey, Buffer.from(creds.noiseKey.private).toString('base64'), '6281234567099', '6281366666666']) {
      expect(all).not.toContain(secret);
    }
  });
});
