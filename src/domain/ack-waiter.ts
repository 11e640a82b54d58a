/**
 * Lets a direct send wait for the network's acknowledgement, which the worker that owns the
 * device reports on the bus (`waygate_acks`, message ids). A poll backs the bus up, so a lost
 * notification only costs latency.
 */
import type { Bus } from '../db/bus.js';

const POLL_MS = 500;

export class AckWaiter {
  private readonly wakers = new Map<string, Set<() => void>>();
  private readonly unsubscribe: () => void;

  constructor(bus: Bus) {
    this.unsubscribe = bus.subscribe('waygate_acks', (payload) => {
      for (const id of payload.split(',')) for (const wake of this.wakers.get(id) ?? []) wake();
    });
  }

  /** Resolves when `done()` says so, or at the deadline. */
  async wait(ids: string[], timeoutMs: number, done: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let wake: () => void = () => undefined;
    const waker = (): void => wake();
    for (const id of ids) {
      const set = this.wakers.get(id) ?? new Set();
      set.add(waker);
      this.wakers.set(id, set);
    }
    try {
      for (;;) {
        if (await done()) return;
        const left = deadline - Date.now();
        if (left <= 0) return;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(POLL_MS, left));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    } finally {
      for (const id of ids) {
        const set = this.wakers.get(id);
        set?.delete(waker);
        if (set?.size === 0) this.wakers.delete(id);
      }
    }
  }

  close(): void {
    this.unsubscribe();
  }
}
