/** The waygate CLI as an operator runs it, in a process of its own (through tsx, from the repository). */
import { spawn } from 'node:child_process';
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
