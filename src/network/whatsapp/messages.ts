/**
 * Translations between Waygate's messages and Baileys' shapes: outgoing content, incoming
 * messages, acknowledgement statuses, disconnect reasons and send errors. Pure functions, so
 * they are tested on their own.
 */
import type { ContactCard, DisconnectReason, IncomingMedia, KindFields, Location, MessageRef, MessageType, OutgoingMessage, Receipt } from '../network.js';
import { createHash } from 'node:crypto';
import type { BoomLike, WAContactCard, WAContextInfo, WALocation, WAMediaFields, WAMessage, WAMessageContent, WAMessageKey, WAOutgoingContent, WAPollCreation, WAReceiptUpdate } from './types.js';
import { WADisconnect, WAProtocolType, WAStatus } from './types.js';
import { chatJid, jidToPhone, normalizeLid, phoneToJid } from './jid.js';

/**
 * The key of a message the device sent or received, in chat `remoteJid`: a member's message in a
 * group names the member as participant (Baileys puts it in a quote's contextInfo.participant).
 */
export function messageKey(ref: Pick<MessageRef, 'networkMessageId' | 'fromMe' | 'participant'>, remoteJid: string): WAMessageKey {
  return { remoteJid, fromMe: ref.fromMe, id: ref.networkMessageId, ...(ref.participant ? { participant: chatJid(ref.participant) } : {}) };
}

/** The content Baileys is given for a message, with its mentions; `jid` is the chat it goes to (a reaction's target is in it). */
export function outgoingContent(message: OutgoingMessage, jid: string): WAOutgoingContent {
  const content = kindContent(message, jid);
  return message.mentions && message.mentions.length > 0 ? { ...content, mentions: message.mentions.map(phoneToJid) } : content;
}

function kindContent(message: OutgoingMessage, jid: string): WAOutgoingContent {
  const { kind } = message;
  switch (message.type) {
    // No link preview: Baileys would fetch URLs in the text itself, outside the SSRF guard.
    case 'TEXT':
      return { text: message.content, linkPreview: null };
    case 'LOCATION':
      return { location: locationOf(required(kind?.location, message), message.content) };
    case 'CONTACT':
      return { contacts: contactsOf(required(kind?.contacts, message)) };
    case 'POLL': {
      const poll = required(kind?.poll, message);
      return { poll: { name: message.content, values: poll.options, selectableCount: poll.multiple ? 0 : 1 } };
    }
    case 'REACTION': {
      const reaction = required(message.reaction, message);
      return { react: { text: reaction.emoji, key: messageKey(reaction.target, jid) } };
    }
  }
  const media = message.media;
  if (!media) throw new Error(`${message.type} message without media`);
  const caption = message.content ? { caption: message.content } : {};
  switch (message.type) {
    case 'IMAGE':
      return { image: media.data, mimetype: media.mimeType, ...caption };
    case 'VIDEO':
      return { video: media.data, mimetype: media.mimeType, ...caption };
    case 'DOCUMENT':
      return { document: media.data, mimetype: media.mimeType, fileName: media.fileName || defaultFileName(media.mimeType), ...caption };
    case 'AUDIO':
      return { audio: media.data, mimetype: media.mimeType, ptt: kind?.voice === true };
    case 'STICKER':
      return { sticker: media.data, mimetype: 'image/webp' };
  }
}

function required<T>(value: T | undefined, message: OutgoingMessage): T {
  if (value === undefined) throw new Error(`${message.type} message without its ${message.type.toLowerCase()}`);
  return value;
}

function locationOf(location: Location, comment: string): WALocation {
  return {
    degreesLatitude: location.latitude,
    degreesLongitude: location.longitude,
    ...(location.name ? { name: location.name } : {}),
    ...(location.address ? { address: location.address } : {}),
    ...(comment ? { comment } : {}),
  };
}

/** A vCard 3.0 text value: backslash, comma, semicolon and line breaks escaped. */
const vcardText = (value: string): string => value.replace(/[\\,;]/g, (c) => `\\${c}`).replace(/\r?\n/g, '\\n');

/** A contact card as WhatsApp shows it: the name and the number, with its WhatsApp id (waid). */
export function vcardOf(contact: ContactCard): string {
  const name = vcardText(contact.name);
  return ['BEGIN:VCARD', 'VERSION:3.0', `FN:${name}`, `N:${name};;;;`, `TEL;type=CELL;type=VOICE;waid=${contact.phoneNumber}:+${contact.phoneNumber}`, 'END:VCARD'].join('\n');
}

function contactsOf(contacts: ContactCard[]): { displayName: string; contacts: { displayName: string; vcard: string }[] } {
  return {
    displayName: contacts.length === 1 ? contacts[0]!.name : `${contacts.length} contacts`,
    contacts: contacts.map((contact) => ({ displayName: contact.name, vcard: vcardOf(contact) })),
  };
}

/**
 * The message a reply quotes, as Baileys takes it (options.quoted): its key and its content
 * rebuilt from what Waygate stored of it (text, caption, place, cards, poll; the file itself is
 * not needed to quote it).
 */
export function quotedMessage(ref: MessageRef, jid: string): WAMessage {
  return { key: messageKey(ref, jid), message: quotedContent(ref.type, ref.content, ref.kind) };
}

function quotedContent(type: MessageType, content: string, kind: KindFields | undefined): WAMessageContent {
  const caption = content ? { caption: content } : {};
  switch (type) {
    case 'TEXT':
      return { conversation: content };
    case 'IMAGE':
      return { imageMessage: caption };
    case 'VIDEO':
      return { videoMessage: caption };
    case 'DOCUMENT':
      return { documentMessage: caption };
    case 'AUDIO':
      return { audioMessage: { ptt: kind?.voice === true } };
    case 'STICKER':
      return { stickerMessage: {} };
    case 'LOCATION':
      return { locationMessage: kind?.location ? locationOf(kind.location, content) : {} };
    case 'CONTACT': {
      const cards = contactsOf(kind?.contacts ?? []);
      return cards.contacts.length === 1 ? { contactMessage: cards.contacts[0] } : { contactsArrayMessage: cards };
    }
    case 'POLL':
      return {
        [kind?.poll?.multiple ? 'pollCreationMessage' : 'pollCreationMessageV3']: {
          name: content,
          options: (kind?.poll?.options ?? []).map((optionName) => ({ optionName })),
          selectableOptionsCount: kind?.poll?.multiple ? 0 : 1,
        },
      };
    case 'REACTION':
      return { conversation: content };
  }
}

const EXTENSIONS: Record<string, string> = {
  'application/pdf': 'pdf',
  'application/zip': 'zip',
  'text/plain': 'txt',
  'text/csv': 'csv',
  'application/msword': 'doc',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'application/vnd.ms-excel': 'xls',
  'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet': 'xlsx',
};

export function defaultFileName(mimeType: string): string {
  const ext = EXTENSIONS[mimeType] ?? (/^[a-z]+\/([a-z0-9]+)$/.exec(mimeType)?.[1] ?? 'bin');
  return `document.${ext}`;
}

function toNumber(value: number | { toNumber(): number } | string | null | undefined): number | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'number') return value;
  if (typeof value === 'string') return Number.isFinite(Number(value)) ? Number(value) : undefined;
  return value.toNumber();
}

/** The timestamp of a message or receipt (seconds since the epoch), or now. */
export function timestampOf(value: number | { toNumber(): number } | string | null | undefined): Date {
  const seconds = toNumber(value);
  return seconds && seconds > 0 ? new Date(seconds * 1000) : new Date();
}

/** Wrappers WhatsApp puts around a message's content (disappearing, view once, document with caption). */
export function unwrap(content: WAMessageContent | null | undefined): WAMessageContent | undefined {
  let current = content ?? undefined;
  for (let depth = 0; current && depth < 5; depth++) {
    const inner =
      current.ephemeralMessage?.message ??
      current.viewOnceMessage?.message ??
      current.viewOnceMessageV2?.message ??
      current.viewOnceMessageV2Extension?.message ??
      current.documentWithCaptionMessage?.message;
    if (!inner) break;
    current = inner;
  }
  return current;
}

export interface ParsedIncoming {
  messageType: MessageType;
  content: string;
  media?: IncomingMedia | undefined;
  kind?: KindFields | undefined;
  /** REACTION: the emoji ("" removed) on the message with this id. */
  reaction?: { networkMessageId: string; emoji: string } | undefined;
  /** The id of the message it quotes. */
  replyTo?: string | undefined;
  /** Who it mentions: numbers, or `<digits>@lid` when WhatsApp gave only that. */
  mentions?: string[] | undefined;
}

/** A contact card's number: the vCard's WhatsApp id (waid=), else its first TEL. */
function contactOf(card: WAContactCard): ContactCard | undefined {
  const vcard = card.vcard ?? '';
  const digits = /waid=(\d+)/i.exec(vcard)?.[1] ?? /^TEL[^:]*:([+\d\s()-]+)$/im.exec(vcard)?.[1]?.replace(/\D/g, '');
  const name = card.displayName || /^FN:(.*)$/m.exec(vcard)?.[1]?.trim() || '';
  return digits ? { name, phoneNumber: digits } : undefined;
}

function pollOf(poll: WAPollCreation): ParsedIncoming {
  const options = (poll.options ?? []).map((o) => o.optionName ?? '');
  return { messageType: 'POLL', content: poll.name ?? '', kind: { poll: { options, multiple: poll.selectableOptionsCount !== 1 } } };
}

/** The place of a locationMessage (its comment is the content). */
function placeOf(location: WALocation): Location {
  return {
    latitude: location.degreesLatitude ?? 0,
    longitude: location.degreesLongitude ?? 0,
    ...(location.name ? { name: location.name } : {}),
    ...(location.address ? { address: location.address } : {}),
  };
}

/** What a message of the kinds Waygate knows says, without its quote and mentions. */
function parseKind(content: WAMessageContent): ParsedIncoming | undefined {
  if (typeof content.conversation === 'string' && content.conversation.length > 0) return { messageType: 'TEXT', content: content.conversation };
  if (content.extendedTextMessage?.text) return { messageType: 'TEXT', content: content.extendedTextMessage.text };
  if (content.imageMessage) return { messageType: 'IMAGE', content: content.imageMessage.caption ?? '', media: mediaOf(content.imageMessage, 'image/jpeg') };
  if (content.videoMessage) return { messageType: 'VIDEO', content: content.videoMessage.caption ?? '', media: mediaOf(content.videoMessage, 'video/mp4') };
  if (content.documentMessage) {
    return { messageType: 'DOCUMENT', content: content.documentMessage.caption ?? '', media: mediaOf(content.documentMessage, 'application/octet-stream') };
  }
  if (content.audioMessage) {
    const voice = content.audioMessage.ptt === true ? { kind: { voice: true } } : {};
    return { messageType: 'AUDIO', content: '', media: mediaOf(content.audioMessage, 'audio/ogg'), ...voice };
  }
  if (content.stickerMessage) return { messageType: 'STICKER', content: '', media: mediaOf(content.stickerMessage, 'image/webp') };
  if (content.locationMessage) return { messageType: 'LOCATION', content: content.locationMessage.comment ?? '', kind: { location: placeOf(content.locationMessage) } };
  if (content.contactMessage || content.contactsArrayMessage) {
    const cards = content.contactMessage ? [content.contactMessage] : (content.contactsArrayMessage?.contacts ?? []);
    return { messageType: 'CONTACT', content: '', kind: { contacts: cards.map(contactOf).filter((c): c is ContactCard => c !== undefined) } };
  }
  const poll = content.pollCreationMessage ?? content.pollCreationMessageV2 ?? content.pollCreationMessageV3;
  if (poll) return pollOf(poll);
  const reaction = content.reactionMessage;
  if (reaction?.key?.id) return { messageType: 'REACTION', content: '', reaction: { networkMessageId: reaction.key.id, emoji: reaction.text ?? '' } };
  return undefined;
}

/** The contextInfo of the message's content, whichever kind it is. */
function contextOf(content: WAMessageContent): WAContextInfo | undefined {
  for (const value of Object.values(content)) {
    if (value && typeof value === 'object' && 'contextInfo' in value) {
      const context = (value as { contextInfo?: WAContextInfo | null }).contextInfo;
      if (context) return context;
    }
  }
  return undefined;
}

/** The media fields of an incoming message (the object Baileys' re-upload request updates in place), if it is a media message. */
export function mediaFieldsOf(message: WAMessage): WAMediaFields | undefined {
  const content = unwrap(message.message);
  return content?.imageMessage ?? content?.videoMessage ?? content?.documentMessage ?? content?.audioMessage ?? content?.stickerMessage ?? undefined;
}

function mediaOf(fields: WAMediaFields, fallbackMime: string): IncomingMedia {
  return {
    mimeType: fields.mimetype || fallbackMime,
    fileName: fields.fileName || undefined,
    sizeBytes: toNumber(fields.fileLength),
    seconds: fields.seconds ?? undefined,
  };
}

/**
 * What an incoming message says, in Waygate's types: text, media metadata with its caption, a
 * place, contact cards, a poll or a reaction, with the id of the message it quotes
 * (contextInfo.stanzaId of a quotedMessage) and who it mentions. Undefined for what is not a
 * message to store: revokes, edits, poll votes, protocol and key-distribution messages, calls.
 */
export function parseIncomingContent(message: WAMessage): ParsedIncoming | undefined {
  const content = unwrap(message.message);
  if (!content) return undefined;
  const parsed = parseKind(content);
  if (!parsed || parsed.messageType === 'REACTION') return parsed;
  const context = contextOf(content);
  if (context?.quotedMessage && context.stanzaId) parsed.replyTo = context.stanzaId;
  const mentions = (context?.mentionedJid ?? []).map((jid) => jidToPhone(jid) ?? normalizeLid(jid)).filter((m): m is string => m !== undefined);
  if (mentions.length > 0) parsed.mentions = mentions;
  return parsed;
}

/**
 * The id of the protocol message that carries an edit or a delete of message `targetId`: derived
 * from what it does (in WhatsApp Web's shape, as the ids of sent messages), so an action handed
 * over again after a failure carries the same id and WhatsApp takes it once.
 */
export function actionMessageId(action: 'edit' | 'delete', targetId: string, content = ''): string {
  return `3EB0${createHash('sha256').update(`${action}\u0000${targetId}\u0000${content}`).digest('hex').slice(0, 18).toUpperCase()}`;
}

/** An edit or a delete for everyone, as an incoming protocolMessage says it: of the message `networkMessageId`. */
export type ProtocolChange = { kind: 'edit'; networkMessageId: string; content: string; at?: Date | undefined } | { kind: 'delete'; networkMessageId: string };

/** A protocolMessage REVOKE or MESSAGE_EDIT (the new text, or caption, from editedMessage); undefined for anything else. */
export function parseProtocolChange(message: WAMessage): ProtocolChange | undefined {
  const protocol = unwrap(message.message)?.protocolMessage;
  const id = protocol?.key?.id;
  if (!protocol || !id) return undefined;
  if (protocol.type === WAProtocolType.REVOKE) return { kind: 'delete', networkMessageId: id };
  if (protocol.type !== WAProtocolType.MESSAGE_EDIT || !protocol.editedMessage) return undefined;
  const edited = unwrap(protocol.editedMessage);
  const parsed = edited ? parseKind(edited) : undefined;
  if (!parsed) return undefined;
  const ms = toNumber(protocol.timestampMs);
  return { kind: 'edit', networkMessageId: id, content: parsed.content, at: ms ? new Date(ms) : undefined };
}

/** The options a decrypted poll vote picks: WhatsApp names each by the SHA-256 of its text. */
export function votedOptions(selected: Uint8Array[], options: string[]): string[] {
  const picked = new Set(selected.map((hash) => Buffer.from(hash).toString('hex')));
  return options.filter((option) => picked.has(createHash('sha256').update(option).digest('hex')));
}

/** messages.update status → a receipt (DELIVERY_ACK → DELIVERED, READ/PLAYED → READ); other statuses are not receipts. */
export function receiptStatus(status: number | null | undefined): Receipt['status'] | undefined {
  if (status === WAStatus.DELIVERY_ACK) return 'DELIVERED';
  if (status === WAStatus.READ || status === WAStatus.PLAYED) return 'READ';
  return undefined;
}

/** message-receipt.update (per-recipient receipts, as Baileys reports them for groups) → receipts. */
export function receiptsFromUserReceipt(update: WAReceiptUpdate): Receipt[] {
  const id = update.key.id;
  if (!id || update.key.fromMe === false) return [];
  const { receiptTimestamp, readTimestamp, playedTimestamp } = update.receipt;
  const receipts: Receipt[] = [];
  if (receiptTimestamp) receipts.push({ networkMessageId: id, status: 'DELIVERED', at: timestampOf(receiptTimestamp) });
  const read = readTimestamp ?? playedTimestamp;
  if (read) receipts.push({ networkMessageId: id, status: 'READ', at: timestampOf(read) });
  return receipts;
}

export function statusCodeOf(error: BoomLike | Error | undefined): number | undefined {
  const boom = error as BoomLike | undefined;
  return boom?.output?.statusCode;
}

export interface DisconnectDecision {
  /** What to tell the runner; undefined: nothing (an expected restart). */
  reason: DisconnectReason;
  /** Restart the connection at once, without telling anyone (Baileys asks for it after pairing). */
  restartNow: boolean;
  /** Unlinked: forget the credentials. */
  loggedOut: boolean;
  message: string;
  /** A warning code for device.status, when the close says something about the number. */
  warning?: { code: string; message: string } | undefined;
  /** Not retried: the session stops with this code (see whatsapp-network.ts). */
  stop?: { code: string } | undefined;
  /** The server called the client version outdated (405). */
  outdated?: boolean | undefined;
}

/** Baileys' lastDisconnect → what the session does. */
export function classifyDisconnect(error: BoomLike | Error | undefined): DisconnectDecision {
  const code = statusCodeOf(error);
  const detail = error?.message ? `: ${error.message}` : '';
  switch (code) {
    case WADisconnect.restartRequired:
      return { reason: 'network', restartNow: true, loggedOut: false, message: 'WhatsApp asked for a restart of the connection (515)' };
    case WADisconnect.loggedOut:
      return { reason: 'logout', restartNow: false, loggedOut: true, message: `The device was unlinked from the phone (401${detail})` };
    case WADisconnect.connectionReplaced:
      return {
        reason: 'replaced',
        restartNow: false,
        loggedOut: false,
        message: 'Another session opened with this device\'s credentials (440); check that only one Waygate installation uses it',
      };
    case WADisconnect.forbidden:
    case WADisconnect.paymentRequired:
    case WADisconnect.notAcceptable:
      // Evolution API stops on these too: reconnecting a refused account is what turns a restriction into a ban.
      return {
        reason: 'error',
        restartNow: false,
        loggedOut: false,
        message: `WhatsApp refused the account (${code}${detail}); the number may be banned or restricted — check the phone, then reconnect the device`,
        stop: { code: 'ACCOUNT_REFUSED' },
      };
    case WADisconnect.clientOutdated:
      return {
        reason: 'error',
        restartNow: false,
        loggedOut: false,
        message: `WhatsApp refused the client version as outdated (405${detail}); check WHATSAPP_WA_VERSION (or that WhatsApp Web is reachable for auto), then reconnect the device`,
        stop: { code: 'CLIENT_OUTDATED' },
        outdated: true,
      };
    case WADisconnect.multideviceMismatch:
      return { reason: 'error', restartNow: false, loggedOut: false, message: `WhatsApp answered 411 (multi-device mismatch${detail}); update the WhatsApp app on the phone` };
    case WADisconnect.badSession:
      return { reason: 'error', restartNow: false, loggedOut: false, message: `The session is corrupt or WhatsApp failed (500${detail})` };
    case WADisconnect.unavailableService:
      return { reason: 'network', restartNow: false, loggedOut: false, message: `WhatsApp is unavailable (503${detail})` };
    case WADisconnect.connectionLost:
      return { reason: 'network', restartNow: false, loggedOut: false, message: `The connection to WhatsApp was lost or timed out (408${detail})` };
    case WADisconnect.connectionClosed:
      return { reason: 'network', restartNow: false, loggedOut: false, message: `The connection to WhatsApp closed (428${detail})` };
    default:
      return { reason: 'network', restartNow: false, loggedOut: false, message: `The connection to WhatsApp failed (${code ?? 'no status'}${detail})` };
  }
}

export interface SendFailure {
  ok: false;
  permanent: boolean;
  code: string;
  message: string;
  /** device.status warning to raise with it. */
  warning?: { code: string; message: string } | undefined;
  /** Pause the device's bulk traffic (see warmup.ts). */
  pauseBulk?: boolean | undefined;
}

const RATE_LIMIT_WARNING = { code: 'RATE_LIMITED', message: 'WhatsApp is rate-limiting this number; slow down bulk traffic (BULK_DELAY_MS)' };
const PRIVACY_TOKEN_WARNING = {
  code: 'NEW_CONTACT_REFUSED',
  message: 'WhatsApp refused a first message to a new contact (error 463: no privacy token); bulk traffic of the device is paused for an hour — let contacts write first, or send to known contacts',
};

/** An error code in a server ack (`<ack error="…">`, or ERROR in messages.update) → the send's outcome. */
export function classifyAckError(code: string | undefined): SendFailure {
  switch (code) {
    case '429':
      return { ok: false, permanent: false, code: 'RATE_LIMITED', message: 'WhatsApp rate-limited the message (429)', warning: RATE_LIMIT_WARNING };
    case '463':
      // Baileys does not retry it either: resending without the recipient's privacy token fails the same way, and adds pressure.
      return {
        ok: false,
        permanent: true,
        code: 'NEW_CONTACT_REFUSED',
        message: 'WhatsApp refused the message: no privacy token for this new contact (463); it is not retried',
        warning: PRIVACY_TOKEN_WARNING,
        pauseBulk: true,
      };
    case '479':
      return { ok: false, permanent: true, code: 'MESSAGE_REJECTED', message: 'WhatsApp rejected the message (479)' };
    case '400':
    case '404':
      return { ok: false, permanent: true, code: 'MESSAGE_REJECTED', message: `WhatsApp rejected the message (${code})` };
    default:
      return { ok: false, permanent: false, code: 'NETWORK_ERROR', message: `WhatsApp answered the message with error ${code ?? 'unknown'}` };
  }
}

/** An exception from sendMessage (a Boom, usually) → the send's outcome. */
export function classifySendError(error: unknown): SendFailure {
  const boom = error as BoomLike;
  const status = boom?.output?.statusCode;
  const data = typeof boom?.data === 'number' ? boom.data : undefined;
  const text = String(boom?.message ?? error);
  if (data === 429 || status === 429 || /rate-overlimit/i.test(text)) {
    return { ok: false, permanent: false, code: 'RATE_LIMITED', message: 'WhatsApp rate-limited the message', warning: RATE_LIMIT_WARNING };
  }
  if (data === 463 || /\b463\b/.test(text)) return classifyAckError('463');
  if (status === WADisconnect.connectionClosed || status === WADisconnect.connectionLost || /connection closed/i.test(text)) {
    return { ok: false, permanent: false, code: 'DEVICE_NOT_CONNECTED', message: 'The connection to WhatsApp closed before the message was sent' };
  }
  if (/media upload failed/i.test(text) || /upload/i.test(text)) {
    return { ok: false, permanent: false, code: 'MEDIA_UPLOAD_FAILED', message: 'Uploading the media to WhatsApp failed' };
  }
  if (data === 406 || status === 406 || /not-acceptable|invalid media/i.test(text)) {
    return { ok: false, permanent: true, code: 'MEDIA_REJECTED', message: 'WhatsApp rejected the media' };
  }
  if (data === 400 || data === 404 || /item-not-found|bad-request/i.test(text)) {
    return { ok: false, permanent: true, code: 'MESSAGE_REJECTED', message: `WhatsApp rejected the message (${data ?? status ?? 'bad request'})` };
  }
  return { ok: false, permanent: false, code: 'NETWORK_ERROR', message: `Sending through WhatsApp failed: ${text.slice(0, 200)}` };
}
