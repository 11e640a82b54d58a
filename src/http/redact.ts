/**
 * What a log line may show of a request's URL. The query is read with the very parser the router
 * uses (parseQuery, handed to Fastify), so whatever spelling authenticates (`?token=`,
 * `?%74oken=`, `?tok%65n=`, any case) is seen here as the same name; every parameter whose
 * decoded name mentions "token" (`token[]`, `token=…` smuggled into a name) loses its value, and
 * anything shaped like an API token is masked wherever it appears, in names, values or the path.
 */
import { parse } from 'fast-querystring';

export const REDACTED = '[REDACTED]';

/** An API token (wg_ + base62), or enough of one to be worth hiding. */
const TOKEN_SHAPE = /wg_[0-9A-Za-z]{8,}/g;

/** The query-string parser of the router (Fastify's routerOptions.querystringParser). */
export function parseQuery(query: string): Record<string, unknown> {
  return query.length === 0 ? {} : (parse(query) as Record<string, unknown>);
}

const mask = (text: string): string => text.replace(TOKEN_SHAPE, REDACTED);
/** Escapes only what would change how the logged query reads (separators, %, spaces, controls). */
// eslint-disable-next-line no-control-regex -- control characters are escaped in the logged query
const escape = (text: string): string => text.replace(/[%&=#+\s\u0000-\u001f\u007f]/g, (char) => encodeURIComponent(char));

export function redactUrl(url: string): string {
  const mark = url.indexOf('?');
  const path = mask(mark === -1 ? url : url.slice(0, mark));
  if (mark === -1) return path;
  const pairs: string[] = [];
  for (const [name, value] of Object.entries(parseQuery(url.slice(mark + 1)))) {
    const secret = /token/i.test(name);
    for (const item of Array.isArray(value) ? value : [value]) {
      pairs.push(`${escape(mask(name))}=${secret ? REDACTED : escape(mask(String(item)))}`);
    }
  }
  return `${path}?${pairs.join('&')}`;
}
