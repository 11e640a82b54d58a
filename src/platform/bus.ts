/**
 * Cross-process notifications over PostgreSQL LISTEN/NOTIFY (PGlite implements them too, for its
 * single process). Used to wake workers and waiters promptly; never the only carrier of state:
 * every listener also polls, so a lost notification only costs latency.
 */
import pg from 'pg';
import type { Database } from './database.js';
import type { MessageRow } from '../messaging/message-model.js';

/**
 * The channels, each with the in-process `detail` its local deliveries may carry (data that
 * saves the listener a query; never sent through NOTIFY).
 */
export interface BusChannels {
  /** A device id (messages to send), 'actions:<deviceId>' (edits, deletes, read receipts to send), 'fanout', or 'cancel:<jobId>'. */
  waygate_dispatch: never;
  /** Comma-separated ids of direct sends whose outcome is written; locally, their rows as written. */
  waygate_acks: MessageRow[];
  waygate_devices: never;
  waygate_sandbox: never;
  waygate_webhooks: never;
  waygate_tokens: never;
  /** A device id: one of its chats changed (a message, a read, its groups). */
  waygate_chats: never;
  /** A contact's presence in a chat of a device: presenceNews (src/conversations/chat-activity.ts). */
  waygate_presence: never;
}
export type BusChannel = keyof BusChannels;
/** `detail` is set only for local deliveries. */
type Handler<C extends BusChannel = BusChannel> = (payload: string, detail?: BusChannels[C]) => void;

export interface Bus {
  /** Notifies every process, this one included (through LISTEN). */
  publish(channel: BusChannel, payload: string): Promise<void>;
  /** Notifies this process's subscribers now, without a round trip (they may hear a publish of the same news again). */
  local<C extends BusChannel>(channel: C, payload: string, detail?: BusChannels[C]): void;
  /**
   * Notifies every process soon: identical notifications raised in the same tick go out as one
   * NOTIFY, outside any data-writing transaction (PostgreSQL serialises the commits of
   * transactions that notify, so a NOTIFY inside every request's transaction caps throughput).
   */
  publishSoon(channel: BusChannel, payload: string): void;
  subscribe<C extends BusChannel>(channel: C, handler: Handler<C>): () => void;
  close(): Promise<void>;
}

/** Coalesces notifications raised in one tick into one NOTIFY each. */
function coalescer(publish: (channel: BusChannel, payload: string) => Promise<void>): (channel: BusChannel, payload: string) => void {
  let pending = new Map<string, [BusChannel, string]>();
  let scheduled = false;
  return (channel, payload) => {
    pending.set(`${channel}\u0000${payload}`, [channel, payload]);
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      const batch = pending;
      pending = new Map();
      scheduled = false;
      for (const [c, p] of batch.values()) void publish(c, p).catch(() => undefined);
    });
  };
}

export function createBus(database: Database): Bus {
  // Keyed by channel: a channel's handlers are only ever given that channel's detail.
  const handlers = new Map<string, Set<Handler<never>>>();
  const deliver = <C extends BusChannel>(channel: C | string, payload: string, detail?: BusChannels[C]): void => {
    for (const handler of (handlers.get(channel) ?? []) as Set<Handler<C>>) {
      try {
        handler(payload, detail);
      } catch {
        // A handler's failure must not stop delivery to the others.
      }
    }
  };

  if (database.kind === 'pglite') {
    const unlisten = new Map<string, Promise<() => Promise<void>>>();
    const publish = async (channel: BusChannel, payload: string): Promise<void> => {
      await database.query('SELECT pg_notify($1, $2)', [channel, payload]);
    };
    return {
      publish,
      publishSoon: coalescer(publish),
      local: deliver,
      subscribe(channel, handler) {
        if (!handlers.has(channel)) {
          handlers.set(channel, new Set());
          unlisten.set(channel, database.pglite!.listen(channel, (payload) => deliver(channel, payload)));
        }
        handlers.get(channel)!.add(handler);
        return () => handlers.get(channel)?.delete(handler);
      },
      async close() {
        for (const pending of unlisten.values()) await (await pending)().catch(() => undefined);
        handlers.clear();
      },
    };
  }

  // PostgreSQL: one dedicated connection listens; it reconnects (and re-listens) if it drops.
  const options = database.pool!.options;
  let client: pg.Client | undefined;
  let closed = false;
  let connecting: Promise<void> | undefined;
  const listened = new Set<string>();
  let listening: Promise<void> = Promise.resolve();

  const connect = (): Promise<void> => {
    connecting ??= (async () => {
      const next = new pg.Client({ connectionString: options.connectionString, application_name: 'waygate-bus' });
      next.on('notification', (message) => deliver(message.channel, message.payload ?? ''));
      next.on('error', () => {
        if (client === next) client = undefined;
        next.end().catch(() => undefined);
        if (!closed) setTimeout(() => void connect().catch(() => undefined), 500);
      });
      await next.connect();
      for (const channel of listened) await next.query(`LISTEN ${channel}`);
      client = next;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  };

  const publish = async (channel: BusChannel, payload: string): Promise<void> => {
    await database.pool!.query('SELECT pg_notify($1, $2)', [channel, payload]);
  };
  return {
    publish,
    publishSoon: coalescer(publish),
    local: deliver,
    subscribe(channel, handler) {
      if (!handlers.has(channel)) handlers.set(channel, new Set());
      handlers.get(channel)!.add(handler);
      if (!listened.has(channel)) {
        listened.add(channel);
        // One command at a time on the listening connection.
        listening = listening
          .then(async () => {
            if (!client) await connect();
            else await client.query(`LISTEN ${channel}`);
          })
          .catch(() => undefined);
      }
      return () => handlers.get(channel)?.delete(handler);
    },
    async close() {
      closed = true;
      handlers.clear();
      await connecting?.catch(() => undefined);
      await client?.end().catch(() => undefined);
    },
  };
}
