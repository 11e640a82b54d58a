/**
 * Keeps chats up to date with outgoing traffic off the send path: the worker pushes the messages
 * whose outcome it wrote (sent or failed), and one statement per batch makes them their chats'
 * last messages (chat-store.ts recordOutgoing). One batch at a time, so two batches never wait on
 * each other's chat rows. Listeners (the dashboard's stream) hear of changed chats on the bus.
 */
import type { Logger } from 'pino';
import type { Database } from '../platform/database.js';
import type { Bus } from '../platform/bus.js';
import { BatchPump } from '../platform/batch-pump.js';
import { recordOutgoing, type OutgoingActivity } from './chat-store.js';

const MAX_BATCH = 5_000;

export class ChatActivity {
  private readonly pump = new BatchPump<OutgoingActivity>((batch) => this.write(batch), { maxInFlight: 1, maxBatch: MAX_BATCH });

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
    this.bus.publishSoon('waygate_chats', deviceId);
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
