/**
 * The Messages page filtered by a status that only old messages have, in a real browser (Debian's
 * Chromium through playwright-core): the server checks such a filter on at most LISTING_SCAN_CAP
 * messages a page, so the first pages can be empty while older ones match. The page says so and
 * its Next follows the server's cursor until the matches appear; Previous walks back.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../helpers.js';
import { chromiumForTests, ensureDashboardBuilt, openBrowserPage, screenshotOnFailure, signIn, startDashboardServer, type Browser, type DashboardServer } from './support.js';

const available = chromiumForTests();
const EMAIL = 'filters@example.test';
const PASSWORD = 'a long enough password';
const SCAN_CAP = 10;

let server: DashboardServer;
let browser: Browser;
let page: Page;

describe.skipIf(!available)('the Messages page walks a sparse filter by cursor, in Chromium', () => {
  beforeAll(async () => {
    await ensureDashboardBuilt();
    const database = await openTestDatabase();
    server = await startDashboardServer(database, { LISTING_SCAN_CAP: String(SCAN_CAP) }, { worker: false });
    const { accountId } = await server.services.accounts.createAccount({ email: EMAIL, password: PASSWORD, plan: 'unlimited' });
    // Oldest first: two FAILED, then 3 × SCAN_CAP SENT; as the send path would leave them.
    const insert = (count: number, status: string, content: string, first: number, secondsAgo: number) =>
      database.query(
        `INSERT INTO messages (id, account_id, device_id, direction, peer, type, content, status, network_message_id, created_at)
         SELECT 'msg_f' || lpad((g + $2)::text, 25, '0'), $1, 'dev_filters', 'out', '6281200000001', 'TEXT', $5 || ' ' || g, $4, 'FILT' || (g + $2),
                now() - $6 * interval '1 second' + g * interval '1 millisecond'
           FROM generate_series(1, $3) AS g`,
        [accountId, first, count, status, content, secondsAgo],
      );
    await insert(2, 'FAILED', 'undeliverable', 0, 300);
    await insert(3 * SCAN_CAP, 'SENT', 'delivered fine', 100, 200);
    ({ browser, page } = await openBrowserPage());
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('shows empty pages as "none among these", follows Next to the old matches, and walks back', async () => {
    screenshotOnFailure(page, 'messages-sparse-filter');
    await signIn(page, server, { email: EMAIL, password: PASSWORD }, '/dashboard/messages');
    await page.getByText('delivered fine 30').waitFor();
    await page.getByLabel('Status').selectOption('FAILED');
    await page.getByRole('button', { name: 'Filter' }).click();

    const next = page.getByRole('navigation', { name: 'Messages pages' }).getByRole('button', { name: 'Next' });
    const previous = page.getByRole('navigation', { name: 'Messages pages' }).getByRole('button', { name: 'Previous' });
    // The newest 3 × SCAN_CAP messages are SENT: three pages read them and find nothing.
    for (let shown = 1; shown <= 3; shown++) {
      await page.getByText('None among these messages; Next looks at older ones.').waitFor();
      await expect.poll(() => page.getByRole('navigation', { name: 'Messages pages' }).getByText(`Page ${shown}`, { exact: true }).count()).toBe(1);
      await next.click();
    }
    await page.getByText('undeliverable 2').waitFor();
    await page.getByText('undeliverable 1').waitFor();
    expect(await page.getByText('delivered fine', { exact: false }).count()).toBe(0);
    expect(await next.isDisabled()).toBe(true);
    await page.getByRole('navigation', { name: 'Messages pages' }).getByText('Page 4', { exact: true }).waitFor();

    // Back along the same cursors: page 3 is empty again, then page 1.
    await previous.click();
    await page.getByText('None among these messages; Next looks at older ones.').waitFor();
    await page.getByRole('navigation', { name: 'Messages pages' }).getByText('Page 3', { exact: true }).waitFor();
    await previous.click();
    await previous.click();
    await page.getByRole('navigation', { name: 'Messages pages' }).getByText('Page 1', { exact: true }).waitFor();
    await page.getByText('None among these messages; Next looks at older ones.').waitFor();
    expect(await previous.isDisabled()).toBe(true);
  }, 90_000);
});
