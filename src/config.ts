/**
 * The only reader of process.env. Every variable is parsed and validated once, at start;
 * a bad value stops the process with a message that names every offending variable.
 */
import fs from 'node:fs';
import path from 'node:path';
import ipaddr from 'ipaddr.js';

export type Role = 'all' | 'api' | 'worker';
export type NetworkKind = 'sandbox' | 'whatsapp';
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
/** json: one JSON object a line; pretty: readable lines (needs pino-pretty, a devDependency); auto: pretty at a terminal when it is installed. */
export type LogFormat = 'json' | 'pretty' | 'auto';

export interface Config {
  port: number;
  /** The port of a `--role worker` process's ops routes (/healthz, /readyz, /metrics); none unless WORKER_PORT is set. */
  workerPort: number | undefined;
  host: string;
  /**
   * The first dashboard sign-up of a fresh install must give the setup code printed in the log:
   * true unless the server listens on loopback only (HOST 127.0.0.1, ::1 or localhost).
   */
  setupCodeRequired: boolean;
  /** When set, GET /metrics needs `Authorization: Bearer <token>` (METRICS_TOKEN). */
  metricsToken: string | undefined;
  databaseUrl: string | undefined;
  dataDir: string;
  network: NetworkKind;
  publicUrl: string;
  sessionSecret: string | undefined;
  logLevel: LogLevel;
  logFormat: LogFormat;
  sendWaitMs: number;
  bulkDelayMs: { min: number; max: number };
  leaseMs: number;
  /** The most devices one worker holds, whatever its share (MAX_DEVICES_PER_WORKER). */
  maxDevicesPerWorker: number;
  /** Days events (with their deliveries) are kept: GET /events promises this window (EVENT_RETENTION_DAYS). */
  eventRetentionDays: number;
  /** Days webhook delivery attempts are kept (WEBHOOK_ATTEMPT_RETENTION_DAYS). */
  attemptRetentionDays: number;
  /** Days a settled message keeps its body (text, caption, media URL, kind fields); 0 keeps it forever (MESSAGE_BODY_RETENTION_DAYS). */
  messageBodyRetentionDays: number;
  /** Days the files of incoming media are kept in the media store; then pruned, and the message says so (MEDIA_RETENTION_DAYS). */
  mediaRetentionDays: number;
  sandboxReceiptMs: number;
  /** The least time between two number look-ups (POST /numbers/check) on the network, per device (NUMBER_CHECK_INTERVAL_MS). */
  numberCheckIntervalMs: number;
  /** How long a sandbox QR code stays valid; a new one is shown before it expires. */
  sandboxQrMs: number;
  /** Attempts per message for transient network errors before it ends FAILED. */
  sendMaxAttempts: number;
  webhookRetryScheduleMs: number[];
  /** How long a webhook attempt may take before it counts as failed; a claimed delivery is leased for twice that. */
  webhookTimeoutMs: number;
  allowPrivateUrls: boolean;
  /** Requests per minute per account on the public API; 0 disables the limiter. */
  rateLimitPerMinute: number;
  /** Requests per minute per client address without a valid token or session; 0: not limited. */
  anonymousRateLimitPerMinute: number;
  /**
   * Which peers may tell the client's address and protocol (X-Forwarded-For/-Proto): false (no
   * one, the default) or addresses, CIDR ranges and proxy-addr's names (loopback, linklocal, uniquelocal).
   */
  trustProxy: false | string[];
  /** How long a request's headers and body may take to arrive before the connection is cut (408). */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open. */
  keepAliveTimeoutMs: number;
  /** Largest accepted request body, in bytes. */
  bodyLimitBytes: number;
  /** Listings count their total exactly up to this many rows; past it they answer the cap with totalExact false. */
  listingCountCap: number;
  /** A listing filter no index serves (e.g. a message's status or peer) is checked on at most this many rows per page and per count. */
  listingScanCap: number;
  /** NETWORK=whatsapp only (src/network/whatsapp). */
  whatsapp: WhatsAppConfig;
  /** Who may sign up in the dashboard: only the first user of a fresh install, or anyone (each gets an account on `free`). */
  dashboardSignup: 'first-user' | 'open';
}

export interface WhatsAppConfig {
  /**
   * Warm-up of a newly linked number: the most bulk messages it may send on day 1, 2, ... after
   * it was first linked (a day is 24 h from the first link); no cap after the last one. Empty: off.
   */
  warmupDailyCaps: number[];
  /** How long a send waits for the server's acknowledgement before it counts as a transient failure. */
  ackTimeoutMs: number;
  /** How long opening the connection (and each query) may take. */
  connectTimeoutMs: number;
  /** Baileys' own log level (its lines go to the same log, tagged component=baileys). */
  logLevel: LogLevel;
  /** The WhatsApp Web endpoint; change it only to go through a proxy or in tests. */
  webSocketUrl: string;
  /**
   * The WhatsApp Web client version the sockets announce: 'auto' (fetched from `webVersionUrl` at
   * start and again after the server calls the client outdated; the version bundled with Baileys
   * when that fails) or a fixed [2, 3000, n].
   */
  waVersion: 'auto' | [number, number, number];
  /** Where 'auto' reads the current version (WhatsApp Web's service worker, which names its client revision). */
  webVersionUrl: string;
  /** How long uploading an outgoing message's media may take; the acknowledgement timeout starts after it. */
  uploadTimeoutMs: number;
  /** QR cycles (sockets whose codes all expired unscanned) before a linking device stops asking for new ones. */
  maxQrCycles: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses `500`, `500ms`, `5s`, `5m`, `2h` into milliseconds; returns undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match) return undefined;
  const value = Number(match[1]) * DURATION_UNITS[match[2] ?? 'ms']!;
  return Number.isFinite(value) ? Math.round(value) : undefined;
}

type Env = Record<string, string | undefined>;

/**
 * Reads `.env` from the working directory into process.env, if there is one; a variable already
 * set in the environment keeps its value. Returns the file's path when one was read.
 */
export function loadEnvFile(file = path.resolve('.env')): string | undefined {
  if (!fs.existsSync(file)) return undefined;
  process.loadEnvFile(file);
  return file;
}

/** The names proxy-addr (Fastify's trustProxy) understands besides addresses and ranges. */
const PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

function isCidr(text: string): boolean {
  try {
    ipaddr.parseCIDR(text);
    return true;
  } catch {
    return false;
  }
}

/** Whether `host` is reachable from this machine only (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (bare === 'localhost') return true;
  return ipaddr.isValid(bare) && ipaddr.process(bare).range() === 'loopback';
}

export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const str = (name: string): string | undefined => {
    const value = env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  };
  const int = (name: string, fallback: number, min: number, max: number): number => {
    const raw = str(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      problems.push(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  };
  const oneOf = <T extends string>(name: string, values: readonly T[], fallback: T): T => {
    const raw = str(name);
    if (raw === undefined) return fallback;
    if (!(values as readonly string[]).includes(raw)) {
      problems.push(`${name} must be one of ${values.join(', ')} (got "${raw}")`);
      return fallback;
    }
    return raw as T;
  };
  const bool = (name: string, fallback: boolean): boolean => {
    const raw = str(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['true', '1', 'yes', 'on'].includes(raw)) return true;
    if (['false', '0', 'no', 'off'].includes(raw)) return false;
    problems.push(`${name} must be true or false (got "${env[name]}")`);
    return fallback;
  };

  const network = oneOf('NETWORK', ['sandbox', 'whatsapp'] as const, 'sandbox');
  const port = int('PORT', 3000, 0, 65535);
  const workerPort = str('WORKER_PORT') === undefined ? undefined : int('WORKER_PORT', 0, 0, 65535);
  const host = str('HOST') ?? '0.0.0.0';
  const metricsToken = str('METRICS_TOKEN');
  if (metricsToken !== undefined && metricsToken.length < 16) problems.push('METRICS_TOKEN must be at least 16 characters long');

  const databaseUrl = str('DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }

  const publicUrl = str('PUBLIC_URL') ?? `http://localhost:${port}`;
  try {
    const url = new URL(publicUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('protocol');
  } catch {
    problems.push(`PUBLIC_URL must be an http(s) URL (got "${publicUrl}")`);
  }

  const sessionSecret = str('SESSION_SECRET');
  if (sessionSecret !== undefined && sessionSecret.length < 32) {
    problems.push('SESSION_SECRET must be at least 32 characters long');
  }

  let bulkDelayMs = network === 'whatsapp' ? { min: 1500, max: 4000 } : { min: 0, max: 0 };
  const bulkDelayRaw = str('BULK_DELAY_MS');
  if (bulkDelayRaw !== undefined) {
    const match = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(bulkDelayRaw);
    const min = match ? Number(match[1]) : NaN;
    const max = match ? Number(match[2] ?? match[1]) : NaN;
    if (!match || min > max) problems.push(`BULK_DELAY_MS must be "min-max" in ms, e.g. 1500-4000 (got "${bulkDelayRaw}")`);
    else bulkDelayMs = { min, max };
  }

  let webhookRetryScheduleMs = [0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
  const scheduleRaw = str('WEBHOOK_RETRY_SCHEDULE');
  if (scheduleRaw !== undefined) {
    const parsed = scheduleRaw.split(',').map((part) => parseDuration(part));
    if (parsed.length === 0 || parsed.some((value) => value === undefined)) {
      problems.push(`WEBHOOK_RETRY_SCHEDULE must be comma-separated durations such as 0,5s,5m,2h (got "${scheduleRaw}")`);
    } else {
      webhookRetryScheduleMs = parsed as number[];
    }
  }

  let warmupDailyCaps = [50, 100, 200, 400, 800];
  const warmupRaw = str('WHATSAPP_WARMUP');
  if (warmupRaw !== undefined) {
    if (['off', 'false', '0', 'none'].includes(warmupRaw.toLowerCase())) warmupDailyCaps = [];
    else {
      const caps = warmupRaw.split(',').map((part) => Number(part.trim()));
      if (caps.some((cap) => !Number.isInteger(cap) || cap < 1 || cap > 1_000_000) || caps.length > 60) {
        problems.push(`WHATSAPP_WARMUP must be "off" or up to 60 comma-separated daily caps (whole numbers ≥ 1), e.g. 50,100,200,400,800 (got "${warmupRaw}")`);
      } else warmupDailyCaps = caps;
    }
  }
  let trustProxy: false | string[] = false;
  const trustRaw = str('TRUST_PROXY');
  if (trustRaw !== undefined && !['false', 'off', 'no', '0', 'none'].includes(trustRaw.toLowerCase())) {
    const entries = trustRaw.split(',').map((entry) => entry.trim()).filter(Boolean);
    const bad = entries.filter((entry) => !PROXY_NAMES.has(entry) && !ipaddr.isValid(entry) && !isCidr(entry));
    if (entries.length === 0 || bad.length > 0) {
      problems.push(
        `TRUST_PROXY must be off or a comma-separated list of proxy addresses, CIDR ranges or loopback/linklocal/uniquelocal (got "${trustRaw}")`,
      );
    } else trustProxy = entries;
  }

  const whatsappWsUrl = str('WHATSAPP_WS_URL') ?? 'wss://web.whatsapp.com/ws/chat';
  if (!/^wss?:\/\/[^/\s]+/.test(whatsappWsUrl)) problems.push(`WHATSAPP_WS_URL must be a ws:// or wss:// URL (got "${whatsappWsUrl}")`);
  let waVersion: WhatsAppConfig['waVersion'] = 'auto';
  const waVersionRaw = str('WHATSAPP_WA_VERSION');
  if (waVersionRaw !== undefined && waVersionRaw.toLowerCase() !== 'auto') {
    const match = /^(\d{1,6})\.(\d{1,9})\.(\d{1,12})$/.exec(waVersionRaw);
    if (match) waVersion = [Number(match[1]), Number(match[2]), Number(match[3])];
    else problems.push(`WHATSAPP_WA_VERSION must be "auto" or a version such as 2.3000.1023456789 (got "${waVersionRaw}")`);
  }
  const webVersionUrl = str('WHATSAPP_WEB_VERSION_URL') ?? 'https://web.whatsapp.com/sw.js';
  if (!/^https?:\/\/[^/\s]+/.test(webVersionUrl)) problems.push(`WHATSAPP_WEB_VERSION_URL must be an http(s) URL (got "${webVersionUrl}")`);

  const config: Config = {
    port,
    workerPort,
    host,
    setupCodeRequired: !isLoopbackHost(host),
    metricsToken,
    databaseUrl,
    dataDir: path.resolve(str('DATA_DIR') ?? './data'),
    network,
    publicUrl: publicUrl.replace(/\/+$/, ''),
    sessionSecret,
    logLevel: oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    logFormat: oneOf('LOG_FORMAT', ['json', 'pretty', 'auto'] as const, 'auto'),
    sendWaitMs: int('SEND_WAIT_MS', 10_000, 0, 120_000),
    bulkDelayMs,
    leaseMs: int('LEASE_MS', 15_000, 1_000, 600_000),
    maxDevicesPerWorker: int('MAX_DEVICES_PER_WORKER', 2_000, 1, 100_000),
    eventRetentionDays: int('EVENT_RETENTION_DAYS', 31, 1, 3_650),
    attemptRetentionDays: int('WEBHOOK_ATTEMPT_RETENTION_DAYS', 31, 1, 3_650),
    messageBodyRetentionDays: int('MESSAGE_BODY_RETENTION_DAYS', 0, 0, 36_500),
    mediaRetentionDays: int('MEDIA_RETENTION_DAYS', 30, 1, 3_650),
    sandboxReceiptMs: int('SANDBOX_RECEIPT_MS', 1_000, 0, 3_600_000),
    numberCheckIntervalMs: int('NUMBER_CHECK_INTERVAL_MS', network === 'whatsapp' ? 3_000 : 0, 0, 600_000),
    sandboxQrMs: int('SANDBOX_QR_MS', 60_000, 1_000, 3_600_000),
    sendMaxAttempts: int('SEND_MAX_ATTEMPTS', 5, 1, 100),
    webhookRetryScheduleMs,
    webhookTimeoutMs: int('WEBHOOK_TIMEOUT_MS', 15_000, 100, 120_000),
    allowPrivateUrls: bool('ALLOW_PRIVATE_URLS', false),
    rateLimitPerMinute: int('RATE_LIMIT_PER_MINUTE', 1200, 0, 10_000_000),
    anonymousRateLimitPerMinute: int('RATE_LIMIT_ANONYMOUS_PER_MINUTE', 120, 0, 10_000_000),
    trustProxy,
    requestTimeoutMs: int('REQUEST_TIMEOUT_MS', 30_000, 100, 600_000),
    keepAliveTimeoutMs: int('KEEP_ALIVE_TIMEOUT_MS', 72_000, 1_000, 600_000),
    bodyLimitBytes: int('BODY_LIMIT_BYTES', 5 * 1024 * 1024, 1024, 100 * 1024 * 1024),
    listingCountCap: int('LISTING_COUNT_CAP', 10_000, 1, 1_000_000),
    listingScanCap: int('LISTING_SCAN_CAP', 10_000, 1, 10_000_000),
    whatsapp: {
      warmupDailyCaps,
      ackTimeoutMs: int('WHATSAPP_ACK_TIMEOUT_MS', 20_000, 100, 300_000),
      connectTimeoutMs: int('WHATSAPP_CONNECT_TIMEOUT_MS', 20_000, 500, 300_000),
      logLevel: oneOf('WHATSAPP_LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'warn'),
      webSocketUrl: whatsappWsUrl,
      waVersion,
      webVersionUrl,
      uploadTimeoutMs: int('WHATSAPP_UPLOAD_TIMEOUT_MS', 300_000, 1_000, 3_600_000),
      maxQrCycles: int('WHATSAPP_MAX_QR_CYCLES', 5, 1, 1_000),
    },
    dashboardSignup: oneOf('DASHBOARD_SIGNUP', ['first-user', 'open'] as const, 'first-user'),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
