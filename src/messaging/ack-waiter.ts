/**
 * Lets a direct send wait for the network's acknowledgement, which the worker that owns the
 * device reports on the bus (`waygate_acks`, comma-separated message ids). A ticket is taken
 * before the messages are written, so an acknowledgement that comes at once is not missed; a
 * poll backs the bus up, so a lost notification only costs latency.
 */
import type { Bus } from '../platform/bus.js';
import type { MessageRow } from './message-model.js';

const POLL_MS = 500;

export interface AckTicket {
  /** Resolves once every id was acknowledged (or `check()` says all is settled), or at the deadline. */
  wait(timeoutMs: number, check: () => Promise<boolean>): Promise<void>;
  /** The rows an in-process worker handed over with its acknowledgements, by message id. */
  readonly rows: Map<string, MessageRow>;
  cancel(): void;
}

export class AckWaiter {
  private readonly tickets = new Map<string, Set<(id: string, row?: MessageRow) => void>>();
  private readonly unsubscribe: () => void = () => undefined;

  /** `listen` false: a process that serves no API (a worker) takes no tickets, and does not wake for every acknowledgement. */
  constructor(bus: Bus, listen = true) {
    if (!listen) return;
    this.unsubscribe = bus.subscribe('waygate_acks', (payload, detail) => {
      const rows = new Map((detail ?? []).map((row) => [row.id, row]));
      for (const id of payload.split(',')) for (const ack of this.tickets.get(id) ?? []) ack(id, rows.get(id));
    });
  }

  expect(ids: string[]): AckTicket {
    const pending = new Set(ids);
    const rows = new Map<string, MessageRow>();
    let wake: () => void = () => undefined;
    const ack = (id: string, row?: MessageRow): void => {
      if (row) rows.set(id, row);
      if (pending.delete(id) && pending.size === 0) wake();
    };
    for (const id of ids) {
      const set = this.tickets.get(id) ?? new Set();
      set.add(ack);
      this.tickets.set(id, set);
    }
    const cancel = (): void => {
      for (const id of ids) {
        const set = this.tickets.get(id);
        set?.delete(ack);
        if (set?.size === 0) this.tickets.delete(id);
      }
    };
    return {
      cancel,
      rows,
      async wait(timeoutMs, check) {
        const deadline = Date.now() + timeoutMs;
        while (pending.size > 0) {
          const left = deadline - Date.now();
          if (left <= 0) return;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, Math.min(POLL_MS, left));
            wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          if (pending.size > 0 && (await check())) return;
        }
      },
    };
  }

  close(): void {
    this.unsubscribe();
  }
}
