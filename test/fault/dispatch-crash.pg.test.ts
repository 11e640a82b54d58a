/**
 * Fault test on PostgreSQL: two `api` and two `worker` processes of the real CLI share one
 * database; a 10,000-recipient bulk job runs; the worker that owns the device is killed with
 * SIGKILL in the middle of the job and another worker is started. The job must end COMPLETED
 * with every recipient sent exactly once: the sandbox network holds one message per recipient,
 * each with its delivery receipt applied (none lost, none twice), however many times the
 * gateway handed it over.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresUrlForFaultTests } from '../postgres.js';
import { createCluster, until, type Cluster, type Proc } from './cluster.js';

const RECIPIENTS = 10_000;

const baseUrl = postgresUrlForFaultTests();

describe('a worker killed in the middle of a bulk job (PostgreSQL, 2 api + 2 worker processes)', () => {
  let cluster: Cluster;
  let databaseUrl = '';
  const start = (name: string, role: 'api' | 'worker', env: Record<string, string> = {}): Promise<Proc> => cluster.start(name, role, env);
  const api = <T>(proc: Proc, method: string, url: string, body?: unknown) => cluster.api<T>(proc, method, url, body);

  beforeAll(async () => {
    cluster = await createCluster(baseUrl, 'waygate_fault', { LEASE_MS: '2000', SANDBOX_RECEIPT_MS: '200', BULK_DELAY_MS: '0', RATE_LIMIT_PER_MINUTE: '0' });
    databaseUrl = cluster.databaseUrl;
  }, 60_000);

  afterAll(async () => cluster?.close(), 60_000);

  it('completes the job with every recipient delivered exactly once', async () => {
    const [api1, api2] = await Promise.all([start('api-1', 'api'), start('api-2', 'api')]);
    await Promise.all([start('worker-1', 'worker'), start('worker-2', 'worker')]);

    // Link a device through one API process, scan through the other.
    const created = await api<{ data: { id: string }; qr: { code: string } | null }>(api1!, 'POST', '/devices', { name: 'fault phone' });
    expect(created.status).toBe(201);
    const deviceId = created.json.data.id;
    const qr = created.json.qr ?? (await api<{ data: { code: string } }>(api2!, 'GET', `/devices/${deviceId}/qr`)).json.data;
    expect((await api(api2!, 'POST', '/sandbox/scan', { code: qr.code, phoneNumber: '6281300000001' })).status).toBe(200);
    await until('the device to connect', 20_000, async () => {
      const device = await api<{ data: { status: string } }>(api1!, 'GET', `/devices/${deviceId}`);
      return device.json.data.status === 'CONNECTED' ? true : undefined;
    });

    // Recipients avoid the magic endings 0000–0003, so every one should be delivered.
    const recipients: string[] = [];
    for (let i = 0; recipients.length < RECIPIENTS; i++) if (i % 10_000 >= 4) recipients.push(`628140${String(i).padStart(7, '0')}`);
    const accepted = await api<{ jobId: string; totalContacts: number }>(api1!, 'POST', '/messages/send', { type: 'TEXT', content: 'fault test', recipients });
    expect(accepted.status).toBe(202);
    expect(accepted.json.totalContacts).toBe(RECIPIENTS);
    const jobId = accepted.json.jobId;

    // Kill the owner of the device in the middle of the job, at a moment when it holds messages
    // it has claimed (SENDING) but not yet recorded, then start a replacement.
    const probe = new pg.Client({ connectionString: databaseUrl });
    await probe.connect();
    const owner = await until('the owner to hold messages in flight', 30_000, async () => {
      const { rows } = await probe.query<{ sending: number; sent: number; lease_owner: string | null }>(
        `SELECT (SELECT count(*)::int FROM messages WHERE job_id = $1 AND status = 'SENDING') AS sending,
                (SELECT sent_count FROM bulk_jobs WHERE id = $1) AS sent,
                (SELECT lease_owner FROM devices WHERE id = $2) AS lease_owner`,
        [jobId, deviceId],
      );
      return rows[0]!.sending > 0 && rows[0]!.sent > 0 && rows[0]!.lease_owner ? rows[0]!.lease_owner : undefined;
    }, 1);
    await probe.end();
    const ownerPid = Number(/_(\d+)_[0-9a-f]+$/.exec(owner)?.[1]);
    const victim = cluster.procs.find((proc) => proc.child.pid === ownerPid);
    expect(victim, `the lease owner ${owner} is one of our workers`).toBeDefined();
    const before = (await api<{ data: { sentCount: number; totalContacts: number } }>(api2!, 'GET', `/messages/bulk-jobs/${jobId}`)).json.data;
    victim!.child.kill('SIGKILL');
    await start('worker-3', 'worker');

    const job = await until('the job to complete', 90_000, async () => {
      const current = await api<{ data: { status: string; sentCount: number; failedCount: number; totalContacts: number } }>(api1!, 'GET', `/messages/bulk-jobs/${jobId}`);
      return current.json.data.status === 'COMPLETED' ? current.json.data : undefined;
    });
    expect(job.sentCount + job.failedCount).toBe(RECIPIENTS);
    expect(job.sentCount).toBe(RECIPIENTS);

    // Every recipient reached the phone exactly once, whatever the handovers.
    const check = new pg.Client({ connectionString: databaseUrl });
    await check.connect();
    try {
      const stats = await until('every receipt', 60_000, async () => {
        const { rows } = await check.query<{ recipients: number; delivered_once: number; over: number; handovers: number }>(
          // delivered_once: the phone's delivery receipt reached the gateway; over: a recipient the
          // network took more than one message for.
          `SELECT count(DISTINCT sm."to")::int AS recipients, count(*) FILTER (WHERE m.delivered_at IS NOT NULL)::int AS delivered_once,
                  (count(*) - count(DISTINCT sm."to"))::int AS over, sum(sm.send_calls)::int AS handovers
             FROM sandbox_messages sm
             LEFT JOIN messages m ON m.device_id = sm.device_id AND m.network_message_id = sm.network_message_id
            WHERE sm.device_id = $1`,
          [deviceId],
        );
        return rows[0]!.delivered_once === RECIPIENTS ? rows[0]! : undefined;
      });
      expect(stats.recipients).toBe(RECIPIENTS);
      expect(stats.over).toBe(0);
      expect(stats.handovers).toBeGreaterThanOrEqual(RECIPIENTS);
      const { rows: messages } = await check.query<{ n: number; distinct_peers: number }>(
        `SELECT count(*)::int AS n, count(DISTINCT peer)::int AS distinct_peers FROM messages WHERE job_id = $1`,
        [jobId],
      );
      expect(messages[0]).toEqual({ n: RECIPIENTS, distinct_peers: RECIPIENTS });
      console.log(
        `fault test: killed ${victim!.name} at ${before.sentCount}/${before.totalContacts} sent; job COMPLETED; ` +
          `${stats.handovers - RECIPIENTS} handovers repeated after the crash, 0 duplicates delivered`,
      );
    } finally {
      await check.end();
    }
  }, 240_000);

  it('drains on SIGTERM: the worker finishes what it holds, releases its lease and exits 0; the next one takes over at once', async () => {
    const apiProc = cluster.procs.find((proc) => proc.name === 'api-1')!;
    // Paced bulk traffic (one message every 100–200 ms), so the job is still running when the signal comes.
    const paced = await start('worker-paced', 'worker', { BULK_DELAY_MS: '100-200', LEASE_MS: '60000' });
    for (const proc of cluster.procs) if (proc.name.startsWith('worker-') && proc !== paced && proc.child.exitCode === null) proc.child.kill('SIGKILL');
    const created = await api<{ data: { id: string }; qr: { code: string } | null }>(apiProc, 'POST', '/devices', { name: 'drain phone' });
    const deviceId = created.json.data.id;
    const qr = created.json.qr ?? (await api<{ data: { code: string } }>(apiProc, 'GET', `/devices/${deviceId}/qr`)).json.data;
    await api(apiProc, 'POST', '/sandbox/scan', { code: qr.code, phoneNumber: '6281300000002' });
    await until('the device to connect', 30_000, async () => {
      const device = await api<{ data: { status: string } }>(apiProc, 'GET', `/devices/${deviceId}`);
      return device.json.data.status === 'CONNECTED' ? true : undefined;
    });
    const recipients = Array.from({ length: 40 }, (_, i) => `628150000${String(i + 100).padStart(4, '0')}`);
    const accepted = await api<{ jobId: string }>(apiProc, 'POST', '/messages/send', { type: 'TEXT', content: 'drain', recipients, deviceId });
    expect(accepted.status).toBe(202);
    const jobId = accepted.json.jobId;
    await until('some messages to go out', 30_000, async () => {
      const job = await api<{ data: { sentCount: number } }>(apiProc, 'GET', `/messages/bulk-jobs/${jobId}`);
      return job.json.data.sentCount >= 3 ? true : undefined;
    });

    const exited = new Promise<number | null>((resolve) => paced.child.once('exit', (code) => resolve(code)));
    const signalledAt = Date.now();
    paced.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(Date.now() - signalledAt).toBeLessThan(10_000);

    const check = new pg.Client({ connectionString: databaseUrl });
    await check.connect();
    try {
      const { rows } = await check.query<{ lease_owner: string | null; sending: number }>(
        `SELECT lease_owner, (SELECT count(*)::int FROM messages WHERE device_id = $1 AND status = 'SENDING') AS sending FROM devices WHERE id = $1`,
        [deviceId],
      );
      expect(rows[0]).toEqual({ lease_owner: null, sending: 0 });
    } finally {
      await check.end();
    }

    // The lease was released, not left to expire (60 s here): a new worker finishes the job at once.
    const startedAt = Date.now();
    await start('worker-after-drain', 'worker', { BULK_DELAY_MS: '0', LEASE_MS: '60000' });
    const job = await until('the job to complete after the drain', 30_000, async () => {
      const current = await api<{ data: { status: string; sentCount: number } }>(apiProc, 'GET', `/messages/bulk-jobs/${jobId}`);
      return current.json.data.status === 'COMPLETED' ? current.json.data : undefined;
    });
    expect(job.sentCount).toBe(recipients.length);
    expect(Date.now() - startedAt).toBeLessThan(30_000);
  }, 120_000);
});
