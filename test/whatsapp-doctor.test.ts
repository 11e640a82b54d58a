/**
 * The WhatsApp Web version policy (WHATSAPP_WA_VERSION=auto|x.y.z) and `waygate doctor whatsapp`,
 * against HTTP and websocket endpoints on 127.0.0.1 only (never WhatsApp itself): the version read
 * from a service worker, the offline fallback that says so, a fixed version that is never
 * fetched, the doctor's report and exit code; and the network message ids in WhatsApp Web's shape.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.js';
import { networkMessageIdFor, NETWORK_MESSAGE_ID_SQL } from '../src/messaging/message-model.js';
import { fetchWebVersion, WaVersionSource } from '../src/network/whatsapp/version.js';
import { runCli, type CliResult } from './cli-process.js';
import { openTestDatabase } from './helpers.js';
import { closedPort, upgradingServer } from './whatsapp/local-endpoints.js';

let swServer: http.Server;
let swUrl: string;
let requests = 0;
let body = 'self.__swData=JSON.parse("{\\"dynamic_data\\":{\\"SiteData\\":{\\"client_revision\\":1029999999,\\"server_revision\\":1029999999}}}");';

beforeAll(async () => {
  swServer = http.createServer((request, response) => {
    requests++;
    if (request.url !== '/sw.js') return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'application/javascript' }).end(body);
  });
  await new Promise<void>((resolve) => swServer.listen(0, '127.0.0.1', resolve));
  swUrl = `http://127.0.0.1:${(swServer.address() as AddressInfo).port}/sw.js`;
});
afterAll(async () => {
  await new Promise((resolve) => swServer.close(resolve));
});

function capture(): { log: pino.Logger; lines: () => Record<string, unknown>[] } {
  const lines: string[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString());
        callback();
      },
    }),
  );
  return { log, lines: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

describe('the WhatsApp Web version', () => {
  it('auto: read from the service worker (client_revision, escaped as WhatsApp Web serves it) and logged', async () => {
    const { log, lines } = capture();
    const source = new WaVersionSource({ waVersion: 'auto', webVersionUrl: swUrl }, [2, 3000, 1], log);
    await expect(source.refresh()).resolves.toEqual({ version: [2, 3000, 1029999999], source: 'fetched' });
    expect(source.current.version).toEqual([2, 3000, 1029999999]);
    expect(lines().at(-1)).toMatchObject({ waVersion: '2.3000.1029999999', source: 'fetched' });
  });

  it('auto, offline: falls back to the bundled version (or the last one read) and says so', async () => {
    const { log, lines } = capture();
    const port = await closedPort();
    const offline = new WaVersionSource({ waVersion: 'auto', webVersionUrl: `http://127.0.0.1:${port}/sw.js` }, [2, 3000, 1043857760], log);
    const resolved = await offline.refresh();
    expect(resolved).toMatchObject({ version: [2, 3000, 1043857760], source: 'bundled' });
    expect(resolved.error).toBeTruthy();
    expect(lines().at(-1)).toMatchObject({ level: 40, waVersion: '2.3000.1043857760' });
    expect(String(lines().at(-1)!.msg)).toContain('could not read the current WhatsApp Web version');

    // A page without a client_revision is a failure too; a version read earlier is kept over the bundled one.
    const source = new WaVersionSource({ waVersion: 'auto', webVersionUrl: swUrl }, [2, 3000, 1], log);
    await source.refresh();
    const saved = body;
    body = '<html>maintenance</html>';
    try {
      await expect(source.refresh()).resolves.toMatchObject({ version: [2, 3000, 1029999999], source: 'bundled' });
    } finally {
      body = saved;
    }
    await expect(fetchWebVersion(swUrl.replace('/sw.js', '/missing'))).rejects.toThrow('HTTP 404');
  });

  it('a fixed WHATSAPP_WA_VERSION is used as is and never fetched', async () => {
    const before = requests;
    const fetcher = async (): Promise<never> => {
      throw new Error('must not be called');
    };
    const source = new WaVersionSource({ waVersion: [2, 3000, 1011111111], webVersionUrl: swUrl }, [2, 3000, 1], pino({ level: 'silent' }), fetcher);
    await expect(source.refresh()).resolves.toEqual({ version: [2, 3000, 1011111111], source: 'configured' });
    expect(requests).toBe(before);
  });

  it('configuration: auto by default; x.y.z parsed; anything else refused naming the variable', () => {
    const base = { NETWORK: 'whatsapp' };
    expect(loadConfig(base).whatsapp).toMatchObject({ waVersion: 'auto', webVersionUrl: 'https://web.whatsapp.com/sw.js', uploadTimeoutMs: 300_000, maxQrCycles: 5 });
    expect(loadConfig({ ...base, WHATSAPP_WA_VERSION: '2.3000.1023456789' }).whatsapp.waVersion).toEqual([2, 3000, 1023456789]);
    expect(loadConfig({ ...base, WHATSAPP_WA_VERSION: 'AUTO' }).whatsapp.waVersion).toBe('auto');
    expect(() => loadConfig({ ...base, WHATSAPP_WA_VERSION: '2.3000' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, WHATSAPP_WA_VERSION: 'latest' })).toThrow(/WHATSAPP_WA_VERSION/);
    expect(() => loadConfig({ ...base, WHATSAPP_WEB_VERSION_URL: 'ftp://x' })).toThrow(/WHATSAPP_WEB_VERSION_URL/);
    expect(() => loadConfig({ ...base, WHATSAPP_MAX_QR_CYCLES: '0' })).toThrow(/WHATSAPP_MAX_QR_CYCLES/);
    expect(() => loadConfig({ ...base, WHATSAPP_UPLOAD_TIMEOUT_MS: '10' })).toThrow(/WHATSAPP_UPLOAD_TIMEOUT_MS/);
  });
});

describe('network message ids', () => {
  it('have WhatsApp Web\'s shape (3EB0 + 18 upper-case hex), derive from the message id alone, and the SQL twin gives the same', async () => {
    const ids = ['msg_01jz8k3m4n5p6q7r8s9t0v1w2x', 'msg_01jz8k3m4n5p6q7r8s9t0v1w2y', 'msg_01kaaaaaaaaaaaaaaaaaaaaaaa'];
    const nids = ids.map(networkMessageIdFor);
    for (const nid of nids) expect(nid).toMatch(/^3EB0[0-9A-F]{18}$/);
    expect(new Set(nids).size).toBe(ids.length);
    expect(ids.map(networkMessageIdFor)).toEqual(nids);
    const database = await openTestDatabase();
    try {
      const rows = await database.query<{ nid: string }>(`SELECT ${NETWORK_MESSAGE_ID_SQL('id')} AS nid FROM unnest($1::text[]) WITH ORDINALITY AS t(id, n) ORDER BY n`, [ids]);
      expect(rows.map((row) => row.nid)).toEqual(nids);
    } finally {
      await database.close();
    }
  }, 60_000);
});

describe('waygate doctor whatsapp', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  function doctor(env: Record<string, string>): Promise<CliResult> {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-doctor-'));
    dirs.push(dataDir);
    return runCli(['doctor', 'whatsapp'], { DATABASE_URL: '', DATA_DIR: dataDir, WHATSAPP_CONNECT_TIMEOUT_MS: '1000', ...env });
  }

  it('reports the version it read, a WhatsApp endpoint that never completes the handshake, and the auth store round-trip; exits 1', async () => {
    const server = await upgradingServer('silent');
    try {
      const result = await doctor({ WHATSAPP_WEB_VERSION_URL: swUrl, WHATSAPP_WS_URL: `ws://127.0.0.1:${server.port}/ws/chat` });
      expect(result.stdout, result.stderr).toContain('ok    baileys: loaded (bundled web version 2.3000.');
      expect(result.stdout).toContain(`ok    web version: 2.3000.1029999999 (read from ${swUrl})`);
      expect(result.stdout).toMatch(/FAIL {2}connect: (no answer from ws:\/\/127\.0\.0\.1:\d+\/ws\/chat within|ws:\/\/127\.0\.0\.1:\d+\/ws\/chat closed the connection)/);
      expect(result.stdout).toContain('ok    auth store: credentials and signal keys round-trip through the database');
      expect(result.code).toBe(1);
    } finally {
      server.close();
    }
  }, 120_000);

  it('offline: says the version could not be read and which one would be used; a fixed version is reported as such', async () => {
    const port = await closedPort();
    const offline = await doctor({ WHATSAPP_WEB_VERSION_URL: `http://127.0.0.1:${port}/sw.js`, WHATSAPP_WS_URL: `ws://127.0.0.1:${port}/ws/chat` });
    expect(offline.stdout, offline.stderr).toMatch(/warn {2}web version: could not read it from http:\/\/127\.0\.0\.1:\d+\/sw\.js \(.+\); Baileys' bundled 2\.3000\.\d+ would be used/);
    expect(offline.stdout).toMatch(/FAIL {2}connect: ws:\/\/127\.0\.0\.1:\d+\/ws\/chat closed the connection/);
    expect(offline.code).toBe(1);
    const fixed = await doctor({ WHATSAPP_WA_VERSION: '2.3000.1011111111', WHATSAPP_WS_URL: `ws://127.0.0.1:${port}/ws/chat` });
    expect(fixed.stdout, fixed.stderr).toContain('ok    web version: 2.3000.1011111111 (WHATSAPP_WA_VERSION)');
  }, 120_000);
});
