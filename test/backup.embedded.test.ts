/**
 * Backup and restore of the embedded database, as an operator runs them: a built server with
 * sends going on, `waygate backup` through its control socket, `waygate restore` into a new data
 * directory, and a server on the restored directory that answers the totals the backup saw.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, runBuiltCli, startBuiltServer, type BuiltServer } from './cli-process.js';

const tempDirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-backup-'));
  tempDirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});
beforeAll(ensureBuilt, 600_000);

async function api<T = Record<string, unknown>>(origin: string, token: string, method: string, pathname: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${origin}${pathname}`, {
    method,
    headers: { 'x-api-key': token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as T };
}

const messageTotal = async (origin: string, token: string): Promise<number> =>
  (await api<{ meta: { total: number } }>(origin, token, 'GET', '/messages?limit=1')).body.meta.total;

describe('waygate backup and restore (embedded database)', () => {
  it('backs up a running server with sends in flight; the restored copy answers the same totals', async () => {
    const source = tempDir();
    const env = { DATA_DIR: source, SANDBOX_RECEIPT_MS: '200', RATE_LIMIT_PER_MINUTE: '0' };
    let server: BuiltServer | undefined = await startBuiltServer(env);
    let restored: BuiltServer | undefined;
    try {
      expect((await runBuiltCli(['accounts', 'create', '--email', 'ops@example.test', '--password', 'a long password', '--plan', 'unlimited'], env)).code).toBe(0);
      const token = (await runBuiltCli(['tokens', 'create', '--email', 'ops@example.test', '--name', 'ops'], env)).stdout.trim();
      expect(token).toMatch(/^wg_/);
      const origin = server.origin;

      const device = await api<{ data: { id: string }; qr: { code: string } }>(origin, token, 'POST', '/devices', { name: 'Backup phone' });
      expect(device.status).toBe(201);
      expect((await api(origin, token, 'POST', '/sandbox/scan', { code: device.body.qr.code, phoneNumber: '+62 811 0000 0001' })).status).toBe(200);
      await expect.poll(async () => (await api<{ data: { status: string } }>(origin, token, 'GET', `/devices/${device.body.data.id}`)).body.data.status, { timeout: 60_000 }).toBe('CONNECTED');

      // Sends in flight: a bulk job fanning out and direct sends one after another.
      const recipients = Array.from({ length: 300 }, (_, i) => `62812${String(1_000_000 + i)}`);
      expect((await api(origin, token, 'POST', '/messages/send', { type: 'TEXT', content: 'bulk', recipients })).status).toBe(202);
      let sending = true;
      let directSends = 0;
      const direct = (async () => {
        for (let i = 0; sending; i++) {
          const sent = await api(origin, token, 'POST', '/messages/send', { type: 'TEXT', content: `direct ${i}`, recipients: [`62813${String(1_000_000 + i)}`] });
          expect([200, 202]).toContain(sent.status);
          directSends++;
        }
      })();
      await expect.poll(() => directSends, { timeout: 60_000 }).toBeGreaterThan(3);

      const before = await messageTotal(origin, token);
      const file = path.join(tempDir(), 'waygate.backup.tar.gz');
      const backup = await runBuiltCli(['backup', '--out', file], env);
      const after = await messageTotal(origin, token);
      sending = false;
      await direct;
      expect(backup.stderr).toBe('');
      expect(backup.code).toBe(0);
      const seen = /Backup written to .*: [\d.]+ MB, 1 accounts, (\d+) messages, \d+ migrations applied\./.exec(backup.stdout);
      expect(seen, backup.stdout).not.toBeNull();
      const atBackup = Number(seen![1]);
      // Taken while sends went on: between the totals just before and just after.
      expect(atBackup).toBeGreaterThanOrEqual(before);
      expect(atBackup).toBeLessThanOrEqual(after);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);

      // The running server's own directory cannot be restored over.
      const busy = await runBuiltCli(['restore', file, '--force'], env);
      expect(busy.code).toBe(1);
      expect(busy.stderr).toMatch(/in use by another Waygate process.*Stop the server/s);

      expect(await server.stop()).toBe(0);
      server = undefined;

      // Restored into a new directory, the server answers what the backup held.
      const target = path.join(tempDir(), 'restored');
      const restore = await runBuiltCli(['restore', file, '--data-dir', target], {});
      expect(restore.stderr).toBe('');
      expect(restore.code).toBe(0);
      expect(restore.stdout).toContain(`1 accounts, ${atBackup} messages`);
      restored = await startBuiltServer({ DATA_DIR: target });
      expect(await messageTotal(restored.origin, token)).toBe(atBackup);
      const jobs = await api<{ meta: { total: number } }>(restored.origin, token, 'GET', '/messages/bulk-jobs');
      expect(jobs.body.meta.total).toBe(1);
      expect(await restored.stop()).toBe(0);
      restored = undefined;

      // A directory that holds a database is replaced only with --force.
      const again = await runBuiltCli(['restore', file, '--data-dir', target], {});
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/already holds a database.*--force/);
      const forced = await runBuiltCli(['restore', file, '--data-dir', target, '--force'], {});
      expect(forced.code, forced.stderr).toBe(0);
    } finally {
      await server?.stop();
      await restored?.stop();
    }
  }, 600_000);

  it('refuses what it cannot do, with a clear message', async () => {
    const missing = await runBuiltCli(['restore', path.join(tempDir(), 'nothing.tar.gz'), '--data-dir', tempDir()], {});
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/No backup file at/);
    const junk = path.join(tempDir(), 'junk.tar.gz');
    fs.writeFileSync(junk, 'not a backup');
    const target = tempDir();
    const broken = await runBuiltCli(['restore', junk, '--data-dir', target], {});
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/is not a Waygate backup that can be opened/);
    expect(fs.existsSync(path.join(target, 'pgdata'))).toBe(false);
    const noOut = await runBuiltCli(['backup'], { DATA_DIR: tempDir() });
    expect(noOut.code).toBe(2);
    expect(noOut.stderr).toMatch(/--out FILE is required/);
    const postgres = await runBuiltCli(['backup', '--out', 'x.tar.gz'], { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' });
    expect(postgres.code).toBe(1);
    expect(postgres.stderr).toMatch(/pg_dump -Fc/);
  }, 300_000);
});
