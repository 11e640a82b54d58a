/**
 * Incoming messages across processes on PostgreSQL: two `api` processes and one `worker` of the
 * real CLI share one database. The phone (the sandbox) sends every kind: a file of each media
 * kind, a location, contact cards and a poll. The worker stores each (downloading the files into
 * the database); both API processes, neither of which downloaded anything, list every kind with
 * its fields and serve each file byte for byte (SHA-256), with ranges across chunk boundaries.
 */
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHUNK_SIZE } from '../../src/media/media-store.js';
import { postgresUrlForFaultTests } from '../postgres.js';
import { createCluster, until, type Cluster, type Proc } from './cluster.js';

const baseUrl = postgresUrlForFaultTests();
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
const VIDEO = randomBytes(CHUNK_SIZE * 3 + 777);
/** What the phone sends, by path: the file's content type and bytes. */
const FILES: Record<string, { type: string; data: Buffer }> = {
  '/clip.mp4': { type: 'video/mp4', data: VIDEO },
  '/photo.jpg': { type: 'image/jpeg', data: Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), randomBytes(CHUNK_SIZE + 5)]) },
  '/voice.ogg': { type: 'audio/ogg', data: Buffer.concat([Buffer.from('OggS'), randomBytes(40_000)]) },
  '/invoice.pdf': { type: 'application/pdf', data: Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(70_000)]) },
  '/sticker.webp': { type: 'image/webp', data: Buffer.concat([Buffer.from('RIFF'), Buffer.from([0x24, 0, 0, 0]), Buffer.from('WEBPVP8 '), randomBytes(9_000)]) },
};
/** Every kind the phone sends, in order: its body for POST /sandbox/incoming and the file it carries. */
const KINDS: { type: string; body: Record<string, unknown>; file?: string }[] = [
  { type: 'VIDEO', body: { content: 'the clip' }, file: '/clip.mp4' },
  { type: 'IMAGE', body: { content: 'the shop' }, file: '/photo.jpg' },
  { type: 'AUDIO', body: { content: '', voice: true }, file: '/voice.ogg' },
  { type: 'DOCUMENT', body: { content: 'the invoice' }, file: '/invoice.pdf' },
  { type: 'STICKER', body: { content: '' }, file: '/sticker.webp' },
  { type: 'LOCATION', body: { content: '', location: { latitude: -6.2, longitude: 106.8, name: 'Shop' } } },
  { type: 'CONTACT', body: { content: '', contacts: [{ name: 'Budi', phoneNumber: '6281399998888' }] } },
  { type: 'POLL', body: { content: 'Open on Sunday?', poll: { options: ['Yes', 'No'] } } },
];
type Stored = { id: string; type: string; mediaUrl: string | null; media: { status?: string; sha256?: string; mimeType?: string } | null; location: unknown; contacts: unknown; poll: unknown };

describe('every incoming kind stored and its media served by every API process (PostgreSQL, 2 api + 1 worker processes)', () => {
  let cluster: Cluster;
  let server: http.Server;
  let origin = '';

  beforeAll(async () => {
    server = http.createServer((request, response) => {
      const file = FILES[request.url ?? ''];
      if (!file) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { 'content-type': file.type, 'content-length': file.data.length });
      response.end(file.data);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    cluster = await createCluster(baseUrl, 'waygate_media', { LEASE_MS: '2000', SANDBOX_RECEIPT_MS: '200', RATE_LIMIT_PER_MINUTE: '0', ALLOW_PRIVATE_URLS: 'true' });
  }, 60_000);

  afterAll(async () => {
    await cluster?.close();
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
  }, 60_000);

  const get = (proc: Proc, path: string, headers: Record<string, string> = {}) => fetch(`${proc.origin}${path}`, { headers: { 'x-api-key': cluster.token, ...headers } });

  it('the worker stores every kind; both API processes list each and serve each file byte for byte, ranges included', async () => {
    // One at a time: each compiles the sources at start, and the machine may be busy.
    const api1 = await cluster.start('api-1', 'api');
    const api2 = await cluster.start('api-2', 'api');
    await cluster.start('worker-1', 'worker');

    const created = await cluster.api<{ data: { id: string }; qr: { code: string } | null }>(api1, 'POST', '/devices', { name: 'media phone' });
    expect(created.status).toBe(201);
    const deviceId = created.json.data.id;
    const qr = created.json.qr ?? (await cluster.api<{ data: { code: string } }>(api2, 'GET', `/devices/${deviceId}/qr`)).json.data;
    expect((await cluster.api(api2, 'POST', '/sandbox/scan', { code: qr.code, phoneNumber: '6281300000001' })).status).toBe(200);
    await until('the device to connect', 30_000, async () => {
      const device = await cluster.api<{ data: { status: string } }>(api1, 'GET', `/devices/${deviceId}`);
      return device.json.data.status === 'CONNECTED' ? true : undefined;
    });

    for (const kind of KINDS) {
      const body = { deviceId, from: '6281388800001', type: kind.type, ...kind.body, ...(kind.file ? { mediaUrl: `${origin}${kind.file}` } : {}) };
      expect((await cluster.api(api1, 'POST', '/sandbox/incoming', body)).status, kind.type).toBe(202);
    }
    const stored = await until('every incoming kind stored', 60_000, async () => {
      const page = await cluster.api<{ data: Stored[] }>(api2, 'GET', '/messages?direction=in&limit=50');
      return page.json.data.length === KINDS.length ? page.json.data : undefined;
    });
    for (const api of [api1, api2]) {
      const listed = (await cluster.api<{ data: Stored[] }>(api, 'GET', '/messages?direction=in&limit=50')).json.data;
      for (const kind of KINDS) {
        const record = listed.find((m) => m.type === kind.type);
        expect(record, `${api.name} ${kind.type}`).toBeDefined();
        if (kind.type === 'LOCATION') expect(record!.location).toMatchObject(kind.body.location as object);
        if (kind.type === 'CONTACT') expect(record!.contacts).toEqual(kind.body.contacts);
        if (kind.type === 'POLL') expect(record!.poll).toMatchObject({ options: ['Yes', 'No'] });
        if (!kind.file) {
          expect(record!.mediaUrl, kind.type).toBeNull();
          continue;
        }
        const file = FILES[kind.file]!;
        expect(record!.media, `${api.name} ${kind.type}`).toMatchObject({ status: 'STORED', sha256: sha256(file.data), mimeType: file.type });
        expect(record!.mediaUrl).toBe(`/messages/${record!.id}/media`);
        const whole = await get(api, record!.mediaUrl!);
        expect(whole.status, `${api.name} ${kind.type}`).toBe(200);
        expect(whole.headers.get('content-type')).toBe(file.type);
        expect(sha256(Buffer.from(await whole.arrayBuffer())), `${api.name} ${kind.type}`).toBe(sha256(file.data));
      }
    }
    const message = stored.find((m) => m.type === 'VIDEO')!;

    for (const api of [api1, api2]) {
      const whole = await get(api, message.mediaUrl!);
      expect(whole.status, api.name).toBe(200);
      expect(whole.headers.get('content-length')).toBe(String(VIDEO.length));
      expect(whole.headers.get('content-type')).toBe('video/mp4');
      expect(sha256(Buffer.from(await whole.arrayBuffer())), api.name).toBe(sha256(VIDEO));

      const start = CHUNK_SIZE - 10;
      const end = CHUNK_SIZE * 2 + 10;
      const part = await get(api, `/v1${message.mediaUrl!}`, { range: `bytes=${start}-${end}` });
      expect(part.status, api.name).toBe(206);
      expect(part.headers.get('content-range')).toBe(`bytes ${start}-${end}/${VIDEO.length}`);
      expect(Buffer.from(await part.arrayBuffer()).equals(VIDEO.subarray(start, end + 1)), api.name).toBe(true);

      expect((await get(api, message.mediaUrl!, { range: `bytes=${VIDEO.length}-` })).status).toBe(416);
    }
  }, 180_000);
});
