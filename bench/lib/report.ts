/** The verdict of a benchmark: a table of metric, measured value, target and pass/fail, and a JSON file. */
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Check {
  metric: string;
  measured: string;
  /** Empty for a figure reported for information only. */
  target: string;
  /** undefined: information only, never fails the run. */
  pass: boolean | undefined;
}

/** What one benchmark's part measured: its checks, and the figures behind them for the results file. */
export interface Measured {
  checks: Check[];
  results: Record<string, unknown>;
}

export const RESULTS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../results');

export function allPassed(checks: readonly Check[]): boolean {
  return checks.every((check) => check.pass !== false);
}

export function formatTable(checks: readonly Check[]): string {
  const header = ['metric', 'measured', 'target', 'result'];
  const rows = checks.map((check) => [check.metric, check.measured, check.target || '-', check.pass === undefined ? 'info' : check.pass ? 'PASS' : 'FAIL']);
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]!.length)));
  const line = (cells: string[]) => `| ${cells.map((cell, column) => cell.padEnd(widths[column]!)).join(' | ')} |`;
  const rule = `|${widths.map((width) => '-'.repeat(width + 2)).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

/** Writes bench/results/<name>.json and returns its path. */
export async function writeResults(name: string, results: unknown): Promise<string> {
  await fs.mkdir(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${name}.json`);
  await fs.writeFile(file, `${JSON.stringify(results, null, 2)}\n`);
  return file;
}
