/**
 * The worker side of conversations, for the devices whose sessions this worker holds: the
 * network's group lists and LID ↔ number pairs go into chats, and the API's requests
 * (device-requests.ts) are served with the device's session, one at a time per device. Number
 * look-ups are paced per device (NUMBER_CHECK_INTERVAL_MS between two look-ups on the network):
 * bursts of look-ups are a ban signal on WhatsApp.
 */
import type { Logger } from 'pino';
import type { Database } from '../platform/database.js';
import type { Bus } from '../platform/bus.js';
import type { NetworkEvent, NetworkSession } from '../network/network.js';
import { applyIdentity, recordPresence, upsertGroups } from './chat-store.js';
import { isLidChatId } from './chat-ids.js';
import { presenceNews, type ChatActivity } from './chat-activity.js';
import { answerRequest, deleteRequest, openRequests, saveChecks, type OpenRequest } from './device-requests.js';

/** A presence older than this is not shown any more (the moment passed). */
const PRESENCE_STALE_MS = 30_000;

export class ConversationWorker {
  private readonly serving = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private readonly lastCheckAt = new Map<string, number>();

  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    private readonly chats: ChatActivity,
    private readonly log: Logger,
    private readonly numberCheckIntervalMs: number,
  ) {}

  async onNetworkEvent(deviceId: string, event: Extract<NetworkEvent, { type: 'groups' | 'identity' | 'presence' }>): Promise<void> {
    if (event.type === 'presence') return this.onPresence(deviceId, event);
    if (event.type === 'groups') await upsertGroups(this.database, deviceId, event.groups);
    else await applyIdentity(this.database, deviceId, event.lid, event.phoneNumber);
    this.chats.changed(deviceId);
  }

  /** A contact's presence: a chat.presence event, and news for the dashboard's open pages. */
  private async onPresence(deviceId: string, event: Extract<NetworkEvent, { type: 'presence' }>): Promise<void> {
    const hidden = isLidChatId(event.from);
    const recorded = await recordPresence(this.database, deviceId, {
      deviceId,
      chatId: event.chat,
      from: hidden ? null : event.from,
      fromLid: event.fromLid ?? (hidden ? event.from : null),
      state: event.state,
      lastSeen: event.lastSeen?.toISOString() ?? null,
      at: event.at.toISOString(),
    });
    if (!recorded) return;
    this.bus.local('waygate_webhooks', 'due');
    this.bus.publishSoon('waygate_presence', presenceNews(deviceId, event.chat, event.state));
  }

  /** Serves the device's open requests now, or right after the round in progress. */
  serve(deviceId: string, session: () => NetworkSession | undefined): Promise<void> {
    const running = this.serving.get(deviceId);
    if (running) {
      this.again.add(deviceId);
      return running;
    }
    const round = this.round(deviceId, session)
      .catch((error: unknown) => this.log.error({ err: error, deviceId }, 'serving device requests failed'))
      .finally(() => {
        this.serving.delete(deviceId);
        if (this.again.delete(deviceId)) void this.serve(deviceId, session);
      });
    this.serving.set(deviceId, round);
    return round;
  }

  private async round(deviceId: string, session: () => NetworkSession | undefined): Promise<void> {
    for (;;) {
      const requests = await openRequests(this.database, deviceId);
      if (requests.length === 0) return;
      for (const request of requests) {
        const current = session();
        if (!current) return;
        await this.handle(deviceId, current, request);
      }
    }
  }

  private async handle(deviceId: string, session: NetworkSession, request: OpenRequest): Promise<void> {
    try {
      if (request.kind === 'check') {
        const { phoneNumbers } = request.payload as { phoneNumbers: string[] };
        const wait = (this.lastCheckAt.get(deviceId) ?? 0) + this.numberCheckIntervalMs - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        this.lastCheckAt.set(deviceId, Date.now());
        const checks = await session.checkNumbers(phoneNumbers);
        await saveChecks(this.database, deviceId, checks);
        await answerRequest(this.database, request.id, { checks }, null);
        await this.bus.publish('waygate_devices', `answer:${request.id}`);
        return;
      }
      if (request.kind === 'read') {
        const { chat, messages } = request.payload as { chat: string; messages: { networkMessageId: string; from: string }[] };
        await session.markChatRead(chat, messages);
      } else {
        const { chat, state } = request.payload as { chat: string; state: 'typing' | 'recording' | 'paused' };
        if (Date.now() - request.created_at.getTime() < PRESENCE_STALE_MS) await session.sendPresence(chat, state);
      }
      await deleteRequest(this.database, request.id);
    } catch (error) {
      this.log.warn({ err: error, deviceId, kind: request.kind }, 'a device request failed');
      if (request.kind === 'check') {
        await answerRequest(this.database, request.id, null, (error as Error).message);
        await this.bus.publish('waygate_devices', `answer:${request.id}`);
      } else {
        await deleteRequest(this.database, request.id);
      }
    }
  }
}
