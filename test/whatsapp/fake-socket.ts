/**
 * A fake of Baileys' socket for the adapter tests: the same event names and payload shapes as
 * Baileys 7 emits them (connection.update with qr / connection / lastDisconnect carrying a
 * Boom-like error with output.statusCode, creds.update, messages.upsert with remoteJidAlt,
 * messages.update, message-receipt.update, lid-mapping.update, contacts.upsert), the websocket's
 * `CB:ack,class:message`, signalRepository.lidMapping.getPNForLID, and sendMessage (returning
 * the generated message, as Baileys does) / requestPairingCode / onWhatsApp / logout / end, and
 * updateMediaMessage (the re-upload request for expired media: the phone's answer moves the
 * message's directPath and url in place, or is Baileys' Boom). No network. test/whatsapp-payloads.test.ts checks these shapes against Baileys' own types.
 */
import { EventEmitter } from 'node:events';
import { mediaFieldsOf } from '../../src/network/whatsapp/messages.js';
import type {
  AuthState,
  SocketFactory,
  SocketOptions,
  WABinaryNode,
  WAEventMap,
  WAEventName,
  WAGroupMetadata,
  WAMessage,
  WAMessageKey,
  WAPresence,
  WAOutgoingContent,
  WASendOptions,
  WASocketLike,
} from '../../src/network/whatsapp/types.js';

export function boom(statusCode: number | undefined, message: string): Error {
  return Object.assign(new Error(message), { isBoom: true, output: { statusCode, payload: { message } } });
}

export interface SentMessage {
  jid: string;
  content: WAOutgoingContent;
  options: WASendOptions;
}

/** What a socket does with a message handed to sendMessage. */
export type AckBehaviour = { kind: 'server-ack' } | { kind: 'error-ack'; error: string } | { kind: 'none' } | { kind: 'throw'; error: Error };

export class FakeSocket implements WASocketLike {
  readonly ev: EventEmitterEv;
  readonly ws = new EventEmitter() as EventEmitter & WASocketLike['ws'];
  readonly auth: AuthState;
  user: { id: string; lid?: string } | undefined;
  readonly sent: SentMessage[] = [];
  readonly pairingRequests: string[] = [];
  /** Keys handed to readMessages (read receipts sent). */
  readonly reads: WAMessageKey[] = [];
  notOnWhatsApp = new Set<string>();
  ack: AckBehaviour = { kind: 'server-ack' };
  ended = false;
  endError: Error | undefined;
  loggedOut = false;
  /** How long sendMessage takes before it hands the message over (the media upload, on the real socket). */
  sendDelayMs = 0;
  onWhatsAppCalls = 0;
  /**
   * The sender's phone's answer to a re-upload request: the directPath of the new upload, or the
   * error Baileys throws (a Boom: 404 when the phone no longer has the file). Unset: it never answers.
   */
  reupload: ((message: WAMessage) => string | Error) | undefined;
  readonly reuploadRequests: string[] = [];
  /** Baileys 7's LID store: pairs it learnt (keyed by `<digits>@lid`). */
  readonly lidStore = new Map<string, string>();
  readonly signalRepository = { lidMapping: { getPNForLID: async (lid: string): Promise<string | null> => this.lidStore.get(lid) ?? null } };
  readonly version: SocketOptions['version'];
  readonly getMessage: SocketOptions['getMessage'];
  /** The proxy agent the session connects through (undefined: direct). */
  readonly agent: SocketOptions['agent'];
  /** The session's group cache, as Baileys reads it before sending into a group. */
  readonly cachedGroupMetadata: SocketOptions['cachedGroupMetadata'];
  /** The number's groups on the network (groupFetchAllParticipating, groupMetadata). */
  readonly groups = new Map<string, WAGroupMetadata>();
  groupFetchCalls = 0;
  groupMetadataCalls = 0;
  /** Group administration calls, in order (groupCreate, groupUpdateSubject, groupParticipantsUpdate, groupInviteCode, groupLeave). */
  readonly groupCalls: { call: string; jid: string; args: unknown[] }[] = [];
  /** WhatsApp's answer for a participant of a change, by jid ('200' when unset). */
  readonly participantStatus = new Map<string, string>();
  /** sendPresenceUpdate and presenceSubscribe calls, in order. */
  readonly presences: { type: WAPresence | 'subscribe'; jid: string | undefined }[] = [];

  constructor(
    readonly index: number,
    options: SocketOptions,
  ) {
    this.ev = new EventEmitterEv();
    this.auth = options.auth;
    this.user = options.auth.creds.me as FakeSocket['user'];
    this.version = options.version;
    this.getMessage = options.getMessage;
    this.agent = options.agent;
    this.cachedGroupMetadata = options.cachedGroupMetadata;
  }

  emit<E extends WAEventName>(event: E, arg: WAEventMap[E]): void {
    this.ev.emit(event, arg);
  }

  // ---- what the network does, as Baileys reports it ----

  /** A QR code (Baileys: ref,noiseKey,identityKey,advSecret). */
  showQr(ref = `ref-${this.index}-${Math.random().toString(36).slice(2, 8)}`): string {
    const qr = `${ref},noise,identity,adv`;
    this.emit('connection.update', { qr });
    return qr;
  }

  /** The phone scanned the code: pair-success, then WhatsApp asks for a restart (515). */
  pairSuccess(phoneNumber: string): void {
    const me = { id: `${phoneNumber}:7@s.whatsapp.net`, lid: `99${phoneNumber}:7@lid`, name: '~' };
    this.auth.creds.me = me;
    this.emit('creds.update', { me, account: { details: Buffer.from('adv-details'), accountSignatureKey: Buffer.alloc(32, 1) }, platform: 'android' });
    this.emit('connection.update', { isNewLogin: true, qr: undefined });
    this.close(515, 'Stream Errored (restart required)');
  }

  open(): void {
    this.user = this.auth.creds.me as FakeSocket['user'];
    this.emit('connection.update', { connection: 'open' });
  }

  close(statusCode: number | undefined, message = 'Connection Failure'): void {
    if (this.ended) return;
    this.ended = true;
    this.emit('connection.update', { connection: 'close', lastDisconnect: { error: boom(statusCode, message), date: new Date() } });
  }

  serverAck(id: string, error?: string): void {
    const node: WABinaryNode = { tag: 'ack', attrs: { class: 'message', id, from: 'x@s.whatsapp.net', ...(error ? { error } : {}) } };
    this.ws.emit('CB:ack,class:message', node);
  }

  statusUpdate(id: string, status: number, remoteJid = '6281200000001@s.whatsapp.net', stub?: string[]): void {
    this.emit('messages.update', [{ key: { remoteJid, id, fromMe: true }, update: { status, ...(stub ? { messageStubParameters: stub } : {}) } }]);
  }

  incoming(messages: WAMessage[], type: 'notify' | 'append' = 'notify'): void {
    this.emit('messages.upsert', { messages, type });
  }

  // ---- the socket's API ----

  async sendMessage(jid: string, content: WAOutgoingContent, options: WASendOptions): Promise<WAMessage | undefined> {
    if (this.ended) throw boom(428, 'Connection Closed');
    const behaviour = this.ack;
    if (behaviour.kind === 'throw') throw behaviour.error;
    if (this.sendDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.sendDelayMs));
    this.sent.push({ jid, content, options });
    if (behaviour.kind === 'server-ack') setImmediate(() => this.serverAck(options.messageId));
    if (behaviour.kind === 'error-ack') setImmediate(() => this.serverAck(options.messageId, behaviour.error));
    return { key: { remoteJid: jid, fromMe: true, id: options.messageId }, message: generatedMessage(content), status: 1 };
  }

  async readMessages(keys: WAMessageKey[]): Promise<void> {
    if (this.ended) throw boom(428, 'Connection Closed');
    this.reads.push(...keys);
  }

  async requestPairingCode(phoneNumber: string): Promise<string> {
    if (this.ended) throw boom(428, 'Connection Closed');
    this.pairingRequests.push(phoneNumber);
    // Baileys sets creds.me to the number before pairing.
    this.auth.creds.me = { id: `${phoneNumber}@s.whatsapp.net`, name: '~' };
    this.emit('creds.update', { me: this.auth.creds.me, pairingCode: 'ABCD1234' });
    return 'ABCD1234';
  }

  async onWhatsApp(...jids: string[]): Promise<{ exists: boolean; jid: string }[]> {
    if (this.ended) throw boom(428, 'Connection Closed');
    this.onWhatsAppCalls++;
    return jids.map((jid) => ({ jid, exists: !this.notOnWhatsApp.has(jid.split('@')[0]!) }));
  }

  async updateMediaMessage(message: WAMessage): Promise<WAMessage> {
    if (this.ended) throw boom(428, 'Connection Closed');
    this.reuploadRequests.push(message.key.id ?? '');
    const fields = mediaFieldsOf(message);
    if (!fields) throw boom(400, 'given message is not a media message');
    const answer = this.reupload?.(message);
    if (answer === undefined) return new Promise<WAMessage>(() => undefined);
    if (answer instanceof Error) throw answer;
    // As Baileys: content.directPath = the phone's new path; content.url = https://<media host><directPath>.
    const host = fields.url ? new URL(fields.url).host : 'mmg.whatsapp.net';
    fields.directPath = answer;
    fields.url = `https://${host}${answer}`;
    return message;
  }

  async groupFetchAllParticipating(): Promise<Record<string, WAGroupMetadata>> {
    if (this.ended) throw boom(428, 'Connection Closed');
    this.groupFetchCalls++;
    return Object.fromEntries(this.groups);
  }

  async groupMetadata(jid: string): Promise<WAGroupMetadata> {
    if (this.ended) throw boom(428, 'Connection Closed');
    this.groupMetadataCalls++;
    const metadata = this.groups.get(jid);
    if (!metadata) throw boom(404, 'item-not-found');
    return metadata;
  }

  /** As WhatsApp: the creator is the group's superadmin. */
  async groupCreate(subject: string, participants: string[]): Promise<WAGroupMetadata> {
    if (this.ended) throw boom(428, 'Connection Closed');
    const id = `120363${String(100000 + this.groups.size).padStart(12, '0')}@g.us`;
    this.groupCalls.push({ call: 'groupCreate', jid: id, args: [subject, participants] });
    const own = `${this.user!.id.split(':')[0]}@s.whatsapp.net`;
    const metadata: WAGroupMetadata = {
      id,
      subject,
      creation: Math.floor(Date.now() / 1000),
      participants: [{ id: own, admin: 'superadmin' }, ...participants.map((jid) => ({ id: jid, admin: null }))],
    };
    this.groups.set(id, metadata);
    return metadata;
  }

  async groupUpdateSubject(jid: string, subject: string): Promise<void> {
    const metadata = this.adminOf(jid);
    this.groupCalls.push({ call: 'groupUpdateSubject', jid, args: [subject] });
    metadata.subject = subject;
  }

  async groupParticipantsUpdate(jid: string, participants: string[], action: 'add' | 'remove' | 'promote' | 'demote'): Promise<{ status: string; jid?: string }[]> {
    const metadata = this.adminOf(jid);
    this.groupCalls.push({ call: 'groupParticipantsUpdate', jid, args: [participants, action] });
    return participants.map((participant) => {
      const status = this.participantStatus.get(participant) ?? '200';
      if (status === '200') {
        if (action === 'add') metadata.participants.push({ id: participant, admin: null });
        if (action === 'remove') metadata.participants = metadata.participants.filter((p) => p.id !== participant);
        for (const p of metadata.participants) if (p.id === participant && action !== 'add' && action !== 'remove') p.admin = action === 'promote' ? 'admin' : null;
      }
      return { status, jid: participant };
    });
  }

  async groupInviteCode(jid: string): Promise<string | undefined> {
    this.adminOf(jid);
    this.groupCalls.push({ call: 'groupInviteCode', jid, args: [] });
    return `Inv${jid.slice(6, 18)}Code123456`;
  }

  /** As WhatsApp: a new code each time. */
  async groupRevokeInvite(jid: string): Promise<string | undefined> {
    this.adminOf(jid);
    this.groupCalls.push({ call: 'groupRevokeInvite', jid, args: [] });
    return `New${jid.slice(6, 18)}Code${String(this.groupCalls.length).padStart(6, '0')}`;
  }

  async groupLeave(id: string): Promise<void> {
    if (this.ended) throw boom(428, 'Connection Closed');
    if (!this.groups.has(id)) throw Object.assign(boom(undefined, 'item-not-found'), { data: 404 });
    this.groupCalls.push({ call: 'groupLeave', jid: id, args: [] });
    this.groups.delete(id);
  }

  /** A group the number administers; WhatsApp's error node otherwise (Baileys: a Boom with the code as data). */
  private adminOf(jid: string): WAGroupMetadata {
    if (this.ended) throw boom(428, 'Connection Closed');
    const metadata = this.groups.get(jid);
    if (!metadata) throw Object.assign(boom(undefined, 'item-not-found'), { data: 404 });
    const own = this.user!.id.split(':')[0];
    const me = metadata.participants.find((p) => p.id.split('@')[0] === own || p.phoneNumber?.split('@')[0] === own);
    if (!me?.admin) throw Object.assign(boom(undefined, 'not-authorized'), { data: 401 });
    return metadata;
  }

  async sendPresenceUpdate(type: WAPresence, toJid?: string): Promise<void> {
    if (this.ended) throw boom(428, 'Connection Closed');
    this.presences.push({ type, jid: toJid });
  }

  async presenceSubscribe(toJid: string): Promise<void> {
    if (this.ended) throw boom(428, 'Connection Closed');
    this.presences.push({ type: 'subscribe', jid: toJid });
  }

  async logout(): Promise<void> {
    this.loggedOut = true;
    this.end(boom(401, 'Intentional Logout'));
  }

  end(error: Error | undefined): void {
    if (this.ended) return;
    this.ended = true;
    this.endError = error;
    this.emit('connection.update', { connection: 'close', lastDisconnect: { error, date: new Date() } });
  }
}

/**
 * What Baileys' generateWAMessage makes of the content, in proto.Message's shape: text as
 * `extendedTextMessage` (Baileys 7 sends text that way), media as the uploaded message with the
 * keys a retry needs (url, mediaKey, sha256s; fixed bytes here).
 */
export function generatedMessage(content: WAOutgoingContent): Record<string, unknown> {
  // protocolMessage.type: proto.Message.ProtocolMessage.Type MESSAGE_EDIT (14) and REVOKE (0); timestampMs: Date.now().
  if ('edit' in content) return { protocolMessage: { key: content.edit, editedMessage: { extendedTextMessage: { text: content.text } }, timestampMs: 1_700_000_000_000, type: 14 } };
  if ('delete' in content) return { protocolMessage: { key: content.delete, type: 0 } };
  if ('text' in content) return { extendedTextMessage: { text: content.text } };
  // As lib/Utils/messages.js generateWAMessageContent builds them.
  if ('location' in content) return { locationMessage: content.location };
  if ('contacts' in content) {
    const cards = content.contacts.contacts;
    return cards.length === 1 ? { contactMessage: cards[0] } : { contactsArrayMessage: content.contacts };
  }
  if ('poll' in content) {
    const poll = { name: content.poll.name, selectableOptionsCount: content.poll.selectableCount, options: content.poll.values.map((optionName) => ({ optionName })) };
    return { messageContextInfo: { messageSecret: content.poll.messageSecret ?? Buffer.alloc(32, 5) }, [content.poll.selectableCount === 1 ? 'pollCreationMessageV3' : 'pollCreationMessage']: poll };
  }
  if ('react' in content) return { reactionMessage: { ...content.react, senderTimestampMs: 1_700_000_000_000 } };
  const uploaded = {
    url: 'https://mmg.whatsapp.net/v/t62.7118-24/fake.enc',
    directPath: '/v/t62.7118-24/fake.enc',
    mediaKey: Buffer.alloc(32, 7),
    fileSha256: Buffer.alloc(32, 8),
    fileEncSha256: Buffer.alloc(32, 9),
    mimetype: content.mimetype,
    ...('caption' in content && content.caption ? { caption: content.caption } : {}),
  };
  if ('image' in content) return { imageMessage: { ...uploaded, fileLength: content.image.length } };
  if ('video' in content) return { videoMessage: { ...uploaded, fileLength: content.video.length } };
  if ('audio' in content) return { audioMessage: { ...uploaded, ptt: content.ptt, fileLength: content.audio.length } };
  if ('sticker' in content) return { stickerMessage: { ...uploaded, fileLength: content.sticker.length } };
  return { documentMessage: { ...uploaded, fileName: content.fileName, fileLength: content.document.length } };
}

/** Baileys' event emitter (on / off by event name). */
export class EventEmitterEv extends EventEmitter {}

/**
 * Makes fake sockets and keeps them, newest last. `script` runs on each new socket right after
 * it is made (as Baileys connects on a later tick), e.g. show a QR code, open, or fail.
 */
export class FakeBaileys {
  readonly sockets: FakeSocket[] = [];
  script: (socket: FakeSocket) => void = (socket) => socket.showQr();
  private waiters: ((socket: FakeSocket) => void)[] = [];

  readonly factory: SocketFactory = (options) => {
    const socket = new FakeSocket(this.sockets.length, options);
    this.sockets.push(socket);
    setImmediate(() => {
      if (socket.ended) return;
      this.script(socket);
      for (const wake of this.waiters.splice(0)) wake(socket);
    });
    return socket;
  };

  get last(): FakeSocket {
    const socket = this.sockets.at(-1);
    if (!socket) throw new Error('no socket yet');
    return socket;
  }

  /** Waits until there are `count` sockets (and the newest one's script ran). */
  async waitForSockets(count: number, timeoutMs = 5_000): Promise<FakeSocket> {
    const deadline = Date.now() + timeoutMs;
    while (this.sockets.length < count || this.sockets.length === 0) {
      if (Date.now() > deadline) throw new Error(`expected ${count} sockets, have ${this.sockets.length}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    return this.sockets[count - 1]!;
  }
}
