/**
 * Outbound HTTP to user-given URLs (webhooks, mediaUrl) without SSRF: http(s) only, no
 * redirects, every address the host resolves to must be public, and the connection goes to the
 * address that was checked (the check happens inside the connection's own DNS lookup, so a
 * second resolution cannot swap in a private address). ALLOW_PRIVATE_URLS lifts the address
 * check for local development.
 */
import dns from 'node:dns';
import net from 'node:net';
import type { Readable } from 'node:stream';
import ipaddr from 'ipaddr.js';
import { Agent } from 'undici';

export class UnsafeUrlError extends Error {
  constructor(
    readonly code: 'URL_INVALID' | 'URL_SCHEME' | 'URL_PRIVATE_ADDRESS' | 'URL_UNRESOLVABLE',
    message: string,
  ) {
    super(message);
    this.name = 'UnsafeUrlError';
  }
}

const PRIVATE_HINT = 'set ALLOW_PRIVATE_URLS=true to allow private addresses for local development';

/** IANA's global unicast block: every public IPv6 address is in it (RFC 4291 §2.4). */
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];

/**
 * True for an address on the public internet; false for loopback, private, link-local, CGNAT,
 * multicast, reserved and their IPv4-mapped forms. An IPv6 address must also lie in 2000::/3, so
 * the deprecated IPv4-compatible range (::a.b.c.d, e.g. [::127.0.0.1]), site-local, discard and
 * whatever else ipaddr.js files as plain "unicast" outside the global block are refused too; NAT64,
 * 6to4 and Teredo (which embed IPv4 addresses) have ranges of their own and are refused.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  // ipaddr.js reads a dotted IPv6 tail (::127.0.0.1) as IPv4-mapped; the WHATWG form has no dots.
  let parsed = ipaddr.parse(net.isIPv6(address) ? new URL(`http://[${address}]/`).hostname.slice(1, -1) : address);
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  if (parsed.range() !== 'unicast') return false;
  return parsed.kind() === 'ipv4' || (parsed as ipaddr.IPv6).match(IPV6_GLOBAL_UNICAST);
}

export function checkUrlShape(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UnsafeUrlError('URL_INVALID', `Not a valid URL: ${raw}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UnsafeUrlError('URL_SCHEME', 'Only http and https URLs are allowed');
  if (url.username || url.password) throw new UnsafeUrlError('URL_INVALID', 'URLs with credentials are not allowed');
  return url;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback): void => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const list = addresses as dns.LookupAddress[];
      if (list.length === 0) return callback(Object.assign(new Error(`${hostname} does not resolve`), { code: 'ENOTFOUND' }), []);
      if (!allowPrivate) {
        const bad = list.find((entry) => !isPublicAddress(entry.address));
        if (bad) {
          return callback(
            Object.assign(new UnsafeUrlError('URL_PRIVATE_ADDRESS', `${hostname} resolves to ${bad.address}, which is not a public address (${PRIVATE_HINT})`), {
              code: 'EPRIVATEADDRESS',
            }),
            [],
          );
        }
      }
      // Connect to exactly the address we checked.
      if (options.all) return callback(null, list);
      return callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

export interface GuardedFetchOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs: number;
  allowPrivate: boolean;
  /** Aborts the request before its timeout (a worker that stops). */
  signal?: AbortSignal;
}

/** What a URL answered: its status, its headers, and its body still to read (or to destroy). */
export interface GuardedResponse {
  status: number;
  /** A header by its lower-case name (the first value when it is repeated). */
  header(name: string): string | undefined;
  body: Readable;
  /**
   * Lets go of a body the caller does not read: a small one (an empty 204's) is drained so the
   * connection is reused, a larger one is cut off. Unlike destroying it, draining builds no error
   * (undici makes one, with its stack, for every body destroyed before its end).
   */
  discard(): Promise<void>;
}

/** The most of a body discard() drains; past it the body is cut off. */
const DISCARD_LIMIT = 64 * 1024;

export class GuardedHttp {
  private readonly agent: Agent;

  constructor(readonly allowPrivate: boolean) {
    this.agent = new Agent({
      connect: { lookup: guardedLookup(allowPrivate) as never },
      connections: 256,
    });
  }

  /** Checks a URL before it is stored (literal addresses are checked without DNS). */
  async validate(raw: string): Promise<URL> {
    const url = checkUrlShape(raw);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (this.allowPrivate) return url;
    if (net.isIP(host)) {
      if (!isPublicAddress(host)) throw new UnsafeUrlError('URL_PRIVATE_ADDRESS', `${host} is not a public address (${PRIVATE_HINT})`);
      return url;
    }
    let addresses: dns.LookupAddress[];
    try {
      addresses = await dns.promises.lookup(host, { all: true });
    } catch {
      throw new UnsafeUrlError('URL_UNRESOLVABLE', `${host} does not resolve`);
    }
    const bad = addresses.find((entry) => !isPublicAddress(entry.address));
    if (bad) throw new UnsafeUrlError('URL_PRIVATE_ADDRESS', `${host} resolves to ${bad.address}, which is not a public address (${PRIVATE_HINT})`);
    return url;
  }

  /**
   * One request, no redirects followed (a 3xx is returned as it is, for the caller to treat as a
   * failure). Through undici's dispatcher API rather than its fetch: fetch's Request and web
   * streams cost webhook delivery about a tenth of its CPU. The timeout covers the body too.
   */
  async request(raw: string, options: GuardedFetchOptions): Promise<GuardedResponse> {
    const url = checkUrlShape(raw);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!this.allowPrivate && net.isIP(host) && !isPublicAddress(host)) {
      throw new UnsafeUrlError('URL_PRIVATE_ADDRESS', `${host} is not a public address (${PRIVATE_HINT})`);
    }
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const response = await this.agent.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: (options.method ?? 'GET') as 'GET',
      headers: options.headers,
      body: options.body,
      signal: options.signal ? AbortSignal.any([timeout, options.signal]) : timeout,
    });
    const { headers } = response;
    // undici turns a body destroyed before its end into an 'error' event (UND_ERR_ABORTED); a
    // caller that stops reading on purpose (a size cap, an excerpt) is not an error. Readers still
    // see real errors through their own listeners (for await, pipeline).
    response.body.on('error', () => undefined);
    return {
      status: response.statusCode,
      header(name) {
        const value = headers[name];
        return Array.isArray(value) ? value[0] : value;
      },
      body: response.body,
      discard: () => response.body.dump({ limit: DISCARD_LIMIT }).then(
        () => undefined,
        () => undefined,
      ),
    };
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

/** Finds an UnsafeUrlError inside undici's wrapped connection errors. */
export function unsafeCause(error: unknown): UnsafeUrlError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current; depth++) {
    if (current instanceof UnsafeUrlError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
