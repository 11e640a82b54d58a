/**
 * A path with trailing slashes reaches the route without them (`GET /devices/` is
 * `GET /devices`, `POST /messages/send/` is `POST /messages/send`), as in the Express-based
 * gateways clients are written against; Fastify's router would read `/devices/` as
 * `/devices/:id` with an empty id, or answer 404. The dashboard and the API docs keep their
 * slashes: their pages load files relative to them. The query string is kept as it is.
 */
const KEEPS_ITS_SLASH = /^\/(?:dashboard|docs)(?:\/|$)/;

export function withoutTrailingSlash(url: string): string {
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);
  if (path.length < 2 || path.charCodeAt(path.length - 1) !== 0x2f || KEEPS_ITS_SLASH.test(path)) return url;
  const trimmed = path.replace(/\/+$/, '') || '/';
  return queryAt === -1 ? trimmed : trimmed + url.slice(queryAt);
}
