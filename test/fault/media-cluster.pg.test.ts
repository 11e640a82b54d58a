/**
 * The media store across processes on PostgreSQL: two `api` processes and one `worker` of the
 * real CLI share one database. The phone (the sandbox) sends a file; the worker downloads it into
 * the database; both API processes, neither of which downloaded anything, serve it byte for byte
 * (SHA-256), with ranges across chunk boundaries.
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

describe('incoming media served by every API process (PostgreSQL, 2 api + 1 worker processes)', () => {
  let cluster: Cluster;
  let server: http.Server;
  let origin = '';

  beforeAll(async () => {
    server = http.createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'video/mp4', 'content-length': VIDEO.length });
      response.end(VIDEO);
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

  it('the worker stores the file; both API processes serve it byte for byte, ranges included', async () => {
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

    const sent = await cluster.api(api1, 'POST', '/sandbox/incoming', { deviceId, from: '6281388800001', type: 'VIDEO', content: 'the clip', mediaUrl: `${origin}/clip.mp4` });
    expect(sent.status).toBe(202);
    const message = await until('the incoming video stored', 30_000, async () => {
      const page = await cluster.api<{ data: { id: string; mediaUrl: string | null; media: { status?: string; sha256?: string } | null }[] }>(api2, 'GET', '/messages?direction=in');
      return page.json.data[0];
    });
    expect(message.media).toMatchObject({ status: 'STORED', sha256: sha256(VIDEO) });
    expect(message.mediaUrl).toBe(`/messages/${message.id}/media`);

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
