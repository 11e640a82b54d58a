/**
 * The Messages page in a real browser (Debian's Chromium through playwright-core) on the sandbox:
 * one message of each kind, seeded through the public API and the sandbox's phone, is shown as
 * what it is: an image thumbnail, a sticker, an audio player, a document link, a location as a
 * map link, a contact card, a poll with its votes and the reaction to it, a reply with the
 * message it quotes, an edited message marked edited, a deleted one marked deleted for everyone,
 * and a file that could not be downloaded marked so. At desktop and at phone width.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../helpers.js';
import { accountWithDevice, chromiumForTests, ensureDashboardBuilt, openBrowserPage, screenshotOnFailure, signIn, startDashboardServer, type accountApi, type Browser, type DashboardServer } from './support.js';

const available = chromiumForTests();

const EMAIL = 'kinds@example.test';
const PASSWORD = 'a long enough password';
const ME = '6281122225555';
const ALICE = '6281311116661';

/** The phone's files on loopback, by path: Waygate downloads each incoming one into its media store. */
const FILES: Record<string, [string, Buffer]> = {
  '/voice.ogg': ['audio/ogg', Buffer.concat([Buffer.from('OggS'), Buffer.alloc(60, 1)])],
  // A 1×1 lossless WebP.
  '/sticker.webp': ['image/webp', Buffer.from('UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==', 'base64')],
  '/menu.pdf': ['application/pdf', Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(200, 5)])],
};

let server: DashboardServer;
let browser: Browser;
let page: Page;
let deviceId = '';
let phoneFiles: http.Server;
let phoneFilesUrl = '';
/** The id of the message seeded for each thing the page must show. */
const seeded: Record<string, string> = {};

/** The public API as the test's account. */
let publicApi: ReturnType<typeof accountApi>;

interface Stored {
  id: string;
  status: string;
  content: string;
  media: { status: string } | null;
  poll: { votes: { option: string; count: number }[] } | null;
}

/** Plays an incoming message from Alice and waits until it is stored (its file too); its id. */
async function incoming(content: string, extra: Record<string, unknown>): Promise<string> {
  const known = new Set(Object.values(seeded));
  await publicApi('POST', '/sandbox/incoming', { deviceId, from: ALICE, content, ...extra });
  for (let waited = 0; ; waited += 100) {
    const listed = await publicApi<{ data: Stored[] }>('GET', `/messages?direction=in&to=${ALICE}&limit=50`);
    const added = listed.data.filter((m) => !known.has(m.id));
    if (added.length > 1) throw new Error(`more than one new incoming message: ${added.map((m) => m.id).join(', ')}`);
    if (added.length === 1) return added[0]!.id;
    if (waited > 20_000) throw new Error(`the incoming ${String(extra.type)} was not stored`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function sent(body: Record<string, unknown>): Promise<string> {
  const answer = await publicApi<{ message: Stored }>('POST', '/messages/send', { recipients: [ALICE], deviceId, ...body });
  expect(answer.message.status).toBe('SENT');
  return answer.message.id;
}

/** The Message cell of a seeded message. */
const cell = (what: string): Locator => page.locator(`td[data-message="${seeded[what]}"]`);

async function expectEveryKindShown(): Promise<void> {
  await page.getByRole('heading', { level: 1, name: 'Messages' }).waitFor();
  const image = cell('image').getByRole('img', { name: 'our shop' });
  await image.waitFor();
  await expect.poll(() => image.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(0);
  // A thumbnail: the table does not show the file at full size.
  expect((await image.boundingBox())!.height).toBeLessThanOrEqual(96);
  const sticker = cell('sticker').getByRole('img', { name: 'Sticker' });
  await sticker.waitFor({ state: 'attached' });
  await expect.poll(() => sticker.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(0);
  await cell('audio').locator('audio').waitFor();
  expect(await cell('audio').locator('audio').getAttribute('src')).toBe(`/dashboard/api/messages/${seeded.audio}/media`);
  expect(await cell('document').getByRole('link', { name: 'menu.pdf' }).getAttribute('href')).toBe(`/dashboard/api/messages/${seeded.document}/media`);
  expect(await cell('location').getByRole('link', { name: 'Shop' }).getAttribute('href')).toContain('openstreetmap.org/?mlat=-6.2&mlon=106.8');
  await cell('location').getByText('Jl. Sudirman 1').waitFor();
  await cell('contact').getByText('Budi').waitFor();
  await cell('contact').getByText('+6281399998888').waitFor();
  await cell('poll').getByText('Open on Sunday?').waitFor();
  await expect.poll(() => cell('poll').locator('li', { hasText: 'Yes' }).locator('.badge').textContent()).toBe('1');
  expect(await cell('poll').locator('li', { hasText: 'No' }).locator('.badge').textContent()).toBe('0');
  await expect.poll(() => cell('poll').getByLabel('Reactions').textContent()).toBe('👍');
  await cell('reaction').getByText('Reacted 👍').waitFor();
  await cell('reply').getByLabel('Quoted message').getByText('Open on Sunday?').waitFor();
  await cell('reply').getByText('yes please').waitFor();
  await cell('edited').getByText('see you at 6').waitFor();
  await cell('edited').locator('[data-mark="edited"]').getByText('edited').waitFor();
  expect(await cell('plain').locator('[data-mark]').count()).toBe(0);
  await cell('deleted').locator('[data-mark="deleted"]').getByText('deleted for everyone').waitFor();
  await cell('failed').locator('[data-mark="media-failed"]').getByText('MEDIA_UNREACHABLE', { exact: false }).waitFor();
}

describe.skipIf(!available)('the Messages page shows every kind, in Chromium', () => {
  beforeAll(async () => {
    phoneFiles = http.createServer((request, response) => {
      const file = FILES[request.url ?? ''];
      if (!file) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, { 'content-type': file[0], 'content-length': file[1].length });
      response.end(file[1]);
    });
    await new Promise<void>((resolve) => phoneFiles.listen(0, '127.0.0.1', resolve));
    phoneFilesUrl = `http://127.0.0.1:${(phoneFiles.address() as AddressInfo).port}`;

    await ensureDashboardBuilt();
    server = await startDashboardServer(await openTestDatabase(), { SANDBOX_RECEIPT_MS: '200' });
    ({ deviceId, api: publicApi } = await accountWithDevice(server, { email: EMAIL, password: PASSWORD, phoneNumber: ME }));

    // One message of each kind. Files on the dashboard's own origin (its CSP shows images from
    // there): its icon as the photo.
    seeded.image = await incoming('our shop', { type: 'IMAGE', mediaUrl: `${server.url}/dashboard/favicon.svg` });
    seeded.sticker = await incoming('', { type: 'STICKER', mediaUrl: `${phoneFilesUrl}/sticker.webp` });
    seeded.audio = await incoming('', { type: 'AUDIO', voice: true, mediaUrl: `${phoneFilesUrl}/voice.ogg` });
    seeded.document = await incoming('the menu', { type: 'DOCUMENT', mediaUrl: `${phoneFilesUrl}/menu.pdf` });
    seeded.failed = await incoming('the price list', { type: 'DOCUMENT', mediaUrl: `${phoneFilesUrl}/gone.pdf` });
    seeded.location = await incoming('', { type: 'LOCATION', location: { latitude: -6.2, longitude: 106.8, name: 'Shop', address: 'Jl. Sudirman 1' } });
    seeded.contact = await incoming('', { type: 'CONTACT', contacts: [{ name: 'Budi', phoneNumber: '6281399998888' }] });
    seeded.poll = await sent({ type: 'POLL', content: 'Open on Sunday?', poll: { options: ['Yes', 'No'] } });
    await publicApi('POST', '/sandbox/incoming', { deviceId, from: ALICE, content: '', vote: { messageId: seeded.poll, options: ['Yes'] } });
    for (let waited = 0; ; waited += 100) {
      const poll = await publicApi<{ data: Stored }>('GET', `/messages/${seeded.poll}`);
      if (poll.data.poll?.votes.find((v) => v.option === 'Yes')?.count === 1) break;
      if (waited > 15_000) throw new Error('the vote was not tallied');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    seeded.reply = await incoming('yes please', { replyTo: seeded.poll });
    seeded.reaction = await incoming('', { type: 'REACTION', reaction: { messageId: seeded.poll, emoji: '👍' } });
    seeded.plain = await sent({ type: 'TEXT', content: 'see you at 5' });
    seeded.edited = await sent({ type: 'TEXT', content: 'see you at 5!' });
    await publicApi('PATCH', `/messages/${seeded.edited}`, { content: 'see you at 6' });
    seeded.deleted = await sent({ type: 'TEXT', content: 'wrong chat, sorry' });
    await publicApi('DELETE', `/messages/${seeded.deleted}`);

    ({ browser, page } = await openBrowserPage());
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    phoneFiles?.closeAllConnections();
    await new Promise((resolve) => phoneFiles?.close(resolve));
  });

  it('at desktop width: each kind as what it is, with the quote, the reaction and the edit and delete marks', async () => {
    screenshotOnFailure(page, 'messages-kinds-desktop');
    await signIn(page, server, { email: EMAIL, password: PASSWORD }, '/dashboard/messages');
    await expectEveryKindShown();
  }, 90_000);

  it('at phone width: the same, without sideways scrolling', async () => {
    screenshotOnFailure(page, 'messages-kinds-phone');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${server.url}/dashboard/messages`);
    await expectEveryKindShown();
    const overflow = await page.evaluate(() => {
      const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document.documentElement;
      return root.scrollWidth - root.clientWidth;
    });
    expect(overflow).toBeLessThanOrEqual(0);
  }, 90_000);
});
