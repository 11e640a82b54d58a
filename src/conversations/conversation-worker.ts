/**
 * The worker side of conversations, for the devices whose sessions this worker holds: the
 * network's group lists and LID ↔ number pairs go into chats, and the API's requests
 * (device-requests.ts: look-ups, reads, presence, a group admin's changes) are served with the
 * device's session, one at a time per device. Number look-ups are paced per device
 * (NUMBER_CHECK_INTERVAL_MS between two look-ups on the network): bursts of look-ups are a ban
 * signal on WhatsApp.
 */
import type { Logger } from 'pino';
import type { Database } from '../platform/database.js';
import type { Bus } from '../platform/bus.js';
import { NetworkRefusal, type GroupInfo, type NetworkEvent, type NetworkSession } from '../network/network.js';
import { applyIdentity, leftGroup, recordPresence, upsertGroups } from './chat-store.js';
import { isLidChatId } from './chat-ids.js';
import { presenceNews, type ChatActivity } from './chat-activity.js';
import { ANSWERED_KINDS, answerRequest, deleteRequest, openRequests, saveChecks, type DeviceAnswer, type DeviceRequest, type GroupChange, type OpenRequest } from './device-requests.js';

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

  /** A request the API waits for is answered (or its failure told); any other is done and removed. */
  private async handle(deviceId: string, session: NetworkSession, request: OpenRequest): Promise<void> {
    const answered = ANSWERED_KINDS.has(request.kind);
    try {
      const answer = await this.perform(deviceId, session, request);
      if (answered) await this.answer(request.id, answer ?? {}, null);
      else await deleteRequest(this.database, request.id);
    } catch (error) {
      this.log.warn({ err: error, deviceId, kind: request.kind }, 'a device request failed');
      if (!answered) await deleteRequest(this.database, request.id);
      else if (error instanceof NetworkRefusal) await this.answer(request.id, { refused: error.message }, null);
      else await this.answer(request.id, null, (error as Error).message);
    }
  }

  private async answer(requestId: string, answer: DeviceAnswer | null, error: string | null): Promise<void> {
    await answerRequest(this.database, requestId, answer, error);
    await this.bus.publish('waygate_devices', `answer:${requestId}`);
  }

  private async perform(deviceId: string, session: NetworkSession, request: OpenRequest): Promise<DeviceAnswer | undefined> {
    const typed = { kind: request.kind, payload: request.payload } as DeviceRequest;
    switch (typed.kind) {
      case 'check': {
        const wait = (this.lastCheckAt.get(deviceId) ?? 0) + this.numberCheckIntervalMs - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        this.lastCheckAt.set(deviceId, Date.now());
        const checks = await session.checkNumbers(typed.payload.phoneNumbers);
        await saveChecks(this.database, deviceId, checks);
        return { checks };
      }
      case 'read':
        await session.markChatRead(typed.payload.chat, typed.payload.messages);
        return undefined;
      case 'presence':
        if (Date.now() - request.created_at.getTime() < PRESENCE_STALE_MS) await session.sendPresence(typed.payload.chat, typed.payload.state);
        return undefined;
      case 'group':
        return this.changeGroup(deviceId, session, typed.payload);
    }
  }

  /** A group admin's change on the network; the group's chat is then read back from it, so the API answers with what WhatsApp has. */
  private async changeGroup(deviceId: string, session: NetworkSession, change: GroupChange): Promise<DeviceAnswer> {
    const readBack = async (group: GroupInfo): Promise<void> => {
      await upsertGroups(this.database, deviceId, [group]);
      this.chats.changed(deviceId);
    };
    switch (change.action) {
      case 'create': {
        const group = await session.createGroup(change.name, change.participants);
        await readBack(group);
        return { groupId: group.id };
      }
      case 'rename':
        await session.renameGroup(change.group, change.name);
        await readBack(await session.groupInfo(change.group));
        return {};
      case 'participants': {
        const outcomes = await session.changeParticipants(change.group, change.change, change.phoneNumbers);
        await readBack(await session.groupInfo(change.group));
        return { outcomes };
      }
      case 'invite':
        return { inviteCode: change.revoke ? await session.revokeGroupInvite(change.group) : await session.groupInviteCode(change.group) };
      case 'leave':
        await session.leaveGroup(change.group);
        await leftGroup(this.database, deviceId, change.group);
        this.chats.changed(deviceId);
        return {};
    }
  }
}
