/**
 * The dashboard in a real browser (Debian's Chromium through playwright-core), on a fresh
 * server: sign up → add a device → simulate the scan → CONNECTED appears without a reload →
 * create a token and copy it → the public API takes it → a bulk send from the Send page runs to
 * 100% → a webhook endpoint shows a delivery in its log → the token is revoked → the API refuses
 * it. Then every page at phone width, without sideways scrolling. A failing test leaves a
 * screenshot in test-results/browser/.
 *
 * Without Chromium the file is skipped locally and fails on CI (CI=true).
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../helpers.js';
import { chromiumForTests, ensureDashboardBuilt, openBrowserPage, screenshotOnFailure, startDashboardServer, startWebhookReceiver, type Browser, type DashboardServer, type WebhookReceiver } from './support.js';

const available = chromiumForTests();

const EMAIL = 'owner@example.test';
const PASSWORD = 'a long enough password';

let server: DashboardServer;
let browser: Browser;
let receiver: WebhookReceiver;
let page: Page;

async function publicApi(pathname: string, token: string): Promise<Response> {
  return fetch(`${server.url}${pathname}`, { headers: { 'x-api-key': token } });
}

async function openNav(label: string): Promise<void> {
  const menu = page.getByRole('button', { name: 'Menu' });
  if (await menu.isVisible()) await menu.click();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true }).click();
}

describe.skipIf(!available)('dashboard in Chromium', () => {
  beforeAll(async () => {
    await ensureDashboardBuilt();
    server = await startDashboardServer(await openTestDatabase());
    receiver = await startWebhookReceiver();
    ({ browser, page } = await openBrowserPage());
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await server?.close();
  });

  it('runs the whole flow: sign up, link a device live, token, bulk send, webhook log, revoke', async () => {
    screenshotOnFailure(page, 'whole-flow');

    // Sign up: a fresh install's first user, sent from the root straight to the sign-up page; the Overview is home.
    await page.goto(server.url);
    await expect.poll(() => new URL(page.url()).pathname, { timeout: 15_000 }).toBe('/dashboard/signup');
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByLabel('Password').press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    await openNav('Devices');
    await page.getByRole('heading', { level: 1, name: 'Devices' }).waitFor();

    // Add a device: its QR appears; the simulated scan turns it CONNECTED with no reload.
    await page.evaluate(() => Object.assign(globalThis, { __noReload: true }));
    await page.getByLabel('Device name').fill('Shop phone');
    await page.getByRole('button', { name: 'Add device' }).click();
    const device = page.locator('article.device', { hasText: 'Shop phone' });
    await device.getByRole('img', { name: /QR code to link Shop phone/ }).waitFor();
    await expect.poll(() => device.getByTestId('device-status').textContent(), { timeout: 15_000 }).toBe('PENDING');
    await device.getByLabel('Phone number of the simulated phone').fill('+62 811 2222 3333');
    await device.getByRole('button', { name: 'Simulate phone scan' }).click();
    await expect.poll(() => device.getByTestId('device-status').textContent(), { timeout: 15_000 }).toBe('CONNECTED');
    await device.getByText('+6281122223333').waitFor();
    expect(await page.evaluate(() => (globalThis as { __noReload?: boolean }).__noReload)).toBe(true);

    // Settings → API Access → Create New Token; the value is shown once and copied.
    await openNav('Settings');
    await page.getByRole('link', { name: 'API Access' }).waitFor();
    await page.getByRole('button', { name: 'Create New Token' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Order system');
    await page.getByRole('button', { name: 'Create token' }).click();
    const value = page.getByTestId('new-token-value');
    await expect.poll(() => value.inputValue(), { timeout: 15_000 }).toMatch(/^wg_[0-9A-Za-z]{43}$/);
    const token = await value.inputValue();
    await page.getByText('This is the only time the token is shown').waitFor();
    const created = page.getByRole('region', { name: /Token “Order system” created/ });
    await created.getByRole('button', { name: 'Copy', exact: true }).click();
    await created.getByRole('button', { name: 'Copied', exact: true }).waitFor();
    const clipboard = await page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText());
    expect(clipboard).toBe(token);
    const row = page.locator('tr', { hasText: 'Order system' });
    await row.getByText(`${token.slice(0, 7)}`, { exact: false }).waitFor();
    await row.getByText(token.slice(-4), { exact: false }).waitFor();

    // The copied token works on the public API.
    const account = await publicApi('/account', clipboard);
    expect(account.status).toBe(200);
    expect(((await account.json()) as { data: { plan: { id: string } } }).data.plan.id).toBe('unlimited');

    // A bulk send from the Send page (12 numbers), watched to 100%.
    await openNav('Send');
    await page.getByLabel('Message', { exact: true }).fill('Our shop opens at 9 tomorrow');
    const numbers = Array.from({ length: 12 }, (_, i) => `+62 812 5555 ${String(1000 + i)}`).join('\n');
    await page.getByLabel('Phone numbers').fill(numbers);
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await page.getByRole('heading', { name: 'Bulk job started' }).waitFor();
    await expect.poll(() => page.getByTestId('job-percent').textContent(), { timeout: 30_000 }).toBe('100%');
    await expect.poll(() => page.getByTestId('job-status').textContent(), { timeout: 15_000 }).toBe('COMPLETED');
    await openNav('Bulk jobs');
    await expect.poll(() => page.getByTestId('job-percent').first().textContent(), { timeout: 15_000 }).toBe('100%');
    const jobs = (await (await publicApi('/messages/bulk-jobs', token)).json()) as { data: Array<{ totalContacts: number; sentCount: number }> };
    expect(jobs.data[0]).toMatchObject({ totalContacts: 12, sentCount: 12 });

    // A webhook endpoint, a test event, and its delivery in the log.
    await openNav('Webhooks');
    await page.getByRole('button', { name: 'Add endpoint' }).first().click();
    await page.getByLabel('URL').fill(receiver.url);
    await page.locator('form').getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByText(/^whsec_/).first().waitFor();
    const endpoint = page.locator('article', { hasText: receiver.url });
    await endpoint.getByRole('button', { name: 'Send test event' }).click();
    const delivery = endpoint.getByTestId('delivery-row').filter({ hasText: 'webhook.test' });
    await expect.poll(() => delivery.getByText('SUCCEEDED').count(), { timeout: 20_000 }).toBe(1);
    await delivery.getByText('HTTP 200').waitFor();
    expect(receiver.received.some((call) => call.body.includes('"webhook.test"') && typeof call.headers['webhook-signature'] === 'string')).toBe(true);

    // Revoke the token (with confirmation): the API refuses it from the next request.
    await openNav('Settings');
    await page.locator('tr', { hasText: 'Order system' }).getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke token' }).click();
    await expect.poll(() => page.locator('tr', { hasText: 'Order system' }).getByText('REVOKED').count(), { timeout: 15_000 }).toBe(1);
    const refused = await publicApi('/account', token);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
  }, 120_000);

  it('every page fits a phone-width screen without sideways scrolling, and the menu works by keyboard', async () => {
    screenshotOnFailure(page, 'phone-width');
    await page.setViewportSize({ width: 390, height: 844 });
    for (const pathname of ['overview', 'devices', 'send', 'messages', 'bulk-jobs', 'contacts', 'groups', 'webhooks', 'plan', 'settings/api-access']) {
      await page.goto(`${server.url}/dashboard/${pathname}`);
      await page.locator('h1').first().waitFor();
      expect(new URL(page.url()).pathname).toBe(`/dashboard/${pathname}`);
      await page.waitForLoadState('networkidle').catch(() => undefined);
      const overflow = await page.evaluate(() => {
        const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document.documentElement;
        return root.scrollWidth - root.clientWidth;
      });
      expect(overflow, `/dashboard/${pathname} scrolls sideways by ${overflow}px`).toBeLessThanOrEqual(0);
    }
    const menu = page.getByRole('button', { name: 'Menu' });
    await menu.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => menu.getAttribute('aria-expanded'), { timeout: 15_000 }).toBe('true');
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Contacts' }).press('Enter');
    await page.getByRole('heading', { level: 1, name: 'Contacts' }).waitFor();

    // Log out: the session ends, and the pages send the visitor to log in again.
    await menu.click();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Log in' }).waitFor();
    await page.goto(`${server.url}/dashboard/devices`);
    await expect.poll(() => new URL(page.url()).pathname, { timeout: 15_000 }).toBe('/dashboard/login');

    // A wrong password gets the server's message in an alert; the right one goes back where the visitor was going.
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Log in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent(), { timeout: 15_000 }).toContain('The email or the password is not right');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Devices' }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/dashboard/devices');
  }, 90_000);
  it('manages contacts (add, search, edit, delete, CSV import with its report) and groups (members in and out)', async () => {
    screenshotOnFailure(page, 'contacts-groups');
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${server.url}/dashboard/contacts`);
    await page.getByRole('heading', { level: 1, name: 'Contacts' }).waitFor();

    await page.getByRole('button', { name: 'Add contact' }).click();
    const addForm = page.getByRole('form', { name: 'Add a contact' });
    await addForm.getByLabel('Name').fill('Ana Putri');
    await addForm.getByLabel('Phone number').fill('+62 812 7000 0001');
    await addForm.getByRole('button', { name: 'Add' }).click();
    await page.getByRole('row', { name: /Ana Putri/ }).waitFor();

    // A duplicate number: the API's message, next to the field it is about.
    await page.getByRole('button', { name: 'Add contact' }).click();
    await addForm.getByLabel('Name').fill('Someone else');
    await addForm.getByLabel('Phone number').fill('+62 812 7000 0001');
    await addForm.getByRole('button', { name: 'Add' }).click();
    await addForm.getByText('already used by another contact').waitFor();
    expect(await addForm.getByLabel('Phone number').getAttribute('aria-invalid')).toBe('true');
    await addForm.getByRole('button', { name: 'Cancel' }).click();

    await page.getByRole('button', { name: 'Import CSV' }).click();
    await page.getByLabel('…or paste the CSV').fill('name,phoneNumber\nBudi,+62 812 7000 0002\nCitra,+62 812 7000 0003\nAna again,+62 812 7000 0001\nBroken,12');
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const report = page.getByRole('status').filter({ hasText: 'rows:' });
    await expect.poll(() => report.textContent(), { timeout: 15_000 }).toContain('4 rows: 2 added, 1 skipped, 1 rejected.');
    await page.getByRole('table', { name: 'Rows not added' }).getByRole('row', { name: /^5 Rejected/ }).waitFor();

    await page.getByLabel('Search').fill('citra');
    await expect.poll(() => page.getByRole('table', { name: 'Contacts' }).getByRole('row').count(), { timeout: 15_000 }).toBe(2);
    await page.getByRole('button', { name: 'Edit Citra' }).click();
    await page.getByRole('form', { name: 'Edit Citra' }).getByLabel('Name').fill('Citra Lestari');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('row', { name: /Citra Lestari/ }).waitFor();
    await page.getByRole('row', { name: /Citra Lestari/ }).getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete contact' }).click();
    await page.getByText('No contact matches.').waitFor();

    await openNav('Groups');
    await page.getByLabel('New group').fill('Regulars');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.getByRole('heading', { level: 2, name: 'Regulars' }).waitFor();
    await page.getByText('Add members').click();
    await page.getByLabel('Find contacts').fill('7000');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('checkbox', { name: /Ana Putri/ }).check();
    await page.getByRole('checkbox', { name: /Budi/ }).check();
    await page.getByRole('button', { name: /Add 2 to the group/ }).click();
    await page.getByRole('button', { name: 'Remove Budi from the group' }).waitFor();
    await expect.poll(() => page.getByText('2 members', { exact: false }).count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await page.getByRole('button', { name: 'Remove Budi from the group' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Remove Budi from the group' }).count(), { timeout: 15_000 }).toBe(0);
    await page.getByRole('button', { name: 'Remove Ana Putri from the group' }).waitFor();
  }, 60_000);

  it('shows a new QR code before the current one expires, without a reload', async () => {
    screenshotOnFailure(page, 'qr-refresh');
    // A server of its own whose sandbox codes live 4 s (a new one every 3 s). It runs last: its
    // session cookie (same host, 127.0.0.1) replaces the other server's.
    const shortQr = await startDashboardServer(await openTestDatabase(), { SANDBOX_QR_MS: '4000' });
    const qrPage = await browser.context.newPage();
    try {
      await qrPage.goto(`${shortQr.url}/dashboard/signup`);
      await qrPage.getByLabel('Email').fill('qr@example.test');
      await qrPage.getByLabel('Password').fill(PASSWORD);
      await qrPage.getByRole('button', { name: 'Create account' }).click();
      // A second server's start and the sign-up's password hash (scrypt) are slow on a loaded machine.
      await qrPage.getByRole('heading', { level: 1, name: 'Overview' }).waitFor({ timeout: 60_000 });
      await qrPage.goto(`${shortQr.url}/dashboard/devices`);
      await qrPage.getByRole('heading', { level: 1, name: 'Devices' }).waitFor();
      await qrPage.evaluate(() => Object.assign(globalThis, { __noReload: true }));
      await qrPage.getByLabel('Device name').fill('Counter phone');
      await qrPage.getByRole('button', { name: 'Add device' }).click();
      const image = qrPage.getByRole('img', { name: /QR code to link Counter phone/ });
      await image.waitFor();
      const first = await image.getAttribute('src');
      const deadline = Date.now() + 4000;
      await expect.poll(() => image.getAttribute('src'), { timeout: 10_000 }).not.toBe(first);
      expect(Date.now(), 'the new code showed before the first one expired').toBeLessThan(deadline + 1000);
      expect(await qrPage.evaluate(() => (globalThis as { __noReload?: boolean }).__noReload)).toBe(true);
      await qrPage.getByRole('button', { name: 'Simulate phone scan' }).click();
      await expect.poll(() => qrPage.getByTestId('device-status').textContent(), { timeout: 15_000 }).toBe('CONNECTED');
    } finally {
      await qrPage.close();
      await shortQr.close();
    }
  }, 180_000);
});
