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
 * Some closes are not retried at all, because retrying them is what gets a number banned or
 * cannot succeed: a refused account (402, 403, 406) and an outdated client (405, after one retry
 * with the version read again). The session then stops (a `stopped` event, remembered in
 * whatsapp_devices so a restart or takeover does not retry either) until someone asks it to
 * reconnect. So does a device still being linked after WHATSAPP_MAX_QR_CYCLES unscanned QR cycles.
 *
 * Logs name the device, connection states, status codes and masked numbers; never message
 * content, QR or pairing codes, or keys.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { WhatsAppConfig } from '../../config.js';
import type { Bus } from '../../platform/bus.js';
import type { Database } from '../../platform/database.js';
import { alongSchedule, CONNECT_BACKOFF_MS, jittered } from '../../platform/backoff.js';
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { MediaDownloadError } from '../network.js';
import type {
  DeviceInfo,
  GroupInfo,
  MessageRef,
  IncomingFile,
  Network,
  NetworkEvent,
  NetworkSession,
  NumberCheck,
  OutgoingMessage,
  ParticipantAction,
  ParticipantOutcome,
  PresenceState,
  ReadMessage,
  Receipt,
  SendResult,
  SessionHandlers,
} from '../network.js';
import { DeviceStore } from '../../devices/device-store.js';
import { proxyAgent, proxyDispatcher } from '../../devices/device-proxy.js';
import { DatabaseAuthStore } from './auth-state.js';
import { chatJid, isLidJid, isPersonJid, jidToPhone, maskPhone, normalizeLid, parseJid, phoneToJid } from './jid.js';
import {
  actionMessageId,
  classifyAckError,
  classifyDisconnect,
  classifySendError,
  mediaFieldsOf,
  messageKey,
  outgoingContent,
  quotedMessage,
  parseIncomingContent,
  parseProtocolChange,
  receiptStatus,
  unwrap,
  votedOptions,
  type ProtocolChange,
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
  WAGroupMetadata,
  WALidMapping,
  WAMessageKey,
  WAEventMap,
  WAEventName,
  WAMessage,
  WAMessageUpdate,
  WAOutgoingContent,
  WAReceiptUpdate,
  WASocketLike,
} from './types.js';
import { WAStatus } from './types.js';
import type { WaVersionSource } from './version.js';
import { formatVersion } from './version.js';
import { WarmupPolicy } from './warmup.js';
import { WhatsAppStore } from './whatsapp-store.js';
import {
  CONTACT_PRESENCE,
  GroupCache,
  groupQuery,
  isGroupJid,
  participantIds,
  participantJids,
  participantOutcomes,
  PRESENCE,
  readKeys,
  subscribePresence,
  toGroupInfo,
} from './groups.js';

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
/** How long an onWhatsApp answer is trusted (whatsapp_numbers): a number on WhatsApp rarely leaves it; one not on it may join. */
const ON_NETWORK_CACHE_MS = 7 * 24 * 60 * 60 * 1000;
const OFF_NETWORK_CACHE_MS = 24 * 60 * 60 * 1000;
/** Sent messages kept for retry requests (whatsapp_sent_messages); phones ask within minutes, rarely days. */
const SENT_RETENTION = '14 days';
const NOT_CONNECTED: SendResult = { ok: false, permanent: false, code: 'DEVICE_NOT_CONNECTED', message: 'The device is not connected to WhatsApp' };
/** How long the sender's phone has to upload an expired media file again (Baileys waits forever). */
const REUPLOAD_TIMEOUT_MS = 30_000;
/** After a 463 (no privacy token towards a new contact), bulk traffic of the device waits this long. */
const BULK_PAUSE_AFTER_463_MS = 60 * 60 * 1000;

export interface WhatsAppNetworkOptions {
  database: Database;
  bus: Bus;
  log: Logger;
  config: WhatsAppConfig;
  socketFactory: SocketFactory;
  helpers: BaileysHelpers;
  /** The WhatsApp Web version the sockets announce (read at start; again after a 405). */
  version: WaVersionSource;
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
  readonly bulkPolicy: WarmupPolicy;
  private readonly store: DatabaseAuthStore;
  /** The device's other whatsapp_* rows (stop, sent messages, number look-ups, LIDs). */
  private readonly rows: WhatsAppStore;
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
  private readonly lids = new Map<string, string>();
  /** Group metadata (groupFetchAllParticipating, groupMetadata, groups.update), also Baileys' cachedGroupMetadata. */
  private readonly groups = new GroupCache();
  /** The version the current socket announced (a 405 retries once if a fresh read gives another). */
  private socketVersion: string | undefined;
  private outdatedRetried = false;
  /** QR cycles that ran out unscanned since the link started (or was asked for again). */
  private qrCycles = 0;
  /** Stopped (see the header): no socket until reconnect() or a pairing request. */
  private stopped: { code: string; message: string } | undefined;
  private readonly warned = new Map<string, number>();
  private readonly backoff: readonly number[];
  private openedAt = 0;
  private flaps = 0;
  private flapTimer: { timer: NodeJS.Timeout; done(): void } | undefined;
  /** Media downloads go through the device's proxy, like its socket (made when first needed). */
  private mediaDispatcher: ReturnType<typeof proxyDispatcher> | undefined;

  constructor(
    readonly device: DeviceInfo,
    private readonly options: WhatsAppNetworkOptions,
    private readonly handlers: SessionHandlers,
    private readonly onClosed: (session: WhatsAppSession) => void,
  ) {
    this.store = new DatabaseAuthStore(options.database, device.id, options.helpers);
    this.rows = new WhatsAppStore(options.database, device.id);
    this.log = options.log.child({ component: 'whatsapp', deviceId: device.id });
    this.reported = device.status === 'CONNECTED' || device.status === 'DISCONNECTED';
    this.bulkPolicy = new WarmupPolicy(options.database, device.id, options.config.warmupDailyCaps);
    this.backoff = options.linkingBackoffMs ?? CONNECT_BACKOFF_MS;
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
    await this.bulkPolicy.load();
    const stop = await this.rows.stop();
    await this.rows.pruneSent(SENT_RETENTION);
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
    if (stop?.stopped_code) {
      // Stopped before (by this worker or another): not retried until someone asks.
      this.stopped = { code: stop.stopped_code, message: stop.stopped_message ?? '' };
      this.log.warn({ code: stop.stopped_code }, 'the WhatsApp session stays stopped until the device is reconnected');
      await this.emit({ type: 'stopped', code: stop.stopped_code, message: stop.stopped_message ?? '' });
      return;
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
    const { version, source } = this.options.version.current;
    this.socketVersion = formatVersion(version);
    this.log.info({ linked: this.linked, waVersion: this.socketVersion, versionSource: source }, 'connecting to WhatsApp');
    let socket: WASocketLike;
    try {
      socket = this.options.socketFactory({
        deviceId: this.device.id,
        auth: this.store.state(creds),
        logger: this.options.log.child({ component: 'baileys', deviceId: this.device.id }, { level: this.options.config.logLevel }),
        version,
        getMessage: (key) => this.sentMessage(key),
        cachedGroupMetadata: (jid) => Promise.resolve(this.groups.get(jid)),
        agent: this.device.proxyUrl ? proxyAgent(this.device.proxyUrl) : undefined,
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
        endSocket(socket, Object.assign(new Error('Timed out connecting to WhatsApp'), { output: { statusCode: 408 } }), this.log);
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
    on('lid-mapping.update', (mapping) => this.serial(() => this.onLidMapping(mapping), 'lid-mapping.update'));
    on('messaging-history.set', ({ contacts, lidPnMappings }) =>
      this.serial(async () => {
        for (const mapping of lidPnMappings ?? []) await this.onLidMapping(mapping);
        await this.onContacts(contacts ?? []);
      }, 'messaging-history.set'),
    );
    on('contacts.upsert', (contacts) => this.serial(() => this.onContacts(contacts), 'contacts.upsert'));
    on('groups.upsert', (groups) => this.serial(() => this.onGroups(groups), 'groups.upsert'));
    on('groups.update', (updates) => this.serial(() => this.refreshGroups(updates.map((u) => u.id).filter((id): id is string => Boolean(id))), 'groups.update'));
    on('group-participants.update', ({ id }) => this.serial(() => this.refreshGroups([id]), 'group-participants.update'));
    on('contacts.update', (contacts) => this.serial(() => this.onContacts(contacts as WAContact[]), 'contacts.update'));
    on('presence.update', (update) => this.serial(() => this.onPresence(update), 'presence.update'));
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
    endSocket(socket, undefined, this.log);
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
    this.outdatedRetried = false;
    this.qrCycles = 0;
    const phoneNumber = jidToPhone(socket.user?.id ?? this.creds?.me?.id);
    if (!phoneNumber) {
      this.log.error({ jidServer: parseJid(socket.user?.id)?.server }, 'WhatsApp connection open, but the linked number is unknown');
      endSocket(socket, new Error('linked number unknown'), this.log);
      return;
    }
    this.log.info({ me: maskPhone(phoneNumber) }, 'WhatsApp connection open');
    // The warm-up's bookkeeping must not keep the device from being reported connected.
    await this.bulkPolicy.linked(phoneNumber).catch((error: unknown) => this.log.error({ err: error }, 'recording the link for the warm-up failed'));
    this.reported = true;
    // The credentials are stored before the device counts as linked, so a worker that takes it over can log in.
    await this.store.flush();
    await this.emit({ type: 'connected', phoneNumber });
    this.settleAttempt();
    // The number's groups, as chats (one query; later changes arrive as groups.update).
    try {
      await this.onGroups(Object.values(await socket.groupFetchAllParticipating()));
    } catch (error) {
      this.log.warn({ err: error }, 'fetching the WhatsApp groups of the number failed');
    }
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
      await this.onLoggedOut(statusCode, decision.message);
      return;
    }
    if (decision.outdated && (await this.retriedOutdated(statusCode))) return;
    if (decision.stop) {
      await this.stop(decision.stop.code, decision.message);
      return;
    }
    if (decision.warning) this.warn(decision.warning.code, decision.warning.message);
    if (this.reported) {
      // The runner reconnects with its backoff (reconnect()).
      await this.emit({ type: 'disconnected', reason: decision.reason, message: decision.message });
      this.settleAttempt();
      return;
    }
    await this.onLinkingClosed(reachedServer, decision.message);
  }

  /** A close while linking: retried by the session itself, until nobody scanned for maxQrCycles. */
  private async onLinkingClosed(reachedServer: boolean, message: string): Promise<void> {
    if (!reachedServer) this.warn('CONNECTION_FAILED', `Could not connect to WhatsApp to link the device: ${message}`);
    else if (++this.qrCycles >= this.options.config.maxQrCycles) {
      // Nobody is scanning: new codes every 20 s forever are traffic for nothing (and a signal).
      await this.stop(
        'QR_EXPIRED',
        `No QR code was scanned in ${this.qrCycles} cycles; reconnect the device (POST /devices/:id/reconnect) or request a pairing code to link it`,
      );
      return;
    }
    this.retryLinking(reachedServer);
    this.settleAttempt();
  }

  /** WhatsApp refused the credentials (401): a linked device is unlinked; unlinked credentials start a new link. */
  private async onLoggedOut(statusCode: number | undefined, message: string): Promise<void> {
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
    await this.forgetLink();
    this.creds = undefined;
    this.log.warn({ statusCode }, 'the device was unlinked from the phone (LOGGED_OUT); credentials deleted');
    await this.emit({ type: 'disconnected', reason: 'logout', message });
    this.settleAttempt();
  }

  /**
   * WhatsApp calls the client outdated: the version is read again and a different one tried once
   * (unless configured). True when the close is handled (reconnected, or the session closed meanwhile).
   */
  private async retriedOutdated(statusCode: number | undefined): Promise<boolean> {
    if (this.options.version.current.source === 'configured' || this.outdatedRetried) return false;
    this.outdatedRetried = true;
    const { version } = await this.options.version.refresh();
    if (this.closed) return true;
    if (formatVersion(version) === this.socketVersion) return false;
    this.log.warn({ statusCode, from: this.socketVersion, to: formatVersion(version) }, 'WhatsApp refused the client version; retrying with the version just read');
    this.connect();
    return true;
  }

  /** Stops retrying (see the header), remembered for whichever worker holds the device next. */
  private async stop(code: string, message: string): Promise<void> {
    this.clearTimers();
    this.stopped = { code, message };
    this.log.warn({ code }, `WhatsApp session stopped: ${message}`);
    await this.rows.saveStop(code, message);
    await this.emit({ type: 'stopped', code, message });
    this.settleAttempt();
  }

  /** Someone asked for the device again: the stop is lifted. */
  private async unstop(): Promise<void> {
    this.qrCycles = 0;
    this.outdatedRetried = false;
    if (!this.stopped) return;
    this.stopped = undefined;
    await this.rows.clearStop();
    this.log.info('WhatsApp session resumed after a stop');
  }

  /** While linking, the session retries by itself: soon after a QR cycle ran out, with backoff after failures. */
  private retryLinking(reachedServer: boolean): void {
    if (this.closed) return;
    let delay: number;
    if (reachedServer) {
      this.linkingFailures = 0;
      delay = QR_CYCLE_PAUSE_MS;
    } else {
      this.linkingFailures++;
      delay = alongSchedule(this.backoff, this.linkingFailures);
    }
    const retryInMs = jittered(delay);
    this.log.info({ retryInMs, failures: this.linkingFailures }, 'WhatsApp link: connecting again later');
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.connect();
    }, retryInMs);
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

  /**
   * The waiter for the server's ack of `id`, in place before the hand-over (the ack can overtake
   * sendMessage's return). Its clock starts only with startClock(), once sendMessage returned:
   * sendMessage includes the media upload, which has a timeout of its own (WHATSAPP_UPLOAD_TIMEOUT_MS).
   */
  private ackWaiter(id: string): { acked: Promise<SendResult | SendFailure>; startClock: () => void } {
    let startClock: () => void = () => undefined;
    const acked = new Promise<SendResult | SendFailure>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      startClock = () => {
        if (settled) return; // acknowledged before sendMessage returned
        timer = setTimeout(() => {
          this.acks.delete(id);
          resolve({ ok: false, permanent: false, code: 'ACK_TIMEOUT', message: 'WhatsApp did not acknowledge the message in time; it is sent again with the same id' });
        }, this.options.config.ackTimeoutMs);
        timer.unref();
      };
      this.acks.get(id)?.resolve({ ok: false, permanent: false, code: 'SUPERSEDED', message: 'The message was handed over again' });
      this.acks.set(id, {
        resolve: (result) => {
          settled = true;
          if (timer) clearTimeout(timer);
          this.acks.delete(id);
          resolve(result);
        },
      });
    });
    return { acked, startClock };
  }

  async send(message: OutgoingMessage): Promise<SendResult> {
    const socket = this.openSocket();
    if (!socket) return NOT_CONNECTED;
    let jid: string | null;
    try {
      jid = await this.resolveJid(socket, message.to);
    } catch (error) {
      return this.failed(classifySendError(error));
    }
    if (!jid) return { ok: false, permanent: true, code: 'RECIPIENT_NOT_ON_NETWORK', message: 'The recipient is not on WhatsApp' };
    let content: WAOutgoingContent;
    try {
      content = outgoingContent(message, jid);
    } catch (error) {
      return { ok: false, permanent: true, code: 'MEDIA_MISSING', message: (error as Error).message };
    }
    if ('poll' in content) {
      // The votes are encrypted with the poll's secret: stored before it goes out, and kept for a resend.
      const secret = await this.rows.pollSecret(message.networkMessageId, randomBytes(32), content.poll.values);
      content = { ...content, poll: { ...content.poll, messageSecret: secret } };
    }
    const quoted = message.replyTo ? { quoted: quotedMessage(message.replyTo, jid) } : {};
    return this.handOver(socket, jid, content, message.networkMessageId, quoted, { type: message.type, to: message.to });
  }

  /**
   * Hands content to Baileys under message id `id` and waits for the server's ack; what went out
   * is kept for retry requests.
   */
  private async handOver(socket: WASocketLike, jid: string, content: WAOutgoingContent, id: string, quoted: { quoted?: WAMessage }, what: { type: string; to: string }): Promise<SendResult> {
    const { acked, startClock } = this.ackWaiter(id);
    const uploadTimeoutMs = this.options.config.uploadTimeoutMs;
    let sent: WAMessage | undefined;
    try {
      // Waygate's id (WhatsApp Web's shape, derived from the message id): a resend after a crash carries the same one.
      sent = await withTimeout(socket.sendMessage(jid, content, { messageId: id, mediaUploadTimeoutMs: uploadTimeoutMs, ...quoted }), uploadTimeoutMs + this.options.config.connectTimeoutMs, () =>
        Object.assign(new Error(`Uploading and handing over the message took longer than ${uploadTimeoutMs} ms`), { uploadTimeout: true }),
      );
    } catch (error) {
      this.acks.get(id)?.resolve({ ok: true });
      await acked;
      const failure = (error as { uploadTimeout?: boolean }).uploadTimeout
        ? { ok: false as const, permanent: false, code: 'MEDIA_UPLOAD_FAILED', message: (error as Error).message }
        : classifySendError(error);
      this.log.warn({ code: failure.code, statusCode: statusCodeOf(error as Error), type: what.type, to: maskPhone(what.to) }, 'WhatsApp send failed');
      return this.failed(failure);
    }
    startClock();
    const [result] = await Promise.all([acked, sent?.message ? this.keepSent(id, sent.message) : undefined]);
    if (!result.ok) {
      this.log.warn({ code: result.code, type: what.type, to: maskPhone(what.to) }, 'WhatsApp refused the message');
      return this.failed(result);
    }
    return { ok: true };
  }

  /** The open socket, if the session has one. */
  private openSocket(): WASocketLike | undefined {
    return !this.closed && this.socket && this.socketState === 'open' ? this.socket : undefined;
  }

  /**
   * The chat a message of the device is in, as WhatsApp addresses it: a sent message's as looked
   * up when it was sent (cached), a received one's by its sender's number (no look-up).
   */
  private async chatOf(socket: WASocketLike, target: MessageRef): Promise<string> {
    if (target.chat.includes('@')) return target.chat;
    if (!target.fromMe) return phoneToJid(target.chat);
    return (await this.resolveJid(socket, target.chat)) ?? phoneToJid(target.chat);
  }

  /** Edits a message the device sent: Baileys' `{ text, edit: key }` (a protocolMessage MESSAGE_EDIT). */
  async edit(target: MessageRef, content: string): Promise<SendResult> {
    return this.changeSent(target, 'edit', content);
  }

  /** Deletes a message the device sent for everyone: Baileys' `{ delete: key }` (a protocolMessage REVOKE). */
  async revoke(target: MessageRef): Promise<SendResult> {
    return this.changeSent(target, 'delete');
  }

  private async changeSent(target: MessageRef, action: 'edit' | 'delete', text = ''): Promise<SendResult> {
    const socket = this.openSocket();
    if (!socket) return NOT_CONNECTED;
    try {
      const jid = await this.chatOf(socket, target);
      const key = messageKey(target, jid);
      const content: WAOutgoingContent = action === 'edit' ? { text, linkPreview: null, edit: key } : { delete: key };
      return await this.handOver(socket, jid, content, actionMessageId(action, target.networkMessageId, text), {}, { type: action, to: target.chat });
    } catch (error) {
      return this.failed(classifySendError(error));
    }
  }

  /** The read receipt of a message the device received: Baileys' readMessages([key]). */
  async markRead(target: MessageRef): Promise<SendResult> {
    const socket = this.openSocket();
    if (!socket) return NOT_CONNECTED;
    try {
      const jid = await this.chatOf(socket, target);
      await socket.readMessages([messageKey(target, jid)]);
      return { ok: true };
    } catch (error) {
      return this.failed(classifySendError(error));
    }
  }

  /** What was sent, for a retry request (getMessage); a failure to keep it does not fail the send. */
  private async keepSent(id: string, content: unknown): Promise<void> {
    try {
      await this.rows.keepSent(id, this.options.helpers.encodeMessage(content));
    } catch (error) {
      this.log.error({ err: error }, 'keeping a sent WhatsApp message for retry requests failed');
    }
  }

  /** Baileys' getMessage: a recipient asks for a message again (it could not decrypt it); any kind is answered. */
  private async sentMessage(key: WAMessageKey): Promise<unknown> {
    if (!key.id) return undefined;
    const content = await this.rows.sent(key.id);
    if (!content) {
      this.log.warn({ id: key.id }, 'a retry request for a message Waygate did not keep; the recipient may see "waiting for this message"');
      return undefined;
    }
    return this.options.helpers.decodeMessage(content);
  }

  private failed(failure: SendResult | SendFailure): SendResult {
    if (failure.ok) return failure;
    if ('warning' in failure && failure.warning) this.warn(failure.warning.code, failure.warning.message);
    if ('pauseBulk' in failure && failure.pauseBulk) this.pauseBulk(failure.code);
    return { ok: false, permanent: failure.permanent, code: failure.code, message: failure.message };
  }

  /**
   * The recipient's WhatsApp address (null: not on WhatsApp), asked once per number and kept in
   * whatsapp_numbers (a restart or another worker does not ask again: bulk look-ups are a ban signal).
   */
  private async resolveJid(socket: WASocketLike, phoneNumber: string): Promise<string | null> {
    if (isGroupJid(phoneNumber)) return phoneNumber;
    if (!socket.onWhatsApp) return phoneToJid(phoneNumber);
    const cached = await this.rows.cachedJid(phoneNumber, ON_NETWORK_CACHE_MS, OFF_NETWORK_CACHE_MS);
    if (cached) return cached.jid;
    const [result] = (await socket.onWhatsApp(phoneToJid(phoneNumber))) ?? [];
    const jid = result?.exists ? result.jid : null;
    await this.rows.saveJid(phoneNumber, jid);
    return jid;
  }

  /** Bulk traffic of the device waits (a 463: sending to new contacts now is ban pressure). */
  private pauseBulk(code: string): void {
    const until = new Date(Date.now() + BULK_PAUSE_AFTER_463_MS);
    this.log.warn({ code, until }, 'bulk traffic of the device paused');
    void this.bulkPolicy.pause(until).catch((error: unknown) => this.log.error({ err: error }, 'pausing bulk traffic failed'));
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
    if (failure.pauseBulk) this.pauseBulk(failure.code);
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
    const group = isGroupJid(key.remoteJid);
    if (!key.id || !(isPersonJid(key.remoteJid) || (group && key.participant))) return;
    if (!group) {
      // Edits, deletes and poll votes come from the other party, or from the device's own phone (fromMe).
      const change = parseProtocolChange(message);
      if (change) return this.onChange(message, change);
      if (unwrap(message.message)?.pollUpdateMessage) return this.onPollVote(message);
    }
    if (key.fromMe) return;
    const parsed = parseIncomingContent(message);
    if (!parsed) {
      this.log.debug({ id: key.id, upsertType }, 'incoming WhatsApp message without storable content (poll vote, edit, protocol message, ...) ignored');
      return;
    }
    const { phone, lid } = group ? await this.addressOf(key.participant!, key.participantAlt, key.id) : await this.senderOf(key);
    this.log.info({ id: key.id, type: parsed.messageType, from: maskPhone(phone), viaLid: Boolean(lid), upsertType }, 'incoming WhatsApp message');
    // Awaited: stored (with its message.received event) before the next one is handled. Baileys
    // acknowledged the stanza to WhatsApp before emitting it (docs/whatsapp.md).
    await this.emit({
      type: 'incoming',
      networkMessageId: key.id,
      from: phone ?? lid!,
      fromLid: lid,
      messageType: parsed.messageType,
      content: parsed.content,
      media: parsed.media,
      download: parsed.media ? () => this.downloadMedia(message) : undefined,
      kind: parsed.kind,
      reaction: parsed.reaction,
      replyTo: parsed.replyTo,
      mentions: parsed.mentions,
      chat: group ? key.remoteJid! : undefined,
      at: timestampOf(message.messageTimestamp),
    });
  }

  /**
   * A contact's presence: typing or recording in a chat the device is in, or online and offline
   * for a contact the device subscribed to (sendPresence and markChatRead subscribe).
   */
  private async onPresence({ id, presences }: WAEventMap['presence.update']): Promise<void> {
    const group = isGroupJid(id);
    if (!group && !isPersonJid(id)) return;
    const me = this.socket?.user ?? this.creds?.me;
    const ownPhone = jidToPhone(me?.id);
    const ownLid = me?.lid ? normalizeLid(me.lid) : undefined;
    for (const [participant, presence] of Object.entries(presences)) {
      const { phone, lid } = await this.addressOf(participant, undefined, undefined);
      const from = phone ?? lid;
      // The device's own number (its phone, another linked device) is not a contact.
      if (!from || (phone && phone === ownPhone) || (lid && lid === ownLid)) continue;
      await this.emit({
        type: 'presence',
        chat: group ? id : from,
        from,
        fromLid: lid,
        state: CONTACT_PRESENCE[presence.lastKnownPresence],
        lastSeen: presence.lastSeen ? new Date(presence.lastSeen * 1000) : undefined,
        at: new Date(),
      });
    }
  }

  /** The chat's other party, as `from` of its incoming messages: their number, else their LID. */
  private async partyOf(key: WAMessageKey): Promise<string> {
    const { phone, lid } = await this.senderOf({ ...key, fromMe: false });
    return phone ?? lid ?? key.remoteJid!;
  }

  /** An edit or a delete for everyone, by the other party (of one of theirs) or by the device's own phone (of one of the device's). */
  private async onChange(message: WAMessage, change: ProtocolChange): Promise<void> {
    const fromMe = message.key.fromMe === true;
    const chat = await this.partyOf(message.key);
    const at = (change.kind === 'edit' ? change.at : undefined) ?? timestampOf(message.messageTimestamp);
    this.log.info({ id: change.networkMessageId, kind: change.kind, fromMe, chat: maskPhone(chat) }, 'WhatsApp message changed by its sender');
    if (change.kind === 'edit') await this.emit({ type: 'edited', networkMessageId: change.networkMessageId, chat, fromMe, content: change.content, at });
    else await this.emit({ type: 'deleted', networkMessageId: change.networkMessageId, chat, fromMe, at });
  }

  /**
   * A vote on a poll the device sent, decrypted with the poll's stored secret. The vote is
   * encrypted for the JIDs of the poll's creator and of the voter as the voter's phone saw them,
   * which may be the numbers' or the LIDs', so each pairing is tried (a wrong one fails its
   * authentication tag).
   */
  private async onPollVote(message: WAMessage): Promise<void> {
    const update = unwrap(message.message)!.pollUpdateMessage!;
    const pollId = update.pollCreationMessageKey?.id;
    const vote = update.vote;
    if (!pollId || !vote?.encPayload || !vote.encIv) return;
    const poll = await this.rows.poll(pollId);
    if (!poll) {
      this.log.debug({ pollId }, 'a vote on a poll this device did not send (or no longer knows) ignored');
      return;
    }
    const me = this.socket?.user ?? this.creds?.me;
    const myPhone = jidToPhone(me?.id);
    const own = [myPhone ? phoneToJid(myPhone) : undefined, me?.lid ? normalizeLid(me.lid) : undefined].filter((jid): jid is string => jid !== undefined);
    const { key } = message;
    const voters = key.fromMe ? own : [key.participant ?? key.remoteJid, key.participantAlt ?? key.remoteJidAlt].flatMap((jid) => (jid ? [normalizedJid(jid)] : []));
    let selected: Uint8Array[] | undefined;
    for (const pollCreatorJid of own) {
      for (const voterJid of voters) {
        try {
          selected = this.options.helpers.decryptPollVote(vote, { pollCreatorJid, pollMsgId: pollId, pollEncKey: poll.secret, voterJid }).selectedOptions ?? [];
          break;
        } catch {
          // Not this pairing of JIDs.
        }
      }
      if (selected) break;
    }
    if (!selected) {
      this.log.warn({ pollId }, 'a WhatsApp poll vote could not be decrypted with the poll\'s secret; ignored');
      return;
    }
    const voter = key.fromMe ? (myPhone ?? own[0]!) : await this.partyOf(key);
    await this.emit({ type: 'poll-vote', pollNetworkMessageId: pollId, voter, options: votedOptions(selected, poll.options), at: timestampOf(message.messageTimestamp) });
  }

  /**
   * The file of an incoming media message, decrypted as it downloads (through the device's proxy,
   * if it has one) and checked against its fileSha256 at the end. A file WhatsApp's servers no
   * longer have (404/410: media expires there after a while) is asked of the sender's phone again
   * (a re-upload request), then downloaded from where the phone put it.
   */
  private async downloadMedia(message: WAMessage): Promise<IncomingFile> {
    const fields = mediaFieldsOf(message);
    if (!fields?.directPath && !fields?.url) throw new MediaDownloadError('MEDIA_MISSING', 'The message names no file on WhatsApp (no url or directPath)', true);
    if (this.device.proxyUrl) this.mediaDispatcher ??= proxyDispatcher(this.device.proxyUrl);
    const open = (): Promise<Readable> => this.options.helpers.downloadMedia(message, { dispatcher: this.mediaDispatcher });
    let stream: Readable;
    try {
      stream = await open();
    } catch (error) {
      const status = statusCodeOf(error as Error);
      if (status !== 404 && status !== 410) throw downloadFailure(error);
      this.log.info({ id: message.key.id, status }, 'incoming media expired on WhatsApp; asking the sender\'s phone to upload it again');
      await this.reupload(message);
      try {
        stream = await open();
      } catch (again) {
        throw downloadFailure(again);
      }
    }
    return { stream: verified(stream, fields.fileSha256) };
  }

  /** A re-upload request to the sender's phone; the message's media fields then point at the new upload. */
  private async reupload(message: WAMessage): Promise<void> {
    const socket = this.socket;
    if (!socket?.updateMediaMessage || this.socketState !== 'open') {
      throw new MediaDownloadError('MEDIA_EXPIRED', 'The file expired on WhatsApp and the device is not connected to ask the sender for it again', false);
    }
    try {
      await withTimeout(socket.updateMediaMessage(message), REUPLOAD_TIMEOUT_MS, () => new Error(`the phone did not answer within ${REUPLOAD_TIMEOUT_MS / 1000} s`));
    } catch (error) {
      // The phone answered that it cannot (Baileys: 404 not found, 412 decryption error, 418 general error): no point asking again.
      const answered = [404, 410, 412, 418].includes(statusCodeOf(error as Error) ?? 0);
      throw new MediaDownloadError('MEDIA_EXPIRED', `The file expired on WhatsApp and the sender's phone did not upload it again: ${(error as Error).message}`, answered);
    }
  }

  /**
   * The sender's phone number and LID. A person may be addressed by either; the other one comes
   * from, in order: the message key's alternate address (remoteJidAlt), the pairs stored in
   * whatsapp_lids (learnt from lid-mapping.update, contacts and earlier messages), and Baileys'
   * own LID store (signalRepository.lidMapping). A LID whose number is still unknown is reported
   * as the sender (`<digits>@lid`), which is not a number.
   */
  private senderOf(key: WAMessageKey): Promise<{ phone: string | undefined; lid: string | undefined }> {
    return this.addressOf(key.remoteJid!, key.remoteJidAlt, key.id);
  }

  /** A person's number and LID from one of their addresses and, if given, the other (see senderOf). */
  private async addressOf(jid: string, alternate: string | null | undefined, messageId: string | null | undefined): Promise<{ phone: string | undefined; lid: string | undefined }> {
    let phone = jidToPhone(jid) ?? jidToPhone(alternate);
    const lid = normalizeLid(jid) ?? (alternate ? normalizeLid(alternate) : undefined);
    if (!lid) return { phone, lid };
    if (phone) {
      await this.rememberLid(lid, phoneToJid(phone));
      return { phone, lid };
    }
    phone = await this.lookupLid(lid);
    if (!phone) {
      const pn = await this.socket?.signalRepository?.lidMapping?.getPNForLID(lid).catch((error: unknown) => {
        this.log.warn({ err: error }, 'reading the LID mapping of Baileys failed');
        return null;
      });
      phone = jidToPhone(pn);
      if (phone) await this.rememberLid(lid, phoneToJid(phone));
    }
    if (!phone && messageId) this.log.warn({ id: messageId }, 'incoming message from a @lid sender whose phone number WhatsApp has not shared; reported as <lid>@lid');
    return { phone, lid };
  }

  private async onLidMapping(mapping: WALidMapping): Promise<void> {
    await this.rememberLid(mapping.lid, mapping.pn);
  }

  private async rememberLid(lidJid: string | undefined, phoneJid: string | undefined): Promise<void> {
    const lid = lidJid ? normalizeLid(lidJid) : undefined;
    const phone = jidToPhone(phoneJid);
    if (!lid || !phone || this.lids.get(lid) === phone) return;
    const known = (await this.rows.lidPhone(lid)) === phone;
    this.lids.set(lid, phone);
    if (known) return;
    await this.rows.saveLid(lid, phone);
    // Chats kept under the LID become the number's (src/conversations applies it).
    await this.emit({ type: 'identity', lid, phoneNumber: phone });
  }

  /** Groups WhatsApp listed: kept, their members' LID pairs learnt, and reported as chats. */
  private async onGroups(groups: WAGroupMetadata[]): Promise<void> {
    if (groups.length === 0) return;
    for (const metadata of groups) {
      this.groups.set(metadata);
      for (const participant of metadata.participants) {
        const { phone, lid } = participantIds(participant);
        if (phone && lid) await this.rememberLid(lid, phoneToJid(phone));
      }
    }
    await this.emit({ type: 'groups', groups: groups.map((metadata) => toGroupInfo(metadata, (lid) => this.lids.get(lid))) });
  }

  /** A group changed (subject, members): its metadata is asked again. */
  private async refreshGroups(ids: string[]): Promise<void> {
    const socket = this.socket;
    if (!socket) return;
    const fresh: WAGroupMetadata[] = [];
    for (const id of ids) {
      this.groups.forget(id);
      try {
        fresh.push(await socket.groupMetadata(id));
      } catch (error) {
        this.log.warn({ err: error }, 'reading WhatsApp group metadata failed');
      }
    }
    await this.onGroups(fresh);
  }

  // ---- conversations ---------------------------------------------------------------------

  private connectedSocket(): WASocketLike {
    const socket = this.socket;
    if (this.closed || !socket || this.socketState !== 'open') throw new Error('The device is not connected to WhatsApp');
    return socket;
  }

  /**
   * Which numbers have WhatsApp: answers kept in whatsapp_numbers (as for sends) are reused, the
   * rest asked in one onWhatsApp query.
   */
  async checkNumbers(phoneNumbers: string[]): Promise<NumberCheck[]> {
    const socket = this.connectedSocket();
    const answers = new Map<string, boolean>();
    const missing: string[] = [];
    for (const phone of phoneNumbers) {
      const cached = await this.rows.cachedJid(phone, ON_NETWORK_CACHE_MS, OFF_NETWORK_CACHE_MS);
      if (cached) answers.set(phone, cached.jid !== null);
      else missing.push(phone);
    }
    if (missing.length > 0) {
      if (!socket.onWhatsApp) throw new Error('This WhatsApp socket cannot look numbers up');
      const results = (await socket.onWhatsApp(...missing.map(phoneToJid))) ?? [];
      const found = new Map(results.filter((r) => r.exists).map((r) => [jidToPhone(r.jid), r.jid]));
      for (const phone of missing) {
        const jid = found.get(phone) ?? null;
        await this.rows.saveJid(phone, jid);
        answers.set(phone, jid !== null);
      }
    }
    return phoneNumbers.map((phoneNumber) => ({ phoneNumber, onNetwork: answers.get(phoneNumber) ?? false }));
  }

  /** Reading a chat opens it, as on WhatsApp Web: the contact's presence is subscribed to. */
  async markChatRead(chat: string, messages: ReadMessage[]): Promise<void> {
    const socket = this.connectedSocket();
    await subscribePresence(socket, chat);
    if (messages.length > 0) await socket.readMessages(readKeys(chat, messages));
  }

  async sendPresence(chat: string, state: PresenceState): Promise<void> {
    const socket = this.connectedSocket();
    await subscribePresence(socket, chat);
    await socket.sendPresenceUpdate(PRESENCE[state], chatJid(chat));
  }

  // ---- group administration: WhatsApp's refusals become NetworkRefusal (groups.ts) -------------

  async createGroup(name: string, participants: string[]): Promise<GroupInfo> {
    const socket = this.connectedSocket();
    const metadata = await groupQuery(socket.groupCreate(name, participantJids(participants)));
    await this.onGroups([metadata]);
    return toGroupInfo(metadata, (lid) => this.lids.get(lid));
  }

  /** Asked of WhatsApp, not the cache: an admin's change is read back at once. */
  async groupInfo(group: string): Promise<GroupInfo> {
    const socket = this.connectedSocket();
    this.groups.forget(group);
    const metadata = await groupQuery(socket.groupMetadata(group));
    await this.onGroups([metadata]);
    return toGroupInfo(metadata, (lid) => this.lids.get(lid));
  }

  async renameGroup(group: string, name: string): Promise<void> {
    await groupQuery(this.connectedSocket().groupUpdateSubject(group, name));
  }

  async changeParticipants(group: string, action: ParticipantAction, phoneNumbers: string[]): Promise<ParticipantOutcome[]> {
    const answers = await groupQuery(this.connectedSocket().groupParticipantsUpdate(group, participantJids(phoneNumbers), action));
    return participantOutcomes(phoneNumbers, answers, (lid) => this.lids.get(lid));
  }

  async groupInviteCode(group: string): Promise<string> {
    const code = await groupQuery(this.connectedSocket().groupInviteCode(group));
    if (!code) throw new Error('WhatsApp answered without an invite code');
    return code;
  }

  async revokeGroupInvite(group: string): Promise<string> {
    const code = await groupQuery(this.connectedSocket().groupRevokeInvite(group));
    if (!code) throw new Error('WhatsApp answered without an invite code');
    return code;
  }

  async leaveGroup(group: string): Promise<void> {
    await groupQuery(this.connectedSocket().groupLeave(group));
    this.groups.forget(group);
  }

  private async lookupLid(lid: string): Promise<string | undefined> {
    const cached = this.lids.get(lid);
    if (cached) return cached;
    const phone = await this.rows.lidPhone(lid);
    if (phone) this.lids.set(lid, phone);
    return phone;
  }

  private async onContacts(contacts: WAContact[]): Promise<void> {
    // A contact that carries both of its addresses tells us the pair (Baileys 7: id is either form; lid / phoneNumber the other).
    for (const contact of contacts) {
      if (!contact.id) continue;
      const lid = [contact.lid, contact.id].find((jid) => isLidJid(jid));
      const phone = [contact.phoneNumber, contact.id].find((jid) => jidToPhone(jid));
      if (lid && phone) await this.rememberLid(lid, phone);
    }
  }

  /** Unlinked: what was learnt about this link goes (LID pairs, a stop, a bulk pause); the next link starts clean. */
  private async forgetLink(): Promise<void> {
    this.lids.clear();
    this.groups.clear();
    this.stopped = undefined;
    await this.rows.forgetLink();
  }

  // ---- control ---------------------------------------------------------------------------

  async reconnect(): Promise<void> {
    if (this.closed || this.socketState !== 'idle') return;
    if (!this.linked && this.retryTimer) return; // linking retries on its own schedule
    await this.unstop();
    if (this.flaps > 0) {
      const delay = alongSchedule(this.options.flapBackoffMs ?? FLAP_BACKOFF_MS, this.flaps);
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
    await this.unstop();
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
      await Promise.resolve(socket.logout('Removed in Waygate')).catch((error: unknown) => this.log.warn({ err: error }, 'WhatsApp logout request failed'));
    }
    await this.close();
    await this.store.clear();
    await this.forgetLink();
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
    await this.mediaDispatcher?.close().catch(() => undefined);
    this.onClosed(this);
  }
}

/** A JID without its device suffix (`<user>@<server>`), as poll votes are encrypted for it. */
function normalizedJid(jid: string): string {
  const parsed = parseJid(jid);
  return parsed ? `${parsed.user}@${parsed.server}` : jid;
}

/**
 * Ends a socket in whatever state it is (connecting, open, closing, closed) without letting its
 * failure escape: Baileys 7's end() is async and awaits the websocket's close, and a websocket
 * ended while connecting reports an error ("closed before the connection was established").
 */
function endSocket(socket: WASocketLike, error: Error | undefined, log: Logger): void {
  try {
    void Promise.resolve(socket.end(error)).catch((failure: unknown) => log.debug({ err: failure }, 'ending the WhatsApp socket failed (already closed)'));
  } catch (failure) {
    log.debug({ err: failure }, 'ending the WhatsApp socket failed (already closed)');
  }
}

/** `work`, or the error `onTimeout` makes when it takes longer than `ms`. */
/** A download failure of Baileys (a Boom with the HTTP status, or a network error) as the receiver sees it. */
function downloadFailure(error: unknown): MediaDownloadError {
  const status = statusCodeOf(error as Error);
  const message = (error as Error).message;
  if (status === 404 || status === 410) return new MediaDownloadError('MEDIA_EXPIRED', `The file is no longer on WhatsApp's servers (${status}): ${message}`, true);
  if (status !== undefined && status >= 400 && status < 500 && status !== 429) return new MediaDownloadError('MEDIA_UNREACHABLE', `WhatsApp's media server answered ${status}: ${message}`, true);
  return new MediaDownloadError('MEDIA_UNREACHABLE', `The file could not be downloaded from WhatsApp: ${message}`, false);
}

/** The decrypted bytes, failing at the end if they are not the file the message describes (its fileSha256). */
function verified(stream: Readable, fileSha256: Uint8Array | string | null | undefined): IncomingFile['stream'] {
  const expected = typeof fileSha256 === 'string' ? Buffer.from(fileSha256, 'base64') : fileSha256 ? Buffer.from(fileSha256) : undefined;
  async function* check(): AsyncGenerator<Uint8Array> {
    const hash = createHash('sha256');
    for await (const chunk of stream as AsyncIterable<Uint8Array>) {
      hash.update(chunk);
      yield chunk;
    }
    if (expected && expected.length > 0 && !hash.digest().equals(expected)) {
      throw new MediaDownloadError('MEDIA_CORRUPT', 'The downloaded file does not match the SHA-256 the sender gave it', false);
    }
  }
  return Object.assign(check(), { destroy: (error?: Error) => void stream.destroy(error) });
}

async function withTimeout<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(onTimeout()), ms);
        timer.unref();
      }),
    ]);
  } finally {
    clearTimeout(timer);
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
  private readonly devices: DeviceStore;

  constructor(private readonly options: WhatsAppNetworkOptions) {
    this.devices = new DeviceStore(options.database);
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
    const { bus, log } = this.options;
    const deviceId = session.device.id;
    const request = await this.devices.openPairingRequest(deviceId);
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
    await this.devices.answerPairing(deviceId, request.request_id, update);
    await bus.publish('waygate_devices', `pairing:${deviceId}`);
  }

  async close(): Promise<void> {
    this.unsubscribe();
    await Promise.all([...this.sessions.values()].map((session) => session.close()));
  }
}
