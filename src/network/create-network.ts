import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Bus } from '../platform/bus.js';
import type { Database } from '../platform/database.js';
import type { Network } from './network.js';
import { SandboxNetwork } from './sandbox/sandbox-network.js';
import { SandboxWorld } from './sandbox/world.js';
import { warmupState, type WarmupState } from './whatsapp/warmup.js';
import { readWarmupRows } from './whatsapp/whatsapp-store.js';

export type { WarmupState } from './whatsapp/warmup.js';

export function createSandboxWorld(config: Config, database: Database, bus: Bus): SandboxWorld {
  return new SandboxWorld(database, bus, config.sandboxReceiptMs);
}

export async function createNetwork(config: Config, database: Database, bus: Bus, log: Logger): Promise<Network> {
  if (config.network === 'sandbox') return new SandboxNetwork(createSandboxWorld(config, database, bus), bus, config.sandboxQrMs, config.allowPrivateUrls);
  // Loaded only here, so `baileys` (an optional dependency) is never imported with NETWORK=sandbox.
  const { createWhatsAppNetwork } = await import('./whatsapp/create.js');
  return createWhatsAppNetwork(config, database, bus, log);
}

/** Each device's warm-up (whatsapp/warmup.ts) where one holds its bulk traffic now; the sandbox has none. */
export async function readWarmups(config: Config, database: Database, deviceIds: string[]): Promise<Map<string, WarmupState>> {
  const states = new Map<string, WarmupState>();
  if (config.network !== 'whatsapp' || deviceIds.length === 0) return states;
  const now = Date.now();
  for (const row of await readWarmupRows(database, deviceIds)) {
    const state = warmupState(row, config.whatsapp.warmupDailyCaps, now);
    if (state) states.set(row.device_id, state);
  }
  return states;
}
