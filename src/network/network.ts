/**
 * The boundary to a messaging network. Two implementations sit beside this file: `sandbox/`
 * (simulated, deterministic, the default) and `whatsapp/` (Baileys). Nothing outside
 * src/network knows which one is in use.
 *
 * A session belongs to one device and runs in the worker that holds the device's lease. It
 * reports what happens on the network through `onEvent`; the caller turns those events into
 * state changes.
 */
import type { ContactCard, Location, MessageType } from '../messaging/message-record.js';
import type { ContactPresenceState, ParticipantAction, ParticipantOutcome } from '../conversations/chat-record.js';

export type { ContactCard, Location, MessageType } from '../messaging/message-record.js';

/** The types whose message is a file (fetched from mediaUrl when sent). */
export const MEDIA_TYPES = ['IMAGE', 'VIDEO', 'DOCUMENT', 'AUDIO', 'STICKER'] as const satisfies readonly MessageType[];
export type MediaType = (typeof MEDIA_TYPES)[number];
export const isMediaType = (type: MessageType): type is MediaType => (MEDIA_TYPES as readonly MessageType[]).includes(type);

/** What a message of a kind carries beyond its type, content and media, in both directions. */
export interface KindFields {
  /** AUDIO: a voice note (push-to-talk). */
  voice?: boolean | undefined;
  location?: Location | undefined;
  contacts?: ContactCard[] | undefined;
  /** POLL (the content is the question). */
  poll?: { options: string[]; multiple: boolean } | undefined;
}

/** A message the network already carries, as a reply quotes it or a reaction points at it. */
export interface MessageRef {
  networkMessageId: string;
  /** Sent by the device (true) or received by it. */
  fromMe: boolean;
  /** The chat it is in: the other party's number (or network id), or a group chat (<digits>@g.us). */
  chat: string;
  /** A member's message in a group chat: who wrote it (their number, or `<digits>@lid`). */
  participant?: string | undefined;
  type: MessageType;
  content: string;
  /** What its kind carries (a quote shows a location, a poll, a card). */
  kind?: KindFields | undefined;
}

/**
 * How long after it was sent a message may still be edited, or deleted for everyone: WhatsApp's
 * windows. The API checks them before it accepts an edit or a delete, and the sandbox network
 * enforces the same ones, for the account's messages and for the other side's.
 */
export const MESSAGE_WINDOWS = { editMs: 15 * 60 * 1000, deleteMs: 48 * 60 * 60 * 1000 } as const;

/** Whether a message sent at `sentAt` is still inside `window` at `now`. */
export const withinWindow = (sentAt: Date, windowMs: number, now: Date = new Date()): boolean => now.getTime() - sentAt.getTime() <= windowMs;

export interface OutgoingMedia {
  data: Buffer;
  mimeType: string;
  fileName?: string | undefined;
}

export interface OutgoingMessage {
  /** Chosen by Waygate and stable across resends, so the network de-duplicates a resend. */
  networkMessageId: string;
  to: string;
  type: MessageType;
  /** Text for TEXT, caption for media. */
  content: string;
  media?: OutgoingMedia | undefined;
  kind?: KindFields | undefined;
  /** REACTION: the emoji ("" removes the reaction) on `target`. */
  reaction?: { target: MessageRef; emoji: string } | undefined;
  /** The message this one quotes. */
  replyTo?: MessageRef | undefined;
  /** Numbers mentioned (E.164 digits). */
  mentions?: string[] | undefined;
  /** Account that owns the device (the sandbox keeps it for its per-account views). */
  accountId: string;
}

export type SendResult =
  | { ok: true }
  | { ok: false; permanent: boolean; code: string; message: string };

export interface Receipt {
  networkMessageId: string;
  status: 'DELIVERED' | 'READ';
  at: Date;
}

export type DisconnectReason = 'network' | 'logout' | 'replaced' | 'error';

/** What the network says about the file of an incoming media message. */
export interface IncomingMedia {
  mimeType: string;
  fileName?: string | undefined;
  sizeBytes?: number | undefined;
  /** Duration of audio and video, in seconds. */
  seconds?: number | undefined;
}

/** The file of an incoming media message, opened on the network: its bytes, and what the download learnt of it. */
export interface IncomingFile {
  /** May still fail midway (a dropped connection, a file that does not match its checksum). */
  stream: AsyncIterable<Uint8Array> & { destroy?(error?: Error): void };
  mimeType?: string | undefined;
  fileName?: string | undefined;
}

/** A download that failed; a permanent one (the file is gone, refused or corrupt) is not tried again. */
export class MediaDownloadError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
    this.name = 'MediaDownloadError';
  }
}

/** A WhatsApp group the device's number belongs to. */
export interface GroupInfo {
  /** `<digits>@g.us` */
  id: string;
  name: string;
  participants: GroupParticipant[];
  /** When the group was created, if the network says. */
  createdAt?: Date | undefined;
}

export interface GroupParticipant {
  /** E.164 digits, or `<digits>@lid` while the network hides the number. */
  phoneNumber: string;
  lid?: string | undefined;
  admin: boolean;
}

/**
 * The network refused what the device asked (not an admin, not in the group, …): asking again
 * gets the same answer. Other errors (a dropped connection) may pass.
 */
export class NetworkRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NetworkRefusal';
  }
}

/** What a number look-up found. */
export interface NumberCheck {
  phoneNumber: string;
  onNetwork: boolean;
}

/** An incoming message the device has read (a read receipt names it). */
export interface ReadMessage {
  networkMessageId: string;
  /** Its sender (the number, or `<digits>@lid`); in a group, the member who sent it. */
  from: string;
}

export type PresenceState = 'typing' | 'recording' | 'paused';
export type { ContactPresenceState, ParticipantAction, ParticipantOutcome } from '../conversations/chat-record.js';

export type NetworkEvent =
  | { type: 'qr'; code: string; expiresAt: Date }
  | { type: 'connected'; phoneNumber: string }
  | { type: 'disconnected'; reason: DisconnectReason; message: string }
  | { type: 'receipts'; receipts: Receipt[] }
  | {
      type: 'incoming';
      networkMessageId: string;
      /** The sender's number; a network that hides it reports its own id instead (WhatsApp: `<digits>@lid`). */
      from: string;
      /** WhatsApp's LID of the sender (`<digits>@lid`), when the network addressed them by it or told it. */
      fromLid?: string | undefined;
      messageType: MessageType;
      content: string;
      media?: IncomingMedia | undefined;
      /**
       * A media message's file: opens it on the network (each call one attempt). Waygate downloads
       * it into its media store before the message is stored (src/media/incoming-media.ts).
       */
      download?: (() => Promise<IncomingFile>) | undefined;
      kind?: KindFields | undefined;
      /** REACTION: the emoji ("" removed) on the message with this network id. */
      reaction?: { networkMessageId: string; emoji: string } | undefined;
      /** The network id of the message this one quotes. */
      replyTo?: string | undefined;
      mentions?: string[] | undefined;
      /** A group chat's message: the group (`<digits>@g.us`); `from` is the member who sent it. */
      chat?: string | undefined;
      at: Date;
    }
  /**
   * The sender edited a message (the other party one of theirs, or the device's own phone one of
   * the device's: `fromMe`); `chat` is the other party, as `from` of an incoming message.
   */
  | { type: 'edited'; networkMessageId: string; chat: string; fromMe: boolean; content: string; at: Date }
  /** The sender deleted a message for everyone (as `edited`). */
  | { type: 'deleted'; networkMessageId: string; chat: string; fromMe: boolean; at: Date }
  /**
   * A contact's presence: `from` is the person (a number, or `<digits>@lid`), `chat` the chat it
   * shows in (the person, or a group they type in), `lastSeen` when an offline person was last
   * online, if they share it.
   */
  | { type: 'presence'; chat: string; from: string; fromLid?: string | undefined; state: ContactPresenceState; lastSeen?: Date | undefined; at: Date }
  /** The device's groups: all of them when it connects, or those that changed since. */
  | { type: 'groups'; groups: GroupInfo[] }
  /** The network told the number behind a LID (`<digits>@lid`). */
  | { type: 'identity'; lid: string; phoneNumber: string }
  /** A vote on a poll the device sent: the voter's current choice (no options: the vote was taken back). */
  | { type: 'poll-vote'; pollNetworkMessageId: string; voter: string; options: string[]; at: Date }
  | { type: 'warning'; code: string; message: string }
  /**
   * The session stopped and will not reconnect by itself (a refused account, an outdated client,
   * unscanned QR codes): the device shows `code: message` and waits until it is reconnected.
   */
  | { type: 'stopped'; code: string; message: string };

export interface SessionHandlers {
  /** Awaited: the session does not report the next event (nor acknowledge an incoming message) before it settles. */
  onEvent(event: NetworkEvent): Promise<void>;
}

export interface NetworkSession {
  /** Resolves on the network's acknowledgement (server ack), or with the failure. */
  send(message: OutgoingMessage): Promise<SendResult>;
  /** Replaces the text (or caption) of a message the device sent. */
  edit(target: MessageRef, content: string): Promise<SendResult>;
  /** Deletes a message the device sent, for everyone. */
  revoke(target: MessageRef): Promise<SendResult>;
  /** Sends the read receipt of a message the device received. */
  markRead(target: MessageRef): Promise<SendResult>;
  /** Reconnect after a transient drop; resolves when the attempt has been made. */
  reconnect(): Promise<void>;
  /** Unlink the device from the phone (DELETE /devices/:id). */
  logout(): Promise<void>;
  /** Stop the session without unlinking (lease lost, shutdown). */
  close(): Promise<void>;
  /**
   * Linking by pairing code instead of a QR scan (networks that support it): the 8-character
   * code the user types on the phone that has `phoneNumber` (E.164 digits).
   */
  requestPairingCode?(phoneNumber: string): Promise<{ code: string; expiresAt: Date }>;
  /** Asks the network which of these numbers (E.164 digits, at most 50) have an account on it. */
  checkNumbers(phoneNumbers: string[]): Promise<NumberCheck[]>;
  /** Sends read receipts for incoming messages of a chat (a number, `<digits>@lid` or a group id). */
  markChatRead(chat: string, messages: ReadMessage[]): Promise<void>;
  /** Shows the device typing, recording or neither in a chat. */
  sendPresence(chat: string, state: PresenceState): Promise<void>;
  /** Creates a WhatsApp group with these members (E.164 digits); the device's number is its admin. */
  createGroup(name: string, participants: string[]): Promise<GroupInfo>;
  /** A group the device is in, as the network has it now. */
  groupInfo(group: string): Promise<GroupInfo>;
  /** Renames a group (the device must be an admin). */
  renameGroup(group: string, name: string): Promise<void>;
  /** Adds, removes, promotes or demotes members (the device must be an admin). */
  changeParticipants(group: string, action: ParticipantAction, phoneNumbers: string[]): Promise<ParticipantOutcome[]>;
  /** The group's invite code (the device must be an admin); the link is https://chat.whatsapp.com/<code>. */
  groupInviteCode(group: string): Promise<string>;
  /** A new invite code for the group (the device must be an admin); links with the old one stop working. */
  revokeGroupInvite(group: string): Promise<string>;
  /** The device's number leaves the group; the chat and its history stay. */
  leaveGroup(group: string): Promise<void>;
  /** Limits on bulk traffic the dispatcher must respect for this device (a warm-up cap), if any. */
  readonly bulkPolicy?: BulkPolicy | undefined;
}

/**
 * A per-device cap on bulk messages (a newly linked number's warm-up). The dispatcher asks
 * before claiming bulk messages and reports what it handed over; when nothing remains it leaves
 * bulk messages QUEUED until `resumeAt` (direct sends are not capped).
 */
export interface BulkPolicy {
  /** null: no cap now. */
  allowance(): { remaining: number; resumeAt: Date } | null;
  /** Bulk messages handed to the network. */
  consumed(count: number): Promise<void>;
}

export interface DeviceInfo {
  id: string;
  accountId: string;
  /** The number the device was linked as, when known. */
  phoneNumber: string | null;
  status: 'PENDING' | 'CONNECTED' | 'DISCONNECTED' | 'LOGGED_OUT';
  /** The proxy the network connects through (src/devices/device-proxy.ts); null or absent: direct. */
  proxyUrl?: string | null;
}

export interface Network {
  readonly kind: 'sandbox' | 'whatsapp';
  openSession(device: DeviceInfo, handlers: SessionHandlers): Promise<NetworkSession>;
  close(): Promise<void>;
}
