/**
 * Devices spread across workers (PostgreSQL, real CLI processes): two workers share twelve linked
 * sandbox devices close to half each; when one is killed the other takes all of them within
 * LEASE_MS (plus its round); when a worker joins, the split comes back; every device still sends.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresUrlForFaultTests } from '../postgres.js';
import { createCluster, until, type Cluster, type Proc } from './cluster.js';

const DEVICES = 12;
const LEASE_MS = 2_000;
const baseUrl = postgresUrlForFaultTests();

describe('devices spread across workers (PostgreSQL, 1 api + 2 worker processes)', () => {
  let cluster: Cluster;
  let probe: pg.Client;

  beforeAll(async () => {
    cluster = await createCluster(baseUrl, 'waygate_balance', { LEASE_MS: String(LEASE_MS), SANDBOX_RECEIPT_MS: '100', RATE_LIMIT_PER_MINUTE: '0' });
    probe = new pg.Client({ connectionString: cluster.databaseUrl });
    await probe.connect();
  }, 60_000);

  afterAll(async () => {
    await probe?.end();
    await cluster?.close();
  }, 60_000);

  /** Live leases per worker id. */
  const holdings = async (): Promise<Map<string, number>> => {
    const { rows } = await probe.query<{ owner: string; n: number }>(
      `SELECT lease_owner AS owner, count(*)::int AS n FROM devices WHERE lease_owner IS NOT NULL AND lease_expires_at > now() GROUP BY 1`,
    );
    return new Map(rows.map((r) => [r.owner, r.n]));
  };
  const pidOf = (workerId: string): number => Number(/_(\d+)_[0-9a-f]+$/.exec(workerId)?.[1]);
  /** Each of `procs` holds its share, ceil(12 / 2) = 6, give or take the tenth a worker keeps before it gives back. */
  const balancedOver = async (procs: Proc[]): Promise<Map<string, number> | undefined> => {
    const held = await holdings();
    const counts = procs.map((proc) => [...held].find(([owner]) => pidOf(owner) === proc.child.pid)?.[1] ?? 0);
    const total = [...held.values()].reduce((a, b) => a + b, 0);
    return total === DEVICES && counts.every((n) => n >= 5 && n <= 7) ? held : undefined;
  };

  it('splits the devices, takes a dead worker’s over within the lease, and splits them again when a worker joins', async () => {
    const api = await cluster.start('api', 'api');
    const first = await Promise.all([cluster.start('worker-1', 'worker'), cluster.start('worker-2', 'worker')]);

    const ids: string[] = [];
    for (let i = 0; i < DEVICES; i++) {
      const created = await cluster.api<{ data: { id: string }; qr: { code: string } | null }>(api, 'POST', '/devices', { name: `phone ${i}` });
      expect(created.status).toBe(201);
      const deviceId = created.json.data.id;
      const qr = created.json.qr ?? (await until(`a QR code for device ${i}`, 20_000, async () => (await cluster.api<{ data?: { code: string } }>(api, 'GET', `/devices/${deviceId}/qr`)).json.data));
      expect((await cluster.api(api, 'POST', '/sandbox/scan', { code: qr.code, phoneNumber: `62813000001${String(i).padStart(2, '0')}` })).status).toBe(200);
      ids.push(deviceId);
    }
    await until('every device connected', 30_000, async () => {
      const { rows } = await probe.query<{ n: number }>(`SELECT count(*)::int AS n FROM devices WHERE status = 'CONNECTED'`);
      return rows[0]!.n === DEVICES ? true : undefined;
    });
    await until('the devices split across both workers', 30_000, () => balancedOver(first));

    // SIGKILL: no drain, no release; the survivor must notice through the lapsed heartbeat and leases.
    const [victim, survivor] = first as [Proc, Proc];
    const killedAt = Date.now();
    victim.child.kill('SIGKILL');
    await until('the survivor to hold every device', LEASE_MS + 10_000, async () => {
      const held = await holdings();
      return held.size === 1 && [...held.keys()].every((owner) => pidOf(owner) === survivor.child.pid) && [...held.values()][0] === DEVICES ? true : undefined;
    });
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS + 10_000);

    const joiner = await cluster.start('worker-3', 'worker');
    await until('the devices split again with the new worker', 30_000, () => balancedOver([survivor, joiner]));

    // Every device, wherever it now lives, still sends.
    const sent = await Promise.all(
      ids.map((deviceId, i) =>
        cluster.api<{ success: boolean; message?: { status: string } }>(api, 'POST', '/messages/send', {
          type: 'TEXT',
          content: `after the rebalance ${i}`,
          recipients: [`62814100001${String(i).padStart(2, '0')}`],
          deviceId,
        }),
      ),
    );
    for (const answer of sent) expect([200, 202]).toContain(answer.status);
    await until('every message sent once', 30_000, async () => {
      const { rows } = await probe.query<{ n: number }>(`SELECT count(*)::int AS n FROM messages WHERE content LIKE 'after the rebalance %' AND status IN ('SENT', 'DELIVERED', 'READ')`);
      return rows[0]!.n === DEVICES ? true : undefined;
    });
    const { rows } = await probe.query<{ n: number }>(`SELECT count(*)::int AS n FROM sandbox_messages WHERE content LIKE 'after the rebalance %'`);
    expect(rows[0]!.n).toBe(DEVICES);
  }, 150_000);
});
