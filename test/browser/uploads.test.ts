/**
 * Sending a file from this computer, in a real browser (Debian's Chromium through playwright-core)
 * on the sandbox: a PNG chosen on the Send page is uploaded at once (the send waits meanwhile),
 * its address fills the media URL, the IMAGE goes out and reaches SENT, and the Messages page and
 * the Inbox show it from the upload; the Inbox's reply box uploads and sends one too. An empty
 * file the server refuses, one over 100 MB or over its type's cap the page refuses itself, are
 * said so; so is one over the plan's room for uploads, which the Plan page shows.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Locator, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/platform/database.js';
import { openTestDatabase } from '../helpers.js';
import { accountWithDevice, chromiumForTests, ensureDashboardBuilt, openBrowserPage, screenshotOnFailure, signIn, startDashboardServer, type accountApi, type Browser, type DashboardServer } from './support.js';

const available = chromiumForTests();

const EMAIL = 'uploads@example.test';
const PASSWORD = 'a long enough password';
const ME = '6281122226666';
const ALICE = '6281311117771';

/** A real 4×3 RGB PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAQAAAADCAIAAAA7ljmRAAAAKUlEQVR42g3HMQEAMAgDMMxgBjO8kYOcytrypUpaRlaqXLtx6340w/IAN7oPu4EamdoAAAAASUVORK5CYII=', 'base64');
/** An upload's address as POST /media answers it: on the server's host, /media/upl_ and a ULID. */
const UPLOAD_URL = /^https?:\/\/[^/]+\/media\/(upl_[0-9A-Za-z]{26})$/;

let server: DashboardServer;
let database: Database;
let browser: Browser;
let page: Page;
let deviceId = '';
let publicApi: ReturnType<typeof accountApi>;
let scratch = '';

/** How wide an image was decoded (0 until it has loaded). */
const naturalWidth = (image: Locator): Promise<number> => image.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth);

/** The newest outgoing message to Alice. */
async function newestToAlice(): Promise<{ id: string; type: string; status: string; mediaUrl: string | null; content: string }> {
  const listed = await publicApi<{ data: { id: string; type: string; status: string; mediaUrl: string | null; content: string }[] }>('GET', `/messages?direction=out&to=${ALICE}&limit=1`);
  return listed.data[0]!;
}

/** Answers to the Send page's uploads are held until `release` is called, so the page's state meanwhile can be seen. */
async function holdUploads(): Promise<{ release: () => void }> {
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => (release = resolve));
  await page.route('**/dashboard/api/media?*', async (route) => {
    await released;
    await route.continue();
  });
  return { release };
}

describe.skipIf(!available)('uploading a file to send, in Chromium', () => {
  beforeAll(async () => {
    await ensureDashboardBuilt();
    database = await openTestDatabase();
    server = await startDashboardServer(database, { SANDBOX_RECEIPT_MS: '200' });
    ({ deviceId, api: publicApi } = await accountWithDevice(server, { email: EMAIL, password: PASSWORD, phoneNumber: ME }));
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'waygate-uploads-'));
    ({ browser, page } = await openBrowserPage());
    await signIn(page, server, { email: EMAIL, password: PASSWORD }, '/dashboard/send');
    await page.getByRole('heading', { level: 1, name: 'Send' }).waitFor();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  });

  it('uploads a chosen PNG, sends it as an IMAGE that reaches SENT, and shows it on the Messages page and in the Inbox', async () => {
    screenshotOnFailure(page, 'uploads-send');
    await page.getByLabel('Image', { exact: true }).check();
    const send = page.getByRole('button', { name: 'Send', exact: true });
    await page.getByLabel('Caption (optional)').fill('our new menu');
    await page.getByLabel('Phone numbers').fill(`+${ALICE}`);

    // A typed address first: a chosen file replaces it.
    await page.getByLabel('Media URL').fill('https://example.com/old-menu.png');
    await expect.poll(() => send.isEnabled(), { timeout: 15_000 }).toBe(true);

    // While the file uploads, the page says so and nothing can be sent.
    const held = await holdUploads();
    await page.getByLabel('Upload a file').setInputFiles({ name: 'menu.png', mimeType: 'image/png', buffer: PNG });
    await page.getByText('Uploading menu.png…').waitFor();
    expect(await send.isDisabled()).toBe(true);
    expect(await page.getByLabel('Upload a file').isDisabled()).toBe(true);
    const answered = page.waitForResponse((response) => response.url().includes('/dashboard/api/media?') && response.request().method() === 'POST');
    held.release();
    expect((await answered).status()).toBe(201);
    const upload = (await (await answered).json()) as { data: { id: string; mediaUrl: string; contentType: string; fileName: string; sizeBytes: number } };
    await page.unrouteAll();
    expect(upload.data).toMatchObject({ contentType: 'image/png', fileName: 'menu.png', sizeBytes: PNG.length });

    // The media URL is the upload's address, and the page names the file and its size.
    await expect.poll(() => page.getByLabel('Media URL').inputValue(), { timeout: 15_000 }).toBe(upload.data.mediaUrl);
    const id = UPLOAD_URL.exec(upload.data.mediaUrl)?.[1];
    expect(id).toBe(upload.data.id);
    await page.getByText(`Uploaded menu.png (${PNG.length} B).`).waitFor();
    // The server holds the very bytes chosen.
    const stored = await page.request.get(`${server.url}/dashboard/api/media/${id}`);
    expect(stored.status()).toBe(200);
    expect(Buffer.from(await stored.body()).equals(PNG)).toBe(true);

    await expect.poll(() => send.isEnabled(), { timeout: 15_000 }).toBe(true);
    await send.click();
    await expect.poll(() => page.getByTestId('sent-status').textContent(), { timeout: 30_000 }).toMatch(/^(SENT|DELIVERED|READ)$/);
    const message = await newestToAlice();
    expect(message).toMatchObject({ type: 'IMAGE', content: 'our new menu', mediaUrl: upload.data.mediaUrl });
    const network = await publicApi<{ data: { type: string; content: string }[] }>('GET', `/sandbox/messages?to=${ALICE}`);
    expect(network.data).toContainEqual(expect.objectContaining({ type: 'IMAGE', content: 'our new menu' }));

    // The Messages page shows the image, loaded from the upload through the dashboard's session.
    await page.goto(`${server.url}/dashboard/messages`);
    await page.getByRole('heading', { level: 1, name: 'Messages' }).waitFor();
    const thumbnail = page.locator(`td[data-message="${message.id}"]`).getByRole('img', { name: 'our new menu' });
    await thumbnail.waitFor();
    expect(await thumbnail.getAttribute('src')).toBe(`/dashboard/api/media/${id}`);
    await expect.poll(() => naturalWidth(thumbnail), { timeout: 15_000 }).toBe(4);

    // So does the Inbox, whose reply box uploads and sends a file the same way.
    await page.goto(`${server.url}/dashboard/inbox?chat=${ALICE}&device=${deviceId}`);
    const log = page.getByRole('log', { name: 'Messages' });
    const bubble = log.locator(`article[data-message="${message.id}"]`).getByRole('img', { name: 'our new menu' });
    await bubble.waitFor();
    await expect.poll(() => naturalWidth(bubble), { timeout: 15_000 }).toBe(4);
    await page.getByRole('button', { name: 'Attach a file' }).click();
    await page.getByLabel('Upload a file').setInputFiles({ name: 'price list.png', mimeType: 'image/png', buffer: PNG });
    await page.getByText(`Uploaded price list.png (${PNG.length} B).`).waitFor();
    expect(await page.getByLabel('File URL').inputValue()).toMatch(UPLOAD_URL);
    await page.getByLabel('Message', { exact: true }).fill('prices');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const reply = log.locator('.bubble-out', { hasText: 'prices' }).getByRole('img', { name: 'prices' });
    await reply.waitFor();
    await expect.poll(() => naturalWidth(reply), { timeout: 15_000 }).toBe(4);
    expect(await reply.getAttribute('src')).toMatch(/^\/dashboard\/api\/media\/upl_[0-9A-Za-z]{26}$/);
    await expect.poll(async () => (await newestToAlice()).status, { timeout: 30_000 }).toMatch(/^(SENT|DELIVERED|READ)$/);
  }, 120_000);

  it('sends an uploaded document with no caption (the caption is optional)', async () => {
    screenshotOnFailure(page, 'uploads-no-caption');
    await page.goto(`${server.url}/dashboard/send`);
    await page.getByLabel('Document', { exact: true }).check();
    await page.getByLabel('Phone numbers').fill(`+${ALICE}`);
    await page.getByLabel('Upload a file').setInputFiles({ name: 'terms.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF-1.4 terms') });
    await page.getByText('Uploaded terms.pdf').waitFor();
    const send = page.getByRole('button', { name: 'Send', exact: true });
    await expect.poll(() => send.isEnabled(), { timeout: 15_000 }).toBe(true);
    await send.click();
    await expect.poll(() => page.getByTestId('sent-status').textContent(), { timeout: 30_000 }).toMatch(/^(SENT|DELIVERED|READ)$/);
    expect(await newestToAlice()).toMatchObject({ type: 'DOCUMENT', content: '' });
  }, 60_000);

  it('says why a file was not uploaded: an empty one the server refuses, one over 100 MB the page refuses itself', async () => {
    screenshotOnFailure(page, 'uploads-refused');
    await page.goto(`${server.url}/dashboard/send`);
    await page.getByLabel('Document', { exact: true }).check();
    await page.getByLabel('Phone numbers').fill(`+${ALICE}`);
    const send = page.getByRole('button', { name: 'Send', exact: true });
    const refused = page.locator('.alert-error', { hasText: 'Not uploaded.' });

    // An empty file: the server answers 400, and the page shows the server's own words.
    const answered = page.waitForResponse((response) => response.url().includes('/dashboard/api/media?') && response.request().method() === 'POST');
    await page.getByLabel('Upload a file').setInputFiles({ name: 'empty.pdf', mimeType: 'application/pdf', buffer: Buffer.alloc(0) });
    const answer = await answered;
    expect(answer.status()).toBe(400);
    const envelope = (await answer.json()) as { error: { code: string; message: string } };
    expect(envelope.error).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringMatching(/empty/i) });
    await refused.waitFor();
    expect(await refused.textContent()).toContain(envelope.error.message);
    expect(await page.getByLabel('Media URL').inputValue()).toBe('');
    expect(await send.isDisabled()).toBe(true);

    // Over 100 MB (a sparse file: no disk is used): refused before any byte is sent.
    const big = path.join(scratch, 'video.mp4');
    fs.closeSync(fs.openSync(big, 'w'));
    fs.truncateSync(big, 100 * 1024 * 1024 + 1);
    const uploads: Request[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/dashboard/api/media')) uploads.push(request);
    });
    await page.getByLabel('Upload a file').setInputFiles(big);
    await refused.getByText('video.mp4 is larger than 100 MB, the most a file can be.', { exact: false }).waitFor();
    expect(uploads).toHaveLength(0);
    expect(await page.getByLabel('Media URL').inputValue()).toBe('');

    // A URL can still be typed instead.
    await page.getByLabel('Media URL').fill('https://example.com/menu.pdf');
    await expect.poll(() => send.isEnabled(), { timeout: 15_000 }).toBe(true);
  }, 60_000);

  it('refuses, before sending it, a file over its type’s cap, and says to send it as a document', async () => {
    screenshotOnFailure(page, 'uploads-type-cap');
    await page.goto(`${server.url}/dashboard/send`);
    await page.getByLabel('Image', { exact: true }).check();
    const uploads: Request[] = [];
    const watch = (request: Request): void => {
      if (request.url().includes('/dashboard/api/media')) uploads.push(request);
    };
    page.on('request', watch);
    await page.getByLabel('Upload a file').setInputFiles({ name: 'poster.png', mimeType: 'image/png', buffer: Buffer.alloc(6 * 1024 * 1024, 1) });
    const refused = page.locator('.alert-error', { hasText: 'Not uploaded.' });
    await refused.getByText('poster.png is 6.0 MB; an image can be at most 5.0 MB. Send it as a document, or choose a smaller file.', { exact: false }).waitFor();
    page.off('request', watch);
    expect(uploads).toHaveLength(0);
    expect(await page.getByLabel('Media URL').inputValue()).toBe('');
  }, 60_000);

  it('shows on the Plan page what the uploads hold against the plan, says why a file that does not fit was not uploaded, and deletes uploads to make room', async () => {
    screenshotOnFailure(page, 'uploads-plan');
    const { id: accountId } = (await publicApi<{ data: { id: string } }>('GET', '/account')).data;
    const held = (await publicApi<{ data: { usage: { uploadBytes: number } } }>('GET', '/account')).data.usage.uploadBytes;
    // A plan with room for what is held and 2 KB more.
    await database.query(`INSERT INTO plans (id, name, message_quota, period, max_upload_bytes) VALUES ('small_uploads', 'Small uploads', NULL, 'month', $1)`, [held + 2048]);
    await server.services.accounts.setPlan(accountId, 'small_uploads');

    await page.goto(`${server.url}/dashboard/plan`);
    const card = page.locator('.stat', { hasText: 'Uploaded files' });
    await expect.poll(() => card.textContent()).toContain(`of ${((held + 2048) / 1024).toFixed(held + 2048 < 10 * 1024 ? 1 : 0)} KB`);

    await page.goto(`${server.url}/dashboard/send`);
    await page.getByLabel('Document', { exact: true }).check();
    await page.getByLabel('Upload a file').setInputFiles({ name: 'big.pdf', mimeType: 'application/pdf', buffer: Buffer.alloc(4096, 1) });
    const refused = page.locator('.alert-error', { hasText: 'Not uploaded.' });
    await refused.waitFor();
    expect(await refused.textContent()).toContain("Your plan's uploads may hold");
    expect(await page.getByLabel('Media URL').inputValue()).toBe('');

    // The Plan page lists the uploads; deleting one makes room, and the file then fits.
    const listed = (await publicApi<{ data: { id: string; fileName: string | null; sizeBytes: number }[] }>('GET', '/media?limit=100')).data;
    expect(listed.length).toBeGreaterThan(0);
    const newest = listed[0]!;
    await page.goto(`${server.url}/dashboard/plan`);
    const rows = page.locator('tr[data-upload-id]');
    await expect.poll(() => rows.count()).toBe(Math.min(listed.length, 20));
    expect(await rows.first().getAttribute('data-upload-id')).toBe(newest.id);
    for (const upload of listed) {
      await page.getByRole('button', { name: `Delete ${upload.fileName ?? upload.id}`, exact: true }).first().click();
      await page.getByRole('dialog').getByRole('button', { name: 'Delete file' }).click();
      await page.locator(`tr[data-upload-id="${upload.id}"]`).waitFor({ state: 'detached' });
    }
    await page.getByText('No uploaded files.').waitFor();
    await expect.poll(() => card.textContent()).toContain('0 B of');
    await page.goto(`${server.url}/dashboard/send`);
    await page.getByLabel('Document', { exact: true }).check();
    await page.getByLabel('Upload a file').setInputFiles({ name: 'fits.pdf', mimeType: 'application/pdf', buffer: Buffer.alloc(1024, 1) });
    await page.getByText('Uploaded fits.pdf').waitFor();
  }, 90_000);
});
