/**
 * CPU time spent by groups of processes over a measured window, read from /proc (Linux only; on
 * other systems the meter reports nothing). Throughput on a shared, noisy machine moves with the
 * machine; the CPU a request costs each process moves far less, so the benchmarks report it beside
 * their rates. "PostgreSQL" is every process named postgres on the machine (backends, WAL writer,
 * checkpointer: the database's whole cost, so run on an otherwise quiet server); "load generator"
 * is this process (autocannon).
 */
import fs from 'node:fs';
import type { Check } from './report.js';

/** USER_HZ, the unit of /proc's CPU times: 100 on Linux. */
const TICKS_PER_SECOND = 100;
const PAGE = '/proc';

/** utime + stime of one process in clock ticks, or undefined if it is gone. */
function ticksOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`${PAGE}/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

function postgresPids(): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync(PAGE)) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`${PAGE}/${entry}/comm`, 'utf8').trim() === 'postgres') pids.push(Number(entry));
    } catch {
      // The process ended while the directory was listed.
    }
  }
  return pids;
}

/** Process ids by group name ("PostgreSQL" and "load generator" are added). */
export type ProcessGroups = Record<string, number[]>;

export interface CpuMeter {
  /** CPU milliseconds each group spent since the meter started. */
  stop(): Record<string, number>;
}

/**
 * Starts measuring; undefined where /proc cannot be read. A process that starts during the window
 * counts in full; one that ends during it loses what it spent in the window (the pools the
 * benchmarks measure keep their connections open).
 */
export function startCpuMeter(groups: ProcessGroups): CpuMeter | undefined {
  if (!fs.existsSync(`${PAGE}/self/stat`)) return undefined;
  const snapshot = (): Map<string, Map<number, number>> => {
    const all: ProcessGroups = { ...groups, PostgreSQL: postgresPids(), 'load generator': [process.pid] };
    return new Map(Object.entries(all).map(([name, pids]) => [name, new Map(pids.flatMap((pid) => {
      const ticks = ticksOf(pid);
      return ticks === undefined ? [] : [[pid, ticks] as const];
    }))]));
  };
  const before = snapshot();
  return {
    stop() {
      const after = snapshot();
      const spent: Record<string, number> = {};
      for (const [name, pids] of after) {
        let ticks = 0;
        for (const [pid, now] of pids) ticks += now - (before.get(name)?.get(pid) ?? 0);
        spent[name] = (ticks * 1_000) / TICKS_PER_SECOND;
      }
      return spent;
    },
  };
}

/** CPU milliseconds by group over a window, and the requests answered in it. */
export interface Measured {
  cpuMs?: Record<string, number> | undefined;
  requests: number;
}

/** "server 0.21, PostgreSQL 0.30, load generator 0.04 ms": CPU milliseconds per request by group. */
export function perRequest({ cpuMs, requests }: Measured): string {
  if (!cpuMs || requests === 0) return 'not measured (no /proc)';
  return `${Object.entries(cpuMs)
    .map(([name, ms]) => `${name} ${(ms / requests).toFixed(3)}`)
    .join(', ')} ms`;
}

/** The sum over every group of CPU milliseconds per request. */
function totalPerRequest({ cpuMs, requests }: Measured): number | undefined {
  if (!cpuMs || requests === 0) return undefined;
  return Object.values(cpuMs).reduce((sum, ms) => sum + ms, 0) / requests;
}

/** The rows (information only) of what a bare request and what `name` cost each process, and their ratio. */
export function cpuChecks(bare: Measured, measured: Measured, name: string): Check[] {
  const checks: Check[] = [
    { metric: 'CPU per bare request', measured: perRequest(bare), target: '', pass: undefined },
    { metric: `CPU per ${name}`, measured: perRequest(measured), target: '', pass: undefined },
  ];
  const [bareCpu, measuredCpu] = [totalPerRequest(bare), totalPerRequest(measured)];
  if (bareCpu !== undefined && measuredCpu !== undefined) {
    checks.push({ metric: `CPU per bare request / per ${name}`, measured: `${((bareCpu / measuredCpu) * 100).toFixed(1)}%`, target: '', pass: undefined });
  }
  return checks;
}
