/**
 * The part of Baileys the adapter uses, as structural types: the real socket satisfies them,
 * and so does the fake the tests drive (test/whatsapp/fake-socket.ts). Shapes follow Baileys
 * 7 (lib/Types/*.d.ts); fields the adapter does not read are left out.
 */
import type { Agent } from 'node:http';
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';

/** proto.WebMessageInfo.Status */
export const WAStatus = { ERROR: 0, PENDING: 1, SERVER_ACK: 2, DELIVERY_ACK: 3, READ: 4, PLAYED: 5 } as const;

/** Baileys' DisconnectReason (lastDisconnect.error.output.statusCode). */
export const WADisconnect = {
  connectionClosed: 428,
  connectionLost: 408,
  timedOut: 408,
  connectionReplaced: 440,
  loggedOut: 401,
  badSession: 500,
  restartRequired: 515,
  multideviceMismatch: 411,
  forbidden: 403,
  unavailableService: 503,
  /** Not a Baileys DisconnectReason: codes WhatsApp's `<failure reason>` carries at login. */
  paymentRequired: 402,
  clientOutdated: 405,
  notAcceptable: 406,
} as const;

export interface WAMessageKey {
  remoteJid?: string | null;
  fromMe?: boolean | null;
  id?: string | null;
  participant?: string | null;
  /** Baileys 7: the sender's other address (the phone-number JID behind a @lid one, or the LID behind a number). */
  remoteJidAlt?: string | null;
  participantAlt?: string | null;
  addressingMode?: string | null;
}

/** proto.IContextInfo: what a message quotes and mentions. */
export interface WAContextInfo {
  stanzaId?: string | null;
  participant?: string | null;
  quotedMessage?: WAMessageContent | null;
  mentionedJid?: string[] | null;
}

export interface WAMediaFields {
  mimetype?: string | null;
  fileName?: string | null;
  fileLength?: number | { toNumber(): number } | string | null;
  seconds?: number | null;
  caption?: string | null;
  url?: string | null;
  /** Where the encrypted file is on WhatsApp's media servers (Baileys downloads https://<host><directPath>). */
  directPath?: string | null;
  mediaKey?: Uint8Array | string | null;
  /** SHA-256 of the decrypted file. */
  fileSha256?: Uint8Array | string | null;
  fileEncSha256?: Uint8Array | string | null;
  contextInfo?: WAContextInfo | null;
}

/** proto.Message.IPollCreationMessage */
export interface WAPollCreation {
  name?: string | null;
  options?: { optionName?: string | null }[] | null;
  selectableOptionsCount?: number | null;
  contextInfo?: WAContextInfo | null;
}

/** proto.Message.ProtocolMessage.Type (the two Waygate reads). */
export const WAProtocolType = { REVOKE: 0, MESSAGE_EDIT: 14 } as const;

/** proto.Message.IPollEncValue */
export interface WAPollEncValue {
  encPayload?: Uint8Array | null;
  encIv?: Uint8Array | null;
}

export interface WAMessageContent {
  conversation?: string | null;
  extendedTextMessage?: { text?: string | null; contextInfo?: WAContextInfo | null } | null;
  imageMessage?: WAMediaFields | null;
  videoMessage?: WAMediaFields | null;
  documentMessage?: WAMediaFields | null;
  audioMessage?: (WAMediaFields & { ptt?: boolean | null }) | null;
  stickerMessage?: WAMediaFields | null;
  locationMessage?: (WALocation & { contextInfo?: WAContextInfo | null }) | null;
  contactMessage?: (WAContactCard & { contextInfo?: WAContextInfo | null }) | null;
  contactsArrayMessage?: { displayName?: string | null; contacts?: WAContactCard[] | null; contextInfo?: WAContextInfo | null } | null;
  pollCreationMessage?: WAPollCreation | null;
  pollCreationMessageV2?: WAPollCreation | null;
  pollCreationMessageV3?: WAPollCreation | null;
  documentWithCaptionMessage?: { message?: WAMessageContent | null } | null;
  ephemeralMessage?: { message?: WAMessageContent | null } | null;
  viewOnceMessage?: { message?: WAMessageContent | null } | null;
  viewOnceMessageV2?: { message?: WAMessageContent | null } | null;
  viewOnceMessageV2Extension?: { message?: WAMessageContent | null } | null;
  /** proto.Message.IProtocolMessage: a delete for everyone (REVOKE) or an edit (MESSAGE_EDIT) of the message `key` names, among others. */
  protocolMessage?: {
    key?: WAMessageKey | null;
    type?: number | null;
    editedMessage?: WAMessageContent | null;
    timestampMs?: number | { toNumber(): number } | null;
  } | null;
  /** proto.Message.IPollUpdateMessage: a vote on the poll `pollCreationMessageKey` names, encrypted with the poll's message secret. */
  pollUpdateMessage?: {
    pollCreationMessageKey?: WAMessageKey | null;
    vote?: WAPollEncValue | null;
    senderTimestampMs?: number | { toNumber(): number } | null;
  } | null;
  /** proto.IMessageContextInfo: a poll's messageSecret (its votes' key). */
  messageContextInfo?: { messageSecret?: Uint8Array | null } | null;
  /** proto.Message.IReactionMessage */
  reactionMessage?: { key?: WAMessageKey | null; text?: string | null; senderTimestampMs?: number | { toNumber(): number } | null } | null;
  senderKeyDistributionMessage?: unknown;
  [other: string]: unknown;
}

export interface WAMessage {
  key: WAMessageKey;
  message?: WAMessageContent | null;
  messageTimestamp?: number | { toNumber(): number } | string | null;
  messageStubType?: number | null;
  messageStubParameters?: string[] | null;
  status?: number | null;
  pushName?: string | null;
}

export interface WAMessageUpdate {
  key: WAMessageKey;
  update: { status?: number | null; messageStubParameters?: string[] | null };
}

export interface WAReceiptUpdate {
  key: WAMessageKey;
  receipt: {
    userJid?: string | null;
    receiptTimestamp?: number | { toNumber(): number } | null;
    readTimestamp?: number | { toNumber(): number } | null;
    playedTimestamp?: number | { toNumber(): number } | null;
  };
}

/** The error Baileys puts in lastDisconnect: a Boom. */
export interface BoomLike extends Error {
  output?: { statusCode?: number; payload?: { error?: string; message?: string } };
  data?: unknown;
  isBoom?: boolean;
}

export interface WAConnectionUpdate {
  connection?: 'open' | 'connecting' | 'close';
  lastDisconnect?: { error: BoomLike | Error | undefined; date: Date };
  qr?: string;
  isNewLogin?: boolean;
  receivedPendingNotifications?: boolean;
}

export interface WAContact {
  /** Either form (Baileys 7 prefers the LID when it has one). */
  id: string;
  lid?: string;
  phoneNumber?: string;
}

/** Baileys 7's LIDMapping: a `<digits>@lid` and the `<digits>@s.whatsapp.net` behind it. */
export interface WALidMapping {
  lid: string;
  pn: string;
}

/** Baileys' GroupParticipant: a Contact (id in either form, the other in lid / phoneNumber) with its admin role. */
export interface WAGroupParticipant {
  id: string;
  lid?: string | undefined;
  phoneNumber?: string | undefined;
  admin?: 'admin' | 'superadmin' | null | undefined;
}

/** Baileys' GroupMetadata (the fields Waygate reads). */
export interface WAGroupMetadata {
  id: string;
  subject: string;
  /** Seconds since the epoch. */
  creation?: number | undefined;
  participants: WAGroupParticipant[];
}

/** Baileys' WAPresence. */
export type WAPresence = 'unavailable' | 'available' | 'composing' | 'recording' | 'paused';

export interface WAEventMap {
  'connection.update': WAConnectionUpdate;
  'creds.update': Record<string, unknown>;
  'messages.upsert': { messages: WAMessage[]; type: 'notify' | 'append'; requestId?: string };
  'messages.update': WAMessageUpdate[];
  'message-receipt.update': WAReceiptUpdate[];
  'lid-mapping.update': WALidMapping;
  /** History sync chunks (only their LID pairs and contacts are read). */
  'messaging-history.set': { contacts?: WAContact[]; lidPnMappings?: WALidMapping[] };
  'contacts.upsert': WAContact[];
  'contacts.update': Partial<WAContact>[];
  'groups.upsert': WAGroupMetadata[];
  'groups.update': Partial<WAGroupMetadata>[];
  'group-participants.update': { id: string; author: string; participants: WAGroupParticipant[]; action: 'add' | 'remove' | 'promote' | 'demote' | 'modify' };
  /** A contact's presence in chat `id` (a person, or a group with the member as the key); lastSeen in seconds. */
  'presence.update': { id: string; presences: Record<string, { lastKnownPresence: WAPresence; lastSeen?: number | undefined; groupOnlineCount?: number | undefined }> };
}

export type WAEventName = keyof WAEventMap;

export interface WAEventEmitter {
  on<E extends WAEventName>(event: E, listener: (arg: WAEventMap[E]) => void): void;
  off<E extends WAEventName>(event: E, listener: (arg: WAEventMap[E]) => void): void;
}

/** A node of WhatsApp's binary protocol (only `attrs` is read: the server's message acks). */
export interface WABinaryNode {
  tag: string;
  attrs: Record<string, string>;
}

export interface WAWebSocketLike {
  on(event: 'CB:ack,class:message', listener: (node: WABinaryNode) => void): void;
  off(event: 'CB:ack,class:message', listener: (node: WABinaryNode) => void): void;
}

/** proto.Message.ILocationMessage (the fields Waygate sets and reads). */
export interface WALocation {
  degreesLatitude?: number | null;
  degreesLongitude?: number | null;
  name?: string | null;
  address?: string | null;
  comment?: string | null;
}

/** proto.Message.IContactMessage */
export interface WAContactCard {
  displayName?: string | null;
  vcard?: string | null;
}

/** The content of a message (AnyMessageContent), of the kinds Waygate sends. */
export type WAOutgoingContent = (
  /** linkPreview null: Baileys does not fetch URLs found in the text (that fetch would bypass the SSRF guard). */
  | { text: string; linkPreview: null }
  | { image: Buffer; caption?: string; mimetype?: string }
  | { video: Buffer; caption?: string; mimetype?: string }
  | { document: Buffer; mimetype: string; fileName?: string; caption?: string }
  | { audio: Buffer; mimetype: string; ptt: boolean }
  | { sticker: Buffer; mimetype: string }
  | { location: WALocation }
  | { contacts: { displayName: string; contacts: WAContactCard[] } }
  /**
   * selectableCount 0: any number of options; 1: one (Baileys sends pollCreationMessageV3).
   * messageSecret: the key its votes are encrypted with (Baileys makes a random one when absent).
   */
  | { poll: { name: string; values: string[]; selectableCount: number; messageSecret?: Uint8Array } }
  | { react: { text: string; key: WAMessageKey } }
  /** An edit of the text or caption of the message `edit` names (Baileys: protocolMessage MESSAGE_EDIT). */
  | { text: string; linkPreview: null; edit: WAMessageKey }
  /** A delete for everyone of the message `delete` names (Baileys: protocolMessage REVOKE). */
  | { delete: WAMessageKey }
) & {
  /** JIDs mentioned (Baileys puts them in the message's contextInfo.mentionedJid). */
  mentions?: string[];
};

export interface WASendOptions {
  messageId: string;
  /** The message this one quotes (its key and content; Baileys builds contextInfo.quotedMessage from it). */
  quoted?: WAMessage;
  /** Baileys applies it to the media upload's request. */
  mediaUploadTimeoutMs?: number;
}

export interface WASocketLike {
  ev: WAEventEmitter;
  /** The socket's websocket: server acks of sent messages arrive on it as `CB:ack,class:message`. */
  ws?: WAWebSocketLike;
  readonly user?: { id: string; lid?: string | undefined; name?: string | undefined } | undefined;
  sendMessage(jid: string, content: WAOutgoingContent, options: WASendOptions): Promise<WAMessage | undefined>;
  requestPairingCode(phoneNumber: string): Promise<string>;
  /** Sends read receipts for received messages. */
  readMessages(keys: WAMessageKey[]): Promise<void>;
  onWhatsApp?(...jids: string[]): Promise<{ exists: boolean; jid: string }[] | undefined>;
  groupFetchAllParticipating(): Promise<Record<string, WAGroupMetadata>>;
  groupMetadata(jid: string): Promise<WAGroupMetadata>;
  groupCreate(subject: string, participants: string[]): Promise<WAGroupMetadata>;
  groupUpdateSubject(jid: string, subject: string): Promise<void>;
  /** Each participant's answer: status '200', or WhatsApp's error code ('403', '408', '409', …). */
  groupParticipantsUpdate(jid: string, participants: string[], action: 'add' | 'remove' | 'promote' | 'demote'): Promise<{ status: string; jid?: string | undefined }[]>;
  groupInviteCode(jid: string): Promise<string | undefined>;
  groupRevokeInvite(jid: string): Promise<string | undefined>;
  groupLeave(id: string): Promise<void>;
  readMessages(keys: WAMessageKey[]): Promise<void>;
  sendPresenceUpdate(type: WAPresence, toJid?: string): Promise<void>;
  presenceSubscribe(toJid: string): Promise<void>;
  logout(message?: string): Promise<void>;
  /** Baileys 7 returns a promise (it awaits the websocket's close). */
  end(error: Error | undefined): void | Promise<void>;
  /** Baileys 7's LID store (the pairs it learnt, kept in the auth state's 'lid-mapping' keys). */
  signalRepository?: { lidMapping?: { getPNForLID(lid: string): Promise<string | null> } };
  /**
   * Asks the sender's phone to upload an expired media file again; resolves with the message,
   * its media fields (url, directPath) updated in place. Waits for the phone without a timeout.
   */
  updateMediaMessage?(message: WAMessage): Promise<WAMessage>;
}

/** Baileys' auth state: credentials plus the signal key store. */
export interface AuthState {
  creds: Record<string, unknown> & { me?: { id: string; lid?: string; name?: string } | undefined; account?: unknown };
  keys: {
    get(type: string, ids: string[]): Promise<Record<string, unknown>>;
    set(data: Record<string, Record<string, unknown>>): Promise<void>;
    clear?(): Promise<void>;
  };
}

/** What the adapter needs from the baileys package besides the socket (real one, or the test's). */
export interface BaileysHelpers {
  initAuthCreds(): Record<string, unknown>;
  BufferJSON: { replacer(key: string, value: unknown): unknown; reviver(key: string, value: unknown): unknown };
  /** proto.Message.AppStateSyncKeyData.fromObject: app-state-sync-key values are revived as protobuf objects. */
  appStateSyncKeyFromObject(value: unknown): unknown;
  /** proto.Message encode / decode: a sent message's content is kept so a retry request can be answered. */
  encodeMessage(message: unknown): Buffer;
  decodeMessage(bytes: Uint8Array): unknown;
  /** Baileys' decryptPollVote: the SHA-256 of each option the vote picks (throws when a key or JID does not fit). */
  decryptPollVote(
    vote: WAPollEncValue,
    context: { pollCreatorJid: string; pollMsgId: string; pollEncKey: Uint8Array; voterJid: string },
  ): { selectedOptions?: Uint8Array[] | null };
  /**
   * Baileys' downloadMediaMessage (as a stream, without its re-upload request, which the session
   * makes itself): fetches the encrypted file of a media message and decrypts it. An HTTP failure
   * throws a Boom with output.statusCode (404/410: expired on WhatsApp's servers). `dispatcher`:
   * the device's proxy (an undici dispatcher for fetch).
   */
  downloadMedia(message: WAMessage, options: { dispatcher?: unknown }): Promise<Readable>;
}

export interface SocketOptions {
  deviceId: string;
  auth: AuthState;
  /** For Baileys' own logs (already at WHATSAPP_LOG_LEVEL). */
  logger: Logger;
  /** The WhatsApp Web version to announce (version.ts). */
  version: [number, number, number];
  /** A sent message's content, for Baileys to answer a retry request with. */
  getMessage(key: WAMessageKey): Promise<unknown>;
  /** The device's proxy (device-proxy.ts), for the WebSocket and media uploads; absent: direct. */
  agent?: Agent | undefined;
  /** Group metadata the session keeps (sending into a group reads it instead of asking WhatsApp each time). */
  cachedGroupMetadata?: ((jid: string) => Promise<WAGroupMetadata | undefined>) | undefined;
}

export type SocketFactory = (options: SocketOptions) => WASocketLike;
