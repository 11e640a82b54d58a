import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import type { Bus } from '../../platform/bus.js';
import type { Database } from '../../platform/database.js';
import { baileysHelpers, baileysSocketFactory, loadBaileys } from './baileys.js';
import { WaVersionSource } from './version.js';
import { WhatsAppNetwork } from './whatsapp-network.js';

export async function createWhatsAppNetwork(config: Config, database: Database, bus: Bus, log: Logger): Promise<WhatsAppNetwork> {
  const baileys = await loadBaileys();
  log.info({ endpoint: config.whatsapp.webSocketUrl, warmupDailyCaps: config.whatsapp.warmupDailyCaps, bulkDelayMs: config.bulkDelayMs }, 'WhatsApp network (Baileys) loaded');
  const version = new WaVersionSource(config.whatsapp, baileys.DEFAULT_CONNECTION_CONFIG.version, log.child({ component: 'whatsapp' }));
  await version.refresh();
  return new WhatsAppNetwork({
    database,
    bus,
    log,
    config: config.whatsapp,
    socketFactory: baileysSocketFactory(baileys, config.whatsapp),
    helpers: baileysHelpers(baileys),
    version,
  });
}
