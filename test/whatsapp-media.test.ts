/**
 * Incoming media on NETWORK=whatsapp, through the API: messages shaped as Baileys 7 emits them
 * (imageMessage, audioMessage with ptt, documentWithCaptionMessage, stickerMessage, videoMessage,
 * each with url, directPath, mediaKey, fileSha256, fileEncSha256, fileLength), their files
 * encrypted with Baileys' own encryptedStream and served by an HTTPS server on 127.0.0.1 (Baileys
 * downloads https://<host of url><directPath>), downloaded and decrypted by Baileys' own
 * downloadMediaMessage, stored, and served by GET /messages/:id/media byte for byte. A file
 * expired on WhatsApp's servers (410) is asked of the sender's phone again (re-upload request)
 * and then downloaded; a phone that cannot, and a file that does not match its SHA-256, leave
 * a clear error on a message that is still stored.
 */
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, getGlobalDispatcher, setGlobalDispatcher, type Dispatcher } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Tenant, TestContext } from './helpers.js';
import { expectError, expectOk, getDevice, waitFor, type MessageBody } from './messaging-helpers.js';
import { boom, type FakeBaileys, type FakeSocket } from './whatsapp/fake-socket.js';
import { startWhatsAppHarness, type WhatsAppApp } from './whatsapp/harness.js';

type MediaKind = 'image' | 'video' | 'audio' | 'document' | 'sticker';
interface Encrypted {
  mediaKey: Buffer;
  fileSha256: Buffer;
  fileEncSha256: Buffer;
  fileLength: number;
  encrypted: Buffer;
}

let app: WhatsAppApp | undefined;
let ctx: TestContext;
let tenant: Tenant;
let fake: FakeBaileys;
let server: https.Server;
let host = '';
let certDir = '';
let previousDispatcher: Dispatcher;
let socket: FakeSocket;
/** What the media server serves, by path: the encrypted bytes, or an HTTP status. */
const served = new Map<string, Buffer | number>();
const hits: string[] = [];
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** Baileys' own encryption of a file, as the sender's phone uploads it. */
async function encrypt(data: Buffer, kind: MediaKind): Promise<Encrypted> {
  const { encryptedStream } = (await import('baileys')) as unknown as {
    encryptedStream(media: Buffer, type: MediaKind): Promise<{ mediaKey: Buffer; encFilePath: string; fileSha256: Buffer; fileEncSha256: Buffer; fileLength: number }>;
  };
  const result = await encryptedStream(data, kind);
  const encrypted = readFileSync(result.encFilePath);
  unlinkSync(result.encFilePath);
  return { mediaKey: result.mediaKey, fileSha256: result.fileSha256, fileEncSha256: result.fileEncSha256, fileLength: result.fileLength, encrypted };
}

/** The media fields of a Baileys message for a file uploaded at `directPath`. */
function uploaded(file: Encrypted, directPath: string, mimetype: string): Record<string, unknown> {
  served.set(directPath, file.encrypted);
  return {
    url: `https://${host}${directPath}?ccb=11-4&oh=01_x&oe=6800AAAA&_nc_sid=5e03e0&mms3=true`,
    directPath: `${directPath}?ccb=11-4&oh=01_x&oe=6800AAAA&_nc_sid=5e03e0`,
    mimetype,
    mediaKey: file.mediaKey,
    fileSha256: file.fileSha256,
    fileEncSha256: file.fileEncSha256,
    fileLength: file.fileLength,
    mediaKeyTimestamp: 1_700_000_000,
  };
}

beforeAll(async () => {
  // A certificate for 127.0.0.1, trusted by this process's fetch (which Baileys downloads with).
  certDir = mkdtempSync(join(tmpdir(), 'waygate-media-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(certDir, 'key.pem'), '-out', join(certDir, 'cert.pem'), '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
  const cert = readFileSync(join(certDir, 'cert.pem'));
  server = https.createServer({ key: readFileSync(join(certDir, 'key.pem')), cert }, (request, response) => {
    const path = new URL(request.url ?? '/', 'https://x').pathname;
    hits.push(path);
    const answer = served.get(path);
    if (answer === undefined) response.writeHead(404).end();
    else if (typeof answer === 'number') response.writeHead(answer).end();
    else response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': answer.length }).end(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  previousDispatcher = getGlobalDispatcher();
  setGlobalDispatcher(new Agent({ connect: { ca: cert } }));

  app = await startWhatsAppHarness({ NETWORK: 'whatsapp' }, { whatsapp: { warmupDailyCaps: [] } });
  ({ ctx, tenant, fake } = app);

  // A linked device: QR, scan, restart, open.
  const added = expectOk<{ data: { id: string } }>(await ctx.app.inject({ method: 'POST', url: '/devices', headers: tenant.headers, payload: { name: 'shop' } }), 201);
  const first = await fake.waitForSockets(1);
  fake.script = (s) => s.open();
  first.pairSuccess('6281377777777');
  socket = await fake.waitForSockets(2);
  await waitFor(async () => (await getDevice(ctx, tenant, added.data.id)).status === 'CONNECTED', 5_000, 'CONNECTED');
}, 120_000);

afterAll(async () => {
  await app?.close();
  if (previousDispatcher) setGlobalDispatcher(previousDispatcher);
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  if (certDir) rmSync(certDir, { recursive: true, force: true });
});

let count = 0;
/** The sender sends `message` (content as Baileys' proto.IMessage); resolves with the stored record. */
async function receive(id: string, message: Record<string, unknown>): Promise<MessageBody> {
  socket.incoming([{ key: { remoteJid: '6281388888888@s.whatsapp.net', id, fromMe: false }, message, messageTimestamp: 1_700_000_100, pushName: 'Ani' }]);
  count++;
  return waitFor(() => byNetworkId(id), 20_000, `incoming ${id} stored`);
}

async function byNetworkId(networkId: string): Promise<MessageBody | undefined> {
  const [row] = await ctx.database.query<{ id: string }>('SELECT id FROM messages WHERE network_message_id = $1 AND direction = $2', [networkId, 'in']);
  if (!row) return undefined;
  return expectOk<{ data: MessageBody }>(await ctx.app.inject({ method: 'GET', url: `/messages/${row.id}`, headers: tenant.headers })).data;
}

async function download(message: MessageBody, headers: Record<string, string> = {}) {
  return ctx.app.inject({ method: 'GET', url: message.mediaUrl ?? `/messages/${message.id}/media`, headers: { ...tenant.headers, ...headers } });
}

describe('incoming WhatsApp media', () => {
  it('image, voice note, document, sticker and video: downloaded with Baileys, decrypted, stored and served byte for byte', async () => {
    const files: [string, MediaKind, string, Buffer, (fields: Record<string, unknown>) => Record<string, unknown>][] = [
      ['IMAGE', 'image', 'image/jpeg', randomBytes(150_000), (f) => ({ imageMessage: { ...f, caption: 'the crack', height: 800, width: 600, jpegThumbnail: Buffer.alloc(10) } })],
      ['AUDIO', 'audio', 'audio/ogg; codecs=opus', randomBytes(30_000), (f) => ({ audioMessage: { ...f, seconds: 4, ptt: true, waveform: Buffer.alloc(64) } })],
      [
        'DOCUMENT',
        'document',
        'application/pdf',
        randomBytes(600_000),
        (f) => ({ documentWithCaptionMessage: { message: { documentMessage: { ...f, fileName: 'Invoice 7.pdf', title: 'Invoice 7', caption: 'invoice', pageCount: 2 } } } }),
      ],
      ['STICKER', 'sticker', 'image/webp', randomBytes(12_000), (f) => ({ stickerMessage: { ...f, isAnimated: false, height: 512, width: 512 } })],
      ['VIDEO', 'video', 'video/mp4', randomBytes(400_000), (f) => ({ ephemeralMessage: { message: { videoMessage: { ...f, seconds: 9, gifPlayback: false } } } })],
    ];
    for (const [type, kind, mimetype, data, shape] of files) {
      const file = await encrypt(data, kind);
      const message = await receive(`WA-${type}`, shape(uploaded(file, `/v/t62.7118-24/${type.toLowerCase()}-${count}.enc`, mimetype)));
      expect(message, type).toMatchObject({
        type,
        direction: 'in',
        mediaUrl: `/messages/${message.id}/media`,
        media: { mimeType: mimetype, sizeBytes: data.length, status: 'STORED', sha256: sha256(data) },
      });
      const whole = await download(message);
      expect(whole.statusCode, type).toBe(200);
      expect(sha256(whole.rawPayload), type).toBe(sha256(data));
      expect(whole.headers['content-type']).toBe(mimetype);
      const part = await download(message, { range: 'bytes=100-199' });
      expect(part.statusCode).toBe(206);
      expect(part.rawPayload.equals(data.subarray(100, 200))).toBe(true);
    }
    const document = await byNetworkId('WA-DOCUMENT');
    expect(document).toMatchObject({ content: 'invoice', media: { fileName: 'Invoice 7.pdf' } });
    expect((await download(document!)).headers['content-disposition']).toContain(`filename*=UTF-8''Invoice%207.pdf`);
    expect((await byNetworkId('WA-AUDIO'))?.media).toMatchObject({ seconds: 4 });
    expect(socket.reuploadRequests).toEqual([]);
  }, 120_000);

  it('a file expired on WhatsApp (410) is asked of the sender’s phone again, then downloaded from its new path', async () => {
    const data = randomBytes(50_000);
    const file = await encrypt(data, 'image');
    const fields = uploaded(file, '/v/t62.7118-24/expired.enc', 'image/jpeg');
    served.set('/v/t62.7118-24/expired.enc', 410);
    socket.reupload = () => {
      // The phone uploads the same encrypted file again, elsewhere.
      served.set('/v/t62.7118-24/reuploaded.enc', file.encrypted);
      return '/v/t62.7118-24/reuploaded.enc?ccb=11-4';
    };
    const message = await receive('WA-EXPIRED', { imageMessage: { ...fields, caption: 'old photo' } });
    expect(message).toMatchObject({ content: 'old photo', media: { status: 'STORED', sha256: sha256(data) } });
    expect(sha256((await download(message)).rawPayload)).toBe(sha256(data));
    expect(socket.reuploadRequests).toEqual(['WA-EXPIRED']);
    expect(hits.filter((path) => path.includes('expired') || path.includes('reuploaded'))).toEqual(['/v/t62.7118-24/expired.enc', '/v/t62.7118-24/reuploaded.enc']);
  });

  it('a phone that cannot upload it again, or a file that is not what the sender described: a clear error, the message stored', async () => {
    const file = await encrypt(randomBytes(5_000), 'document');
    const goneFields = uploaded(file, '/v/t62.7118-24/gone.enc', 'application/pdf');
    served.set('/v/t62.7118-24/gone.enc', 404);
    socket.reupload = () => boom(404, 'Media re-upload failed by device (NOT_FOUND)');
    const gone = await receive('WA-GONE', { documentMessage: { ...goneFields, fileName: 'old.pdf' } });
    expect(gone).toMatchObject({ mediaUrl: null, media: { status: 'FAILED', fileName: 'old.pdf', error: { code: 'MEDIA_EXPIRED', message: expect.stringMatching(/did not upload it again/) } } });
    expectError(await download(gone), 404, 'NOT_FOUND');
    expect(socket.reuploadRequests).toEqual(['WA-EXPIRED', 'WA-GONE']);

    // The bytes decrypt, but are not the file whose SHA-256 the message carries: tried three times, then FAILED.
    const other = await encrypt(randomBytes(5_000), 'image');
    const fields = uploaded(other, '/v/t62.7118-24/tampered.enc', 'image/jpeg');
    const corrupt = await receive('WA-CORRUPT', { imageMessage: { ...fields, fileSha256: Buffer.alloc(32, 1) } });
    expect(corrupt.media).toMatchObject({ status: 'FAILED', error: { code: 'MEDIA_CORRUPT' } });
    expect(hits.filter((path) => path === '/v/t62.7118-24/tampered.enc')).toHaveLength(3);

    const events = expectOk<{ data: { type: string; data: MessageBody }[] }>(await ctx.app.inject({ method: 'GET', url: '/events?type=message.received&limit=100', headers: tenant.headers })).data;
    expect(events.map((e) => e.data.id)).toEqual(expect.arrayContaining([gone.id, corrupt.id]));
  }, 60_000);
});
