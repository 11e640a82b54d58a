/**
 * A proxy per device: the API takes it on POST and PATCH /devices, refuses what is not a usable
 * proxy URL (400 naming proxyUrl), never shows its password; and the agents it builds really
 * carry traffic through a local HTTP CONNECT proxy and a local SOCKS5 proxy, both requiring
 * credentials (the WebSocket's agent through Node's http client, the media dispatcher through
 * undici's fetch), including Baileys' own download of an incoming message's encrypted media.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maskProxyUrl, proxyAgent, proxyDispatcher, proxyUrlProblem } from '../src/devices/device-proxy.js';
import { baileysHelpers, loadBaileys } from '../src/network/whatsapp/baileys.js';
import { createTenant, type Tenant, type TestContext } from './helpers.js';
import { call, createMessagingApp, expectError, type DeviceBody } from './messaging-helpers.js';

interface Seen {
  target: string;
  credentials: string;
}

/** An HTTP proxy that tunnels CONNECT requests and notes each target and its Proxy-Authorization. */
function startConnectProxy(seen: Seen[]): Promise<http.Server> {
  const server = http.createServer((_, response) => response.writeHead(405).end());
  server.on('connect', (request: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    const auth = request.headers['proxy-authorization'] ?? '';
    seen.push({ target: request.url ?? '', credentials: Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString() });
    if (auth !== `Basic ${Buffer.from('shop:s3cret').toString('base64')}`) {
      client.end('HTTP/1.1 407 Proxy Authentication Required\r\n\r\n');
      return;
    }
    const [host, port] = (request.url ?? '').split(':');
    const upstream = net.connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

/** A SOCKS5 proxy (RFC 1928) with username/password authentication (RFC 1929), CONNECT only. */
function startSocks5Proxy(seen: Seen[]): Promise<net.Server> {
  const server = net.createServer((client) => {
    let buffer = Buffer.alloc(0);
    let stage: 'greeting' | 'auth' | 'request' | 'piping' = 'greeting';
    let credentials = '';
    client.on('error', () => undefined);
    client.on('data', (chunk: Buffer) => {
      if (stage === 'piping') return;
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        if (stage === 'greeting') {
          if (buffer.length < 2 || buffer.length < 2 + buffer[1]!) return;
          const methods = buffer.subarray(2, 2 + buffer[1]!);
          buffer = buffer.subarray(2 + buffer[1]!);
          if (!methods.includes(0x02)) return void client.end(Buffer.from([5, 0xff]));
          client.write(Buffer.from([5, 0x02]));
          stage = 'auth';
        } else if (stage === 'auth') {
          if (buffer.length < 2) return;
          const userLength = buffer[1]!;
          if (buffer.length < 3 + userLength || buffer.length < 3 + userLength + buffer[2 + userLength]!) return;
          const passwordLength = buffer[2 + userLength]!;
          credentials = `${buffer.subarray(2, 2 + userLength).toString()}:${buffer.subarray(3 + userLength, 3 + userLength + passwordLength).toString()}`;
          buffer = buffer.subarray(3 + userLength + passwordLength);
          if (credentials !== 'shop:s3cret') return void client.end(Buffer.from([1, 1]));
          client.write(Buffer.from([1, 0]));
          stage = 'request';
        } else if (stage === 'request') {
          if (buffer.length < 5) return;
          const type = buffer[3]!;
          const addressLength = type === 1 ? 4 : type === 4 ? 16 : 1 + buffer[4]!;
          if (buffer.length < 4 + addressLength + 2) return;
          const host = type === 1 ? [...buffer.subarray(4, 8)].join('.') : type === 3 ? buffer.subarray(5, 5 + buffer[4]!).toString() : '::1';
          const port = buffer.readUInt16BE(4 + addressLength);
          const rest = buffer.subarray(4 + addressLength + 2);
          seen.push({ target: `${host}:${port}`, credentials });
          stage = 'piping';
          const upstream = net.connect(port, host, () => {
            client.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
            if (rest.length > 0) upstream.write(rest);
            upstream.pipe(client);
            client.pipe(upstream);
          });
          upstream.on('error', () => client.destroy());
          return;
        } else return;
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

describe('a proxy per device, through the API', () => {
  let ctx: TestContext;
  let tenant: Tenant;

  beforeAll(async () => {
    ctx = await createMessagingApp();
    tenant = await createTenant(ctx);
  });
  afterAll(async () => ctx?.close());

  it('POST /devices stores the proxy and shows it with the password masked, in the answer, the record and device.status events', async () => {
    const created = await call(ctx, tenant, 'POST', '/devices', { name: 'proxied phone', proxyUrl: 'socks5://shop:s3cret@10.0.0.5:1080' });
    expect(created.statusCode, created.body).toBe(201);
    const device = created.json<{ data: DeviceBody }>().data;
    expect(device.proxyUrl).toBe('socks5://shop:***@10.0.0.5:1080');
    expect(created.body).not.toContain('s3cret');
    const read = await call(ctx, tenant, 'GET', `/devices/${device.id}`);
    expect(read.json<{ data: DeviceBody }>().data.proxyUrl).toBe('socks5://shop:***@10.0.0.5:1080');
    // The SQL rendering of the record (event payloads) masks it the same way.
    const [row] = await ctx.database.query<{ json: { proxyUrl: string } }>('SELECT waygate_device_json(d) AS json FROM devices d WHERE id = $1', [device.id]);
    expect(row!.json.proxyUrl).toBe('socks5://shop:***@10.0.0.5:1080');
    const [stored] = await ctx.database.query<{ proxy_url: string }>('SELECT proxy_url FROM devices WHERE id = $1', [device.id]);
    expect(stored!.proxy_url).toBe('socks5://shop:s3cret@10.0.0.5:1080');

    const plain = await call(ctx, tenant, 'POST', '/devices', { name: 'direct phone' });
    expect(plain.json<{ data: DeviceBody }>().data.proxyUrl).toBeNull();
  });

  it('refuses what is not a usable proxy URL with a 400 naming proxyUrl; nothing is created', async () => {
    const before = (await call(ctx, tenant, 'GET', '/devices')).json<{ meta: { total: number } }>().meta.total;
    for (const proxyUrl of ['ftp://proxy.example.com:21', 'not a url', 'http://proxy.example.com:8080/path', 'socks4://proxy.example.com:1080', 'http://:8080', 'x'.repeat(2_001)]) {
      const error = expectError(await call(ctx, tenant, 'POST', '/devices', { name: 'bad proxy', proxyUrl }), 400, 'VALIDATION_ERROR');
      expect(JSON.stringify(error.error.details), proxyUrl).toContain('proxyUrl');
    }
    expectError(await call(ctx, tenant, 'POST', '/devices', { name: 'bad proxy', proxyUrl: 1080 }), 400, 'VALIDATION_ERROR');
    expect((await call(ctx, tenant, 'GET', '/devices')).json<{ meta: { total: number } }>().meta.total).toBe(before);
  });

  it('PATCH /devices/:id renames, sets, changes and clears the proxy; 404 for unknown or another account’s device; 400 for an empty change', async () => {
    const id = (await call(ctx, tenant, 'POST', '/devices', { name: 'to change' })).json<{ data: DeviceBody }>().data.id;
    const set = await call(ctx, tenant, 'PATCH', `/devices/${id}`, { name: ' front desk ', proxyUrl: 'http://shop:pw@proxy.example.com:3128' });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json<{ data: DeviceBody }>().data).toMatchObject({ name: 'front desk', proxyUrl: 'http://shop:***@proxy.example.com:3128' });
    const renamed = await call(ctx, tenant, 'PATCH', `/devices/${id}`, { name: 'back office' });
    expect(renamed.json<{ data: DeviceBody }>().data).toMatchObject({ name: 'back office', proxyUrl: 'http://shop:***@proxy.example.com:3128' });
    const cleared = await call(ctx, tenant, 'PATCH', `/devices/${id}`, { proxyUrl: null });
    expect(cleared.json<{ data: DeviceBody }>().data.proxyUrl).toBeNull();

    expectError(await call(ctx, tenant, 'PATCH', `/devices/${id}`, {}), 400, 'VALIDATION_ERROR');
    expectError(await call(ctx, tenant, 'PATCH', `/devices/${id}`, { proxyUrl: 'gopher://x' }), 400, 'VALIDATION_ERROR');
    expectError(await call(ctx, tenant, 'PATCH', `/devices/${id}`, { name: '   ' }), 400, 'VALIDATION_ERROR');
    expectError(await call(ctx, tenant, 'PATCH', '/devices/dev_nope', { name: 'x' }), 404, 'NOT_FOUND');
    const other = await createTenant(ctx);
    expectError(await call(ctx, other, 'PATCH', `/devices/${id}`, { name: 'stolen' }), 404, 'NOT_FOUND');
    expect((await call(ctx, tenant, 'GET', `/devices/${id}`)).json<{ data: DeviceBody }>().data.name).toBe('back office');
  });
});

describe('the agents a proxy URL builds carry traffic through real local proxies', () => {
  const seen: Seen[] = [];
  let target: http.Server;
  let targetUrl = '';
  let connectProxy: http.Server;
  let socksProxy: net.Server;
  const port = (server: net.Server): number => (server.address() as AddressInfo).port;

  beforeAll(async () => {
    target = http.createServer((request, response) => response.end(`hello ${request.url}`));
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    targetUrl = `http://127.0.0.1:${port(target)}`;
    connectProxy = await startConnectProxy(seen);
    socksProxy = await startSocks5Proxy(seen);
  });
  afterAll(async () => {
    for (const server of [target, connectProxy, socksProxy]) await new Promise((resolve) => server?.close(resolve));
  });

  const getThrough = (url: string, agent: http.Agent): Promise<string> =>
    new Promise((resolve, reject) => {
      http
        .get(url, { agent }, (response) => {
          let body = '';
          response.on('data', (chunk: Buffer) => (body += chunk.toString()));
          response.on('end', () => resolve(`${response.statusCode} ${body}`));
        })
        .on('error', reject);
    });

  it('http: the socket agent and the media dispatcher go through CONNECT with the credentials', async () => {
    const proxy = `http://shop:s3cret@127.0.0.1:${port(connectProxy)}`;
    seen.length = 0;
    expect(await getThrough(`${targetUrl}/socket`, proxyAgent(proxy))).toBe('200 hello /socket');
    const fetched = await fetch(`${targetUrl}/media`, { dispatcher: proxyDispatcher(proxy) });
    expect(await fetched.text()).toBe('hello /media');
    expect(seen).toEqual([
      { target: `127.0.0.1:${port(target)}`, credentials: 'shop:s3cret' },
      { target: `127.0.0.1:${port(target)}`, credentials: 'shop:s3cret' },
    ]);
    // Wrong credentials: the proxy's refusal is the answer; nothing goes around it to the target.
    expect(await getThrough(`${targetUrl}/socket`, proxyAgent(`http://shop:wrong@127.0.0.1:${port(connectProxy)}`))).toBe('407 ');
  });

  it('socks5: the socket agent and the media dispatcher go through the SOCKS5 proxy with the credentials', async () => {
    const proxy = `socks5://shop:s3cret@127.0.0.1:${port(socksProxy)}`;
    seen.length = 0;
    expect(await getThrough(`${targetUrl}/socket`, proxyAgent(proxy))).toBe('200 hello /socket');
    const fetched = await fetch(`${targetUrl}/media`, { dispatcher: proxyDispatcher(proxy) });
    expect(await fetched.text()).toBe('hello /media');
    expect(seen).toEqual([
      { target: `127.0.0.1:${port(target)}`, credentials: 'shop:s3cret' },
      { target: `127.0.0.1:${port(target)}`, credentials: 'shop:s3cret' },
    ]);
  });

  // The download as the WhatsApp network runs it (whatsapp-network.ts downloadMedia): Baileys'
  // downloadMediaMessage, whose fetch is Node's own, given the device's dispatcher.
  it.each([
    ['http', (p: number) => `http://shop:s3cret@127.0.0.1:${p}`, () => connectProxy],
    ['socks5', (p: number) => `socks5://shop:s3cret@127.0.0.1:${p}`, () => socksProxy],
  ] as const)('%s: an incoming message\'s media downloads through the proxy with Baileys\' own download, byte for byte', async (_name, url, server) => {
    const baileys = await loadBaileys();
    const original = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7919) % 251));
    const encrypted = await (baileys as unknown as { encryptedStream(media: Buffer, type: string): Promise<{ mediaKey: Buffer; encFilePath: string; fileSha256: Buffer; fileEncSha256: Buffer }> }).encryptedStream(original, 'image');
    const body = await fs.readFile(encrypted.encFilePath);
    await fs.rm(encrypted.encFilePath, { force: true });
    const media = http.createServer((_request, response) => response.end(body));
    await new Promise<void>((resolve) => media.listen(0, '127.0.0.1', resolve));
    try {
      seen.length = 0;
      const message = {
        key: { remoteJid: '6281234567890@s.whatsapp.net', fromMe: false, id: 'PROXYMEDIA1' },
        message: {
          imageMessage: {
            url: `http://127.0.0.1:${port(media)}/d/f/enc`,
            mimetype: 'image/jpeg',
            mediaKey: encrypted.mediaKey,
            fileSha256: encrypted.fileSha256,
            fileEncSha256: encrypted.fileEncSha256,
            fileLength: original.length,
          },
        },
      };
      const stream = await baileysHelpers(baileys).downloadMedia(message, { dispatcher: proxyDispatcher(url(port(server()))) });
      const chunks: Buffer[] = [];
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      const downloaded = Buffer.concat(chunks);
      expect(downloaded.length).toBe(original.length);
      expect(createHash('sha256').update(downloaded).digest('hex')).toBe(createHash('sha256').update(original).digest('hex'));
      expect(seen).toEqual([{ target: `127.0.0.1:${port(media)}`, credentials: 'shop:s3cret' }]);
    } finally {
      await new Promise((resolve) => media.close(resolve));
    }
  });

  it('the rules of a proxy URL and of its masking', () => {
    expect(proxyUrlProblem('socks5h://proxy.example.com:1080')).toBeUndefined();
    expect(proxyUrlProblem('https://proxy.example.com')).toBeUndefined();
    expect(proxyUrlProblem('socks4://proxy.example.com:1080')).toMatch(/http, https, socks5 or socks5h/);
    expect(maskProxyUrl('http://user:p%40ss@h:1')).toBe('http://user:***@h:1');
    expect(maskProxyUrl('http://user@h:1')).toBe('http://user@h:1');
    expect(maskProxyUrl('http://h:1')).toBe('http://h:1');
    expect(maskProxyUrl(null)).toBeNull();
  });
});
