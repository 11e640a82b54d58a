/**
 * The Inbox in a real browser (Debian's Chromium through playwright-core) on the sandbox: chats of
 * people and of a WhatsApp group with unread counts, a new incoming message shown within 2 s
 * without a reload, every kind of message in the conversation (image inline, audio playable,
 * location as a map link, contact card, poll with votes, a reaction, a quoted reply), opening a
 * chat marks it read, a reply from the box lands in the chat. At desktop and at phone width. A
 * WhatsApp group created from the list and managed in its panel.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestDatabase } from '../helpers.js';
import { accountWithDevice, chromiumForTests, ensureDashboardBuilt, openBrowserPage, screenshotOnFailure, signIn, startDashboardServer, type accountApi, type Browser, type DashboardServer } from './support.js';

const available = chromiumForTests();

const EMAIL = 'inbox@example.test';
const PASSWORD = 'a long enough password';
const ME = '6281122224444';
const ALICE = '6281311115551';
const BOB = '6281311115552';
const DAVE = '6281311115554';

let server: DashboardServer;
let browser: Browser;
let page: Page;
let deviceId = '';
let groupId = '';
/** The phone's files on loopback: Waygate downloads each incoming one into its media store. */
let phoneFiles: http.Server;
let phoneFilesUrl = '';
/** An Ogg page header and a few bytes: enough to be an audio/ogg file to download and serve. */
const VOICE_NOTE = Buffer.concat([Buffer.from('OggS'), Buffer.alloc(60, 1)]);

/** The public API as the test's account. */
let publicApi: ReturnType<typeof accountApi>;

const incoming = (from: string, content: string, extra: Record<string, unknown> = {}) =>
  publicApi('POST', '/sandbox/incoming', { deviceId, from, content, ...extra });

/** The unread badge of a chat in the list ('' when none). */
async function unreadOf(chatId: string): Promise<string> {
  const badge = page.locator(`button[data-chat="${chatId}"] .unread`);
  return (await badge.count()) === 0 ? '' : ((await badge.textContent()) ?? '');
}

describe.skipIf(!available)('the Inbox in Chromium', () => {
  beforeAll(async () => {
    await ensureDashboardBuilt();
    server = await startDashboardServer(await openTestDatabase(), { SANDBOX_RECEIPT_MS: '200' });
    ({ deviceId, api: publicApi } = await accountWithDevice(server, { email: EMAIL, password: PASSWORD, phoneNumber: ME }));
    groupId = (await publicApi<{ data: { id: string } }>('POST', '/sandbox/groups', { deviceId, name: 'Family', members: [ALICE, DAVE] })).data.id;
    ({ browser, page } = await openBrowserPage());
  }, 180_000);

  beforeAll(async () => {
    phoneFiles = http.createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': VOICE_NOTE.length });
      response.end(VOICE_NOTE);
    });
    await new Promise<void>((resolve) => phoneFiles.listen(0, '127.0.0.1', resolve));
    phoneFilesUrl = `http://127.0.0.1:${(phoneFiles.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => phoneFiles?.close(resolve));
    await browser?.close();
    await server?.close();
  });

  it('lists chats with unread counts, shows a new message within 2 s without a reload, every kind of message, marks read, and sends a reply', async () => {
    screenshotOnFailure(page, 'inbox-desktop');
    await incoming(ALICE, 'hi from alice');
    await incoming(ALICE, 'are you open today?');
    await incoming(BOB, 'hello from bob');
    await incoming(DAVE, 'hi all', { group: groupId });

    await signIn(page, server, { email: EMAIL, password: PASSWORD }, '/dashboard/inbox');
    await page.getByRole('heading', { level: 1, name: 'Inbox' }).waitFor();
    await page.evaluate(() => Object.assign(globalThis, { __noReload: true }));
    await expect.poll(() => unreadOf(ALICE), { timeout: 15_000 }).toBe('2');
    expect(await unreadOf(BOB)).toBe('1');
    expect(await unreadOf(groupId)).toBe('1');
    await page.locator(`button[data-chat="${groupId}"]`).getByText('Family').waitFor();

    // A new incoming message shows within 2 s, without a reload.
    const sentAt = Date.now();
    await incoming(BOB, 'are you there?');
    await page.locator(`button[data-chat="${BOB}"]`).getByText('are you there?').waitFor({ timeout: 2_000 });
    expect(Date.now() - sentAt).toBeLessThan(2_000);
    expect(await unreadOf(BOB)).toBe('2');

    // Every kind of message in Alice's chat.
    // Files on the dashboard's own origin (its CSP shows images from there): its icon as the photo.
    await incoming(ALICE, 'our shop', { type: 'IMAGE', mediaUrl: `${server.url}/dashboard/favicon.svg` });
    await incoming(ALICE, '', { type: 'AUDIO', mediaUrl: `${phoneFilesUrl}/voice.ogg` });
    await incoming(ALICE, '', { type: 'LOCATION', location: { latitude: -6.2, longitude: 106.8, name: 'Shop', address: 'Jl. Sudirman 1' } });
    await incoming(ALICE, '', { type: 'CONTACT', contacts: [{ name: 'Budi', phoneNumber: '6281399998888' }] });
    const poll = await publicApi<{ message: { id: string } }>('POST', '/messages/send', { type: 'POLL', content: 'Open on Sunday?', poll: { options: ['Yes', 'No'] }, recipients: [ALICE], deviceId });
    await expect.poll(async () => (await publicApi<{ data: { status: string } }>('GET', `/messages/${poll.message.id}`)).data.status, { timeout: 15_000 }).not.toBe('QUEUED');
    await incoming(ALICE, '', { vote: { messageId: poll.message.id, options: ['Yes'] } });
    await incoming(ALICE, 'yes please', { replyTo: poll.message.id });
    await incoming(ALICE, '', { type: 'REACTION', reaction: { messageId: poll.message.id, emoji: '👍' } });

    await page.locator(`button[data-chat="${ALICE}"]`).click();
    const log = page.getByRole('log', { name: 'Messages' });
    await log.getByText('hi from alice').waitFor();
    await log.getByRole('img', { name: 'our shop' }).waitFor();
    await expect.poll(() => log.getByRole('img', { name: 'our shop' }).evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth), { timeout: 15_000 }).toBeGreaterThan(0);
    await expect.poll(() => log.locator('audio').count(), { timeout: 15_000 }).toBe(1);
    expect(await log.getByRole('link', { name: 'Shop' }).getAttribute('href')).toContain('openstreetmap.org/?mlat=-6.2&mlon=106.8');
    await log.getByText('Budi').waitFor();
    const pollBubble = log.locator(`article[data-message="${poll.message.id}"]`);
    await pollBubble.getByText('Open on Sunday?').waitFor();
    await expect.poll(() => pollBubble.locator('li', { hasText: 'Yes' }).locator('.badge').textContent(), { timeout: 15_000 }).toBe('1');
    await expect.poll(() => pollBubble.getByLabel('Reactions').textContent(), { timeout: 15_000 }).toBe('👍');
    await log.locator('blockquote', { hasText: 'Open on Sunday?' }).waitFor();

    // Opening the chat marked it read.
    await expect.poll(() => unreadOf(ALICE), { timeout: 15_000 }).toBe('');
    expect((await publicApi<{ data: { unreadCount: number } }>('GET', `/chats/${ALICE}`)).data.unreadCount).toBe(0);

    // A reply from the box lands in this chat.
    await page.getByLabel('Message', { exact: true }).fill('see you at 9');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    await log.locator('.bubble-out', { hasText: 'see you at 9' }).waitFor();
    const history = await publicApi<{ data: { content: string; direction: string; to: string }[] }>('GET', `/chats/${ALICE}/messages?limit=1`);
    expect(history.data[0]).toMatchObject({ content: 'see you at 9', direction: 'out', to: ALICE });

    // Into the group chat: the reply goes to the group.
    await page.locator(`button[data-chat="${groupId}"]`).click();
    await log.getByText('hi all').waitFor();
    await page.getByLabel('Message', { exact: true }).fill('hello family');
    await page.getByLabel('Message', { exact: true }).press('Enter');
    await log.locator('.bubble-out', { hasText: 'hello family' }).waitFor();
    const network = await publicApi<{ data: { to: string; content: string }[] }>('GET', `/sandbox/messages?to=${DAVE}`);
    expect(network.data.map((m) => m.content)).toContain('hello family');
    expect(await page.evaluate(() => (globalThis as { __noReload?: boolean }).__noReload)).toBe(true);
  }, 120_000);

  it('at phone width: the list, then the conversation with a way back, no sideways scrolling, and live news', async () => {
    screenshotOnFailure(page, 'inbox-phone');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${server.url}/dashboard/inbox`);
    await page.getByRole('heading', { level: 1, name: 'Inbox' }).waitFor();
    await page.locator(`button[data-chat="${BOB}"]`).waitFor();
    const overflow = (): Promise<number> =>
      page.evaluate(() => {
        const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number; clientWidth: number } } }).document.documentElement;
        return root.scrollWidth - root.clientWidth;
      });
    expect(await overflow()).toBeLessThanOrEqual(0);

    const sentAt = Date.now();
    await incoming(BOB, 'still there?');
    await page.locator(`button[data-chat="${BOB}"]`).getByText('still there?').waitFor({ timeout: 2_000 });
    expect(Date.now() - sentAt).toBeLessThan(2_000);

    await page.locator(`button[data-chat="${BOB}"]`).click();
    const log = page.getByRole('log', { name: 'Messages' });
    await log.getByText('still there?').waitFor();
    expect(await page.locator(`button[data-chat="${BOB}"]`).isVisible()).toBe(false);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await page.getByRole('button', { name: '← Chats' }).click();
    await page.locator(`button[data-chat="${BOB}"]`).waitFor();
    await expect.poll(() => unreadOf(BOB), { timeout: 15_000 }).toBe('');
  }, 90_000);

  it("creates a WhatsApp group from the list and manages it in the group's panel: members, admins, name, invite link, leaving", async () => {
    screenshotOnFailure(page, 'inbox-groups');
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${server.url}/dashboard/inbox`);
    await page.getByRole('heading', { level: 1, name: 'Inbox' }).waitFor();
    const [ana, ben, cat] = ['6281311116661', '6281311116662', '6281311116663'];

    await page.getByRole('button', { name: 'New group' }).click();
    const form = page.getByRole('form', { name: 'New group' });
    await form.getByLabel('Group name').fill('Market');
    await form.getByLabel('Members').fill(`+62 813 1111 6661\n12345`);
    await form.getByText('line 2: 12345 is too short').waitFor();
    expect(await form.getByRole('button', { name: 'Create group' }).isDisabled()).toBe(true);
    await form.getByLabel('Members').fill(`+62 813 1111 6661\n${ben}`);
    await form.getByRole('button', { name: 'Create group' }).click();
    await page.getByRole('heading', { level: 2, name: 'Market' }).waitFor();

    await page.getByRole('button', { name: 'Group info' }).click();
    const panel = page.getByRole('region', { name: 'Group' });
    const participants = panel.getByRole('list', { name: 'Participants' });
    await participants.locator(`li[data-participant="${ME}"]`).getByText('admin').waitFor();
    expect(await participants.locator('li').count()).toBe(3);

    // Added: one taken, one WhatsApp refused, said beside the number.
    await panel.getByLabel('Add members').fill(`${cat}\n6281311110000`);
    await panel.getByRole('button', { name: 'Add', exact: true }).click();
    await panel.getByText('+6281311110000 is not on the network').waitFor();
    await participants.locator(`li[data-participant="${cat}"]`).waitFor();
    await panel.getByRole('button', { name: `Make admin +${cat}` }).click();
    await participants.locator(`li[data-participant="${cat}"]`).getByText('admin').waitFor();
    await panel.getByRole('button', { name: `Remove +${ben}` }).click();
    await expect.poll(() => participants.locator(`li[data-participant="${ben}"]`).count(), { timeout: 15_000 }).toBe(0);

    await panel.getByLabel('Group name').fill('Market day');
    await panel.getByRole('button', { name: 'Rename' }).click();
    await page.getByRole('heading', { level: 2, name: 'Market day' }).waitFor();
    await panel.getByRole('button', { name: 'Invite link' }).click();
    const firstLink = await panel.getByTestId('invite-link').textContent();
    expect(firstLink).toMatch(/^https:\/\/chat\.whatsapp\.com\/[\w-]{22}$/);
    await panel.getByRole('button', { name: 'New link' }).click();
    await page.getByRole('dialog', { name: 'Replace the invite link?' }).getByRole('button', { name: 'Replace link' }).click();
    await expect.poll(() => panel.getByTestId('invite-link').textContent(), { timeout: 15_000 }).not.toBe(firstLink);
    expect(await panel.getByTestId('invite-link').textContent()).toMatch(/^https:\/\/chat\.whatsapp\.com\/[\w-]{22}$/);

    const chats = await publicApi<{ data: { id: string; name: string; participants: null }[] }>('GET', '/chats?type=group&search=Market');
    const groupChat = chats.data[0]!;
    const stored = await publicApi<{ data: { participants: { phoneNumber: string; admin: boolean }[] } }>('GET', `/chats/${groupChat.id}`);
    expect(stored.data.participants).toEqual([
      { phoneNumber: ME, lid: null, admin: true },
      { phoneNumber: ana, lid: null, admin: false },
      { phoneNumber: cat, lid: null, admin: true },
    ]);

    await panel.getByRole('button', { name: 'Leave group' }).click();
    await page.getByRole('dialog', { name: 'Leave this group?' }).getByRole('button', { name: 'Leave' }).click();
    await panel.getByText('Your device is no longer in this group').waitFor();
    await page.getByText('Your device left this group: nothing more can be sent into it.').waitFor();
    expect(await page.getByRole('form', { name: 'Reply' }).count()).toBe(0);
    const left = await publicApi<{ data: { participants: { phoneNumber: string }[] } }>('GET', `/chats/${groupChat.id}`);
    expect(left.data.participants.map((p) => p.phoneNumber)).toEqual([ana, cat]);
  }, 120_000);
});
