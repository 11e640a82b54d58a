/** The waygate CLI as an operator runs it, in a process of its own (through tsx, from the repository). */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..');
export const TSX = path.join(ROOT, 'node_modules/.bin/tsx');
export const CLI = path.join(ROOT, 'src/cli.ts');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `waygate <args>` to its end, with `env` over this process's environment (LOG_LEVEL warn unless given). */
export function runCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(TSX, [CLI, ...args], { env: { ...process.env, LOG_LEVEL: 'warn', ...env }, cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Builds what is stale (scripts/ensure-build.mjs), so the built CLI matches the sources under test. */
export function ensureBuilt(): void {
  const result = spawnSync(process.execPath, [path.join(ROOT, 'scripts/ensure-build.mjs')], { cwd: ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`the build failed:\n${result.stdout}\n${result.stderr}`);
}

/** Runs the built `waygate <args>` (dist/cli.js, as installed) to its end. */
export function runBuiltCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'dist/cli.js'), ...args], { env: { ...process.env, LOG_LEVEL: 'warn', DATABASE_URL: '', ...env }, cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

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

