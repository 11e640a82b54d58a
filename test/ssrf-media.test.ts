/**
 * The SSRF guard for outbound URLs (mediaUrl now, webhooks later) and media fetching at send
 * time, against real HTTP servers on 127.0.0.1: which addresses are refused, that redirects are
 * not followed, the size caps, and what a media message carries to the network.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchMedia, MEDIA_LIMITS } from '../src/outbound/media.js';
import { GuardedHttp, isPublicAddress, UnsafeUrlError } from '../src/outbound/ssrf.js';
import { createTenant, createTestApp, type TestContext } from './helpers.js';
import { linkDevice, phone, sandboxMessages, sendDirect } from './messaging-helpers.js';

let server: http.Server;
let origin = '';
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(2048, 7)]);

beforeAll(async () => {
  server = http.createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://x');
    if (url.pathname === '/photo.png') {
      response.writeHead(200, { 'content-type': 'image/png', 'content-length': PNG.length });
      response.end(PNG);
    } else if (url.pathname === '/report') {
      response.writeHead(200, { 'content-type': 'application/pdf; charset=binary', 'content-disposition': 'attachment; filename="Q3 report.pdf"' });
      response.end(Buffer.alloc(1000, 1));
    } else if (url.pathname === '/redirect') {
      response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
      response.end();
    } else if (url.pathname === '/big-declared') {
      response.writeHead(200, { 'content-type': 'image/jpeg', 'content-length': MEDIA_LIMITS.IMAGE + 1 });
      response.end(); // the declared length alone must be refused
    } else if (url.pathname === '/big-streamed') {
      response.writeHead(200, { 'content-type': 'image/jpeg' }); // chunked, no length
      const chunk = Buffer.alloc(256 * 1024, 1);
      let sent = 0;
      const pump = (): void => {
        while (sent <= MEDIA_LIMITS.IMAGE) {
          sent += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', pump);
        }
        response.end();
      };
      pump();
    } else if (url.pathname === '/gone') {
      response.writeHead(404);
      response.end();
    } else {
      response.writeHead(500);
      response.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('which addresses are public', () => {
  it('refuses loopback, private, link-local, CGNAT, multicast, unspecified and their IPv6 and IPv4-mapped forms', () => {
    for (const address of [
      '127.0.0.1',
      '127.1.2.3',
      '10.0.0.1',
      '172.16.5.4',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '224.0.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      '::ffff:127.0.0.1',
      '::ffff:10.0.0.1',
      '::ffff:169.254.169.254',
      '2001:db8::1',
      'ff02::1',
      // Deprecated IPv4-compatible (::a.b.c.d), site-local, discard, NAT64, 6to4 and Teredo forms.
      '::127.0.0.1',
      '::7f00:1',
      '::10.0.0.1',
      '::169.254.169.254',
      '::8.8.8.8',
      'fec0::1',
      '100::1',
      '64:ff9b::7f00:1',
      '2002:7f00:1::1',
      '2001::1',
      'not an address',
    ]) {
      expect(isPublicAddress(address), address).toBe(false);
    }
  });

  it('accepts public addresses', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect(isPublicAddress(address), address).toBe(true);
    }
  });
});

describe('the guarded client', () => {
  const guarded = new GuardedHttp(false);
  const open = new GuardedHttp(true);
  afterAll(async () => {
    await guarded.close();
    await open.close();
  });

  it('refuses literal private addresses, names that resolve to them, and other schemes, naming ALLOW_PRIVATE_URLS', async () => {
    for (const url of [`${origin}/photo.png`, 'http://[::1]/', 'http://[::ffff:127.0.0.1]/', 'http://[::127.0.0.1]/', 'http://[::7f00:1]/', 'http://[fec0::1]/', 'http://169.254.169.254/', 'http://10.1.2.3/', 'http://100.64.0.1/']) {
      const error = await guarded.validate(url).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, url).toBeInstanceOf(UnsafeUrlError);
      expect((error as UnsafeUrlError).code).toBe('URL_PRIVATE_ADDRESS');
      expect((error as Error).message).toContain('ALLOW_PRIVATE_URLS');
    }
    // localhost is a name: refused when it resolves, at validation and again at connection time.
    await expect(guarded.validate(`http://localhost:${new URL(origin).port}/photo.png`)).rejects.toMatchObject({ code: 'URL_PRIVATE_ADDRESS' });
    const viaName = await fetchMedia(guarded, `http://localhost:${new URL(origin).port}/photo.png`, 'IMAGE');
    expect(viaName).toMatchObject({ ok: false, permanent: true, code: 'MEDIA_URL_REFUSED' });
    await expect(guarded.validate('ftp://example.com/a')).rejects.toMatchObject({ code: 'URL_SCHEME' });
    await expect(guarded.validate('http://user:pw@example.com/')).rejects.toMatchObject({ code: 'URL_INVALID' });
  });

  it('fetches media with its type and file name when private addresses are allowed', async () => {
    const image = await fetchMedia(open, `${origin}/photo.png`, 'IMAGE');
    expect(image.ok && image.media.data.equals(PNG)).toBe(true);
    expect(image.ok && image.media.mimeType).toBe('image/png');
    expect(image.ok && image.media.fileName).toBe('photo.png');
    const document = await fetchMedia(open, `${origin}/report`, 'DOCUMENT');
    expect(document.ok && document.media).toMatchObject({ mimeType: 'application/pdf', fileName: 'Q3 report.pdf' });
  });

  it('does not follow redirects (a redirect to the metadata address stays unfollowed)', async () => {
    expect(await fetchMedia(open, `${origin}/redirect`, 'IMAGE')).toMatchObject({ ok: false, permanent: true, code: 'MEDIA_REDIRECT' });
  });

  it('enforces the size caps, declared or streamed', async () => {
    expect(await fetchMedia(open, `${origin}/big-declared`, 'IMAGE')).toMatchObject({ ok: false, permanent: true, code: 'MEDIA_TOO_LARGE' });
    expect(await fetchMedia(open, `${origin}/big-streamed`, 'IMAGE')).toMatchObject({ ok: false, permanent: true, code: 'MEDIA_TOO_LARGE' });
    // The same bytes fit a video's cap.
    expect((await fetchMedia(open, `${origin}/big-streamed`, 'VIDEO')).ok).toBe(true);
  });

  it('tells permanent from transient failures', async () => {
    expect(await fetchMedia(open, `${origin}/gone`, 'IMAGE')).toMatchObject({ ok: false, permanent: true, code: 'MEDIA_UNREACHABLE' });
    expect(await fetchMedia(open, `${origin}/boom`, 'IMAGE')).toMatchObject({ ok: false, permanent: false, code: 'MEDIA_UNREACHABLE' });
  });
});

describe('media messages through the app', () => {
  let allowed: TestContext;
  let guardedApp: TestContext;
  beforeAll(async () => {
    allowed = await createTestApp({ ALLOW_PRIVATE_URLS: 'true' }, { worker: true });
    guardedApp = await createTestApp({}, { worker: true });
  });
  afterAll(async () => {
    await allowed.close();
    await guardedApp.close();
  });

  it('hands the fetched bytes, type and file name to the network', async () => {
    const tenant = await createTenant(allowed);
    await linkDevice(allowed, tenant);
    const to = phone();
    const body = await sendDirect(allowed, tenant, { type: 'DOCUMENT', content: 'Your report', mediaUrl: `${origin}/report`, recipients: [to] });
    expect(body.message.status).toBe('SENT');
    const [received] = (await sandboxMessages(allowed, tenant, { to })).data;
    expect(received).toMatchObject({ type: 'DOCUMENT', content: 'Your report', mediaBytes: 1000, mediaType: 'application/pdf', fileName: 'Q3 report.pdf' });
  });

  it('ends a message FAILED with MEDIA_URL_REFUSED when its mediaUrl points at a private address', async () => {
    const tenant = await createTenant(guardedApp);
    await linkDevice(guardedApp, tenant);
    const body = await sendDirect(guardedApp, tenant, { type: 'IMAGE', content: 'x', mediaUrl: `${origin}/photo.png`, recipients: [phone()] });
    expect(body.message.status).toBe('FAILED');
    expect(body.message.error?.code).toBe('MEDIA_URL_REFUSED');
    expect(body.message.error?.message).toContain('ALLOW_PRIVATE_URLS');
  });
});
