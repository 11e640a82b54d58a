/**
 * The hang a new user met, replayed at reduced scale on the embedded database with the real CLI:
 * an endpoint whose URL is refused at once (a private address while ALLOW_PRIVATE_URLS is off)
 * is activated with a large backlog due. Every attempt fails without any I/O, and a PGlite
 * statement resolves on microtasks alone, so a worker loop that always finds work used to keep
 * the event loop from ever reaching HTTP, timers or signals: /healthz went unanswered and SIGTERM
 * was ignored. Now /healthz answers throughout, the backlog is worked through, and SIGTERM ends
 * the process promptly. (Full scale, with latency targets: `npm run bench -- starvation`.)
 */
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createEmbeddedTenant,
  probeLatencies,
  seedWebhookBacklog,
  startEmbeddedServer,
  withEmbeddedDatabase,
  type EmbeddedServer,
  type EmbeddedTenant,
} from '../bench/lib/embedded.js';

const BACKLOG = 20_000;

describe('a webhook backlog refused without I/O (embedded database, real CLI)', () => {
  let tenant: EmbeddedTenant | undefined;
  let server: EmbeddedServer | undefined;

  afterAll(async () => {
    await server?.terminate(5_000);
    if (tenant) fs.rmSync(tenant.dataDir, { recursive: true, force: true });
  });

  it('keeps /healthz answering while the backlog is worked through, and stops on SIGTERM', async () => {
    tenant = await createEmbeddedTenant('waygate-backlog');
    const endpointId = await withEmbeddedDatabase(tenant, (database) =>
      seedWebhookBacklog(database, tenant!.accountId, { url: 'http://127.0.0.1:9/hook', count: BACKLOG }),
    );
    server = await startEmbeddedServer(tenant, { ALLOW_PRIVATE_URLS: 'false', WEBHOOK_RETRY_SCHEDULE: '0' });
    const headers = { 'x-api-key': tenant.token, 'content-type': 'application/json' };
    const activated = await fetch(`${server.origin}/webhooks/${endpointId}`, { method: 'PATCH', headers, body: JSON.stringify({ active: true }) });
    expect(activated.status).toBe(200);

    // Generous bounds: the machine may be busy. Before the fix no probe was answered at all.
    const latencies = await probeLatencies(`${server.origin}/healthz`, 4_000, { timeoutMs: 5_000 });
    expect(latencies.length).toBeGreaterThan(10);
    expect(Math.max(...latencies)).toBeLessThan(3_000);

    // The refused attempts are recorded as they go (a one-step schedule: each fails at once, for good).
    const log = await fetch(`${server.origin}/webhooks/${endpointId}/deliveries?status=FAILED&limit=100`, { headers });
    expect(log.status).toBe(200);
    const page = (await log.json()) as { data: { attempts: number; lastError: string | null }[]; meta: { total: number } };
    expect(page.data.length).toBeGreaterThan(0);
    expect(page.data[0]).toMatchObject({ attempts: 1, lastError: expect.stringMatching(/not a public address/) });

    const exitMs = await server.terminate(15_000);
    expect(exitMs).toBeLessThan(10_000);
    expect(server.child.exitCode).toBe(0);
  }, 120_000);
});
