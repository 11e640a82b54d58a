/**
 * Conversations as the API shows them (DESIGN.md section 10): chats of the account's devices,
 * one chat with its group members, a chat's history by keyset, marking read, presence, number
 * look-ups, and the WhatsApp groups a device administers (create, rename, participants, invite
 * link, leave). What needs the device's network session (read receipts, presence, look-ups,
 * group changes) goes to the worker that holds it through device_requests (device-requests.ts).
 */
import type { Database } from '../platform/database.js';
import type { Bus } from '../platform/bus.js';
import { AppError, invalidFields, validationError, type FieldError } from '../platform/errors.js';
import { normalizePhone } from '../platform/phone.js';
import { escapeLike } from '../directory/contact-store.js';
import { chooseDevice } from '../devices/device-choice.js';
import { DeviceStore } from '../devices/device-store.js';
import type { NumberCheck, ParticipantAction, ParticipantOutcome, PresenceState } from '../network/network.js';
import { toMessage } from '../messaging/message-model.js';
import type { Message } from '../messaging/message-record.js';
import type { Chat, ChatDetail, ChatType, GroupInvite, NumberCheckResult } from './chat-record.js';
import { normalizeChatId } from './chat-ids.js';
import { deviceInGroup } from './group-membership.js';
import * as store from './chat-store.js';
import { cachedChecks, createRequest, getAnswer, type DeviceAnswer, type DeviceRequest } from './device-requests.js';
import { deleteRequest } from './device-requests.js';

export const MAX_NUMBER_CHECKS = 50;
const MAX_PAGE = 100;
/**
 * Chats a listing's total counts at most (then `totalExact: false`): counting is the costliest
 * part of a page (10,000 rows took ~30 ms, more than the page), and an inbox shows "1,000+".
 */
const CHAT_COUNT_CAP = 1_000;
/** Read receipts sent for one read, at most (the newest unread messages). */
const MAX_READ_RECEIPTS = 500;
/** How long the API waits for the worker holding the device to ask the network (a look-up, a group change). */
const CHECK_WAIT_MS = 30_000;
/** Numbers one participants change (or a new group) takes at most. */
export const MAX_GROUP_CHANGE = 50;
const INVITE_LINK_BASE = 'https://chat.whatsapp.com/';

export interface ChatListQuery {
  deviceId?: string | undefined;
  type?: ChatType | undefined;
  search?: string | undefined;
  page: number;
  limit: number;
  cursor?: string | undefined;
}

export interface ChatListMeta {
  total: number;
  totalExact: boolean;
  page: number;
  limit: number;
  nextCursor: string | null;
}

function encodeCursor(page: number, position: store.ChatPosition): string {
  return Buffer.from(JSON.stringify(['chats', page, position.at.getTime(), position.deviceId, position.id])).toString('base64url');
}

function decodeCursor(cursor: string): { page: number; position: store.ChatPosition } {
  const refuse = () => validationError('cursor', 'is not a cursor; pass meta.nextCursor of an earlier answer unchanged');
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw refuse();
  }
  if (!Array.isArray(value) || value.length !== 5 || value[0] !== 'chats') throw refuse();
  const [, page, ms, deviceId, id] = value as unknown[];
  if (!Number.isInteger(page) || !Number.isInteger(ms) || typeof deviceId !== 'string' || typeof id !== 'string' || (ms as number) < 0) throw refuse();
  return { page: page as number, position: { at: new Date(ms as number), deviceId, id } };
}

/** A group's name, trimmed (its length is the route schema's, WHATSAPP_GROUP_NAME_MAX). */
function groupName(raw: string): string {
  const name = raw.trim();
  if (name.length === 0) throw validationError('name', 'must not be blank');
  return name;
}

/** Numbers as E.164 digits, in order; each bad one named by its index. */
function phoneNumbersOf(raw: string[], field: string): string[] {
  const errors: FieldError[] = [];
  const numbers = raw.map((value, index) => {
    const phone = normalizePhone(value);
    if (!phone.ok) errors.push({ field: `${field}[${index}]`, message: phone.message });
    return phone.ok ? phone.digits : '';
  });
  if (errors.length > 0) throw invalidFields(errors);
  return numbers;
}

export class ConversationService {
  private readonly countCap: number;

  private readonly devices: DeviceStore;

  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    listingCountCap: number,
  ) {
    this.countCap = Math.min(listingCountCap, CHAT_COUNT_CAP);
    this.devices = new DeviceStore(database);
  }

  /** Chats of the account's devices, newest activity first; `cursor` walks deep at the cost of one page. */
  async list(accountId: string, query: ChatListQuery): Promise<{ data: Chat[]; meta: ChatListMeta }> {
    const limit = Math.min(query.limit, MAX_PAGE);
    const after = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
    const page = after?.page ?? query.page;
    const filter: store.ChatFilter = { deviceId: query.deviceId, type: query.type, search: query.search ? escapeLike(query.search.trim()) : undefined };
    const rows = await store.listChats(this.database, accountId, filter, limit, after ? 0 : (page - 1) * limit, after?.position);
    const more = rows.length > limit;
    if (more) rows.length = limit;
    const last = rows.at(-1);
    const known = !after && !more && (rows.length > 0 || page === 1) ? (page - 1) * limit + rows.length : undefined;
    const counted = known ?? (await store.countChats(this.database, accountId, filter, this.countCap));
    const messages = await store.messagesById(this.database, rows.map((r) => r.last_message_id).filter((id): id is string => id !== null));
    return {
      data: rows.map((r) => store.toChat(r, r.last_message_id ? messages.get(r.last_message_id) : undefined)),
      meta: {
        total: Math.min(counted, this.countCap),
        totalExact: counted <= this.countCap,
        page,
        limit,
        nextCursor: more && last ? encodeCursor(page + 1, { at: last.last_activity_at, deviceId: last.device_id, id: last.id }) : null,
      },
    };
  }

  async get(accountId: string, rawChatId: string, deviceId: string | undefined): Promise<ChatDetail> {
    const { chat } = await this.chat(accountId, rawChatId, deviceId);
    const last = chat.last_message_id ? (await store.messagesById(this.database, [chat.last_message_id])).get(chat.last_message_id) : undefined;
    return store.toChatDetail(chat, last);
  }

  /** A chat's messages, both directions, newest first, before the message `before` (meta.nextBefore of the previous page). */
  async messages(accountId: string, rawChatId: string, query: { deviceId?: string | undefined; before?: string | undefined; limit: number }): Promise<{ data: Message[]; meta: { limit: number; nextBefore: string | null } }> {
    const { chat } = await this.chat(accountId, rawChatId, query.deviceId);
    const limit = Math.min(query.limit, MAX_PAGE);
    let before: { createdAt: Date; id: string } | undefined;
    if (query.before !== undefined) {
      before = await store.chatMessagePosition(this.database, chat.device_id, chat.id, query.before);
      if (!before) throw validationError('before', 'is not a message of this chat; pass meta.nextBefore of an earlier answer');
    }
    const rows = await store.chatMessages(this.database, chat.device_id, chat.id, limit + 1, before);
    const more = rows.length > limit;
    if (more) rows.length = limit;
    return { data: rows.map(toMessage), meta: { limit, nextBefore: more ? rows.at(-1)!.id : null } };
  }

  /** Marks everything in the chat read: unread count 0, read receipts to the network for what was unread. */
  async read(accountId: string, rawChatId: string, deviceId: string | undefined): Promise<ChatDetail> {
    const { chat } = await this.chat(accountId, rawChatId, deviceId);
    const unread = await store.markRead(this.database, chat.device_id, chat.id, MAX_READ_RECEIPTS);
    if (unread && unread.length > 0) await this.ask(chat.device_id, { kind: 'read', payload: { chat: chat.id, messages: unread } });
    this.bus.publishSoon('waygate_chats', chat.device_id);
    return this.get(accountId, chat.id, chat.device_id);
  }

  /** Shows the device typing, recording, or neither, in the chat. */
  async presence(accountId: string, rawChatId: string, deviceId: string | undefined, state: PresenceState): Promise<{ chatId: string; deviceId: string; state: PresenceState }> {
    const { chat } = await this.chat(accountId, rawChatId, deviceId);
    await this.ask(chat.device_id, { kind: 'presence', payload: { chat: chat.id, state } });
    return { chatId: chat.id, deviceId: chat.device_id, state };
  }

  /**
   * Whether each number has an account on the network, asked through a device of the account
   * (the oldest connected one unless `deviceId`). Answers are cached 7 days per device; what is
   * not cached is asked in one look-up, paced per device by the worker.
   */
  async checkNumbers(accountId: string, input: { phoneNumbers: string[]; deviceId?: string | undefined }): Promise<NumberCheckResult[]> {
    if (input.phoneNumbers.length > MAX_NUMBER_CHECKS) throw validationError('phoneNumbers', `must have at most ${MAX_NUMBER_CHECKS} numbers`);
    const numbers = phoneNumbersOf(input.phoneNumbers, 'phoneNumbers');
    const deviceId = await chooseDevice(this.database, accountId, input.deviceId);
    const unique = [...new Set(numbers)];
    const known = await cachedChecks(this.database, deviceId, unique);
    const missing = unique.filter((n) => !known.has(n));
    if (missing.length > 0) {
      for (const check of await this.lookUp(deviceId, missing)) known.set(check.phoneNumber, check.onNetwork);
    }
    return numbers.map((phoneNumber) => {
      const onNetwork = known.get(phoneNumber) ?? false;
      return { phoneNumber, onNetwork, chatId: onNetwork ? phoneNumber : null };
    });
  }

  private async lookUp(deviceId: string, phoneNumbers: string[]): Promise<NumberCheck[]> {
    const answer = await this.askAndWait(deviceId, { kind: 'check', payload: { phoneNumbers } }, 'look the numbers up');
    return answer.checks ?? [];
  }

  // ---- WhatsApp groups the device administers --------------------------------------------

  /** Creates a WhatsApp group through a device of the account (the oldest connected one unless `deviceId`); its chat is answered. */
  async createGroup(accountId: string, input: { name: string; participants: string[]; deviceId?: string | undefined }): Promise<ChatDetail> {
    const name = groupName(input.name);
    const participants = [...new Set(phoneNumbersOf(input.participants, 'participants'))];
    const deviceId = await chooseDevice(this.database, accountId, input.deviceId);
    const { groupId } = await this.askAndWait(deviceId, { kind: 'group', payload: { action: 'create', name, participants } }, 'create the group');
    if (!groupId) throw new AppError('SERVICE_UNAVAILABLE', 'The network created no group');
    return this.get(accountId, groupId, deviceId);
  }

  async renameGroup(accountId: string, rawChatId: string, deviceId: string | undefined, rawName: string): Promise<ChatDetail> {
    const name = groupName(rawName);
    const chat = await this.groupChat(accountId, rawChatId, deviceId, 'rename it');
    await this.askAndWait(chat.device_id, { kind: 'group', payload: { action: 'rename', group: chat.id, name } }, 'rename the group');
    return this.get(accountId, chat.id, chat.device_id);
  }

  /** Adds, removes, promotes or demotes members; each number is answered on its own, beside the group as it then is. */
  async changeParticipants(
    accountId: string,
    rawChatId: string,
    deviceId: string | undefined,
    input: { action: ParticipantAction; phoneNumbers: string[] },
  ): Promise<{ chat: ChatDetail; results: ParticipantOutcome[] }> {
    const phoneNumbers = [...new Set(phoneNumbersOf(input.phoneNumbers, 'phoneNumbers'))];
    const chat = await this.groupChat(accountId, rawChatId, deviceId, 'change its participants');
    const { outcomes } = await this.askAndWait(
      chat.device_id,
      { kind: 'group', payload: { action: 'participants', group: chat.id, change: input.action, phoneNumbers } },
      'change the participants',
    );
    return { chat: await this.get(accountId, chat.id, chat.device_id), results: outcomes ?? [] };
  }

  /** The group's invite link; with `revoke`, a new one (links with the old code stop working). */
  async inviteLink(accountId: string, rawChatId: string, deviceId: string | undefined, revoke = false): Promise<GroupInvite> {
    const chat = await this.groupChat(accountId, rawChatId, deviceId, revoke ? 'revoke its invite link' : 'read its invite link');
    const { inviteCode } = await this.askAndWait(
      chat.device_id,
      { kind: 'group', payload: { action: 'invite', group: chat.id, revoke } },
      revoke ? 'revoke the invite link' : 'read the invite link',
    );
    if (!inviteCode) throw new AppError('SERVICE_UNAVAILABLE', 'The network answered without an invite code');
    return { chatId: chat.id, deviceId: chat.device_id, code: inviteCode, link: `${INVITE_LINK_BASE}${inviteCode}` };
  }

  /** The device's number leaves the group; the chat and its history stay, without it among the participants. */
  async leaveGroup(accountId: string, rawChatId: string, deviceId: string | undefined): Promise<ChatDetail> {
    const chat = await this.groupChat(accountId, rawChatId, deviceId, null);
    await this.askAndWait(chat.device_id, { kind: 'group', payload: { action: 'leave', group: chat.id } }, 'leave the group');
    return this.get(accountId, chat.id, chat.device_id);
  }

  /**
   * A group chat of the account that the device is in, refused early where the stored group
   * already says no (group-membership.ts): a direct chat, a group the device left, or (for
   * `adminTo`) one where the device is not an admin.
   */
  private async groupChat(accountId: string, rawChatId: string, deviceId: string | undefined, adminTo: string | null): Promise<store.ChatRow> {
    const { chat } = await this.chat(accountId, rawChatId, deviceId);
    if (chat.type !== 'group') throw validationError('chatId', 'is a direct chat; only a WhatsApp group chat has participants, a name and an invite link');
    const device = await this.devices.get(accountId, chat.device_id);
    const { me, inGroup } = deviceInGroup(chat.participants, device?.phone_number ?? null);
    if (!inGroup) throw new AppError('CONFLICT', 'The device is not in this group any more');
    if (adminTo && me && !me.admin) throw new AppError('CONFLICT', `Only a group admin can ${adminTo}, and the device is not one`);
    return chat;
  }

  /** Asks the worker holding the device and waits for its answer: a refusal by the network is a 409, no answer a 503. */
  private async askAndWait(deviceId: string, request: DeviceRequest, what: string): Promise<DeviceAnswer> {
    const requestId = await createRequest(this.database, deviceId, request);
    let wake: (() => void) | undefined;
    const unsubscribe = this.bus.subscribe('waygate_devices', (payload) => {
      if (payload === `answer:${requestId}`) wake?.();
    });
    try {
      await this.bus.publish('waygate_devices', `request:${deviceId}`);
      const deadline = Date.now() + CHECK_WAIT_MS;
      for (;;) {
        const row = await getAnswer(this.database, requestId);
        if (row?.answered) {
          if (row.answer?.refused !== undefined) throw new AppError('CONFLICT', row.answer.refused);
          if (row.error !== null || !row.answer) throw new AppError('SERVICE_UNAVAILABLE', `The network could not ${what}: ${row.error ?? 'no answer'}`);
          return row.answer;
        }
        if (Date.now() >= deadline) {
          throw new AppError('SERVICE_UNAVAILABLE', 'No answer from the device: is it connected, and is a worker running? Try again later');
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, Math.min(500, Math.max(0, deadline - Date.now())));
        });
      }
    } finally {
      unsubscribe();
      await deleteRequest(this.database, requestId);
    }
  }

  private async ask(deviceId: string, request: DeviceRequest): Promise<void> {
    await createRequest(this.database, deviceId, request);
    await this.bus.publish('waygate_devices', `request:${deviceId}`);
  }

  /**
   * The chat a path names, of one of the account's devices: `deviceId` when given; otherwise the
   * account's one device (it is required when the account has more than one).
   */
  private async chat(accountId: string, rawChatId: string, deviceId: string | undefined): Promise<{ chat: store.ChatRow }> {
    const chatId = normalizeChatId(rawChatId);
    if (!chatId) throw validationError('chatId', 'must be a number, <digits>@lid or a group id <digits>@g.us');
    const device = deviceId ?? (await this.onlyDevice(accountId));
    const chat = await store.getChat(this.database, accountId, device, chatId);
    if (!chat) throw new AppError('NOT_FOUND', 'Chat not found');
    return { chat };
  }

  private async onlyDevice(accountId: string): Promise<string> {
    const { rows, total } = await this.devices.list(accountId, { limit: 1, offset: 0 });
    if (total === 0) throw new AppError('NOT_FOUND', 'Chat not found');
    if (total > 1) throw validationError('deviceId', 'is required: the account has more than one device, and a chat belongs to one');
    return rows[0]!.id;
  }
}
