#!/usr/bin/env node
/* global process, console */
/**
 * Builds the server (dist/) and the dashboard (dashboard/dist/) only when their sources changed
 * since the last build, so `npm start` starts in about a second and a developer who edited the
 * code still runs what they wrote. Plain JavaScript with no dependencies: it runs before anything
 * is built, and in production installs without devDependencies.
 *
 * A build is stale when its stamp file is missing or older than the newest file among its inputs.
 * The stamp is written only after a build succeeds. Where the sources are absent (a packed or
 * container install carries dist/ alone) there is nothing to check. Where the build tools are
 * absent (`npm ci --omit=dev`) an existing build is used as it is, with a warning if it is stale.
 *
 *   node scripts/ensure-build.mjs           build what is stale (`npm start`, `prepare`)
 *   node scripts/ensure-build.mjs --force   build both (`npm run build`)
 *   node scripts/ensure-build.mjs --check   exit 1 if anything is stale, build nothing
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const STAMP = '.build-stamp';

/** Each build: its npm script, the tool it needs, what it reads, and where its stamp lives. */
const TARGETS = [
  {
    name: 'server',
    script: 'build:server',
    tool: 'node_modules/typescript/bin/tsc',
    sources: ['src'],
    inputs: ['src', 'tsconfig.json', 'tsconfig.build.json'],
    output: 'dist',
    entry: 'dist/cli.js',
  },
  {
    name: 'dashboard',
    script: 'build:dashboard',
    tool: 'node_modules/vite/bin/vite.js',
    sources: ['dashboard/src'],
    // The one server module the dashboard bundles (its other imports of src/ are types only).
    inputs: ['dashboard/src', 'src/messaging/message-limits.ts', 'src/platform/text-limits.ts', 'dashboard/public', 'dashboard/index.html', 'dashboard/vite.config.ts', 'dashboard/tsconfig.json', 'package-lock.json'],
    output: 'dashboard/dist',
    entry: 'dashboard/dist/index.html',
  },
];

/** The newest modification time (ms) of a file, or of any file under a directory; 0 when absent. */
function newestMtime(target) {
  let stat;
  try {
    stat = fs.statSync(target);
  } catch {
    return 0;
  }
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of fs.readdirSync(target)) newest = Math.max(newest, newestMtime(path.join(target, entry)));
  return newest;
}

function stampTime(target) {
  try {
    return fs.statSync(path.join(ROOT, target.output, STAMP)).mtimeMs;
  } catch {
    return 0;
  }
}

/** Why `target` needs a build, or undefined when it is fresh (or cannot be checked: no sources). */
function staleness(target) {
  if (!target.sources.some((source) => fs.existsSync(path.join(ROOT, source)))) return undefined;
  if (!fs.existsSync(path.join(ROOT, target.entry))) return 'not built yet';
  const stamp = stampTime(target);
  if (stamp === 0) return 'no build stamp';
  const newest = Math.max(...target.inputs.map((input) => newestMtime(path.join(ROOT, input))));
  return newest > stamp ? 'sources changed since the last build' : undefined;
}

function build(target, reason) {
  if (!fs.existsSync(path.join(ROOT, target.tool))) {
    if (fs.existsSync(path.join(ROOT, target.entry))) {
      console.warn(`waygate: the ${target.name} build may be out of date (${reason}), and its build tools are not installed (devDependencies); using it as it is.`);
      return true;
    }
    console.error(`waygate: the ${target.name} is not built and cannot be: its build tools are devDependencies. Run \`npm install\` (with dev dependencies), or install a built package.`);
    return false;
  }
  console.error(`waygate: building the ${target.name} (${reason})…`);
  const started = Date.now();
  const npm = process.env.npm_execpath;
  const result = npm
    ? spawnSync(process.execPath, [npm, 'run', '-s', target.script], { cwd: ROOT, stdio: 'inherit' })
    : spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', '-s', target.script], { cwd: ROOT, stdio: 'inherit', shell: process.platform === 'win32' });
  if (result.status !== 0) {
    console.error(`waygate: the ${target.name} build failed.`);
    return false;
  }
  fs.writeFileSync(path.join(ROOT, target.output, STAMP), `${new Date().toISOString()}\n`);
  console.error(`waygate: ${target.name} built in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  return true;
}

const mode = process.argv.includes('--force') ? 'force' : process.argv.includes('--check') ? 'check' : 'ensure';
let ok = true;
for (const target of TARGETS) {
  const reason = mode === 'force' ? 'asked for' : staleness(target);
  if (reason === undefined) continue;
  if (mode === 'check') {
    console.error(`waygate: the ${target.name} build is stale: ${reason}`);
    ok = false;
  } else if (!build(target, reason)) {
    ok = false;
    break;
  }
}
process.exitCode = ok ? 0 : 1;
