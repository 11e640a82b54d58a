import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Bus } from '../platform/bus.js';
import type { Database } from '../platform/database.js';
import type { Network } from './network.js';
import { SandboxNetwork } from './sandbox/sandbox-network.js';
import { SandboxWorld } from './sandbox/world.js';

export function createSandboxWorld(config: Config, database: Database, bus: Bus): SandboxWorld {
  return new SandboxWorld(database, bus, config.sandboxReceiptMs);
}

export async function createNetwork(config: Config, database: Database, bus: Bus, log: Logger): Promise<Network> {
  if (config.network === 'sandbox') return new SandboxNetwork(createSandboxWorld(config, database, bus), bus, config.sandboxQrMs, config.allowPrivateUrls);
  // Loaded only here, so `baileys` (an optional dependency) is never imported with NETWORK=sandbox.
  const { createWhatsAppNetwork } = await import('./whatsapp/create.js');
  return createWhatsAppNetwork(config, database, bus, log);
}
