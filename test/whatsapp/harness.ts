/**
 * Drives a WhatsAppNetwork session through the fake socket, against a real test database (the
 * auth state, warm-up and LID tables are real), recording the events the session reports and
 * every log line it writes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { loadConfig, type Config, type WhatsAppConfig } from '../../src/config.js';
import { DeviceSupervisor } from '../../src/devices/device-supervisor.js';
import { BulkFanout } from '../../src/messaging/bulk-fanout.js';
import { GuardedHttp } from '../../src/outbound/ssrf.js';
import { newId } from '../../src/platform/ids.js';
import type { DeviceInfo, NetworkEvent } from '../../src/network/network.js';
import { baileysHelpers, loadBaileys } from '../../src/network/whatsapp/baileys.js';
import type { BaileysHelpers, WAPollEncValue } from '../../src/network/whatsapp/types.js';
import { WaVersionSource, type WaVersion } from '../../src/network/whatsapp/version.js';
import { WhatsAppNetwork, type WhatsAppNetworkOptions, type WhatsAppSession } from '../../src/network/whatsapp/whatsapp-network.js';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { createTenant, createTestApp, type Tenant, type TestContext } from '../helpers.js';
import { FakeBaileys } from './fake-socket.js';

/** A test file's app on NETWORK=whatsapp, its tenant, and the harnesses its tests made. */
export interface WhatsAppTestFile {
  /** Set once the file's beforeAll has run. */
  ctx: TestContext;
  tenant: Tenant;
  /** The harnesses `track` was given during the running test, oldest first. */
  readonly harnesses: readonly Harness[];
  /** Closes `harness` after the running test; returns it. */
  track<H extends Harness>(harness: H): H;
  /** Closes a tracked harness now (a worker going away mid-test). */
  close(harness: Harness): Promise<void>;
}

/**
 * Registers a test file's hooks: an app on NETWORK=whatsapp with one tenant before its tests
 * (closed after them), and every harness tracked during a test closed after that test.
 */
export function whatsAppTestFile(): WhatsAppTestFile {
  const harnesses: Harness[] = [];
  const file = {
    harnesses,
    track<H extends Harness>(harness: H): H {
      harnesses.push(harness);
      return harness;
    },
    async close(harness: Harness): Promise<void> {
      const index = harnesses.indexOf(harness);
      if (index >= 0) harnesses.splice(index, 1);
      await harness.close();
    },
  } as Partial<WhatsAppTestFile> as WhatsAppTestFile;
  beforeAll(async () => {
    file.ctx = await createTestApp({ NETWORK: 'whatsapp' });
    file.tenant = await createTenant(file.ctx);
  });
  afterAll(async () => {
    await file.ctx?.close();
  });
  afterEach(async () => {
    for (const harness of harnesses.splice(0)) await harness.close();
  });
  return file;
}

let helpers: BaileysHelpers | undefined;
/** The real BufferJSON / initAuthCreds / proto of the installed baileys package (no socket is made from it). */
export async function realHelpers(): Promise<BaileysHelpers> {
  helpers ??= baileysHelpers(await loadBaileys());
  return helpers;
}

/** A fixed version (as WHATSAPP_WA_VERSION=x.y.z sets it): the tests never fetch from WhatsApp. */
export const TEST_WA_VERSION: WaVersion = [2, 3000, 1012345678];
export function testVersionSource(): WaVersionSource {
  return new WaVersionSource({ waVersion: TEST_WA_VERSION, webVersionUrl: 'http://127.0.0.1:9/unused' }, [2, 3000, 1], pino({ level: 'silent' }));
}

export async function insertDevice(ctx: TestContext, accountId: string, status: DeviceInfo['status'] = 'PENDING', phoneNumber: string | null = null): Promise<DeviceInfo> {
  const id = newId('dev');
  await ctx.database.query(`INSERT INTO devices (id, account_id, name, status, phone_number) VALUES ($1, $2, 'phone', $3, $4)`, [id, accountId, status, phoneNumber]);
  return { id, accountId, phoneNumber, status };
}

/** A WhatsAppNetwork on the test database whose sockets are `fake`'s: the real Baileys helpers, the fixed test version unless `tuning` names another. */
export async function fakeNetwork(
  ctx: TestContext,
  fake: FakeBaileys,
  log: Logger,
  config: WhatsAppConfig,
  tuning: Partial<Pick<WhatsAppNetworkOptions, 'version' | 'linkingBackoffMs' | 'flapBackoffMs'>> = {},
): Promise<WhatsAppNetwork> {
  return new WhatsAppNetwork({ database: ctx.database, bus: ctx.services.bus, log, config, socketFactory: fake.factory, helpers: await realHelpers(), version: testVersionSource(), ...tuning });
}

/** The app on NETWORK=whatsapp as a worker runs it: a device supervisor (and a bulk fan-out if asked) driving a WhatsAppNetwork on fake sockets. */
export interface WhatsAppApp {
  ctx: TestContext;
  tenant: Tenant;
  fake: FakeBaileys;
  network: WhatsAppNetwork;
  supervisor: DeviceSupervisor;
  http: GuardedHttp;
  log: Logger;
  /** Stops the fan-out and the supervisor, closes the network, the HTTP client and the app, in that order. */
  close(): Promise<void>;
}

export interface WhatsAppAppOptions {
  /** Over the WhatsApp config that loadConfig makes of the env. */
  whatsapp?: Partial<WhatsAppConfig>;
  /** Over the app's config, for the device supervisor only. */
  supervisor?: Partial<Config>;
  /** Runs a BulkFanout beside the supervisor (without one, bulk jobs are never fanned out). */
  bulkFanout?: boolean;
}

/**
 * A test app (createTestApp(env)) with a tenant, and the worker side started beside it: a
 * WhatsAppNetwork on a FakeBaileys (short linking and flap backoffs), a GuardedHttp, a
 * DeviceSupervisor and, with `bulkFanout`, a BulkFanout. Logs at TEST_LOG_LEVEL (silent unless set).
 */
export async function startWhatsAppHarness(env: Record<string, string>, options: WhatsAppAppOptions = {}): Promise<WhatsAppApp> {
  // Imported here, not above: bench/lib/whatsapp-sessions.ts imports this file and should not load vitest and the test app with it.
  const { createTenant, createTestApp } = await import('../helpers.js');
  const ctx = await createTestApp(env);
  let tenant: Tenant;
  let network: WhatsAppNetwork;
  const fake = new FakeBaileys();
  const log = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  try {
    tenant = await createTenant(ctx);
    const config = loadConfig({ ...env, LEASE_MS: '3000' });
    network = await fakeNetwork(ctx, fake, log, { ...config.whatsapp, ...options.whatsapp }, { linkingBackoffMs: [50, 100], flapBackoffMs: [200, 400] });
  } catch (error) {
    await ctx.close();
    throw error;
  }
  const http = new GuardedHttp(true);
  const supervisor = new DeviceSupervisor(ctx.database, ctx.services.bus, network, http, options.supervisor ? { ...ctx.config, ...options.supervisor } : ctx.config, log);
  const fanout = options.bulkFanout ? new BulkFanout(ctx.database, ctx.services.bus, log) : undefined;
  supervisor.start();
  fanout?.start();
  const close = async (): Promise<void> => {
    await fanout?.stop();
    await supervisor.stop();
    await network.close();
    await http.close();
    await ctx.close();
  };
  return { ctx, tenant, fake, network, supervisor, http, log, close };
}

export interface Harness {
  fake: FakeBaileys;
  network: WhatsAppNetwork;
  events: NetworkEvent[];
  logs: string[];
  /** Resolves each onEvent only when the test lets it (see `hold`). */
  hold(on: boolean): void;
  release(): void;
  open(device: DeviceInfo): Promise<WhatsAppSession>;
  close(): Promise<void>;
}

export function whatsappConfig(overrides: Partial<WhatsAppConfig> = {}): WhatsAppConfig {
  return { ...loadConfig({ NETWORK: 'whatsapp' }).whatsapp, ...overrides };
}

export async function createHarness(
  ctx: TestContext,
  config: Partial<WhatsAppConfig> = {},
  linkingBackoffMs = [40, 80, 160, 320],
  flapBackoffMs = [150, 300, 600],
  version: WaVersionSource = testVersionSource(),
): Promise<Harness> {
  const fake = new FakeBaileys();
  const events: NetworkEvent[] = [];
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logs.push(chunk.toString());
      callback();
    },
  });
  const log = pino({ level: 'debug' }, stream);
  const network = await fakeNetwork(ctx, fake, log, whatsappConfig({ warmupDailyCaps: [], ackTimeoutMs: 2_000, connectTimeoutMs: 2_000, ...config }), { version, linkingBackoffMs, flapBackoffMs });
  let holding = false;
  let released: (() => void)[] = [];
  return {
    fake,
    network,
    events,
    logs,
    hold(on) {
      holding = on;
    },
    release() {
      for (const resolve of released.splice(0)) resolve();
    },
    async open(device) {
      return (await network.openSession(device, {
        onEvent: async (event) => {
          events.push(event);
          if (holding) await new Promise<void>((resolve) => released.push(resolve));
        },
      })) as WhatsAppSession;
    },
    async close() {
      holding = false;
      for (const resolve of released.splice(0)) resolve();
      released = [];
      await network.close();
    },
  };
}

export function eventsOf<T extends NetworkEvent['type']>(events: NetworkEvent[], type: T): Extract<NetworkEvent, { type: T }>[] {
  return events.filter((event): event is Extract<NetworkEvent, { type: T }> => event.type === type);
}

/** A vote as the voter's phone encrypts it: the inverse of Baileys' decryptPollVote, with Baileys' own crypto. */
export async function encryptVote(options: string[], context: { pollCreatorJid: string; pollMsgId: string; pollEncKey: Uint8Array; voterJid: string }): Promise<WAPollEncValue> {
  const { proto, hmacSign, aesEncryptGCM } = await import('baileys');
  const plaintext = proto.Message.PollVoteMessage.encode({ selectedOptions: options.map((o) => createHash('sha256').update(o).digest()) }).finish();
  const sign = Buffer.concat([Buffer.from(context.pollMsgId), Buffer.from(context.pollCreatorJid), Buffer.from(context.voterJid), Buffer.from('Poll Vote'), new Uint8Array([1])]);
  const key = hmacSign(sign, hmacSign(Buffer.from(context.pollEncKey), Buffer.alloc(32), 'sha256'), 'sha256');
  const encIv = randomBytes(12);
  return { encPayload: aesEncryptGCM(plaintext, key, encIv, Buffer.from(`${context.pollMsgId}\u0000${context.voterJid}`)), encIv };
}
