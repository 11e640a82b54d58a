/**
 * The dashboard of issue #17 in Chromium, at desktop (1280 px) and phone (375 px) width, on a
 * fresh server with the sandbox network: a fresh install lands on Sign up; the Overview is home
 * and its figures equal the API's own counts after a seeded bulk job (with the sandbox's failing
 * and never-read numbers); dark mode follows the system and the switch (kept across a reload);
 * tables become cards on a phone, with the Messages status and the tokens' Revoke on screen; the
 * Send page (every type, numbers checked by line, no device, a large-send confirmation, cleared
 * after a send, live status); webhook health, edit, secret rotation and retry now; distinct
 * accessible names; Add members without members; and the banner when the server is gone.
 * A failing test leaves a screenshot in test-results/browser/.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { openTestDatabase } from '../helpers.js';
import { chromiumAvailable, CHROMIUM_PATH, ensureDashboardBuilt, launchBrowser, startDashboardServer, type Browser, type DashboardServer } from './support.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const SCREENSHOTS = path.resolve('test-results/browser');
const available = chromiumAvailable();
if (!available && process.env.CI === 'true') {
  throw new Error(`Chromium is missing at ${CHROMIUM_PATH}; CI needs it for the dashboard tests (apt-get install -y chromium)`);
}

const PASSWORD = 'a long enough password';
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 812 };

let server: DashboardServer;
let browser: Browser;
let page: Page;
let token: string;
let deviceId: string;

function screenshotOnFailure(name: string): void {
  onTestFailed(async () => {
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page?.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true }).catch(() => undefined);
  });
}

async function publicApi<T>(method: string, pathname: string, body?: unknown): Promise<{ status: number; json: T }> {
  const response = await fetch(`${server.url}${pathname}`, {
    method,
    headers: { 'x-api-key': token, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, json: (await response.json()) as T };
}

async function openNav(label: string): Promise<void> {
  const menu = page.getByRole('button', { name: 'Menu' });
  if (await menu.isVisible()) await menu.click();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true }).click();
  await page.getByRole('heading', { level: 1, name: label }).waitFor();
}

/** How far the page, or any box in it, scrolls sideways (0: nothing does). */
async function sidewaysOverflow(): Promise<number> {
  return page.evaluate(() => {
    const doc = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number }; querySelectorAll(s: string): Iterable<{ scrollWidth: number; clientWidth: number }> } }).document;
    let worst = doc.documentElement.scrollWidth - doc.documentElement.clientWidth;
    for (const box of doc.querySelectorAll('.table-wrap, .card, main')) worst = Math.max(worst, box.scrollWidth - box.clientWidth);
    return worst;
  });
}

/** A receiver answering `status()` to every call. */
async function receiver(status: () => number): Promise<{ url: string; close(): Promise<void> }> {
  const httpServer = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(status()).end('answer'));
  });
  await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/hook`, close: () => new Promise((resolve) => httpServer.close(() => resolve())) };
}

interface Overview {
  totals: { sent: number; delivered: number; read: number; failed: number; incoming: number };
  failuresByCode: Array<{ code: string; count: number }>;
}
interface Job {
  status: string;
  totalContacts: number;
  sentCount: number;
  deliveredCount: number;
  readCount: number;
  failedCount: number;
}

describe.skipIf(!available)('dashboard of #17 in Chromium', () => {
  beforeAll(async () => {
    await ensureDashboardBuilt();
    server = await startDashboardServer(await openTestDatabase(), { SANDBOX_RECEIPT_MS: '100' });
    browser = await launchBrowser(DESKTOP);
    page = await browser.context.newPage();
    page.setDefaultTimeout(15_000);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('a fresh install lands on Sign up; the Overview is home; Send is disabled with a link while no device is linked', async () => {
    screenshotOnFailure('17-signup');
    await page.goto(`${server.url}/dashboard/`);
    await expect.poll(() => new URL(page.url()).pathname, { timeout: 15_000 }).toBe('/dashboard/signup');
    await page.getByLabel('Email').fill('owner@example.test');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/overview');
    expect(await page.getByRole('link', { name: /API reference/ }).getAttribute('href')).toBe('/docs');

    // The API token the rest of the file uses, for the account just created.
    const accountId = await page.evaluate(async () => ((await (await fetch('/dashboard/api/session')).json()) as { user: { accountId: string } }).user.accountId);
    token = (await server.services.tokens.create(accountId, { name: 'browser test' })).token;

    await openNav('Send');
    await page.getByText('No linked device, so nothing can be sent yet.').waitFor();
    await page.getByLabel('Message', { exact: true }).fill('Hello');
    await page.getByLabel('Phone numbers').fill('+62 812 3456 7890');
    expect(await page.getByRole('button', { name: 'Send', exact: true }).isDisabled()).toBe(true);
    await page.getByRole('link', { name: 'Link a device to send' }).click();
    await page.getByRole('heading', { level: 1, name: 'Devices' }).waitFor();
  }, 60_000);

  it("shows the overview's figures equal to the API's counts after a bulk job, at desktop and phone width", async () => {
    screenshotOnFailure('17-overview');
    // A linked device, and a bulk job of 20: 16 read, 2 not on the network (0000), 1 never delivered (0001), 1 never read (0002).
    const created = await publicApi<{ data: { id: string }; qr: { code: string } }>('POST', '/devices', { name: 'Shop phone' });
    deviceId = created.json.data.id;
    expect((await publicApi('POST', '/sandbox/scan', { code: created.json.qr.code, phoneNumber: '6281122223333' })).status).toBe(200);
    await expect.poll(async () => (await publicApi<{ data: { status: string } }>('GET', `/devices/${deviceId}`)).json.data.status).toBe('CONNECTED');
    const recipients = [...Array.from({ length: 16 }, (_, i) => `628125555${String(1100 + i)}`), '6281255560000', '6281255570000', '6281255580001', '6281255590002'];
    const sent = await publicApi<{ jobId: string }>('POST', '/messages/send', { type: 'TEXT', content: 'Weekend sale', recipients });
    expect(sent.status).toBe(202);
    const job = await (async () => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const current = (await publicApi<{ data: Job }>('GET', `/messages/bulk-jobs/${sent.json.jobId}`)).json.data;
        if (current.status === 'COMPLETED' && current.readCount === 16 && current.deliveredCount === 17) return current;
        if (Date.now() > deadline) throw new Error(`the job did not settle: ${JSON.stringify(current)}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    expect(job).toMatchObject({ sentCount: 18, failedCount: 2 });
    expect((await publicApi('POST', '/sandbox/incoming', { deviceId, from: '6281255551100', content: 'Is it open today?' })).status).toBe(202);
    const api = await (async () => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const current = (await publicApi<{ data: Overview }>('GET', '/account/overview?days=7')).json.data;
        if (current.totals.incoming === 1) return current;
        if (Date.now() > deadline) throw new Error('the incoming message was not counted');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    })();
    // The API's own counts: the job's counters, the listing of failed messages.
    const failedListed = (await publicApi<{ meta: { total: number } }>('GET', '/messages?status=FAILED&limit=1')).json.meta.total;
    expect(api.totals).toEqual({ sent: job.sentCount, delivered: job.deliveredCount, read: job.readCount, failed: job.failedCount, incoming: 1 });
    expect(failedListed).toBe(job.failedCount);

    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      await page.goto(`${server.url}/dashboard/`);
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
      await page.getByLabel('7 days').check();
      await expect.poll(() => page.getByTestId('overview-incoming').textContent()).toBe('1');
      expect(await page.getByTestId('overview-sent').textContent()).toBe(String(job.sentCount));
      expect(await page.getByTestId('overview-delivered').textContent()).toBe(String(job.deliveredCount));
      expect(await page.getByTestId('overview-read').textContent()).toBe(String(job.readCount));
      expect(await page.getByTestId('overview-failed').textContent()).toBe(String(job.failedCount));
      expect(await page.getByTestId('overview-delivery-rate').textContent()).toBe(`${((17 / 18) * 100).toFixed(1)}% of sent`);
      expect(await page.getByTestId('overview-read-rate').textContent()).toBe(`${((16 / 17) * 100).toFixed(1)}% of delivered`);
      await page.getByTestId('failure-code').filter({ hasText: 'RECIPIENT_NOT_ON_NETWORK' }).filter({ hasText: '2' }).waitFor();
      await page.locator('.chart canvas').first().waitFor();
      expect(await page.getByRole('img', { name: /Messages per day from .*18 sent, 17 delivered, 16 read, 2 failed, 1 incoming/ }).count()).toBe(1);
      await page.getByTestId('overview-device').filter({ hasText: 'Shop phone' }).getByText('CONNECTED').waitFor();
      expect(await sidewaysOverflow(), `overview at ${viewport.width}px`).toBeLessThanOrEqual(0);
    }
    await page.setViewportSize(DESKTOP);
  }, 90_000);

  it('dark mode follows the system, and the Theme switch overrides it across a reload (with a dark screenshot)', async () => {
    screenshotOnFailure('17-dark');
    const background = () =>
      page.evaluate(() => {
        const win = globalThis as unknown as { getComputedStyle(element: unknown): { backgroundColor: string }; document: { documentElement: unknown } };
        return win.getComputedStyle(win.document.documentElement).backgroundColor;
      });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.goto(`${server.url}/dashboard/overview`);
    await page.getByTestId('overview-sent').waitFor();
    await expect.poll(() => page.evaluate(() => (globalThis as unknown as { document: { documentElement: { dataset: { theme?: string } } } }).document.documentElement.dataset.theme)).toBe('dark');
    const dark = await background();
    expect(dark).toBe('rgb(15, 18, 22)');
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOTS, 'overview-dark.png'), fullPage: true });

    await page.emulateMedia({ colorScheme: 'light' });
    await expect.poll(background).toBe('rgb(246, 247, 249)');
    await page.getByLabel('Theme').selectOption('dark');
    await expect.poll(background).toBe(dark);
    await page.reload();
    await page.getByTestId('overview-sent').waitFor();
    await expect.poll(background).toBe(dark);
    expect(await page.getByLabel('Theme').inputValue()).toBe('dark');
    await page.getByLabel('Theme').selectOption('system');
    await expect.poll(background).toBe('rgb(246, 247, 249)');
  }, 60_000);

  it('at 375 px tables are cards: nothing scrolls sideways, the Messages status and the tokens’ Revoke are on screen', async () => {
    screenshotOnFailure('17-phone-tables');
    await page.setViewportSize(PHONE);
    await page.goto(`${server.url}/dashboard/messages`);
    await page.getByRole('heading', { level: 1, name: 'Messages' }).waitFor();
    const status = page.locator('td[data-label="Status"] .badge').first();
    await status.waitFor();
    const box = await status.boundingBox();
    expect(box!.x + box!.width).toBeLessThanOrEqual(PHONE.width);
    expect(await sidewaysOverflow()).toBeLessThanOrEqual(0);

    await page.goto(`${server.url}/dashboard/settings/api-access`);
    const revoke = page.getByRole('button', { name: 'Revoke token browser test' });
    await revoke.waitFor();
    const revokeBox = await revoke.boundingBox();
    expect(revokeBox!.x + revokeBox!.width).toBeLessThanOrEqual(PHONE.width);
    expect(await revoke.isVisible()).toBe(true);
    expect(await sidewaysOverflow()).toBeLessThanOrEqual(0);

    for (const pathname of ['overview', 'contacts', 'webhooks', 'send', 'bulk-jobs', 'groups']) {
      await page.goto(`${server.url}/dashboard/${pathname}`);
      await page.locator('h1').first().waitFor();
      await page.waitForLoadState('networkidle').catch(() => undefined);
      expect(await sidewaysOverflow(), `/dashboard/${pathname}`).toBeLessThanOrEqual(0);
    }
    await page.setViewportSize(DESKTOP);
  }, 60_000);

  it('Send: every type, numbers checked by line in plain words, a confirmation above 100, cleared after sending, live status', async () => {
    screenshotOnFailure('17-send');
    for (const viewport of [DESKTOP, PHONE]) {
      await page.setViewportSize(viewport);
      await page.goto(`${server.url}/dashboard/send`);
      await page.getByRole('heading', { level: 1, name: 'Send' }).waitFor();
      const types = page.getByRole('group', { name: 'Message type' }).getByRole('radio');
      expect(await types.count()).toBe(9);
      for (const label of ['Text', 'Image', 'Video', 'Document', 'Audio', 'Sticker', 'Location', 'Contact card', 'Poll']) {
        expect(await page.getByRole('radio', { name: label, exact: true }).count(), label).toBe(1);
      }
      await page.getByLabel('Message', { exact: true }).fill('Your order is ready');
      await page.getByLabel('Phone numbers').fill('+62 812 3456 7890\n12345\n+62 812 3456 7891');
      await page.getByText('line 2: 12345 is too short').waitFor();
      expect(await page.getByRole('button', { name: 'Send', exact: true }).isDisabled()).toBe(true);
      expect(await sidewaysOverflow()).toBeLessThanOrEqual(0);
    }
    await page.setViewportSize(DESKTOP);

    // A poll to two good numbers: sent, the form cleared, and each message watched to READ.
    await page.getByLabel('Poll', { exact: true }).check();
    await page.getByLabel('Question').fill('Which day suits you?');
    await page.getByLabel('Options').fill('Saturday\nSunday');
    await page.getByLabel('Phone numbers').fill('+62 812 3456 7890\n+62 812 3456 7891');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await page.getByRole('heading', { name: /^(Sent|Accepted)$/ }).waitFor();
    expect(await page.getByLabel('Phone numbers').inputValue()).toBe('');
    expect(await page.getByLabel('Question').inputValue()).toBe('');
    await expect.poll(async () => (await page.getByTestId('sent-status').allTextContents()).join(','), { timeout: 20_000 }).toBe('READ,READ');

    // More than 100 recipients: a confirmation first; going back sends nothing.
    const before = (await publicApi<{ meta: { total: number } }>('GET', '/messages/bulk-jobs?limit=1')).json.meta.total;
    await page.getByLabel('Text', { exact: true }).check();
    await page.getByLabel('Message', { exact: true }).fill('Big announcement');
    await page.getByLabel('Phone numbers').fill(Array.from({ length: 101 }, (_, i) => `+62 812 6${String(100000 + i).padStart(7, '0')}`).join('\n'));
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const dialog = page.getByRole('dialog', { name: 'Send to 101 recipients?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Go back' }).click();
    expect((await publicApi<{ meta: { total: number } }>('GET', '/messages/bulk-jobs?limit=1')).json.meta.total).toBe(before);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await dialog.getByRole('button', { name: 'Send to 101' }).click();
    await page.getByRole('heading', { name: 'Bulk job started' }).waitFor();
    await expect.poll(() => page.getByTestId('job-percent').textContent(), { timeout: 60_000 }).toBe('100%');
    expect(await page.getByLabel('Message', { exact: true }).inputValue()).toBe('');
  }, 120_000);

  it('Webhooks: a failing endpoint shows FAILING (never a green ACTIVE); edit, rotate the secret, retry now, then HEALTHY', async () => {
    screenshotOnFailure('17-webhooks');
    let answer = 500;
    const hook = await receiver(() => answer);
    try {
      await page.goto(`${server.url}/dashboard/webhooks`);
      await page.getByRole('button', { name: 'Add endpoint' }).first().click();
      await page.getByLabel('URL').fill(`${hook.url}?first`);
      await page.locator('form').getByRole('button', { name: 'Add endpoint' }).click();
      const card = page.locator('article', { hasText: `${hook.url}?first` });
      await card.waitFor();
      await card.getByRole('button', { name: `Send test event to ${hook.url}?first` }).click();
      // WEBHOOK_RETRY_SCHEDULE 0,1s,2s: three failed attempts.
      await expect.poll(() => card.getByTestId('webhook-health').textContent(), { timeout: 20_000 }).toBe('FAILING');
      expect(await card.getByText('ACTIVE', { exact: true }).count()).toBe(0);
      expect(await card.getByTestId('webhook-health').getAttribute('class')).toContain('badge-bad');

      // Edit the URL and the events.
      await card.getByRole('button', { name: `Edit endpoint ${hook.url}?first` }).click();
      await card.getByLabel('URL').fill(`${hook.url}?second`);
      await card.getByRole('checkbox', { name: 'message.status' }).check();
      await card.getByRole('button', { name: 'Save changes' }).click();
      const edited = page.locator('article', { hasText: `${hook.url}?second` });
      await edited.getByText('message.status', { exact: false }).first().waitFor();
      const stored = (await publicApi<{ data: Array<{ url: string; events: string[] }> }>('GET', '/webhooks')).json.data[0]!;
      expect(stored).toMatchObject({ url: `${hook.url}?second`, events: ['message.status'] });

      // Rotate the secret: the new one is shown and is the API's.
      await edited.getByRole('button', { name: `Rotate the secret of ${hook.url}?second` }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Rotate secret' }).click();
      const rotated = await edited.getByTestId('rotated-secret').textContent();
      const webhookId = (await publicApi<{ data: Array<{ id: string }> }>('GET', '/webhooks')).json.data[0]!.id;
      const secret = (await publicApi<{ data: { secret: string; previousSecret: string | null } }>('GET', `/webhooks/${webhookId}/secret`)).json.data;
      expect(rotated).toBe(secret.secret);
      expect(secret.previousSecret).not.toBeNull();

      // Retry now: the endpoint answers 200 this time, and its health turns HEALTHY.
      answer = 200;
      // The log opened with the test event; open it if it is not.
      const openLog = edited.getByRole('button', { name: `Delivery log of ${hook.url}?second`, exact: true });
      if ((await openLog.count()) > 0) await openLog.click();
      const row = edited.getByTestId('delivery-row').filter({ hasText: 'FAILED' }).first();
      await row.waitFor({ timeout: 20_000 });
      await row.getByRole('button', { name: /^Retry now: webhook.test/ }).click();
      await expect.poll(() => edited.getByTestId('delivery-row').filter({ hasText: 'SUCCEEDED' }).count(), { timeout: 20_000 }).toBe(1);
      await expect.poll(() => edited.getByTestId('webhook-health').textContent(), { timeout: 20_000 }).toBe('HEALTHY');

      await page.setViewportSize(PHONE);
      await page.reload();
      await page.getByTestId('webhook-health').first().waitFor();
      expect(await sidewaysOverflow()).toBeLessThanOrEqual(0);
      await page.setViewportSize(DESKTOP);
    } finally {
      await hook.close();
    }
  }, 90_000);

  it('per-row buttons have distinct names; Add members does not offer people already in the group', async () => {
    screenshotOnFailure('17-names');
    const ids: Record<string, string> = {};
    for (const [name, phoneNumber] of [['Ana', '6281270000101'], ['Budi', '6281270000102']] as const) {
      ids[name] = (await publicApi<{ data: { id: string } }>('POST', '/contacts', { name, phoneNumber })).json.data.id;
    }
    const group = (await publicApi<{ data: { id: string } }>('POST', '/groups', { name: 'Regulars', contactIds: [ids.Ana] })).json.data;
    await page.goto(`${server.url}/dashboard/contacts`);
    await page.getByRole('button', { name: 'Delete contact Ana', exact: true }).waitFor();
    expect(await page.getByRole('button', { name: 'Delete contact Budi', exact: true }).count()).toBe(1);
    await page.goto(`${server.url}/dashboard/groups/${group.id}`);
    await page.getByText('Add members').click();
    await page.getByLabel('Find contacts').fill('8127000');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('checkbox', { name: /Budi/ }).waitFor();
    expect(await page.getByRole('checkbox', { name: /Ana/ }).count()).toBe(0);
    await page.getByText('1 of the contacts found is already in the group.').waitFor();
  }, 60_000);

  it('says clearly when the server cannot be reached, and marks device cards as last known', async () => {
    screenshotOnFailure('17-unreachable');
    // A server of its own, stopped under the page. It runs last: its session cookie (same host) replaces the other server's.
    const doomed = await startDashboardServer(await openTestDatabase());
    let closed = false;
    try {
      await page.goto(`${doomed.url}/dashboard/`);
      await expect.poll(() => new URL(page.url()).pathname, { timeout: 15_000 }).toBe('/dashboard/signup');
      await page.getByLabel('Email').fill('gone@example.test');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Create account' }).click();
      // Sign-up hashes the password (scrypt): slow on a loaded machine.
      await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor({ timeout: 60_000 });
      await openNav('Devices');
      await page.getByLabel('Device name').fill('Front desk');
      await page.getByRole('button', { name: 'Add device' }).click();
      await page.locator('article.device', { hasText: 'Front desk' }).waitFor();
      await page.getByText('Live: status changes appear here as they happen.').waitFor();
      expect(await page.getByTestId('unreachable-banner').count()).toBe(0);
      await doomed.close();
      closed = true;
      const banner = page.getByTestId('unreachable-banner');
      await banner.waitFor({ timeout: 20_000 });
      expect(await banner.textContent()).toContain('Waygate cannot be reached.');
      expect(await banner.getAttribute('role')).toBe('alert');
      await page.getByTestId('device-stale').waitFor();
      expect(await page.locator('article.device', { hasText: 'Front desk' }).getAttribute('data-stale')).toBe('true');
    } finally {
      if (!closed) await doomed.close();
    }
  }, 180_000);
});
