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
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { onTestFailed } from 'vitest';
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

/** Chromium (as launchBrowser) with one page open, whose actions wait at most 15 s. */
export async function openBrowserPage(viewport?: { width: number; height: number }): Promise<{ browser: Browser; page: Page }> {
  const browser = await launchBrowser(viewport);
  const page = await browser.context.newPage();
  page.setDefaultTimeout(15_000);
  return { browser, page };
}

/** Where a browser test leaves its screenshots (ignored by git). */
const SCREENSHOTS = path.resolve('test-results/browser');

/** A full-page screenshot of `page` as it is now, in test-results/browser/<name>.png. */
export async function saveScreenshot(page: Page, name: string): Promise<void> {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Called in a test: should it fail, saveScreenshot of `page` as it was then. */
export function screenshotOnFailure(page: Page, name: string): void {
  onTestFailed(() => saveScreenshot(page, name).catch(() => undefined));
}

/** The public API of a test server as one account (its `x-api-key`); a non-2xx answer throws with its body. */
export function accountApi(server: DashboardServer, token: string) {
  return async function call<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', pathname: string, body?: unknown): Promise<T> {
    const response = await fetch(`${server.url}${pathname}`, {
      method,
      headers: { 'x-api-key': token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${pathname}: ${response.status} ${text}`);
    return JSON.parse(text) as T;
  };
}

/**
 * An account with an API token and one sandbox device linked to `phoneNumber` through the
 * sandbox's scan, CONNECTED before it returns.
 */
export async function accountWithDevice(
  server: DashboardServer,
  account: { email: string; password: string; phoneNumber: string },
): Promise<{ deviceId: string; api: ReturnType<typeof accountApi> }> {
  const created = await server.services.accounts.createAccount({ email: account.email, password: account.password, plan: 'unlimited' });
  const { token } = await server.services.tokens.create(created.accountId, { name: 'browser test' });
  const api = accountApi(server, token);
  const device = await api<{ data: { id: string }; qr: { code: string } }>('POST', '/devices', { name: 'Shop phone' });
  await api('POST', '/sandbox/scan', { code: device.qr.code, phoneNumber: account.phoneNumber });
  for (let waited = 0; (await api<{ data: { status: string } }>('GET', `/devices/${device.data.id}`)).data.status !== 'CONNECTED'; waited += 100) {
    if (waited > 15_000) throw new Error('the device did not connect');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { deviceId: device.data.id, api };
}

/** Signs in on the dashboard's log-in page, which then goes on to `next` (a dashboard path). */
export async function signIn(page: Page, server: DashboardServer, account: { email: string; password: string }, next: string): Promise<void> {
  await page.goto(`${server.url}/dashboard/login?next=${next}`);
  await page.getByLabel('Email').fill(account.email);
  await page.getByLabel('Password').fill(account.password);
  await page.getByLabel('Password').press('Enter');
}
