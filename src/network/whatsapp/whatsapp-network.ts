/**
 * The real network: WhatsApp Web multi-device through Baileys, behind the same Network
 * interface as the sandbox. One session (one Baileys socket at a time) per device, in the worker
 * that holds the device's lease; auth state in the database (auth-state.ts) so another worker
 * can take the device over.
 *
 * Who reconnects: once a device has been reported linked (CONNECTED, or DISCONNECTED in the
 * database), a transient close is reported as `disconnected` and the device runner drives the
 * reconnects with its backoff; the session never retries on its own then, so the two layers do
 * not multiply. While a device is still being linked (PENDING: QR codes, pairing code) the
 * runner does not reconnect it, so the session does, with its own backoff. Baileys' "restart
 * required" (515, right after pairing) is followed at once, a few times at most.
 *
 * Logs name the device, connection states, status codes and masked numbers; never message
 * content, QR or pairing codes, or keys.
 */
import type { Logger } from 'pino';
import type { WhatsAppConfig } from '../../config.js';
import type { Bus } from '../../db/bus.js';
import type { Database } from '../../db/client.js';
import type {
  DeviceInfo,
  Network,
  NetworkEvent,
  NetworkSession,
  OutgoingMessage,
  Receipt,
  SendResult,
  SessionHandlers,
} from '../network.js';
import { DatabaseAuthStore } from './auth-state.js';
import { isLidJid, isPersonJid, jidToPhone, maskPhone, normalizeLid, parseJid, phoneToJid } from './jid.js';
import {
  classifyAckError,
  classifyDisconnect,
  classifySendError,
  outgoingContent,
  parseIncomingContent,
  receiptStatus,
  receiptsFromUserReceipt,
  statusCodeOf,
  timestampOf,
  type SendFailure,
} from './messages.js';
import type {
  AuthState,
  BaileysHelpers,
  SocketFactory,
  WABinaryNode,
  WAConnectionUpdate,
  WAContact,
  WAEventMap,
  WAEventName,
  WAMessage,
  WAMessageUpdate,
  WAReceiptUpdate,
  WASocketLike,
} from './types.js';
import { WAStatus } from './types.js';
import { WarmupPolicy } from './warmup.js';

/** Backoff of the session's own retries while a device is being linked. */
const LINKING_BACKOFF_MS = [1_000, 2_000, 5_000, 10_000, 30_000, 60_000];
/**
 * A connection that closes soon after it opened (a "flap") resets the runner's backoff, because
 * the runner saw it connect; so reconnect() itself waits this long after consecutive flaps.
 */
const FLAP_BACKOFF_MS = [5_000, 15_000, 30_000, 60_000];
const FLAP_WINDOW_MS = 60_000;
/** After a socket's QR codes ran out (nobody scanned), the next socket starts after this. */
const QR_CYCLE_PAUSE_MS = 1_000;
/** Baileys shows the first QR code for 60 s, the next ones for 20 s each. */
const FIRST_QR_MS = 60_000;
const NEXT_QR_MS = 20_000;
/** A socket's pairing phase lasts about as long as its QR codes: 60 s + 5 × 20 s. */
const PAIRING_PHASE_MS = 160_000;
/** A pairing code is requested on a socket whose pairing phase is at most this old; else on a new one. */
const PAIRING_FRESH_MS = 40_000;
const PAIRING_WAIT_MS = 15_000;
/** Consecutive restart requests (515) followed at once before they count as failures. */
const MAX_IMMEDIATE_RESTARTS = 3;
/** The same warning is reported at most this often. */
const WARNING_INTERVAL_MS = 60_000;
const JID_CACHE_SIZE = 10_000;
const JID_CACHE_MS = 6 * 60 * 60 * 1000;

export interface WhatsAppNetworkOptions {
  database: Database;
  bus: Bus;
  log: Logger;
  config: WhatsAppConfig;
  socketFactory: SocketFactory;
  helpers: BaileysHelpers;
  /** Backoff of the session's own retries while linking (tests shorten it). */
  linkingBackoffMs?: number[];
  /** Waits of reconnect() after connections that closed soon after opening (tests shorten them). */
  flapBackoffMs?: number[];
}

interface AckWaiter {
  resolve(result: SendResult | SendFailure): void;
}

type Listener = (arg: never) => void;

export class WhatsAppSession implements NetworkSession {
  readonly bulkPolicy: WarmupPolicy | undefined;
  private readonly store: DatabaseAuthStore;
  private readonly log: Logger;
  private creds: AuthState['creds'] | undefined;
  private socket: WASocketLike | undefined;
  private detach: (() => void) | undefined;
  private socketState: 'idle' | 'connecting' | 'open' = 'idle';
  /** The device is known as linked outside this session (CONNECTED or DISCONNECTED in the database, or we said so). */
  private reported: boolean;
  private closed = false;
  private chain: Promise<void> = Promise.resolve();
  private retryTimer: NodeJS.Timeout | undefined;
  private connectTimer: NodeJS.Timeout | undefined;
  private linkingFailures = 0;
  private immediateRestarts = 0;
  /** When the current socket showed its first QR code (its pairing phase), and how many it showed. */
  private qrPhaseStartedAt = 0;
  private qrCount = 0;
  private qrWaiters: (() => void)[] = [];
  private attemptWaiters: (() => void)[] = [];
  private readonly acks = new Map<string, AckWaiter>();
  private readonly jids = new Map<string, { jid: string | null; at: number }>();
  private readonly lids = new Map<string, string>();
  private readonly warned = new Map<string, number>();
  private readonly backoff: number[];
  private openedAt = 0;
  private flaps = 0;
  private flapTimer: { timer: NodeJS.Timeout; done(): void } | undefined;

  constructor(
    readonly device: DeviceInfo,
    private readonly options: WhatsAppNetworkOptions,
    private readonly handlers: SessionHandlers,
    private readonly onClosed: (session: WhatsAppSession) => void,
  ) {
    this.store = new DatabaseAuthStore(options.database, device.id, options.helpers);
    this.log = options.log.child({ component: 'whatsapp', deviceId: device.id });
    this.reported = device.status === 'CONNECTED' || device.status === 'DISCONNECTED';
    this.bulkPolicy = options.config.warmupDailyCaps.length > 0 ? new WarmupPolicy(options.database, device.id, options.config.warmupDailyCaps) : undefined;
    this.backoff = options.linkingBackoffMs ?? LINKING_BACKOFF_MS;
  }

  /**
   * Reports an event to the runner and waits until it settled. Called only from work queued with
   * serial() (or before the session runs), so events reach the runner one at a time, in order.
   */
  private async emit(event: NetworkEvent): Promise<void> {
    if (this.closed) throw new Error('session closed');
    await this.handlers.onEvent(event);
  }

  /** Runs Baileys event handlers one at a time, in the order Baileys emitted them. */
  private serial(work: () => Promise<void>, what: string): void {
    this.chain = this.chain
      .then(async () => {
        if (!this.closed) await work();
      })
      .catch((error: unknown) => {
        if (!this.closed) this.log.error({ err: error }, `handling ${what} failed`);
      });
  }

  async start(): Promise<void> {
    await this.bulkPolicy?.load();
    const stored = await this.store.loadCreds();
    if (stored?.account) {
      this.creds = stored;
      this.log.info({ status: this.device.status, me: maskPhone(jidToPhone(stored.me?.id)) }, 'restoring a linked WhatsApp session from stored credentials');
    } else {
      if (stored) await this.store.clear();
      if (this.reported) {
        // Linked according to the database, but nothing to log in with: the device needs a new link.
        this.log.warn({ status: this.device.status }, 'no stored WhatsApp credentials for a linked device; it must be linked again');
        await this.emit({ type: 'disconnected', reason: 'logout', message: 'The stored WhatsApp credentials are missing; link the device again' });
        return;
      }
      this.log.info('starting a new WhatsApp link (QR code or pairing code)');
    }
    this.connect();
  }

  private get linked(): boolean {
    return Boolean(this.creds?.account);
  }

  /** Opens a new socket (ending the current one). */
  private connect(): void {
    if (this.closed) return;
    this.clearTimers();
    this.dropSocket();
    if (!this.linked) this.creds = this.store.fresh();
    const creds = this.creds!;
    this.qrPhaseStartedAt = 0;
    this.qrCount = 0;
    this.socketState = 'connecting';
    this.log.info({ linked: this.linked }, 'connecting to WhatsApp');
    let socket: WASocketLike;
    try {
      socket = this.options.socketFactory({
        deviceId: this.device.id,
        auth: this.store.state(creds),
        logger: this.options.log.child({ component: 'baileys', deviceId: this.device.id }, { level: this.options.config.logLevel }),
      });
    } catch (error) {
      this.socketState = 'idle';
      this.serial(() => this.onClose(error as Error, false), 'socket creation failure');
      return;
    }
    this.socket = socket;
    this.detach = this.attach(socket);
    // A connection that neither opens nor fails (a silent network) is ended, so it fails.
    this.connectTimer = setTimeout(() => {
      if (this.socket === socket && this.socketState === 'connecting' && this.qrCount === 0) {
        this.log.warn({ timeoutMs: this.options.config.connectTimeoutMs }, 'connecting to WhatsApp timed out');
        socket.end(Object.assign(new Error('Timed out connecting to WhatsApp'), { output: { statusCode: 408 } }));
      }
    }, this.options.config.connectTimeoutMs + 5_000);
    this.connectTimer.unref();
  }

  private attach(socket: WASocketLike): () => void {
    const listeners: [WAEventName, Listener][] = [];
    const on = <E extends WAEventName>(event: E, listener: (arg: WAEventMap[E]) => void): void => {
      socket.ev.on(event, listener);
      listeners.push([event, listener as Listener]);
    };
    on('connection.update', (update) => this.serial(() => this.onConnectionUpdate(socket, update), 'connection.update'));
    on('creds.update', (update) => {
      if (this.socket !== socket || !this.creds) return;
      Object.assign(this.creds, update);
      void this.store.saveCreds(this.creds).catch((error: unknown) => this.log.error({ err: error }, 'saving WhatsApp credentials failed'));
    });
    on('messages.upsert', (upsert) => this.serial(() => this.onMessages(upsert), 'messages.upsert'));
    on('messages.update', (updates) => this.serial(() => this.onMessageUpdates(updates), 'messages.update'));
    on('message-receipt.update', (updates) => this.serial(() => this.onUserReceipts(updates), 'message-receipt.update'));
    on('chats.phoneNumberShare', ({ lid, jid }) => this.serial(() => this.rememberLid(lid, jid), 'chats.phoneNumberShare'));
    on('contacts.upsert', (contacts) => this.serial(() => this.onContacts(contacts), 'contacts.upsert'));
    on('contacts.update', (contacts) => this.serial(() => this.onContacts(contacts as WAContact[]), 'contacts.update'));
    const onAck = (node: WABinaryNode): void => this.onServerAck(node);
    socket.ws?.on('CB:ack,class:message', onAck);
    return () => {
      for (const [event, listener] of listeners) socket.ev.off(event, listener as never);
      socket.ws?.off('CB:ack,class:message', onAck);
    };
  }

  private dropSocket(): void {
    const socket = this.socket;
    if (!socket) return;
    this.detach?.();
    this.detach = undefined;
    this.socket = undefined;
    this.socketState = 'idle';
    try {
      socket.end(undefined);
    } catch {
      // already closed
    }
  }

  private clearTimers(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.connectTimer) clearTimeout(this.connectTimer);
    this.retryTimer = undefined;
    this.connectTimer = undefined;
  }

  private settleAttempt(): void {
    for (const resolve of this.attemptWaiters.splice(0)) resolve();
  }

  private async onConnectionUpdate(socket: WASocketLike, update: WAConnectionUpdate): Promise<void> {
    if (this.socket !== socket) return;
    if (update.qr) {
      const now = Date.now();
      if (this.qrCount === 0) this.qrPhaseStartedAt = now;
      const ttl = this.qrCount === 0 ? FIRST_QR_MS : NEXT_QR_MS;
      this.qrCount++;
      this.linkingFailures = 0;
      this.log.info({ qrNumber: this.qrCount, expiresInMs: ttl }, 'WhatsApp QR code shown; waiting for the phone to scan it');
      for (const wake of this.qrWaiters.splice(0)) wake();
      await this.emit({ type: 'qr', code: update.qr, expiresAt: new Date(now + ttl) });
      this.settleAttempt();
    }
    if (update.isNewLogin) this.log.info('paired with the phone; WhatsApp restarts the connection next');
    if (update.connection === 'connecting') this.log.debug('WhatsApp connection: connecting');
    if (update.connection === 'open') await this.onOpen(socket);
    if (update.connection === 'close') {
      this.detach?.();
      this.detach = undefined;
      this.socket = undefined;
      await this.onClose(update.lastDisconnect?.error, this.qrCount > 0);
    }
  }

  private async onOpen(socket: WASocketLike): Promise<void> {
    if (this.connectTimer) clearTimeout(this.connectTimer);
    this.socketState = 'open';
    this.openedAt = Date.now();
    this.linkingFailures = 0;
    this.immediateRestarts = 0;
    const phoneNumber = jidToPhone(socket.user?.id ?? this.creds?.me?.id);
    if (!phoneNumber) {
      this.log.error({ jidServer: parseJid(socket.user?.id)?.server }, 'WhatsApp connection open, but the linked number is unknown');
      socket.end(new Error('linked number unknown'));
      return;
    }
    this.log.info({ me: maskPhone(phoneNumber) }, 'WhatsApp connection open');
    // The warm-up's bookkeeping must not keep the device from being reported connected.
    await this.bulkPolicy?.linked(phoneNumber).catch((error: unknown) => this.log.error({ err: error }, 'recording the link for the warm-up failed'));
    this.reported = true;
    // The credentials are stored before the device counts as linked, so a worker that takes it over can log in.
    await this.store.flush();
    await this.emit({ type: 'connected', phoneNumber });
    this.settleAttempt();
  }

  private async onClose(error: Error | undefined, reachedServer: boolean): Promise<void> {
    if (this.connectTimer) clearTimeout(this.connectTimer);
    const wasOpen = this.socketState === 'open';
    this.socketState = 'idle';
    if (wasOpen) this.flaps = Date.now() - this.openedAt < FLAP_WINDOW_MS ? this.flaps + 1 : 0;
    this.failPendingAcks('DEVICE_NOT_CONNECTED', 'The connection to WhatsApp closed before the server acknowledged the message');
    if (this.closed) return;
    const decision = classifyDisconnect(error);
    const statusCode = statusCodeOf(error);
    this.log.warn(
      { statusCode, reason: decision.reason, wasOpen, linked: this.linked, reported: this.reported, qrShown: this.qrCount, error: error?.message },
      'WhatsApp connection closed',
    );

    if (decision.restartNow && this.immediateRestarts < MAX_IMMEDIATE_RESTARTS) {
      this.immediateRestarts++;
      this.connect();
      return;
    }

    if (decision.loggedOut) {
      if (!this.reported) {
        // Credentials that were never (or no longer) linked, e.g. a pairing code that was not
        // entered: start over with new ones and show a new QR code.
        this.log.warn({ statusCode }, 'WhatsApp refused the unlinked credentials; starting a new link');
        this.creds = undefined;
        await this.store.clear();
        this.retryLinking(false);
        return;
      }
      await this.store.clear();
      await this.forgetLids();
      this.creds = undefined;
      this.log.warn({ statusCode }, 'the device was unlinked from the phone (LOGGED_OUT); credentials deleted');
      await this.emit({ type: 'disconnected', reason: 'logout', message: decision.message });
      this.settleAttempt();
      return;
    }

    if (decision.warning) this.warn(decision.warning.code, decision.warning.message);
    if (this.reported) {
      // The runner reconnects with its backoff (reconnect()).
      await this.emit({ type: 'disconnected', reason: decision.reason, message: decision.message });
      this.settleAttempt();
      return;
    }
    if (!reachedServer) this.warn('CONNECTION_FAILED', `Could not connect to WhatsApp to link the device: ${decision.message}`);
    this.retryLinking(reachedServer);
    this.settleAttempt();
  }

  /** While linking, the session retries by itself: soon after a QR cycle ran out, with backoff after failures. */
  private retryLinking(reachedServer: boolean): void {
    if (this.closed) return;
    let delay: number;
    if (reachedServer) {
      this.linkingFailures = 0;
      delay = QR_CYCLE_PAUSE_MS;
    } else {
      delay = this.backoff[Math.min(this.linkingFailures, this.backoff.length - 1)]!;
      this.linkingFailures++;
    }
    const jittered = Math.round(delay * (0.8 + Math.random() * 0.4));
    this.log.info({ retryInMs: jittered, failures: this.linkingFailures }, 'WhatsApp link: connecting again later');
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connect();
    }, jittered);
    this.retryTimer.unref();
  }

  private warn(code: string, message: string): void {
    const last = this.warned.get(code);
    if (last !== undefined && Date.now() - last < WARNING_INTERVAL_MS) return;
    this.warned.set(code, Date.now());
    this.log.warn({ code }, message);
    this.serial(() => this.emit({ type: 'warning', code, message }), 'warning');
  }

  // ---- sending ---------------------------------------------------------------------------

  async send(message: OutgoingMessage): Promise<SendResult> {
    const socket = this.socket;
    if (this.closed || !socket || this.socketState !== 'open') {
      return { ok: false, permanent: false, code: 'DEVICE_NOT_CONNECTED', message: 'The device is not connected to WhatsApp' };
    }
    let content;
    try {
      content = outgoingContent(message);
    } catch (error) {
      return { ok: false, permanent: true, code: 'MEDIA_MISSING', message: (error as Error).message };
    }
    let jid: string | null;
    try {
      jid = await this.resolveJid(socket, message.to);
    } catch (error) {
      return this.failed(classifySendError(error));
    }
    if (!jid) return { ok: false, permanent: true, code: 'RECIPIENT_NOT_ON_NETWORK', message: 'The recipient is not on WhatsApp' };

    const id = message.networkMessageId;
    const acked = new Promise<SendResult | SendFailure>((resolve) => {
      const timer = setTimeout(() => {
        this.acks.delete(id);
        resolve({ ok: false, permanent: false, code: 'ACK_TIMEOUT', message: 'WhatsApp did not acknowledge the message in time; it is sent again with the same id' });
      }, this.options.config.ackTimeoutMs);
      timer.unref();
      this.acks.get(id)?.resolve({ ok: false, permanent: false, code: 'SUPERSEDED', message: 'The message was handed over again' });
      this.acks.set(id, {
        resolve: (result) => {
          clearTimeout(timer);
          this.acks.delete(id);
          resolve(result);
        },
      });
    });
    try {
      // Waygate's id: a resend after a crash carries the same one, and WhatsApp de-duplicates it.
      await socket.sendMessage(jid, content, { messageId: id });
    } catch (error) {
      this.acks.get(id)?.resolve({ ok: true });
      await acked;
      const failure = classifySendError(error);
      this.log.warn({ code: failure.code, statusCode: statusCodeOf(error as Error), type: message.type, to: maskPhone(message.to) }, 'WhatsApp send failed');
      return this.failed(failure);
    }
    const result = await acked;
    if (!result.ok) {
      this.log.warn({ code: result.code, type: message.type, to: maskPhone(message.to) }, 'WhatsApp refused the message');
      return this.failed(result);
    }
    return { ok: true };
  }

  private failed(failure: SendResult | SendFailure): SendResult {
    if (failure.ok) return failure;
    if ('warning' in failure && failure.warning) this.warn(failure.warning.code, failure.warning.message);
    return { ok: false, permanent: failure.permanent, code: failure.code, message: failure.message };
  }

  /** The recipient's WhatsApp address (null: not on WhatsApp), asked once per number and cached. */
  private async resolveJid(socket: WASocketLike, phoneNumber: string): Promise<string | null> {
    if (!socket.onWhatsApp) return phoneToJid(phoneNumber);
    const cached = this.jids.get(phoneNumber);
    if (cached && Date.now() - cached.at < JID_CACHE_MS) return cached.jid;
    const [result] = (await socket.onWhatsApp(phoneToJid(phoneNumber))) ?? [];
    const jid = result?.exists ? result.jid : null;
    if (this.jids.size >= JID_CACHE_SIZE) this.jids.delete(this.jids.keys().next().value!);
    this.jids.set(phoneNumber, { jid, at: Date.now() });
    return jid;
  }

  /** The server's acknowledgement of a sent message: without error, the send is done (SENT). */
  private onServerAck(node: WABinaryNode): void {
    const id = node.attrs.id;
    if (!id) return;
    const waiter = this.acks.get(id);
    if (!waiter) {
      if (node.attrs.error) this.lateError(node.attrs.error);
      return;
    }
    waiter.resolve(node.attrs.error ? classifyAckError(node.attrs.error) : { ok: true });
  }

  private lateError(code: string | undefined): void {
    const failure = classifyAckError(code);
    this.log.warn({ code: failure.code, ackError: code }, 'WhatsApp reported an error for a message already acknowledged');
    if (failure.warning) this.warn(failure.warning.code, failure.warning.message);
  }

  private failPendingAcks(code: string, message: string): void {
    for (const waiter of [...this.acks.values()]) waiter.resolve({ ok: false, permanent: false, code, message });
  }

  // ---- receipts --------------------------------------------------------------------------

  private async onMessageUpdates(updates: WAMessageUpdate[]): Promise<void> {
    const receipts: Receipt[] = [];
    const now = new Date();
    for (const { key, update } of updates) {
      const id = key.id;
      if (!id || key.fromMe === false || update.status === undefined || update.status === null) continue;
      const waiter = this.acks.get(id);
      if (update.status === WAStatus.ERROR) {
        const code = update.messageStubParameters?.[0];
        if (waiter) waiter.resolve(classifyAckError(code));
        else this.lateError(code);
        continue;
      }
      if (update.status >= WAStatus.SERVER_ACK) waiter?.resolve({ ok: true });
      const status = receiptStatus(update.status);
      if (status) receipts.push({ networkMessageId: id, status, at: now });
    }
    if (receipts.length > 0) await this.emit({ type: 'receipts', receipts });
  }

  private async onUserReceipts(updates: WAReceiptUpdate[]): Promise<void> {
    const receipts = updates.flatMap(receiptsFromUserReceipt);
    for (const receipt of receipts) this.acks.get(receipt.networkMessageId)?.resolve({ ok: true });
    if (receipts.length > 0) await this.emit({ type: 'receipts', receipts });
  }

  // ---- incoming --------------------------------------------------------------------------

  private async onMessages(upsert: WAEventMap['messages.upsert']): Promise<void> {
    for (const message of upsert.messages) await this.onIncoming(message, upsert.type);
  }

  private async onIncoming(message: WAMessage, upsertType: string): Promise<void> {
    const { key } = message;
    if (!key.id || key.fromMe || !isPersonJid(key.remoteJid)) return;
    const parsed = parseIncomingContent(message);
    if (!parsed) {
      this.log.debug({ id: key.id, upsertType }, 'incoming WhatsApp message without storable content (reaction, protocol message, ...) ignored');
      return;
    }
    const from = await this.senderOf(message);
    this.log.info({ id: key.id, type: parsed.messageType, from: maskPhone(from), upsertType }, 'incoming WhatsApp message');
    // Awaited: stored (with its message.received event) before the next one is handled.
    await this.emit({
      type: 'incoming',
      networkMessageId: key.id,
      from,
      messageType: parsed.messageType,
      content: parsed.content,
      media: parsed.media,
      at: timestampOf(message.messageTimestamp),
    });
  }

  /**
   * The sender's phone number. A sender addressed as `<digits>@lid` is mapped to its number when
   * the network told us (an alternate address on the message key, a phone-number share, a
   * contact); otherwise the LID itself is reported (`<digits>@lid`), which is not a number.
   */
  private async senderOf(message: WAMessage): Promise<string> {
    const { key } = message;
    const jid = key.remoteJid!;
    const phone = jidToPhone(jid);
    if (phone) return phone;
    const lid = normalizeLid(jid);
    if (!lid) return jid;
    const alternate = [key.senderPn, key.remoteJidAlt, key.participantPn, key.participantAlt].map((candidate) => jidToPhone(candidate)).find(Boolean);
    if (alternate) {
      await this.rememberLid(lid, phoneToJid(alternate));
      return alternate;
    }
    const known = await this.lookupLid(lid);
    if (known) return known;
    this.log.warn({ id: key.id }, 'incoming message from a @lid sender whose phone number WhatsApp has not shared; reported as <lid>@lid');
    return lid;
  }

  private async rememberLid(lidJid: string | undefined, phoneJid: string | undefined): Promise<void> {
    const lid = lidJid ? normalizeLid(lidJid) : undefined;
    const phone = jidToPhone(phoneJid);
    if (!lid || !phone || this.lids.get(lid) === phone) return;
    this.lids.set(lid, phone);
    await this.options.database.query(
      `INSERT INTO whatsapp_lids (device_id, lid, phone_number) VALUES ($1, $2, $3)
       ON CONFLICT (device_id, lid) DO UPDATE SET phone_number = EXCLUDED.phone_number, updated_at = now()`,
      [this.device.id, lid, phone],
    );
  }

  private async lookupLid(lid: string): Promise<string | undefined> {
    const cached = this.lids.get(lid);
    if (cached) return cached;
    const [row] = await this.options.database.query<{ phone_number: string }>('SELECT phone_number FROM whatsapp_lids WHERE device_id = $1 AND lid = $2', [
      this.device.id,
      lid,
    ]);
    if (row) this.lids.set(lid, row.phone_number);
    return row?.phone_number;
  }

  private async onContacts(contacts: WAContact[]): Promise<void> {
    // A contact known by its number that also carries its LID tells us the pair.
    for (const contact of contacts) {
      if (contact.id && contact.lid && isLidJid(contact.lid) && jidToPhone(contact.id)) await this.rememberLid(contact.lid, contact.id);
    }
  }

  private async forgetLids(): Promise<void> {
    this.lids.clear();
    await this.options.database.query('DELETE FROM whatsapp_lids WHERE device_id = $1', [this.device.id]);
  }

  // ---- control ---------------------------------------------------------------------------

  async reconnect(): Promise<void> {
    if (this.closed || this.socketState !== 'idle') return;
    if (!this.linked && this.retryTimer) return; // linking retries on its own schedule
    if (this.flaps > 0) {
      const delays = this.options.flapBackoffMs ?? FLAP_BACKOFF_MS;
      const delay = delays[Math.min(this.flaps - 1, delays.length - 1)]!;
      this.log.warn({ flaps: this.flaps, delayMs: delay }, 'the WhatsApp connection keeps closing soon after it opens; waiting before reconnecting');
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          this.flapTimer = undefined;
          resolve();
        };
        const timer = setTimeout(done, delay);
        this.flapTimer = { timer, done };
      });
      if (this.closed || this.socketState !== 'idle') return;
    }
    const settled = new Promise<void>((resolve) => this.attemptWaiters.push(resolve));
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, this.options.config.connectTimeoutMs + 10_000).unref());
    this.connect();
    await Promise.race([settled, timeout]);
  }

  async requestPairingCode(phoneNumber: string): Promise<{ code: string; expiresAt: Date }> {
    if (this.closed) throw new PairingError('SESSION_CLOSED', 'The device session is closing');
    if (this.linked) throw new PairingError('ALREADY_LINKED', 'The device is already linked to a phone');
    // On a socket whose QR phase is fresh; a new socket otherwise (the code lives as long as its phase).
    if (!(this.socket && this.qrCount > 0 && Date.now() - this.qrPhaseStartedAt < PAIRING_FRESH_MS)) {
      if (!(this.socket && this.socketState === 'connecting' && this.qrCount === 0)) this.connect();
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          this.qrWaiters = this.qrWaiters.filter((w) => w !== wake);
          reject(new PairingError('NOT_CONNECTED', 'Could not reach WhatsApp to request a pairing code; try again'));
        }, PAIRING_WAIT_MS);
        const wake = (): void => {
          clearTimeout(timer);
          resolve();
        };
        this.qrWaiters.push(wake);
      });
    }
    const socket = this.socket;
    if (!socket) throw new PairingError('NOT_CONNECTED', 'The connection to WhatsApp closed; try again');
    this.log.info({ phone: maskPhone(phoneNumber) }, 'requesting a WhatsApp pairing code');
    const code = await socket.requestPairingCode(phoneNumber);
    return { code, expiresAt: new Date(this.qrPhaseStartedAt + PAIRING_PHASE_MS) };
  }

  async logout(): Promise<void> {
    const socket = this.socket;
    if (socket && this.socketState === 'open') {
      this.detach?.();
      this.detach = undefined;
      await socket.logout('Removed in Waygate').catch((error: unknown) => this.log.warn({ err: error }, 'WhatsApp logout request failed'));
    }
    await this.close();
    await this.store.clear();
    await this.forgetLids();
    this.log.info('device logged out of WhatsApp; credentials deleted');
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.clearTimers();
    this.flapTimer?.done();
    this.failPendingAcks('DEVICE_NOT_CONNECTED', 'The device session closed before the server acknowledged the message');
    this.settleAttempt();
    for (const wake of this.qrWaiters.splice(0)) wake();
    this.dropSocket();
    await this.store.fence();
    await this.chain;
    this.onClosed(this);
  }
}

export class PairingError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'PairingError';
  }
}

export class WhatsAppNetwork implements Network {
  readonly kind = 'whatsapp' as const;
  private readonly sessions = new Map<string, WhatsAppSession>();
  private readonly unsubscribe: () => void;

  constructor(private readonly options: WhatsAppNetworkOptions) {
    // Pairing-code requests come from the API (any process) through the database and the bus.
    this.unsubscribe = options.bus.subscribe('waygate_devices', (payload) => {
      if (!payload.startsWith('pair:')) return;
      const session = this.sessions.get(payload.slice(5));
      if (session) void this.answerPairing(session);
    });
  }

  async openSession(device: DeviceInfo, handlers: SessionHandlers): Promise<NetworkSession> {
    const session = new WhatsAppSession(device, this.options, handlers, (closed) => {
      if (this.sessions.get(device.id) === closed) this.sessions.delete(device.id);
    });
    this.sessions.set(device.id, session);
    await session.start();
    return session;
  }

  /** The session this process holds for a device, if any. */
  sessionOf(deviceId: string): WhatsAppSession | undefined {
    return this.sessions.get(deviceId);
  }

  /** Answers the device's open pairing-code request, if any (see DeviceService.pairingCode). */
  async answerPairing(session: WhatsAppSession): Promise<void> {
    const { database, bus, log } = this.options;
    const deviceId = session.device.id;
    const [request] = await database.query<{ request_id: string; phone_number: string }>(
      'SELECT request_id, phone_number FROM device_pairing_codes WHERE device_id = $1 AND code IS NULL AND error IS NULL',
      [deviceId],
    );
    if (!request) return;
    let update: { code: string | null; error: string | null; expiresAt: Date | null };
    try {
      const { code, expiresAt } = await session.requestPairingCode(request.phone_number);
      update = { code, error: null, expiresAt };
    } catch (error) {
      const code = error instanceof PairingError ? error.code : 'NETWORK_ERROR';
      log.warn({ deviceId, code, err: error instanceof PairingError ? undefined : error }, 'WhatsApp pairing code request failed');
      update = { code: null, error: `${code}: ${(error as Error).message}`, expiresAt: null };
    }
    await database.query('UPDATE device_pairing_codes SET code = $3, error = $4, expires_at = $5 WHERE device_id = $1 AND request_id = $2', [
      deviceId,
      request.request_id,
      update.code,
      update.error,
      update.expiresAt,
    ]);
    await bus.publish('waygate_devices', `pairing:${deviceId}`);
  }

  async close(): Promise<void> {
    this.unsubscribe();
    await Promise.all([...this.sessions.values()].map((session) => session.close()));
  }
}
