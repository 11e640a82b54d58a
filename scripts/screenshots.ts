/**
 * `npm run screenshots`: starts Waygate on an in-memory database with the sandbox network, signs
 * up in Chromium, fills the account with sample data (through the public API, as a user's
 * software would), and saves a screenshot of every dashboard page at desktop (1280×800) and
 * phone (390×844) width into docs/screenshots/, and the Overview in dark mode too.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { openDatabase } from '../src/platform/database.js';
import { runMigrations } from '../src/platform/migrate.js';
import { chromiumAvailable, CHROMIUM_PATH, ensureDashboardBuilt, launchBrowser, startDashboardServer, startWebhookReceiver } from '../test/browser/support.js';

const OUT = path.resolve('docs/screenshots');
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

const PEOPLE = [
  'Ana Putri', 'Budi Santoso', 'Citra Lestari', 'Dewi Anggraini', 'Eko Prasetyo', 'Fajar Nugroho', 'Gita Maharani', 'Hadi Wijaya',
  'Indah Permata', 'Joko Susilo', 'Kartika Sari', 'Lukman Hakim', 'Maya Rahayu', 'Nanda Pratama', 'Oki Setiawan', 'Putri Ayu',
  'Rina Marlina', 'Sari Wulandari', 'Taufik Hidayat', 'Umar Said', 'Vina Oktaviani', 'Wahyu Kurniawan', 'Yuni Astuti', 'Zainal Arifin',
];

/**
 * Whether fontconfig knows a font with emoji (📍, U+1F4CD): the pages show some (a location, a
 * group, a poll, reactions), which Chromium draws as empty boxes without one. True where there is
 * no fontconfig to ask.
 */
function emojiFontInstalled(): boolean {
  const listed = spawnSync('fc-list', [':charset=1f4cd', 'family'], { encoding: 'utf8' });
  return listed.error !== undefined || listed.stdout.trim() !== '';
}

async function main(): Promise<void> {
  if (!chromiumAvailable()) throw new Error(`Chromium is missing at ${CHROMIUM_PATH} (apt-get install -y chromium)`);
  if (!emojiFontInstalled()) throw new Error('No emoji font is installed, so the pictures would show empty boxes for emoji (apt-get install -y fonts-noto-color-emoji)');
  await ensureDashboardBuilt();
  const database = await openDatabase({ dataDir: 'memory://' });
  await runMigrations(database);
  const server = await startDashboardServer(database, { SANDBOX_RECEIPT_MS: '400', SANDBOX_QR_MS: '600000' });
  const receiver = await startWebhookReceiver();
  const browser = await launchBrowser(DESKTOP);
  try {
    const page = await browser.context.newPage();
    fs.mkdirSync(OUT, { recursive: true });

    await page.goto(`${server.url}/dashboard/signup`);
    await page.getByRole('heading', { level: 1 }).waitFor();
    await shoot(page, 'signup');
    await page.getByLabel('Email').fill('owner@shop.example');
    await page.getByLabel('Password').fill('a long enough password');
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();

    const seeded = await seed(server.url, page, receiver.url);

    const pages: Array<[string, string, (p: Page) => Promise<void>]> = [
      ['devices', '/dashboard/devices', async (p) => void (await p.locator('img[alt^="QR code"]').first().waitFor())],
      ['send', '/dashboard/send', async (p) => {
        await p.getByLabel('Message', { exact: true }).fill('Good news: your order #1042 is ready for pickup at our Kemang store, open until 9 pm.');
        await p.getByLabel('Phone numbers').fill('+62 812 3456 7890\n+62 813 9876 5432');
      }],
      ['inbox', '/dashboard/inbox', async (p) => {
        await p.locator('button[data-chat="6281234567890"]').click();
        await p.getByRole('log', { name: 'Messages' }).getByText('Is the blue one still in stock?').waitFor();
      }],
      ['messages', '/dashboard/messages', async (p) => void (await p.locator('tbody tr').first().waitFor())],
      ['bulk-jobs', '/dashboard/bulk-jobs', async (p) => void (await p.locator('progress').first().waitFor())],
      ['contacts', '/dashboard/contacts', async (p) => void (await p.locator('tbody tr').first().waitFor())],
      ['groups', `/dashboard/groups/${seeded.groupId}`, async (p) => void (await p.getByRole('heading', { name: 'Members' }).waitFor())],
      ['webhooks', '/dashboard/webhooks', async (p) => {
        await p.getByRole('button', { name: 'Delivery log' }).first().click();
        await p.getByTestId('delivery-row').first().waitFor();
      }],
      ['plan', '/dashboard/plan', async (p) => void (await p.locator('.stat').first().waitFor())],
      ['api-access', '/dashboard/settings/api-access', async (p) => void (await p.locator('tbody tr').first().waitFor())],
    ];
    for (const [name, url, ready] of pages) {
      if (name === 'send') {
        // After the devices page (one linked, one showing its QR): the account moves to the pro
        // plan with one device, so Plan and usage shows a quota bar, and the messages go out.
        await fetch(`${server.url}/devices/${seeded.pendingDeviceId}`, { method: 'DELETE', headers: { 'x-api-key': seeded.token } });
        await server.services.accounts.setPlan(seeded.accountId, 'pro');
        await sendSamples(server.url, seeded.token, seeded.groupId);
      }
      for (const [width, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
        await page.setViewportSize(viewport);
        await page.goto(`${server.url}${url}`);
        await page.getByRole('heading', { level: 1 }).first().waitFor();
        await ready(page);
        await page.waitForLoadState('networkidle').catch(() => undefined);
        await shoot(page, `${name}-${width}`);
      }
    }
    // The Overview (home) once the samples went out, in light and in dark mode.
    for (const scheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (const [width, viewport] of [['desktop', DESKTOP], ['phone', PHONE]] as const) {
        await page.setViewportSize(viewport);
        await page.goto(`${server.url}/dashboard/overview`);
        await page.getByTestId('overview-sent').waitFor();
        await page.locator('.chart canvas').first().waitFor();
        await page.waitForLoadState('networkidle').catch(() => undefined);
        await shoot(page, `overview${scheme === 'dark' ? '-dark' : ''}-${width}`);
      }
    }
    await page.emulateMedia({ colorScheme: 'light' });

    // The token panel as it looks right after Create New Token.
    await page.setViewportSize(DESKTOP);
    await page.goto(`${server.url}/dashboard/settings/api-access`);
    await page.getByRole('button', { name: 'Create New Token' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Order system');
    await page.getByRole('button', { name: 'Create token' }).click();
    await page.getByTestId('new-token-value').waitFor();
    await shoot(page, 'api-access-new-token-desktop');

    await page.setViewportSize(PHONE);
    await page.getByRole('button', { name: 'Menu' }).click();
    await shoot(page, 'menu-phone');
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Log in' }).waitFor();
    await shoot(page, 'login-phone');
    await page.setViewportSize(DESKTOP);
    await shoot(page, 'login-desktop');
    console.log(`Screenshots written to ${path.relative(process.cwd(), OUT)}/`);
  } finally {
    await browser.close();
    await receiver.close();
    await server.close();
    await database.close();
  }
}

async function shoot(page: Page, name: string): Promise<void> {
  // Let transitions (progress bars) settle.
  await page.waitForTimeout(300);
  await page.screenshot({ path: path.join(OUT, `${name}.png`) });
  console.log(`  ${name}.png`);
}

interface Seeded {
  token: string;
  accountId: string;
  groupId: string;
  pendingDeviceId: string;
}

async function call<T>(base: string, token: string, method: string, pathname: string, body?: unknown, contentType = 'application/json'): Promise<T> {
  const response = await fetch(`${base}${pathname}`, {
    method,
    headers: { 'x-api-key': token, ...(body === undefined ? {} : { 'content-type': contentType }) },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const json = (await response.json()) as T;
  if (!response.ok) throw new Error(`${method} ${pathname}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** Sample data through the public API with a token made in the dashboard's session. */
async function seed(base: string, page: Page, webhookUrl: string): Promise<Seeded> {
  const dashboard = async <T>(method: string, pathname: string, body?: unknown): Promise<T> =>
    page.evaluate(
      async ({ method, pathname, body }) => {
        const state = (await (await fetch('/dashboard/api/session')).json()) as { csrfToken: string };
        const response = await fetch(`/dashboard/api${pathname}`, {
          method,
          headers: { 'x-csrf-token': state.csrfToken, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        return response.json();
      },
      { method, pathname, body },
    ) as Promise<T>;
  const created = await dashboard<{ data: { token: string } }>('POST', '/tokens', { name: 'Order system' });
  await dashboard('POST', '/tokens', { name: 'Reporting', scopes: ['messages:read', 'account:read'] });
  const old = await dashboard<{ data: { id: string } }>('POST', '/tokens', { name: 'Old laptop' });
  const revoked = await dashboard<{ success?: boolean }>('DELETE', `/tokens/${old.data.id}`);
  if (!revoked.success) throw new Error(`revoking a token failed: ${JSON.stringify(revoked)}`);
  const token = created.data.token;

  const api = <T>(method: string, pathname: string, body?: unknown, contentType?: string) => call<T>(base, token, method, pathname, body, contentType);
  const device = await api<{ qr: { code: string } }>('POST', '/devices', { name: 'Shop phone' });
  await api('POST', '/sandbox/scan', { code: device.qr.code, phoneNumber: '+62 811 1000 2000' });
  const pending = await api<{ data: { id: string } }>('POST', '/devices', { name: 'Support line' });
  // Wait for the first device to be CONNECTED before sending from it.
  for (let i = 0; i < 50; i++) {
    const list = await api<{ data: Array<{ status: string }> }>('GET', '/devices');
    if (list.data.some((d) => d.status === 'CONNECTED')) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }

  const csv = ['name,phoneNumber', ...PEOPLE.map((name, i) => `${name},+62 812 ${String(3000 + i * 37).padStart(4, '0')} ${String(4100 + i * 53)}`)].join('\n');
  await api('POST', '/contacts/import', csv, 'text/csv');
  const contacts = await api<{ data: Array<{ id: string }> }>('GET', '/contacts?limit=100');
  const customers = await api<{ data: { id: string } }>('POST', '/groups', { name: 'Customers', contactIds: contacts.data.slice(0, 18).map((c) => c.id) });
  await api('POST', '/groups', { name: 'Staff', contactIds: contacts.data.slice(18, 22).map((c) => c.id) });
  await api('POST', '/groups', { name: 'Wholesale partners', contactIds: contacts.data.slice(4, 9).map((c) => c.id) });

  await api('POST', '/webhooks', { url: webhookUrl, description: 'Order system', events: ['message.status', 'message.received'] });
  const hooks = await api<{ data: Array<{ id: string }> }>('GET', '/webhooks');
  await api('POST', `/webhooks/${hooks.data[0]!.id}/test`);

  const session = await dashboard<{ user: { accountId: string } }>('GET', '/session');
  return { token, accountId: session.user.accountId, groupId: customers.data.id, pendingDeviceId: pending.data.id };
}

/** Messages of every kind: scheduled, bulk to a group, direct, one to a number not on the network. */
async function sendSamples(base: string, token: string, groupId: string): Promise<void> {
  const api = <T>(method: string, pathname: string, body?: unknown) => call<T>(base, token, method, pathname, body);
  const tomorrow = new Date(Date.now() + 24 * 3_600_000).toISOString();
  await api('POST', '/messages/send', { type: 'TEXT', content: 'Reminder: the store opens at 9.', recipients: ['+62 812 5555 0101'], scheduledAt: tomorrow });
  await api('POST', '/messages/send', {
    type: 'TEXT',
    content: 'Our new catalogue is out.',
    recipients: Array.from({ length: 40 }, (_, i) => `+62 815 7000 ${String(1000 + i)}`),
    scheduledAt: tomorrow,
  });
  await api('POST', '/messages/send', { type: 'TEXT', content: 'Your order #1042 is ready for pickup.', recipients: ['+62 812 3456 7890', '+62 813 9876 5432'] });
  await api('POST', '/messages/send', { type: 'TEXT', content: 'Flash sale this weekend: 20% off everything!', groupIds: [groupId] });
  await api('POST', '/messages/send', { type: 'TEXT', content: 'Test to a number not on the network', recipients: ['+62 812 0000 0000'] });
  // Conversations for the Inbox: a customer writing back (a question, a place, a reply to a poll), another customer, a WhatsApp group.
  const devices = await api<{ data: Array<{ id: string; status: string }> }>('GET', '/devices');
  const deviceId = devices.data.find((d) => d.status === 'CONNECTED')!.id;
  const incoming = (from: string, content: string, extra: Record<string, unknown> = {}) => api('POST', '/sandbox/incoming', { deviceId, from, content, ...extra });
  await incoming('6281234567890', 'Thanks! Is the blue one still in stock?');
  const poll = await api<{ message: { id: string } }>('POST', '/messages/send', {
    type: 'POLL', content: 'Which pickup time suits you?', poll: { options: ['Morning', 'Afternoon', 'Evening'] }, recipients: ['6281234567890'],
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  await incoming('6281234567890', '', { vote: { messageId: poll.message.id, options: ['Afternoon'] } });
  await incoming('6281234567890', 'Afternoon works best', { replyTo: poll.message.id });
  await incoming('6281234567890', '', { type: 'REACTION', reaction: { messageId: poll.message.id, emoji: '👍' } });
  await incoming('6281234567890', '', { type: 'LOCATION', location: { latitude: -6.2607, longitude: 106.8137, name: 'Kemang store', address: 'Jl. Kemang Raya 8' } });
  await incoming('6281398765432', 'Can I change my delivery address?');
  const group = await api<{ data: { id: string } }>('POST', '/sandbox/groups', { deviceId, name: 'Store staff', members: ['6281230004100', '6281230374153'] });
  await new Promise((resolve) => setTimeout(resolve, 500));
  await incoming('6281230004100', 'I will open the store tomorrow', { group: group.data.id });
  // Let receipts arrive, so statuses show DELIVERED and READ.
  await new Promise((resolve) => setTimeout(resolve, 2000));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
