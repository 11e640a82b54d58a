/**
 * GET /messages/:id/media: the file of an incoming media message, from the media store (in the
 * database, so any API process serves it), with its type, name, length and ETag; one byte range
 * per request (206), as browsers' media players and download resumers ask.
 */
import { Readable } from 'node:stream';
import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../platform/database.js';
import { AppError } from '../../platform/errors.js';
import { getStoredMedia, readMedia } from '../../media/media-store.js';
import { getMessage } from '../../messaging/message-store.js';
import { DATA_CSP } from '../security-headers.js';
import { auth } from '../auth.js';
import { errorResponses, IdParams } from '../schemas.js';

/** The first and last byte asked for, `unsatisfiable`, or undefined to answer the whole file. */
export type ByteRange = { start: number; end: number } | 'unsatisfiable' | undefined;

/**
 * A Range header over a file of `size` bytes. One range only: a list of ranges, another unit or
 * a header that is not a range at all is ignored (the whole file, as RFC 9110 allows); a range
 * that starts past the end, ends before it starts, or an empty suffix is unsatisfiable (416).
 */
export function parseRange(header: string | undefined, size: number): ByteRange {
  const match = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!match || (match[1] === '' && match[2] === '')) return undefined;
  if (match[1] === '') {
    const suffix = Number(match[2]);
    return suffix === 0 || size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(match[1]);
  const last = match[2] === '' ? size - 1 : Number(match[2]);
  if (start >= size || last < start) return 'unsatisfiable';
  return { start, end: Math.min(last, size - 1) };
}

/** Shown in the browser (image, audio, video players); anything else is a download. SVG can carry script: a download. */
const INLINE = /^(image\/(jpeg|png|gif|webp)|audio\/[\w.+-]+|video\/[\w.+-]+)$/;
const EXTENSIONS: Record<string, string> = { jpeg: 'jpg', 'svg+xml': 'svg', mpeg: 'mp3', quicktime: 'mov', plain: 'txt' };

/** Content-Disposition with the file's name (RFC 6266: an ASCII fallback and the UTF-8 name). */
export function contentDisposition(contentType: string, fileName: string | null, messageId: string): string {
  const subtype = contentType.split('/')[1]?.split(';')[0]?.trim() ?? '';
  const name = fileName ?? `${messageId}${subtype && /^[\w.+-]+$/.test(subtype) ? `.${EXTENSIONS[subtype] ?? subtype}` : ''}`;
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${INLINE.test(contentType) ? 'inline' : 'attachment'}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

const Binary = Type.Unsafe<Readable | string>({ type: 'string', format: 'binary', description: 'The file' });

export const mediaRoutes: FastifyPluginAsyncTypebox<{ database: Database }> = async (app, { database }) => {
  app.get(
    '/messages/:id/media',
    {
      config: { scope: 'messages:read' },
      schema: {
        tags: ['messages'], operationId: 'getMessageMedia',
        summary: 'Download the file of an incoming media message (Range requests answered)',
        description:
          'The bytes Waygate stored when the message arrived, with Content-Type, Content-Disposition (the file name), Content-Length, ' +
          'ETag (the SHA-256, also `media.sha256` on the message) and Accept-Ranges. `Range: bytes=first-last` (one range; ' +
          '`bytes=first-` and `bytes=-suffix` too) answers 206 with Content-Range; a range past the end answers 416 with ' +
          '`Content-Range: bytes */size`. `If-None-Match` with the ETag answers 304. 404 when the message is not one of the ' +
          "account's, has no stored file (outgoing, or its download FAILED) or its file was pruned (EXPIRED, after MEDIA_RETENTION_DAYS).",
        params: IdParams,
        produces: ['application/octet-stream'],
        response: { 200: Binary, 206: Binary, 304: Type.Null({ description: 'Not modified (If-None-Match)' }), ...errorResponses('FORBIDDEN', 'NOT_FOUND', 'RANGE_NOT_SATISFIABLE') },
      },
    },
    async (request, reply) => {
      const { accountId } = auth(request);
      const { id } = request.params;
      const file = await getStoredMedia(database, accountId, id);
      if (!file) throw await notStored(database, accountId, id);
      const etag = `"${file.sha256}"`;
      reply
        .header('content-type', file.contentType)
        .header('content-disposition', contentDisposition(file.contentType, file.fileName, id))
        .header('accept-ranges', 'bytes')
        .header('etag', etag)
        .header('cache-control', 'private, max-age=86400')
        // The file is whatever the sender sent: nothing in it may run, even if a browser renders it.
        .header('content-security-policy', `${DATA_CSP}; sandbox`);
      const ifNoneMatch = request.headers['if-none-match'];
      if (ifNoneMatch && ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)) return reply.status(304).send(null);
      const ifRange = request.headers['if-range'];
      const range = ifRange && ifRange !== etag ? undefined : parseRange(request.headers.range, file.sizeBytes);
      if (range === 'unsatisfiable') {
        throw new AppError('RANGE_NOT_SATISFIABLE', `The range ${request.headers.range} is outside the file's ${file.sizeBytes} bytes`, undefined, {
          'content-range': `bytes */${file.sizeBytes}`,
        });
      }
      const { start, end } = range ?? { start: 0, end: file.sizeBytes - 1 };
      if (range) reply.status(206).header('content-range', `bytes ${start}-${end}/${file.sizeBytes}`);
      reply.header('content-length', end - start + 1);
      // HEAD (Fastify's, from this route) keeps a stream's Content-Length and drains it: an empty one reads nothing.
      if (request.method === 'HEAD' || end < start) return reply.send(Readable.from([]));
      return reply.send(Readable.from(readMedia(database, file, start, end)));
    },
  );
};

/** Why a message has no file to serve: each case says so, all 404 (another account's message is not found at all). */
async function notStored(database: Database, accountId: string, id: string): Promise<AppError> {
  const message = await getMessage(database, accountId, id);
  if (!message) return new AppError('NOT_FOUND', 'Message not found');
  const media = message.media;
  if (message.direction === 'out' || !media) return new AppError('NOT_FOUND', 'This message has no stored file (only incoming media messages do; an outgoing one was sent from its mediaUrl)');
  if (media.status === 'EXPIRED') return new AppError('NOT_FOUND', 'The file was pruned after MEDIA_RETENTION_DAYS (media.status EXPIRED)');
  if (media.status === 'FAILED') return new AppError('NOT_FOUND', `The file could not be downloaded: ${media.error?.message ?? 'unknown error'} (media.status FAILED)`);
  return new AppError('NOT_FOUND', 'This message has no stored file');
}
