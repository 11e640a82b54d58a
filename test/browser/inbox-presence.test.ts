/**
 * A contact's presence in the Inbox, in a real browser (Debian's Chromium through playwright-core)
 * on the sandbox: with a conversation open, the contact typing shows "typing…" in its header (a
 * polite live region) and in the chat's row, recording shows "recording audio…", and their
 * coming online takes it away, all without a reload. The Webhooks page offers chat.presence.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../helpers.js';
import { accountWithDevice, chromiumForTests, ensureDashboardBuilt, openBrowserPage, screenshotOnFailure, signIn, startDashboardServer, type accountApi, type Browser, type DashboardServer } from './support.js';

const available = chromiumForTests();

const EMAIL = 'presence@example.test';
const PASSWORD = 'a long enough password';
const ME = '6281122225555';
const ALICE = '6281311116661';
const BOB = '6281311116662';

let server: DashboardServer;
let browser: Browser;
let page: Page;
let deviceId = '';
let publicApi: ReturnType<typeof accountApi>;

const incoming = (from: string, content: string, extra: Record<string, unknown> = {}) =>
  publicApi('POST', '/sandbox/incoming', { deviceId, from, content, ...extra });
const presence = (from: string, state: 'typing' | 'recording' | 'online' | 'offline') => incoming(from, '', { presence: state });

describe.skipIf(!available)('a contact typing, in the Inbox in Chromium', () => {
  beforeAll(async () => {
    await ensureDashboardBuilt();
    server = await startDashboardServer(await openTestDatabase(), { SANDBOX_RECEIPT_MS: '200' });
    ({ deviceId, api: publicApi } = await accountWithDevice(server, { email: EMAIL, password: PASSWORD, phoneNumber: ME }));
    ({ browser, page } = await openBrowserPage());
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('shows "typing…" and "recording audio…" in the open conversation and its row, and takes it away when the contact is online', async () => {
    screenshotOnFailure(page, 'inbox-presence');
    await incoming(ALICE, 'hi, one question');
    await incoming(BOB, 'hello from bob');

    await signIn(page, server, { email: EMAIL, password: PASSWORD }, '/dashboard/inbox');
    await page.getByRole('heading', { level: 1, name: 'Inbox' }).waitFor();
    await page.evaluate(() => Object.assign(globalThis, { __noReload: true }));
    const aliceRow = page.locator(`button[data-chat="${ALICE}"]`);
    await aliceRow.click();
    const log = page.getByRole('log', { name: 'Messages' });
    await log.getByText('hi, one question').waitFor();

    // The live stream is open: a new message shows without a reload (presence news is never replayed).
    await incoming(ALICE, 'are you there?');
    await log.getByText('are you there?').waitFor();

    const header = page.locator('.conversation-head');
    const liveRegion = header.locator('[aria-live="polite"]');
    expect(await liveRegion.count()).toBe(1);
    expect(await liveRegion.textContent()).toBe('');

    await presence(ALICE, 'typing');
    await liveRegion.getByText('typing…', { exact: true }).waitFor();
    await aliceRow.getByText('typing…', { exact: true }).waitFor();
    // Only Alice's chat: Bob's row still shows his last message.
    await page.locator(`button[data-chat="${BOB}"]`).getByText('hello from bob').waitFor();
    expect(await page.locator(`button[data-chat="${BOB}"]`).getByText('typing…').count()).toBe(0);

    await presence(ALICE, 'recording');
    await liveRegion.getByText('recording audio…', { exact: true }).waitFor();
    await aliceRow.getByText('recording audio…', { exact: true }).waitFor();

    await presence(ALICE, 'online');
    await expect.poll(() => liveRegion.textContent(), { timeout: 15_000 }).toBe('');
    await aliceRow.getByText('are you there?').waitFor();
    expect(await header.getByText('recording audio…').count()).toBe(0);
    expect(await header.getByText('typing…').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __noReload?: boolean }).__noReload)).toBe(true);
  }, 120_000);

  it('offers chat.presence among the events of a webhook endpoint', async () => {
    screenshotOnFailure(page, 'webhooks-presence');
    await page.goto(`${server.url}/dashboard/webhooks`);
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    await page.getByRole('button', { name: 'Add endpoint' }).first().click();
    await page.getByRole('checkbox', { name: 'chat.presence' }).waitFor();
    expect(await page.getByRole('checkbox', { name: 'webhook.test' }).count()).toBe(0);
  }, 60_000);
});
