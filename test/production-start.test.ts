/**
 * The production start: the built server (`node dist/cli.js serve`, what `npm start` and the
 * container run) serves on a data directory of its own, stops cleanly on SIGTERM, and serves
 * again on the same directory; and nothing the server imports at run time is a devDependency,
 * so `npm ci --omit=dev` plus the built output runs.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { builtinModules } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT, startBuiltServer } from './cli-process.js';

const tempDirs: string[] = [];
afterAll(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

beforeAll(ensureBuilt, 600_000);

describe('production start', () => {
  it('serves from the built output, stops on SIGTERM, and serves again on the same data directory', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-prod-'));
    tempDirs.push(dataDir);
    for (let run = 1; run <= 2; run++) {
      const server = await startBuiltServer({ DATA_DIR: dataDir });
      try {
        const health = await fetch(`${server.origin}/healthz`);
        expect(health.status).toBe(200);
        expect(await health.json()).toEqual({ status: 'ok' });
        expect((await fetch(`${server.origin}/readyz`)).status).toBe(200);
        expect(server.output()).toMatch(/"durationMs":\d+,"msg":"migrations applied"/);
      } finally {
        expect(await server.stop()).toBe(0);
      }
      expect(server.output()).toMatch(/"msg":"shutdown complete"/);
      expect(fs.readdirSync(dataDir)).not.toContain('waygate.lock');
    }
  }, 300_000);

  it('prints its version', () => {
    const result = spawnSync(process.execPath, [path.join(ROOT, 'dist/cli.js'), '--version'], { cwd: ROOT, encoding: 'utf8' });
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(`${pkg.version}\n`);
  });

  it('imports at run time only dependencies, never devDependencies', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
    const runtime = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {})]);
    const builtins = new Set(builtinModules);
    const offenders: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(file);
        else if (entry.name.endsWith('.js')) {
          const code = fs.readFileSync(file, 'utf8');
          // The compiled output: type-only imports are gone, so every specifier left is loaded.
          const specifiers = [
            ...code.matchAll(/^(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/gm),
            ...code.matchAll(/^import\s*['"]([^'"]+)['"]/gm),
            ...code.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
          ].map((match) => match[1]!);
          for (const specifier of specifiers) {
            if (specifier.startsWith('.')) continue;
            const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
            if (specifier.startsWith('node:') || builtins.has(name) || runtime.has(name)) continue;
            offenders.push(`${path.relative(ROOT, file)}: ${specifier}`);
          }
        }
      }
    };
    walk(path.join(ROOT, 'dist'));
    expect(offenders).toEqual([]);
  });
});
