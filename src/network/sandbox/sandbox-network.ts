/**
 * The sandbox network: behaves like a real one through the Network interface, with its world in
 * the database (see world.ts). One poller per process serves every session the process holds;
 * bus notifications wake it early. Sends issued in the same tick, by any of its sessions, go to
 * the world as one batch, which is what lets the sandbox take tens of thousands of messages a second.
 */
import { BatchedCall } from '../../platform/batch-pump.js';
import type { Bus } from '../../platform/bus.js';
import { MEDIA_LIMITS, openMedia } from '../../outbound/media.js';
import { GuardedHttp } from '../../outbound/ssrf.js';
import {
  isMediaType,
  MediaDownloadError,
  NetworkRefusal,
  type DeviceInfo,
  type GroupInfo,
  type IncomingFile,
  type MediaType,
  type MessageRef,
  type Network,
  type NetworkEvent,
  type NetworkSession,
  type NumberCheck,
  type OutgoingMessage,
  type ParticipantAction,
  type ParticipantOutcome,
  type PresenceState,
  type ReadMessage,
  type SendResult,
  type SessionHandlers,
} from '../network.js';
import { ENDING, magicEnding, type DueReceipt, type IncomingRow, type PhoneRow, type SandboxGroup, type SandboxPayload, type SandboxWorld } from './world.js';

/** What the sandbox answers a group request of a device that is not in the group. */
const notInGroup = (): NetworkRefusal => new NetworkRefusal('The device is not in this group');

/** A sandbox group as the network lists it: the first member (the device's number) created it and is an admin, as are those promoted. */
const groupInfo = (group: SandboxGroup): GroupInfo => ({
  id: group.id,
  name: group.name,
  participants: group.members.map((phoneNumber, index) => ({ phoneNumber, admin: index === 0 || group.admins.includes(phoneNumber) })),
  createdAt: group.createdAt,
});

const POLL_MS = 100;
/**
 * Due receipts are looked for at most this often (a poll also runs on every bus notification):
 * each look is a statement per poll even when nothing is due, and a receipt is handed over at
 * most this much after its time (the time it carries is its own).
 */
const RECEIPT_POLL_MS = 250;

/** An incoming message's kind fields, replies and reactions, as the network hands them over. */
function incomingKind(payload: SandboxPayload | null): Pick<Extract<NetworkEvent, { type: 'incoming' }>, 'kind' | 'reaction' | 'replyTo' | 'mentions'> {
  if (!payload) return {};
  const { reaction, replyTo, mentions, vote: _vote, edit: _edit, delete: _delete, group: _group, groupAdded: _groupAdded, ...kind } = payload;
  return { kind: Object.keys(kind).length > 0 ? kind : undefined, reaction, replyTo, mentions };
}

class SandboxSession implements NetworkSession {
  private chain: Promise<void> = Promise.resolve();
  private qrTimer: NodeJS.Timeout | undefined;
  private lastVersion = -1;
  private linked = false;
  private closed = false;

  constructor(
    readonly device: DeviceInfo,
    private readonly network: SandboxNetwork,
    private readonly handlers: SessionHandlers,
  ) {}

  /** Events are reported one at a time, in order, each awaited. */
  emit(event: NetworkEvent): Promise<void> {
    const next = this.chain.then(() => {
      // A closed session hands nothing over, so nothing is acknowledged on its behalf.
      if (this.closed) throw new Error('session closed');
      return this.handlers.onEvent(event);
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  async start(): Promise<void> {
    const [phone] = await this.network.world.phones([this.device.id]);
    if (phone && phone.state !== 'unlinked') {
      await this.onPhone(phone);
      return;
    }
    // Never linked, or unlinked before (a device being linked again): show a QR code. The old
    // unlink is history, not news; only a newer phone state (a scan) is reported.
    if (phone) this.lastVersion = phone.version;
    await this.showQr();
  }

  async onPhone(phone: PhoneRow): Promise<void> {
    if (phone.version === this.lastVersion || this.closed) return;
    this.lastVersion = phone.version;
    if (phone.state === 'linked') {
      this.stopQr();
      this.linked = true;
      await this.emit({ type: 'connected', phoneNumber: phone.phone_number });
      // As WhatsApp does on connecting: the number's groups.
      const groups = await this.network.world.groups(this.device.id);
      if (groups.length > 0) await this.emit({ type: 'groups', groups: groups.map(groupInfo) });
    } else if (phone.state === 'dropped') {
      this.linked = false;
      await this.emit({ type: 'disconnected', reason: 'network', message: 'The connection to the network dropped' });
    } else {
      this.linked = false;
      this.stopQr();
      await this.emit({ type: 'disconnected', reason: 'logout', message: 'The device was unlinked from the phone' });
    }
  }

  private async showQr(): Promise<void> {
    if (this.closed || this.linked) return;
    const ttl = this.network.qrMs;
    const { code, expiresAt } = await this.network.world.issueQr(this.device.id, ttl);
    await this.emit({ type: 'qr', code, expiresAt });
    // A new code is shown before the current one expires, so a scan never meets an expired code.
    this.qrTimer = setTimeout(() => void this.showQr().catch(() => undefined), Math.max(500, ttl - Math.min(5_000, ttl / 4)));
    this.qrTimer.unref();
  }

  private stopQr(): void {
    if (this.qrTimer) clearTimeout(this.qrTimer);
    this.qrTimer = undefined;
  }

  send(message: OutgoingMessage): Promise<SendResult> {
    if (this.closed || !this.linked) {
      return Promise.resolve({ ok: false, permanent: false, code: 'DEVICE_NOT_CONNECTED', message: 'The device is not connected' });
    }
    return this.network.takeSend(this.device.id, message);
  }

  edit(target: MessageRef, content: string): Promise<SendResult> {
    return this.whenLinked(() => this.network.world.changeSent(this.device.id, target.networkMessageId, { content }));
  }

  revoke(target: MessageRef): Promise<SendResult> {
    return this.whenLinked(() => this.network.world.changeSent(this.device.id, target.networkMessageId, { delete: true }));
  }

  markRead(target: MessageRef): Promise<SendResult> {
    return this.whenLinked(async () => {
      await this.network.world.markRead(this.device.id, [target.networkMessageId], target.chat);
      return { ok: true };
    });
  }

  private async whenLinked(work: () => Promise<SendResult>): Promise<SendResult> {
    if (this.closed || !this.linked) return { ok: false, permanent: false, code: 'DEVICE_NOT_CONNECTED', message: 'The device is not connected' };
    return work();
  }

  /** Sandbox: numbers ending 0000 are not on the network. */
  async checkNumbers(phoneNumbers: string[]): Promise<NumberCheck[]> {
    this.requireLinked();
    return phoneNumbers.map((phoneNumber) => ({ phoneNumber, onNetwork: magicEnding(phoneNumber) !== ENDING.notOnNetwork }));
  }

  /** A chat read: a read receipt for each message (GET /sandbox/reads lists them). */
  async markChatRead(chat: string, messages: ReadMessage[]): Promise<void> {
    this.requireLinked();
    await this.network.world.markRead(this.device.id, messages.map((message) => message.networkMessageId), chat);
  }

  /** Typing, recording or paused in a chat: the network keeps the last (GET /sandbox/presence). */
  async sendPresence(chat: string, state: PresenceState): Promise<void> {
    this.requireLinked();
    await this.network.world.showPresence(this.device.id, chat, state);
  }

  /** A group with these members; numbers not on the network are left out, as WhatsApp does. */
  async createGroup(name: string, participants: string[]): Promise<GroupInfo> {
    const ownNumber = await this.ownNumber();
    const members = participants.filter((phone) => magicEnding(phone) !== ENDING.notOnNetwork);
    const group = await this.network.world.createGroup({ accountId: this.device.accountId, deviceId: this.device.id, ownNumber, name, members });
    return groupInfo(group);
  }

  async groupInfo(group: string): Promise<GroupInfo> {
    this.requireLinked();
    const [found] = await this.network.world.groups(this.device.id, [group]);
    if (!found) throw notInGroup();
    return groupInfo(found);
  }

  async renameGroup(group: string, name: string): Promise<void> {
    this.requireLinked();
    if (!(await this.network.world.renameGroup(this.device.id, group, name))) throw notInGroup();
  }

  async changeParticipants(group: string, action: ParticipantAction, phoneNumbers: string[]): Promise<ParticipantOutcome[]> {
    this.requireLinked();
    const outcomes = await this.network.world.changeMembers(this.device.id, group, action, phoneNumbers);
    if (!outcomes) throw notInGroup();
    return outcomes;
  }

  async groupInviteCode(group: string): Promise<string> {
    return this.inviteCode(group, false);
  }

  async revokeGroupInvite(group: string): Promise<string> {
    return this.inviteCode(group, true);
  }

  private async inviteCode(group: string, revoke: boolean): Promise<string> {
    this.requireLinked();
    const code = await this.network.world.inviteCode(this.device.id, group, revoke);
    if (code === null) throw notInGroup();
    return code;
  }

  async leaveGroup(group: string): Promise<void> {
    this.requireLinked();
    if (!(await this.network.world.leaveGroup(this.device.id, group))) throw notInGroup();
  }

  private requireLinked(): void {
    if (this.closed || !this.linked) throw new Error('The device is not connected');
  }

  private async ownNumber(): Promise<string> {
    this.requireLinked();
    const [phone] = await this.network.world.phones([this.device.id]);
    if (!phone) throw new Error('The device is not connected');
    return phone.phone_number;
  }

  async reconnect(): Promise<void> {
    await this.network.world.reconnect(this.device.id);
    this.network.wake();
  }

  async logout(): Promise<void> {
    await this.network.world.setPhoneState(this.device.id, 'unlinked');
    await this.close();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stopQr();
    this.network.forget(this.device.id, this);
    await this.chain;
  }
}

export class SandboxNetwork implements Network {
  readonly kind = 'sandbox' as const;
  private readonly sessions = new Map<string, SandboxSession>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private again = false;
  /** When due receipts were last looked for (see RECEIPT_POLL_MS). */
  private receiptsLookedAt = 0;
  private unsubscribe: (() => void) | undefined;
  /** Incoming messages being handed over (by seq): each session takes its own in order, beside the polls. */
  private readonly handing = new Map<number, Promise<void>>();
  /** Sends of every session, batched: one statement takes what was sent in the same turn, or while two were in flight. */
  private readonly handovers = new BatchedCall((sends: { deviceId: string; message: OutgoingMessage; at: Date }[]) => this.world.accept(sends), { maxInFlight: 2, maxBatch: 1_000 });
  /** The phone's files are fetched from their mediaUrl when Waygate downloads them, as a recipient downloads from WhatsApp's servers. */
  private readonly http: GuardedHttp;

  constructor(
    readonly world: SandboxWorld,
    private readonly bus: Bus,
    readonly qrMs: number,
    allowPrivateUrls: boolean,
  ) {
    this.http = new GuardedHttp(allowPrivateUrls);
  }

  async openSession(device: DeviceInfo, handlers: SessionHandlers): Promise<NetworkSession> {
    const session = new SandboxSession(device, this, handlers);
    this.sessions.set(device.id, session);
    if (!this.timer) {
      this.timer = setInterval(() => this.wake(), POLL_MS);
      this.timer.unref();
      this.unsubscribe = this.bus.subscribe('waygate_sandbox', (deviceId) => {
        if (this.sessions.has(deviceId)) this.wake();
      });
    }
    await session.start();
    return session;
  }

  /** A session's send: received by the network now, recorded by the world in the next batch. */
  takeSend(deviceId: string, message: OutgoingMessage): Promise<SendResult> {
    return this.handovers.call({ deviceId, message, at: new Date() });
  }

  forget(deviceId: string, session: SandboxSession): void {
    if (this.sessions.get(deviceId) !== session) return;
    this.sessions.delete(deviceId);
    this.world.forgetReceipts(deviceId);
  }

  /** Runs a poll now, or right after the one in progress. */
  wake(): void {
    if (this.polling) {
      this.again = true;
      return;
    }
    this.polling = this.poll()
      .catch(() => undefined)
      .finally(() => {
        this.polling = undefined;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  private async poll(): Promise<void> {
    const ids = [...this.sessions.keys()];
    if (ids.length === 0) return;
    for (const phone of await this.world.phones(ids)) await this.sessions.get(phone.device_id)?.onPhone(phone);

    if (Date.now() - this.receiptsLookedAt >= RECEIPT_POLL_MS) await this.handReceipts(ids);

    // Handed over without waiting: storing one may take a download, which must hold up neither
    // the receipts of this poll nor the other devices. A session takes its own in order.
    for (const incoming of await this.world.pendingIncoming(ids, [...this.handing.keys()])) {
      const session = this.sessions.get(incoming.deviceId);
      if (!session) continue;
      const handed = this.handOver(session, incoming)
        .catch(() => undefined)
        .finally(() => this.handing.delete(incoming.seq));
      this.handing.set(incoming.seq, handed);
    }
  }

  /** Hands the due receipts to their sessions; a full batch is followed by another look at the next poll. */
  private async handReceipts(ids: string[]): Promise<void> {
    this.receiptsLookedAt = Date.now();
    const look = await this.world.dueReceipts(ids);
    if (look.full) this.receiptsLookedAt = 0;
    const byDevice = new Map<string, DueReceipt[]>(ids.map((id) => [id, []]));
    for (const receipt of look.receipts) byDevice.get(receipt.deviceId)?.push(receipt);
    // Every device's at once: Waygate writes the receipts of an account's devices together. A
    // device whose session did not take them (it closed, or Waygate failed) looks again.
    const handed = await Promise.all(
      [...byDevice].map(async ([deviceId, list]) => {
        const session = this.sessions.get(deviceId);
        if (!session) return [];
        if (list.length === 0) return [deviceId];
        try {
          await session.emit({ type: 'receipts', receipts: list.map(({ networkMessageId, status, at }) => ({ networkMessageId, status, at })) });
          return [deviceId];
        } catch {
          return [];
        }
      }),
    );
    // (A session that closed meanwhile forgot its cursors; they stay forgotten.)
    await this.world.markReceipts(look, handed.flat().filter((id) => this.sessions.has(id)));
  }

  /** One incoming message (or the other side's presence, vote, edit or delete) to its session; acknowledged only once Waygate has stored it. */
  private async handOver(session: SandboxSession, incoming: IncomingRow): Promise<void> {
    const added = incoming.payload?.groupAdded;
    if (added) {
      const groups = await this.world.groups(incoming.deviceId, [added]);
      await session.emit({ type: 'groups', groups: groups.map(groupInfo) });
      await this.world.ackIncoming(incoming.seq);
      return;
    }
    const { vote, edit, delete: deleted, presence } = incoming.payload ?? {};
    const action: NetworkEvent | undefined = presence
      ? {
          type: 'presence',
          chat: incoming.payload?.group ?? incoming.from,
          from: incoming.from,
          state: presence,
          lastSeen: presence === 'offline' ? incoming.createdAt : undefined,
          at: incoming.createdAt,
        }
      : vote
        ? { type: 'poll-vote', pollNetworkMessageId: vote.networkMessageId, voter: incoming.from, options: vote.options, at: incoming.createdAt }
        : edit
          ? { type: 'edited', networkMessageId: edit.networkMessageId, chat: incoming.from, fromMe: false, content: edit.content, at: incoming.createdAt }
          : deleted
            ? { type: 'deleted', networkMessageId: deleted.networkMessageId, chat: incoming.from, fromMe: false, at: incoming.createdAt }
            : undefined;
    if (action) {
      await session.emit(action);
    } else {
      const { mediaUrl, type } = incoming;
      await session.emit({
        type: 'incoming',
        networkMessageId: incoming.networkMessageId,
        from: incoming.from,
        messageType: type,
        content: incoming.content,
        download: mediaUrl && isMediaType(type) ? () => this.download(mediaUrl, type) : undefined,
        ...incomingKind(incoming.payload),
        chat: incoming.payload?.group,
        at: incoming.createdAt,
      });
    }
    await this.world.ackIncoming(incoming.seq);
  }

  /** The phone's file, from the URL it was sent with (through the SSRF guard, within its type's cap). */
  private async download(url: string, type: MediaType): Promise<IncomingFile> {
    const opened = await openMedia(this.http, url, MEDIA_LIMITS[type], type);
    if (!opened.ok) throw new MediaDownloadError(opened.code, opened.message, opened.permanent);
    return { stream: opened.body, mimeType: type === 'STICKER' ? 'image/webp' : opened.mimeType, fileName: opened.fileName };
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.unsubscribe?.();
    await Promise.all([...this.sessions.values()].map((session) => session.close()));
    await this.handovers.drain();
    await this.polling;
    await Promise.all(this.handing.values());
    await this.http.close();
  }
}
