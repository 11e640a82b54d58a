/**
 * The WhatsApp Web client version the sockets announce. WhatsApp refuses a client whose version
 * it considers outdated (close code 405 at connect), and a Baileys release bundles whatever
 * version was current when it was cut; so, like the gateways that run Baileys in production,
 * Waygate reads the current version from WhatsApp Web itself at start (WHATSAPP_WA_VERSION=auto)
 * and again after the server called the client outdated. WhatsApp Web's service worker names
 * its build as `client_revision`; the version is [2, 3000, client_revision] (the same rule as
 * Baileys' fetchLatestWaWebVersion, with a configurable address and a timeout).
 */
import type { Logger } from 'pino';
import type { WhatsAppConfig } from '../../config.js';

export type WaVersion = [number, number, number];

export interface ResolvedVersion {
  version: WaVersion;
  /** 'configured': WHATSAPP_WA_VERSION; 'fetched': read from WhatsApp Web; 'bundled': Baileys' own, because the fetch failed. */
  source: 'configured' | 'fetched' | 'bundled';
  /** Why the fetch failed (source 'bundled'). */
  error?: string | undefined;
}

const FETCH_TIMEOUT_MS = 10_000;
/** WhatsApp Web answers its service worker only to requests that look like a browser's. */
const BROWSER_HEADERS = {
  'sec-fetch-site': 'none',
  'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
};

export function formatVersion(version: WaVersion): string {
  return version.join('.');
}

/** The client revision WhatsApp Web's service worker names, or an error saying why there is none. */
export async function fetchWebVersion(url: string, timeoutMs = FETCH_TIMEOUT_MS): Promise<WaVersion> {
  const response = await fetch(url, { headers: BROWSER_HEADERS, signal: AbortSignal.timeout(timeoutMs) });
  if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}`);
  const text = await response.text();
  const match = /\\?"client_revision\\?":\s*(\d+)/.exec(text);
  if (!match) throw new Error(`${url} does not name a client_revision`);
  return [2, 3000, Number(match[1])];
}

/**
 * The version in use, shared by every session of the process. `refresh()` runs at start and
 * after a 405; the sockets read `current` when they are made.
 */
export class WaVersionSource {
  private resolved: ResolvedVersion;
  private refreshing: Promise<ResolvedVersion> | undefined;

  constructor(
    private readonly config: Pick<WhatsAppConfig, 'waVersion' | 'webVersionUrl'>,
    private readonly bundled: WaVersion,
    private readonly log: Logger,
    private readonly fetchVersion: (url: string) => Promise<WaVersion> = fetchWebVersion,
  ) {
    this.resolved = config.waVersion === 'auto' ? { version: bundled, source: 'bundled', error: 'not fetched yet' } : { version: config.waVersion, source: 'configured' };
  }

  get current(): ResolvedVersion {
    return this.resolved;
  }

  /** Reads the current version (auto) and logs which one is used; concurrent calls share one fetch. */
  refresh(): Promise<ResolvedVersion> {
    if (this.config.waVersion !== 'auto') {
      this.log.info({ waVersion: formatVersion(this.resolved.version), source: 'configured' }, 'WhatsApp Web version set by WHATSAPP_WA_VERSION');
      return Promise.resolve(this.resolved);
    }
    this.refreshing ??= this.fetchVersion(this.config.webVersionUrl)
      .then((version): ResolvedVersion => {
        this.resolved = { version, source: 'fetched' };
        this.log.info({ waVersion: formatVersion(version), source: 'fetched', from: this.config.webVersionUrl }, 'WhatsApp Web version read from WhatsApp Web');
        return this.resolved;
      })
      .catch((error: unknown): ResolvedVersion => {
        const message = (error as Error).message;
        // A version fetched earlier stays better than the bundled one.
        const fallback = this.resolved.source === 'fetched' ? this.resolved.version : this.bundled;
        this.resolved = { version: fallback, source: 'bundled', error: message };
        this.log.warn(
          { waVersion: formatVersion(fallback), from: this.config.webVersionUrl, error: message },
          'could not read the current WhatsApp Web version (offline?); using the last known one, which WhatsApp may refuse (405) — set WHATSAPP_WA_VERSION to override',
        );
        return this.resolved;
      })
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }
}
