/**
 * The embedded database's memory settings (PGLITE_SETTINGS in src/platform/database.ts): PGlite
 * would otherwise start Postgres with 128 MB of shared buffers, all of them resident in the WASM
 * heap for the life of the process. Run on a data directory of its own (initdb writes
 * shared_buffers = 128MB into its postgresql.conf; the setting must win over it), in the PGlite
 * pass only.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, PGLITE_SETTINGS } from '../src/platform/database.js';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-pglite-memory-'));
afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

describe('PGlite memory settings', () => {
  it('starts Postgres with 16 MB of shared buffers, over the postgresql.conf initdb wrote, and a WASM heap that stays near its initial 128 MB', async () => {
    expect(PGLITE_SETTINGS.shared_buffers).toBe('16MB');
    for (let start = 0; start < 2; start++) {
      // The first start runs initdb in the directory; the second resumes it.
      const database = await openDatabase({ dataDir });
      try {
        const [row] = await database.query<{ shared_buffers: string }>('SHOW shared_buffers');
        expect(row!.shared_buffers).toBe('16MB');
        const heap = (database.pglite as unknown as { mod: { HEAP8: Int8Array } }).mod.HEAP8.buffer.byteLength;
        // 184 MB with PGlite's default of 128 MB of shared buffers.
        expect(heap / 2 ** 20).toBeLessThanOrEqual(150);
      } finally {
        await database.close();
      }
    }
    expect(fs.readFileSync(path.join(dataDir, 'pgdata/postgresql.conf'), 'utf8')).toMatch(/^shared_buffers = 128MB/m);
    // initdb and two starts: tens of seconds on a busy machine.
  }, 180_000);

  it('uses the same settings in memory (tests)', async () => {
    const database = await openDatabase({ dataDir: 'memory://' });
    try {
      const [row] = await database.query<{ shared_buffers: string }>('SHOW shared_buffers');
      expect(row!.shared_buffers).toBe('16MB');
    } finally {
      await database.close();
    }
  }, 120_000);
});
