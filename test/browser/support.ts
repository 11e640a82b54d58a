/**
 * What the browser tests and `npm run screenshots` share: the built dashboard (built here when
 * missing, so a fresh clone needs nothing first), a listening Waygate with its worker on a
 * database the caller opened, a local webhook receiver, and Debian's Chromium driven by
 * playwright-core in a fresh profile with every background network feature turned off.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { chromium, type BrowserContext } from 'playwright-core';
import { buildApp, createServices, type Services } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { Database } from '../../src/platform/database.js';
import { DASHBOARD_DIST } from '../../src/http/dashboard/plugin.js';
import { WorkerRuntime } from '../../src/worker-runtime.js';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const REPO_ROOT = path.resolve(DASHBOARD_DIST, '../..');

export function chromiumAvailable(): boolean {
  return fs.existsSync(CHROMIUM_PATH);
}

/** Whether a browser test file can run: Chromium is there; in CI (CI=true) its absence fails the file instead of skipping it. */
export function chromiumForTests(): boolean {
  const available = chromiumAvailable();
  if (!available && process.env.CI === 'true') {
    throw new Error(`Chromium is missing at ${CHROMIUM_PATH}; CI needs it for the dashboard tests (apt-get install -y chromium)`);
  }
  return available;
}

/**
 * Builds dashboard/dist with Vite unless a build is already there. The build goes to a folder of
 * its own and is renamed into place, so a server reading dashboard/dist meanwhile never sees half
 * a build.
 */
export async function ensureDashboardBuilt(): Promise<void> {
  if (fs.existsSync(path.join(DASHBOARD_DIST, 'index.html'))) return;
  const { build } = await import('vite');
  // Inside node_modules/.cache: ignored by git and lint, and on the same disk, so rename works.
  const staging = path.join(REPO_ROOT, 'node_modules/.cache', `waygate-dashboard-${process.pid}`);
  await build({ configFile: path.join(REPO_ROOT, 'dashboard/vite.config.ts'), logLevel: 'warn', build: { outDir: staging, emptyOutDir: true } });
  if (fs.existsSync(path.join(DASHBOARD_DIST, 'index.html'))) {
    fs.rmSync(staging, { recursive: true, force: true });
    return;
  }
  fs.rmSync(DASHBOARD_DIST, { recursive: true, force: true });
  fs.renameSync(staging, DASHBOARD_DIST);
}

export interface DashboardServer {
  url: string;
  app: FastifyInstance;
  services: Services;
  close(): Promise<void>;
}

/**
 * Waygate listening on 127.0.0.1 (random port) on the sandbox network, with its worker unless
 * `worker: false` (a server whose devices nothing drives, e.g. NETWORK=whatsapp with no phone).
 */
export async function startDashboardServer(database: Database, env: Record<string, string> = {}, options: { worker?: boolean } = {}): Promise<DashboardServer> {
  const config = loadConfig({
    LOG_LEVEL: 'silent',
    // Listening on loopback only: a fresh install's first sign-up needs no setup code.
    HOST: '127.0.0.1',
    SANDBOX_RECEIPT_MS: '200',
    SEND_WAIT_MS: '5000',
    LEASE_MS: '3000',
    // The webhook receiver of these runs listens on 127.0.0.1.
    ALLOW_PRIVATE_URLS: 'true',
    WEBHOOK_RETRY_SCHEDULE: '0,1s,2s',
    ...env,
  });
  const services = createServices(database, config);
  const app = await buildApp({ config, database, services });
  const worker = options.worker === false ? undefined : new WorkerRuntime(config, database, services.bus, pino({ level: 'silent' }));
  await worker?.start();
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    app,
    services,
    async close() {
      await app.close();
      await worker?.stop();
      await services.close();
    },
  };
}

export { startWebhookReceiver, type WebhookReceiver } from '../webhook-receiver.js';

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** Chromium headless in a fresh profile directory, removed on close. */
export async function launchBrowser(viewport = { width: 1280, height: 800 }): Promise<Browser> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    viewport,
    permissions: ['clipboard-read', 'clipboard-write'],
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
