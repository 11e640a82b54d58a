/**
 * The one loop every background worker runs on: a turn does a bounded piece of work and says how
 * long it may sleep before the next; a wake() ends the sleep early (a notification, a finished
 * attempt), and stop() ends the loop through an AbortSignal.
 *
 * Invariant: between two turns the loop always returns to the event loop's macrotask queue
 * (setImmediate), even when the next turn is due at once. A PGlite statement resolves on
 * microtasks alone, so without this a loop that always finds work (a backlog whose every attempt
 * fails without I/O, a long bulk job) would never let an HTTP request, a timer or a signal run.
 */
import { setImmediate as nextMacrotask } from 'node:timers/promises';
import type { Logger } from 'pino';

/** What a turn returns: milliseconds to sleep before the next turn (0: go on after yielding). */
export type Turn = (signal: AbortSignal) => Promise<number>;

export interface WakeLoopOptions {
  name: string;
  log: Logger;
  /** Sleep after a turn that threw (default 1 s). */
  errorBackoffMs?: number;
}

export class WakeLoop {
  private readonly controller = new AbortController();
  private running: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  /** Set by wake(): a wake-up that comes during a turn ends the sleep that follows it. */
  private woken = false;

  constructor(
    private readonly turn: Turn,
    private readonly options: WakeLoopOptions,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  get stopped(): boolean {
    return this.controller.signal.aborted;
  }

  start(): void {
    this.running ??= this.run();
  }

  wake(): void {
    this.woken = true;
    this.wakeUp?.();
  }

  /** Ends the loop: the turn in progress finishes (it sees the signal aborted), no other starts. */
  async stop(): Promise<void> {
    this.controller.abort();
    this.wakeUp?.();
    await this.running;
  }

  private async run(): Promise<void> {
    const { signal } = this.controller;
    while (!signal.aborted) {
      this.woken = false;
      let sleepMs: number;
      try {
        sleepMs = await this.turn(signal);
      } catch (error) {
        this.options.log.error({ err: error, loop: this.options.name }, `${this.options.name} failed; retrying`);
        sleepMs = this.options.errorBackoffMs ?? 1_000;
      }
      if (signal.aborted) break;
      await nextMacrotask();
      if (sleepMs > 0 && !this.woken && !signal.aborted) await this.sleep(sleepMs);
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }
}
