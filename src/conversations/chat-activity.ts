/**
 * Keeps chats up to date with outgoing traffic off the send path: the worker pushes the messages
 * whose outcome it wrote (sent or failed), and one statement per batch makes them their chats'
 * last messages (chat-store.ts recordOutgoing). One batch at a time, so two batches never wait on
 * each other's chat rows. Listeners (the dashboard's stream) hear of changed chats on the bus, at
 * most once per ANNOUNCE_MS a device, the last change of a burst included.
 */
import type { Logger } from 'pino';
import type { Database } from '../platform/database.js';
import type { Bus } from '../platform/bus.js';
import { BatchPump } from '../platform/batch-pump.js';
import { recordOutgoing, type OutgoingActivity } from './chat-store.js';
import type { ContactPresenceState } from './chat-record.js';

const MAX_BATCH = 5_000;

/** The waygate_presence payload: `<deviceId> <state> <chatId>` (none of the three holds a space). */
export const presenceNews = (deviceId: string, chatId: string, state: ContactPresenceState): string => `${deviceId} ${state} ${chatId}`;

export function parsePresenceNews(payload: string): { deviceId: string; state: ContactPresenceState; chatId: string } | undefined {
  const [deviceId, state, chatId] = payload.split(' ');
  return deviceId && state && chatId ? { deviceId, state: state as ContactPresenceState, chatId } : undefined;
}
/**
 * A device's chat changes are announced at most this often. During a bulk job or a stream of
 * direct sends its chats change with every outcome batch (tens of times a second); each
 * announcement is a NOTIFY that wakes every listening connection and, on the dashboard, a refetch.
 */
const ANNOUNCE_MS = 250;

export class ChatActivity {
  private readonly pump = new BatchPump<OutgoingActivity>((batch) => this.write(batch), { maxInFlight: 1, maxBatch: MAX_BATCH });
  /** Devices announced within the last ANNOUNCE_MS, and those of them that changed again since. */
  private readonly cooling = new Set<string>();
  private readonly changedSince = new Set<string>();

  constructor(
    private readonly database: Database,
    private readonly bus: Bus,
    private readonly log: Logger,
  ) {}

  /** Messages handed to the network whose outcome is written. */
  outgoing(messages: OutgoingActivity[]): void {
    if (messages.length > 0) this.pump.push(...messages);
  }

  /** A chat of the device changed (a message arrived, it was read, the group list changed). */
  changed(deviceId: string): void {
    if (this.cooling.has(deviceId)) this.changedSince.add(deviceId);
    else this.announce(deviceId);
  }

  /** Announces now; a change during the next ANNOUNCE_MS is announced when it ends. */
  private announce(deviceId: string): void {
    this.bus.publishSoon('waygate_chats', deviceId);
    this.cooling.add(deviceId);
    setTimeout(() => {
      this.cooling.delete(deviceId);
      if (this.changedSince.delete(deviceId)) this.announce(deviceId);
    }, ANNOUNCE_MS).unref();
  }

  /** Resolves once every pushed message is written. */
  drain(): Promise<void> {
    return this.pump.drain();
  }

  private async write(batch: OutgoingActivity[]): Promise<void> {
    try {
      await recordOutgoing(this.database, batch);
      for (const deviceId of new Set(batch.map((b) => b.deviceId))) this.changed(deviceId);
    } catch (error) {
      this.log.error({ err: error, messages: batch.length }, 'could not bring chats up to date with sent messages');
    }
  }
}
