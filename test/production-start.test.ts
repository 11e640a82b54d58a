/**
 * The production start: the built server (`node dist/cli.js serve`, what `npm start` and the
 * container run) serves on a data directory of its own, stops cleanly on SIGTERM, and serves
 * again on the same directory; and nothing the server imports at run time is a devDependency,
 * so `npm ci --omit=dev` plus the built output runs.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { builtinModules } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from './cli-process.js';

const tempDirs: string[] = [];
afterAll(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

export interface BuiltServer {
  process: ChildProcess;
  origin: string;
  /** Everything it printed so far. */
  output(): string;
  /** SIGTERM, then its exit code. */
  stop(): Promise<number | null>;
}

/** Starts the built CLI's `serve` and resolves once it logs its address. */
export function startBuiltServer(env: Record<string, string>, args: string[] = []): Promise<BuiltServer> {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist/cli.js'), 'serve', ...args], {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', DATABASE_URL: '', ...env },
  });
  let output = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start within 120 s:\n${output}`)), 120_000);
    const read = (chunk: Buffer): void => {
      output += chunk.toString();
      const up = /"address":"(http:\/\/[^"]+)".*waygate is up/.exec(output);
      if (!up) return;
      clearTimeout(timer);
      resolve({
        process: child,
        origin: up[1]!,
        output: () => output,
        async stop() {
          child.kill('SIGTERM');
          return exited;
        },
      });
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited with ${code} before it was up:\n${output}`));
    });
  });
}

beforeAll(() => {
  // The built output must match the sources under test (a no-op when it does).
  const result = spawnSync(process.execPath, [path.join(ROOT, 'scripts/ensure-build.mjs')], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`the build failed:\n${result.stdout}\n${result.stderr}`);
}, 600_000);

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
