/**
 * Cross-process notifications over PostgreSQL LISTEN/NOTIFY (PGlite implements them too, for its
 * single process). Used to wake workers and waiters promptly; never the only carrier of state:
 * every listener also polls, so a lost notification only costs latency.
 */
import pg from 'pg';
import type { Database } from './client.js';

export type BusChannel = 'waygate_dispatch' | 'waygate_acks' | 'waygate_devices' | 'waygate_sandbox';
/** `detail` is set only for local deliveries: in-process data that saves the listener a query. */
type Handler = (payload: string, detail?: unknown) => void;

export interface Bus {
  /** Notifies every process, this one included (through LISTEN). */
  publish(channel: BusChannel, payload: string): Promise<void>;
  /** Notifies this process's subscribers now, without a round trip (they may hear a publish of the same news again). */
  local(channel: BusChannel, payload: string, detail?: unknown): void;
  subscribe(channel: BusChannel, handler: Handler): () => void;
  close(): Promise<void>;
}

export function createBus(database: Database): Bus {
  const handlers = new Map<string, Set<Handler>>();
  const deliver = (channel: string, payload: string, detail?: unknown): void => {
    for (const handler of handlers.get(channel) ?? []) {
      try {
        handler(payload, detail);
      } catch {
        // A handler's failure must not stop delivery to the others.
      }
    }
  };

  if (database.kind === 'pglite') {
    const unlisten = new Map<string, Promise<() => Promise<void>>>();
    return {
      async publish(channel, payload) {
        await database.query('SELECT pg_notify($1, $2)', [channel, payload]);
      },
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

  return {
    async publish(channel, payload) {
      await database.pool!.query('SELECT pg_notify($1, $2)', [channel, payload]);
    },
    local: deliver,
    subscribe(channel, handler) {
      if (!handlers.has(channel)) handlers.set(channel, new Set());
      handlers.get(channel)!.add(handler);
      if (!listened.has(channel)) {
        listened.add(channel);
        void (async () => {
          if (!client) await connect();
          else await client.query(`LISTEN ${channel}`);
        })().catch(() => undefined);
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
