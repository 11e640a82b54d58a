/**
 * Fault test on PostgreSQL, with the real CLI (`serve --role api` and `--role worker`): the
 * receiver of an account's webhook endpoint is down (nothing listens on its port) while 1,000
 * incoming messages make 1,000 message.received events; then it comes back on the same port.
 * Every event must reach it at least once with a valid signature (seq 1..N all present). While
 * deliveries are flowing the worker is killed with SIGKILL and another one is started: still
 * nothing is lost (the dead worker's claims run out after 2 × WEBHOOK_TIMEOUT_MS and are sent
 * again). Everything listens on 127.0.0.1.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresUrlForFaultTests } from '../postgres.js';
import { createCluster, until, type Cluster, type Proc } from './cluster.js';

const INCOMING = 1_000;
// Quick retries, and so many (over five minutes of them, longer than the test may run) that no
// delivery can give up while the receiver is down, however slowly a loaded machine runs the test:
// with 25 steps (about 26 s), a slow run let deliveries end FAILED and the test time out.
const RETRY_SCHEDULE = ['0', '200ms', '500ms', ...Array.from({ length: 300 }, () => '1s')].join(',');
// A claim is leased for twice this: the dead worker's deliveries are sent again 4 s after the kill.
const WEBHOOK_TIMEOUT_MS = '2000';

const baseUrl = postgresUrlForFaultTests();

describe('webhook deliveries across a receiver outage and a killed worker (PostgreSQL, real CLI)', () => {
  let cluster: Cluster;
  let databaseUrl = '';
  let receiver: http.Server | undefined;
  const start = (name: string, role: 'api' | 'worker'): Promise<Proc> => cluster.start(name, role);
  const api = <T>(proc: Proc, method: string, url: string, body?: unknown) => cluster.api<T>(proc, method, url, body);

  beforeAll(async () => {
    cluster = await createCluster(baseUrl, 'waygate_fault_wh', {
      LEASE_MS: '2000',
      SANDBOX_RECEIPT_MS: '200',
      BULK_DELAY_MS: '0',
      RATE_LIMIT_PER_MINUTE: '0',
      ALLOW_PRIVATE_URLS: 'true',
      WEBHOOK_RETRY_SCHEDULE: RETRY_SCHEDULE,
      WEBHOOK_TIMEOUT_MS,
    });
    databaseUrl = cluster.databaseUrl;
  }, 60_000);

  afterAll(async () => {
    if (receiver?.listening) {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver!.close(resolve));
    }
    await cluster?.close();
  }, 60_000);

  it('delivers every event at least once, signed, after the receiver comes back and across a SIGKILL of the worker', async () => {
    const apiProc = await start('api', 'api');
    let worker = await start('worker-1', 'worker');

    // A port that nothing listens on (yet): the receiver is down.
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));

    const created = await api<{ data: { id: string; secret: string } }>(apiProc, 'POST', '/webhooks', { url: `http://127.0.0.1:${port}/hooks`, events: ['message.received'] });
    expect(created.status).toBe(201);
    const { id: endpointId, secret } = created.json.data;

    const device = await api<{ data: { id: string }; qr: { code: string } | null }>(apiProc, 'POST', '/devices', { name: 'fault phone' });
    expect(device.status).toBe(201);
    const deviceId = device.json.data.id;
    expect((await api(apiProc, 'POST', '/sandbox/scan', { code: device.json.qr!.code, phoneNumber: '6281300000011' })).status).toBe(200);
    await until('the device to connect', 20_000, async () => ((await api<{ data: { status: string } }>(apiProc, 'GET', `/devices/${deviceId}`)).json.data.status === 'CONNECTED' ? true : undefined));

    // 1,000 incoming messages in parallel batches, while nothing listens.
    for (let batch = 0; batch < INCOMING / 50; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => api(apiProc, 'POST', '/sandbox/incoming', { deviceId, from: `62815${String(batch * 50 + i).padStart(8, '0')}`, content: `incoming ${batch * 50 + i}` })),
      );
      for (const answer of answers) expect(answer.status).toBe(202);
    }
    await until(`${INCOMING} events`, 60_000, async () => {
      const events = await api<{ meta: { lastSeq: number } }>(apiProc, 'GET', '/events?type=message.received&limit=1');
      return events.json.meta.lastSeq >= INCOMING ? true : undefined;
    }, 100);

    const check = new pg.Client({ connectionString: databaseUrl });
    await check.connect();
    try {
      const refused = await check.query<{ failed_attempts: number; succeeded: number }>(
        `SELECT (SELECT count(*)::int FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = $1 AND a.status_code IS NULL) AS failed_attempts,
                (SELECT count(*)::int FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'SUCCEEDED') AS succeeded`,
        [endpointId],
      );
      expect(refused.rows[0]!.succeeded).toBe(0);
      expect(refused.rows[0]!.failed_attempts).toBeGreaterThan(0);

      // The receiver comes back on the same port. It answers after 100 ms, so the deliveries take a
      // few seconds to flow and the worker can be killed while it holds requests in flight.
      const verifier = new Webhook(secret);
      const seen = new Map<number, number>();
      const ids = new Map<number, string>();
      let badSignatures = 0;
      receiver = http.createServer((request, response) => {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk.toString()));
        request.on('end', () => {
          try {
            verifier.verify(body, request.headers as Record<string, string>);
          } catch {
            badSignatures += 1;
            response.writeHead(400).end();
            return;
          }
          const { seq } = JSON.parse(body) as { seq: number };
          seen.set(seq, (seen.get(seq) ?? 0) + 1);
          ids.set(seq, String(request.headers['webhook-id']));
          setTimeout(() => response.writeHead(204).end(), 100);
        });
      });
      await new Promise<void>((resolve) => receiver!.listen(port, '127.0.0.1', resolve));
      const backAt = Date.now();

      await until('deliveries to be flowing', 30_000, () => (seen.size >= 150 ? true : undefined), 5);
      const held = await until('the worker to hold claimed deliveries', 30_000, async () => {
        const { rows } = await check.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND claimed_until > now()', [endpointId]);
        return rows[0]!.n > 0 ? rows[0]!.n : undefined;
      }, 5);
      const atKill = seen.size;
      worker.child.kill('SIGKILL');
      await new Promise((resolve) => worker.child.once('exit', resolve));
      worker = await start('worker-2', 'worker');

      // Every event of the account (message.received, the endpoint's only type) reaches the
      // receiver: seq 1..N, none missing.
      const { rows: expected } = await check.query<{ seq: string }>(`SELECT seq FROM events WHERE type = 'message.received' ORDER BY seq`);
      expect(expected).toHaveLength(INCOMING);
      const wanted = expected.map((row) => Number(row.seq));
      await until('every event at the receiver', 90_000, () => (wanted.every((seq) => seen.has(seq)) ? true : undefined), 50);
      const seconds = (Date.now() - backAt) / 1000;

      const { rows: all } = await check.query<{ seq: string }>('SELECT seq FROM events ORDER BY seq');
      const seqs = all.map((row) => Number(row.seq));
      expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
      expect(badSignatures).toBe(0);
      for (const seq of wanted) expect(ids.get(seq)).toMatch(/^evt_/);
      const { rows: states } = await check.query<{ status: string; n: number }>(
        'SELECT status, count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 GROUP BY status',
        [endpointId],
      );
      expect(states.find((row) => row.status === 'FAILED')).toBeUndefined();
      const duplicates = [...seen.values()].reduce((sum, n) => sum + n - 1, 0);
      console.log(
        `webhooks fault test: ${INCOMING} events delivered ${seconds.toFixed(1)} s after the receiver came back; ` +
          `worker killed at ${atKill} received, holding ${held} claims; ${duplicates} delivered more than once; deliveries ${JSON.stringify(states)}`,
      );
      // Every delivery ends SUCCEEDED once its outcome is written.
      await until('every delivery recorded SUCCEEDED', 30_000, async () => {
        const { rows } = await check.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status <> 'SUCCEEDED'`, [endpointId]);
        return rows[0]!.n === 0 ? true : undefined;
      }, 100);
    } finally {
      await check.end();
    }
  }, 240_000);
});
