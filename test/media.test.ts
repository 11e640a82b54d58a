/**
 * The media store through the API on the sandbox network: every incoming media kind the phone
 * sends is downloaded when it arrives and served by GET /messages/:id/media byte for byte (SHA-256),
 * with its headers and Range requests; a file that cannot be downloaded leaves a clear error on a
 * message that is still stored and announced; files past MEDIA_RETENTION_DAYS are pruned and the
 * message says so; an oversize or unreachable file of a send fails the message, sent never.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Housekeeping } from '../src/housekeeping.js';
import { CHUNK_SIZE } from '../src/media/media-store.js';
import { parseRange } from '../src/http/routes/media.js';
import { createTenant, createTestApp, type Tenant, type TestContext } from './helpers.js';
import { call, expectError, expectOk, linkDevice, listMessages, MESSAGING_ENV, phone, sandboxMessages, sendDirect, waitFor, waitForStatus, type MessageBody } from './messaging-helpers.js';

let ctx: TestContext;
let server: http.Server;
let origin = '';
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

const WEBP = Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 '), randomBytes(20_000)]);
/** What the phone sends, by path: content type, bytes, and a file name in Content-Disposition. */
const FILES: Record<string, { type: string; data: Buffer; disposition?: string }> = {
  '/photo.jpg': { type: 'image/jpeg', data: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(300_000)]) },
  '/clip.mp4': { type: 'video/mp4', data: randomBytes(CHUNK_SIZE * 2 + 12_345) },
  '/voice.ogg': { type: 'audio/ogg; codecs=opus', data: Buffer.concat([Buffer.from('OggS'), randomBytes(40_000)]) },
  '/download?id=7': { type: 'application/pdf', data: Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(CHUNK_SIZE + 1)]), disposition: `attachment; filename*=UTF-8''Rechnung%20M%C3%A4rz.pdf` },
  '/sticker.webp': { type: 'image/webp', data: WEBP },
};
const requests = new Map<string, number>();
/** Bytes the streaming route wrote, by URL. */
const streamed = new Map<string, number>();

beforeAll(async () => {
  server = http.createServer((request, response) => {
    const url = request.url ?? '/';
    requests.set(url, (requests.get(url) ?? 0) + 1);
    const file = FILES[url];
    if (file) {
      response.writeHead(200, { 'content-type': file.type, 'content-length': file.data.length, ...(file.disposition ? { 'content-disposition': file.disposition } : {}) });
      response.end(file.data);
    } else if (url === '/flaky-500') {
      response.writeHead(500).end();
    } else if (url === '/huge.jpg') {
      // Declares nothing and sends more than an IMAGE may have (5 MB).
      response.writeHead(200, { 'content-type': 'image/jpeg' });
      const piece = Buffer.alloc(1024 * 1024, 1);
      for (let i = 0; i < 6; i++) response.write(piece);
      response.end();
    } else if (url === '/video-100mb.mp4' || url === '/sticker-20mb.webp') {
      const megabytes = url === '/video-100mb.mp4' ? 105 : 20;
      response.writeHead(200, { 'content-type': url.endsWith('.mp4') ? 'video/mp4' : 'image/webp', 'content-length': megabytes * 1024 * 1024 });
      response.on('error', () => undefined);
      response.write(Buffer.alloc(1024));
      // Never sends the rest: the declared length alone must fail the send.
      request.socket.on('close', () => response.destroy());
    } else if (url.startsWith('/video-stream-110mb.mp4')) {
      // 110 MB declared nowhere, made one 1 MB piece at a time as the reader takes them (never
      // held whole): the reader must stop at the cap of its type.
      response.writeHead(200, { 'content-type': 'video/mp4' });
      const piece = Buffer.alloc(1024 * 1024, 2);
      let left = 110;
      const pump = (): void => {
        while (left > 0 && !response.destroyed) {
          left--;
          streamed.set(url, (streamed.get(url) ?? 0) + piece.length);
          if (!response.write(piece)) {
            response.once('drain', pump);
            return;
          }
        }
        if (left === 0) response.end();
      };
      response.on('error', () => undefined);
      request.socket.on('close', () => response.destroy());
      pump();
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  ctx = await createTestApp({ ...MESSAGING_ENV, ALLOW_PRIVATE_URLS: 'true', MEDIA_RETENTION_DAYS: '30' }, { worker: true });
}, 180_000);
afterAll(async () => {
  await ctx?.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function media(tenant: Tenant, id: string, headers: Record<string, string> = {}, prefix = '') {
  return ctx.app.inject({ method: 'GET', url: `${prefix}/messages/${id}/media`, headers: { ...tenant.headers, ...headers } });
}

async function incoming(tenant: Tenant, deviceId: string, from: string, count: number, body: Record<string, unknown>, timeoutMs = 20_000): Promise<MessageBody> {
  expectOk(await call(ctx, tenant, 'POST', '/sandbox/incoming', { deviceId, from, content: '', ...body }), 202);
  return waitFor(
    async () => {
      const page = await listMessages(ctx, tenant, `direction=in&limit=100&to=${from}`);
      return page.meta.total === count ? page.data[0] : undefined;
    },
    timeoutMs,
    `incoming message ${count} from ${from}`,
  );
}

describe('incoming media, stored when it arrives', () => {
  it('every kind is stored and served byte for byte, with its type, name, length, ETag and ranges', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const from = phone();
    const kinds: [string, string, Record<string, unknown>, string][] = [
      ['IMAGE', '/photo.jpg', { content: 'look' }, 'photo.jpg'],
      ['VIDEO', '/clip.mp4', {}, 'clip.mp4'],
      ['AUDIO', '/voice.ogg', { voice: true }, 'voice.ogg'],
      ['DOCUMENT', '/download?id=7', {}, 'Rechnung März.pdf'],
      ['STICKER', '/sticker.webp', {}, 'sticker.webp'],
    ];
    let count = 0;
    for (const [type, path, extra, fileName] of kinds) {
      const file = FILES[path]!;
      const message = await incoming(tenant, device.id, from, ++count, { type, mediaUrl: `${origin}${path}`, ...extra });
      const mimeType = file.type.split(';')[0];
      expect(message, type).toMatchObject({
        type,
        direction: 'in',
        status: 'RECEIVED',
        mediaUrl: `/messages/${message.id}/media`,
        media: { mimeType, fileName, sizeBytes: file.data.length, status: 'STORED', sha256: sha256(file.data) },
      });

      const whole = await media(tenant, message.id);
      expect(whole.statusCode, type).toBe(200);
      expect(sha256(whole.rawPayload), type).toBe(sha256(file.data));
      expect(whole.headers['content-type']).toBe(mimeType);
      expect(Number(whole.headers['content-length'])).toBe(file.data.length);
      expect(whole.headers['accept-ranges']).toBe('bytes');
      expect(whole.headers.etag).toBe(`"${sha256(file.data)}"`);
      expect(whole.headers['content-disposition']).toContain(`filename*=UTF-8''${encodeURIComponent(fileName)}`);
      expect(whole.headers['content-disposition']).toMatch(type === 'DOCUMENT' ? /^attachment;/ : /^inline;/);
      expect(whole.headers['content-security-policy']).toMatch(/sandbox/);
      // The same at /v1.
      expect(sha256((await media(tenant, message.id, {}, '/v1')).rawPayload)).toBe(sha256(file.data));
    }

    // Ranges on the video (three chunks): across a chunk boundary, open-ended, a suffix.
    const video = (await listMessages(ctx, tenant, `direction=in&to=${from}&limit=100`)).data.find((m) => m.type === 'VIDEO')!;
    const data = FILES['/clip.mp4']!.data;
    const size = data.length;
    for (const [header, start, end] of [
      [`bytes=0-9`, 0, 9],
      [`bytes=${CHUNK_SIZE - 5}-${CHUNK_SIZE + 4}`, CHUNK_SIZE - 5, CHUNK_SIZE + 4],
      [`bytes=${CHUNK_SIZE * 2}-`, CHUNK_SIZE * 2, size - 1],
      [`bytes=-100`, size - 100, size - 1],
      [`bytes=10-${size + 1000}`, 10, size - 1],
    ] as const) {
      const part = await media(tenant, video.id, { range: header });
      expect(part.statusCode, header).toBe(206);
      expect(part.headers['content-range'], header).toBe(`bytes ${start}-${end}/${size}`);
      expect(Number(part.headers['content-length']), header).toBe(end - start + 1);
      expect(part.rawPayload.equals(data.subarray(start, end + 1)), header).toBe(true);
    }
    for (const header of [`bytes=${size}-`, `bytes=${size + 5}-${size + 10}`, 'bytes=50-10', 'bytes=-0']) {
      const refused = await media(tenant, video.id, { range: header });
      expectError(refused, 416, 'RANGE_NOT_SATISFIABLE');
      expect(refused.headers['content-range'], header).toBe(`bytes */${size}`);
    }
    // Not a single byte range: the whole file.
    for (const header of ['bytes=0-1,5-6', 'items=0-1', 'nonsense']) {
      const whole = await media(tenant, video.id, { range: header });
      expect(whole.statusCode, header).toBe(200);
      expect(whole.rawPayload.length).toBe(size);
    }
    // HEAD: the headers alone.
    const head = await ctx.app.inject({ method: 'HEAD', url: `/messages/${video.id}/media`, headers: tenant.headers });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-length']).toBe(String(size));
    expect(head.rawPayload.length).toBe(0);
    // A cached copy: 304; an If-Range with another ETag: the whole file.
    expect((await media(tenant, video.id, { 'if-none-match': `"${sha256(data)}"` })).statusCode).toBe(304);
    expect((await media(tenant, video.id, { range: 'bytes=0-9', 'if-range': '"other"' })).statusCode).toBe(200);

    // message.received carries the same record: its mediaUrl serves the file.
    const events = expectOk<{ data: { type: string; data: MessageBody }[] }>(await call(ctx, tenant, 'GET', '/events?limit=100')).data;
    const received = events.filter((e) => e.type === 'message.received').map((e) => e.data);
    expect(received).toHaveLength(kinds.length);
    for (const message of received) expect(message).toEqual(await getOne(tenant, message.id));
    // Each file was downloaded once.
    for (const [, path] of kinds) expect(requests.get(path), path).toBe(1);
  }, 120_000);

  it('404 for an unknown message, another account’s, an outgoing one, and one without a file', async () => {
    const tenant = await createTenant(ctx);
    const other = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const from = phone();
    const image = await incoming(tenant, device.id, from, 1, { type: 'IMAGE', mediaUrl: `${origin}/photo.jpg` });
    expect((await media(tenant, image.id)).statusCode).toBe(200);
    expect(expectError(await media(other, image.id), 404, 'NOT_FOUND').error.message).toBe('Message not found');
    expectError(await media(tenant, 'msg_nope'), 404, 'NOT_FOUND');
    const text = await incoming(tenant, device.id, from, 2, { type: 'TEXT', content: 'hi' });
    expect(text).toMatchObject({ mediaUrl: null, media: null });
    expectError(await media(tenant, text.id), 404, 'NOT_FOUND');
    const sent = await sendDirect(ctx, tenant, { type: 'IMAGE', mediaUrl: `${origin}/photo.jpg`, content: 'out', to: from });
    expect(sent.message.mediaUrl).toBe(`${origin}/photo.jpg`);
    expect(expectError(await media(tenant, sent.message.id), 404, 'NOT_FOUND').error.message).toMatch(/only incoming media/);
  });

  it('a file that cannot be downloaded: retried, then a clear error on a message that is stored and announced', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const from = phone();
    // 404: the file is gone; not tried again.
    const gone = await incoming(tenant, device.id, from, 1, { type: 'DOCUMENT', content: 'the contract', mediaUrl: `${origin}/missing.pdf` });
    expect(gone).toMatchObject({ content: 'the contract', mediaUrl: null, media: { status: 'FAILED', error: { code: 'MEDIA_UNREACHABLE', message: expect.stringMatching(/HTTP 404/) } } });
    expect(requests.get('/missing.pdf')).toBe(1);
    expect(expectError(await media(tenant, gone.id), 404, 'NOT_FOUND').error.message).toMatch(/could not be downloaded.*HTTP 404/);
    // 500: tried three times, then given up.
    const flaky = await incoming(tenant, device.id, from, 2, { type: 'IMAGE', mediaUrl: `${origin}/flaky-500` });
    expect(flaky.media).toMatchObject({ status: 'FAILED', error: { code: 'MEDIA_UNREACHABLE', message: expect.stringMatching(/HTTP 500 \(gave up after 3 attempts\)/) } });
    expect(requests.get('/flaky-500')).toBe(3);
    // Over the cap of its type (an IMAGE above 5 MB, its length not declared).
    const huge = await incoming(tenant, device.id, from, 3, { type: 'IMAGE', mediaUrl: `${origin}/huge.jpg` });
    expect(huge.media).toMatchObject({ status: 'FAILED', error: { code: 'MEDIA_TOO_LARGE' } });
    // A 110 MB video from the phone, its length not declared: cut off at 16 MB, stored without it.
    const video = await incoming(tenant, device.id, from, 4, { type: 'VIDEO', content: 'the whole party', mediaUrl: `${origin}/video-stream-110mb.mp4?in` }, 60_000);
    expect(video).toMatchObject({ content: 'the whole party', mediaUrl: null, media: { status: 'FAILED', error: { code: 'MEDIA_TOO_LARGE' } } });
    expect(requests.get('/video-stream-110mb.mp4?in')).toBe(1);
    expect(streamed.get('/video-stream-110mb.mp4?in')).toBeLessThan(48 * 1024 * 1024);
    expect(expectError(await media(tenant, video.id), 404, 'NOT_FOUND').error.message).toMatch(/could not be downloaded/);
    // Nothing half-written stays behind, and each message.received went out with its error.
    const [left] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM media WHERE account_id = $1', [tenant.accountId]);
    expect(left!.n).toBe(0);
    const events = expectOk<{ data: { type: string; data: MessageBody }[] }>(await call(ctx, tenant, 'GET', '/events?limit=100')).data;
    expect(events.filter((e) => e.type === 'message.received').map((e) => e.data.media?.status)).toEqual(['FAILED', 'FAILED', 'FAILED', 'FAILED']);
  }, 180_000);

  it('files past MEDIA_RETENTION_DAYS are pruned in batches, and their messages say so', async () => {
    const tenant = await createTenant(ctx);
    const device = await linkDevice(ctx, tenant);
    const from = phone();
    const old = await incoming(tenant, device.id, from, 1, { type: 'IMAGE', mediaUrl: `${origin}/photo.jpg` });
    const recent = await incoming(tenant, device.id, from, 2, { type: 'STICKER', mediaUrl: `${origin}/sticker.webp` });
    await ctx.database.query(`UPDATE media SET created_at = now() - interval '31 days' WHERE message_id = $1`, [old.id]);
    // A file whose writing never finished (a crash mid-download), two days old.
    await ctx.database.query(`INSERT INTO media (message_id, account_id, content_type, chunk_size, created_at) VALUES ('msg_unfinished_${tenant.accountId}', $1, 'image/png', $2, now() - interval '2 days')`, [
      tenant.accountId,
      CHUNK_SIZE,
    ]);
    const housekeeping = new Housekeeping(ctx.database, ctx.config, pino({ level: 'silent' }));
    expect((await housekeeping.pruneOnce()).media).toBe(2);
    expect((await housekeeping.pruneOnce()).media).toBe(0);
    const expired = await getOne(tenant, old.id);
    expect(expired).toMatchObject({ mediaUrl: null, media: { status: 'EXPIRED', sha256: old.media!.sha256, sizeBytes: old.media!.sizeBytes } });
    expect(expectError(await media(tenant, old.id), 404, 'NOT_FOUND').error.message).toMatch(/pruned after MEDIA_RETENTION_DAYS/);
    expect((await media(tenant, recent.id)).statusCode).toBe(200);
    const [chunks] = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM media_chunks WHERE message_id = $1', [old.id]);
    expect(chunks!.n).toBe(0);
  });
});

describe('files of sends: limits and unreachable URLs', () => {
  it('a 20 MB sticker, a 100 MB+ video and an unreachable URL each end FAILED with a clear error; nothing reaches the network', async () => {
    const tenant = await createTenant(ctx);
    await linkDevice(ctx, tenant);
    const to = phone();
    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'STICKER', mediaUrl: `${origin}/sticker-20mb.webp` }, 'MEDIA_TOO_LARGE'],
      // The same without a declared length: cut off at the cap (1 MB for a sticker).
      [{ type: 'STICKER', mediaUrl: `${origin}/huge.jpg` }, 'MEDIA_TOO_LARGE'],
      [{ type: 'VIDEO', mediaUrl: `${origin}/video-100mb.mp4`, content: 'big' }, 'MEDIA_TOO_LARGE'],
      // 110 MB streamed without a declared length: cut off at 16 MB.
      [{ type: 'VIDEO', mediaUrl: `${origin}/video-stream-110mb.mp4?send`, content: 'bigger' }, 'MEDIA_TOO_LARGE'],
      [{ type: 'IMAGE', mediaUrl: `${origin}/nowhere.jpg`, content: 'gone' }, 'MEDIA_UNREACHABLE'],
    ];
    const asked = (body: Record<string, unknown>): number => requests.get(String(body.mediaUrl).slice(origin.length)) ?? 0;
    const before = cases.map(([body]) => asked(body));
    for (const [body, code] of cases) {
      const sent = await sendDirect(ctx, tenant, { ...body, to });
      const failed = await waitForStatus(ctx, tenant, sent.message.id, 'FAILED', 30_000);
      expect(failed.error, String(body.mediaUrl)).toMatchObject({ code });
    }
    expect((await sandboxMessages(ctx, tenant, { to })).meta.total).toBe(0);
    // Each file was asked for once (the failures are final, not retried), and the stream was
    // read no further than the cap and what the sockets buffer.
    cases.forEach(([body], index) => expect(asked(body), String(body.mediaUrl)).toBe(before[index]! + 1));
    expect(streamed.get('/video-stream-110mb.mp4?send')).toBeLessThan(48 * 1024 * 1024);
    // Nothing is sent later either: every message stays FAILED with one attempt at most.
    const records = (await listMessages(ctx, tenant, `to=${to}&limit=10`)).data;
    expect(records.map((m) => m.status)).toEqual(cases.map(() => 'FAILED'));
  }, 180_000);
});

describe('parseRange', () => {
  it('reads one byte range; ignores what is not one; refuses what lies outside the file', () => {
    expect(parseRange(undefined, 10)).toBeUndefined();
    expect(parseRange('bytes=0-0', 10)).toEqual({ start: 0, end: 0 });
    expect(parseRange('bytes=-3', 10)).toEqual({ start: 7, end: 9 });
    expect(parseRange('bytes=-30', 10)).toEqual({ start: 0, end: 9 });
    expect(parseRange('bytes=4-', 10)).toEqual({ start: 4, end: 9 });
    expect(parseRange('bytes=-', 10)).toBeUndefined();
    expect(parseRange('bytes=1-2, 4-5', 10)).toBeUndefined();
    expect(parseRange('bytes=10-', 10)).toBe('unsatisfiable');
    expect(parseRange('bytes=0-', 0)).toBe('unsatisfiable');
  });
});

async function getOne(tenant: Tenant, id: string): Promise<MessageBody> {
  return expectOk<{ data: MessageBody }>(await call(ctx, tenant, 'GET', `/messages/${id}`)).data;
}
