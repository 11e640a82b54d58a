// Temporary driver (not committed): the built product under direct-send load, for perf.
import { spawn } from 'node:child_process';
import { recreateDatabase, makeTenant, linkDevice } from './lib/tenant.js';
import { runPostLoad } from './lib/post-load.js';
const url = 'postgres://postgres@127.0.0.1:5432/waygate_prof';
await recreateDatabase(url);
const token = await makeTenant(url);
const child = spawn(process.execPath, ['--perf-basic-prof', 'dist/cli.js', 'serve'], {
  env: { ...process.env, DATABASE_URL: url, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', BULK_DELAY_MS: '0', SANDBOX_RECEIPT_MS: '1000', RATE_LIMIT_PER_MINUTE: '10000000', NETWORK: 'sandbox' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const origin = await new Promise<string>((resolve) => {
  let out = '';
  child.stdout!.on('data', (c: Buffer) => { out += c; const m = /"address":"(http:\/\/[^"]+)"/.exec(out); if (m) resolve(m[1]!.replace('localhost', '127.0.0.1')); });
});
child.stdout!.resume();
await linkDevice(origin, token);
console.log('PID', child.pid);
const body = JSON.stringify({ type: 'TEXT', content: 'Your code is 123456', recipients: ['6281234567891'] });
const seconds = Number(process.env.SECONDS_LOAD ?? 25);
const r = await runPostLoad({ title: 'direct', origin, path: '/messages/send', body, connections: 50, headers: { 'x-api-key': token }, durationSeconds: seconds, warmupSeconds: 3, cpu: { server: [child.pid!] } });
console.log(JSON.stringify({ rps: r.requestsPerSecond, cpu: r.cpuMs, n: r.responses }));
child.kill('SIGTERM');
await new Promise((r) => child.once('exit', r));
