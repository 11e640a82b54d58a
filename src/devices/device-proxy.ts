/**
 * A device's own proxy (the usual answer to a blocked IP when many numbers share a server): what
 * a proxy URL may be, how the API shows it (never the password), and the agents the WhatsApp
 * network connects through — an http.Agent for the WebSocket and media uploads, an undici
 * dispatcher for media downloads. The sandbox network makes no connections and ignores it.
 */
import type { Agent } from 'node:http';
import { HttpsProxyAgent } from 'https-proxy-agent';
import { SocksProxyAgent } from 'socks-proxy-agent';
import { ProxyAgent, Socks5ProxyAgent, type Dispatcher } from 'undici';

const HTTP_SCHEMES = new Set(['http:', 'https:']);
/** SOCKS5 only: undici, which downloads media, speaks no SOCKS4. socks5h resolves names at the proxy. */
const SOCKS_SCHEMES = new Set(['socks5:', 'socks5h:']);
export const PROXY_URL_MAX = 2_000;

/** Why `value` is not a usable proxy URL, or undefined when it is. */
export function proxyUrlProblem(value: string): string | undefined {
  if (value.length > PROXY_URL_MAX) return `must be at most ${PROXY_URL_MAX} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be a URL such as http://user:pass@proxy.example.com:8080 or socks5://proxy.example.com:1080';
  }
  if (!HTTP_SCHEMES.has(url.protocol) && !SOCKS_SCHEMES.has(url.protocol)) return 'must use http, https, socks5 or socks5h';
  if (!url.hostname) return 'must name the proxy host';
  if ((url.pathname && url.pathname !== '/') || url.search || url.hash) return 'must not have a path, query or fragment';
  return undefined;
}

/** The URL as the API shows it: the password replaced by ***. */
export function maskProxyUrl(value: string | null): string | null {
  if (value === null) return null;
  return value.replace(/^([a-z0-9+.-]+:\/\/[^:/@]*):[^@/]*@/i, '$1:***@');
}

/** The agent for Node's http/https/ws clients (Baileys' WebSocket and uploads). */
export function proxyAgent(value: string): Agent {
  const url = new URL(value);
  return SOCKS_SCHEMES.has(url.protocol) ? new SocksProxyAgent(url) : new HttpsProxyAgent(url);
}

/** The dispatcher for fetch (undici): media downloads. */
export function proxyDispatcher(value: string): Dispatcher {
  const url = new URL(value);
  return SOCKS_SCHEMES.has(url.protocol) ? new Socks5ProxyAgent(url.toString()) : new ProxyAgent(url.toString());
}
