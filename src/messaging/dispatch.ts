/**
 * How an accepted send reaches the worker that owns its device. Two implementations: by NOTIFY
 * only (separate api and worker processes), and in process (role all), where direct sends for a
 * device the worker here holds and has connected are inserted already claimed by it and handed
 * over at once, with no claim round and no wait for a dispatch loop.
 */
import type { Bus } from '../platform/bus.js';
import type { ClaimedMessage } from './message-store.js';

/** The worker in this process, as the API sees it (DeviceSupervisor). */
export interface DirectSendHost {
  readonly workerId: string;
  /** Devices whose lease this process holds and whose session is connected now. */
  directDevices(): string[];
  /** Sends messages inserted as SENDING, claimed by workerId (put back in the queue if the device left meanwhile). */
  handOver(deviceId: string, messages: ClaimedMessage[]): void;
}

/** Who may take direct sends at once: a worker and the devices it has connected now. */
export interface DirectWorker {
  workerId: string;
  devices: string[];
}

export interface Dispatcher {
  /** The worker that takes direct sends at once, read in one go (undefined: none in this process). */
  directWorker(): DirectWorker | undefined;
  /** Hands messages inserted claimed by directWorker() to it. */
  handOver(deviceId: string, messages: ClaimedMessage[]): void;
  /** Wakes the device's owner: at once if it is in this process, by NOTIFY if it is elsewhere. */
  wake(deviceId: string): void;
  /** Wakes the owner's loop of edits, deletes and read receipts (an action was recorded), the same way. */
  wakeActions(deviceId: string): void;
}

/** Wakes a device's owner: at once if it is in this process, by NOTIFY (coalesced) if it is elsewhere. */
export function wakeOwner(bus: Bus, deviceId: string): void {
  bus.local('waygate_dispatch', deviceId);
  bus.publishSoon('waygate_dispatch', deviceId);
}

/** The payload that wakes a device's loop of actions (edits, deletes, read receipts), not its dispatch. */
export const ACTIONS_PREFIX = 'actions:';

/** Wakes the loop of actions of a device's owner: wakeOwner's path, with the actions' payload. */
function wakeOwnerActions(bus: Bus, deviceId: string): void {
  wakeOwner(bus, `${ACTIONS_PREFIX}${deviceId}`);
}

/** No worker in this process: every accepted send waits in the queue for its device's owner. */
export class NotifyDispatcher implements Dispatcher {
  constructor(private readonly bus: Bus) {}

  directWorker(): undefined {
    return undefined;
  }

  handOver(deviceId: string): void {
    this.wake(deviceId);
  }

  wake(deviceId: string): void {
    wakeOwner(this.bus, deviceId);
  }

  wakeActions(deviceId: string): void {
    wakeOwnerActions(this.bus, deviceId);
  }
}

/**
 * The worker in this process takes direct sends at once. `host` returns it once it runs
 * (undefined before: sends then go through the queue, as with NotifyDispatcher).
 */
export class InProcessDispatcher implements Dispatcher {
  constructor(
    private readonly bus: Bus,
    private readonly host: () => DirectSendHost | undefined,
  ) {}

  directWorker(): DirectWorker | undefined {
    const host = this.host();
    return host && { workerId: host.workerId, devices: host.directDevices() };
  }

  handOver(deviceId: string, messages: ClaimedMessage[]): void {
    const host = this.host();
    if (host) host.handOver(deviceId, messages);
    else this.wake(deviceId);
  }

  wake(deviceId: string): void {
    wakeOwner(this.bus, deviceId);
  }

  wakeActions(deviceId: string): void {
    wakeOwnerActions(this.bus, deviceId);
  }
}
