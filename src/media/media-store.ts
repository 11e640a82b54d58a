/**
 * Every statement on the media store: the files of incoming media messages and uploads, kept in
 * the database so that every node of a cluster serves them (`media`: one row per file, keyed by
 * its message's id or its upload's, `upl_…`, in column message_id; `media_chunks`: its bytes,
 * CHUNK_SIZE per row).
 *
 * Why chunks and not one bytea per file: a file is written as it downloads and read as it is
 * served, one chunk per statement, so neither the process nor the database ever holds a whole
 * 100 MB document in one value (PGlite copies every parameter and result into its WASM heap, and
 * runs one statement at a time: a 100 MB statement would stall every request for its length); a
 * Range request reads only the chunks it covers.
 *
 * A file is invisible until `stored_at` is set, which happens in the statement that stores its
 * message (PUBLISH_MEDIA_SQL), so a message and its file appear together. A file whose writing
 * never finished (a crash mid-download) is pruned with the expired ones.
 *
 * The bytes cross the driver as base64 text (decode/encode in SQL): PGlite binds and returns a
 * bytea as hex text parsed in JavaScript, 5 to 10 times slower than base64 (seconds per MB);
 * node-postgres is as fast either way.
 */
import { createHash } from 'node:crypto';
import type { Queryable } from '../platform/database.js';
import { UPLOAD_ID_PATTERN } from './upload-url.js';

/** Bytes per media_chunks row: a statement of some tens of milliseconds on PGlite. */
export const CHUNK_SIZE = 256 * 1024;
/** A file whose writing started this long ago and never finished is abandoned. */
const UNFINISHED_AFTER = '1 day';

export interface StoredMedia {
  messageId: string;
  contentType: string;
  fileName: string | null;
  sizeBytes: number;
  sha256: string;
  chunkSize: number;
  /** When its writing started: retention counts from here. */
  createdAt: Date;
  storedAt: Date;
}

export interface NewMedia {
  messageId: string;
  accountId: string;
  contentType: string;
  fileName?: string | undefined;
}

export class MediaTooLargeError extends Error {
  constructor(
    readonly limit: number,
    readonly size: number,
  ) {
    super(`The file is over ${limit} bytes`);
    this.name = 'MediaTooLargeError';
  }
}

/**
 * Writes a file (not yet visible) from `stream`, a chunk per statement, computing its size and
 * SHA-256 as it goes; past `limit` bytes it stops with MediaTooLargeError. A throw leaves the
 * unfinished file in place for the caller to discard (discardMedia). Writing the same message
 * again starts the file over.
 */
export async function writeMedia(db: Queryable, file: NewMedia, stream: AsyncIterable<Uint8Array>, limit: number): Promise<{ sizeBytes: number; sha256: string }> {
  await db.query(
    `INSERT INTO media (message_id, account_id, content_type, file_name, chunk_size) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (message_id) DO UPDATE SET content_type = EXCLUDED.content_type, file_name = EXCLUDED.file_name, size_bytes = 0, sha256 = NULL, created_at = now()
       WHERE media.stored_at IS NULL`,
    [file.messageId, file.accountId, file.contentType, file.fileName ?? null, CHUNK_SIZE],
  );
  await db.query('DELETE FROM media_chunks WHERE message_id = $1', [file.messageId]);
  const hash = createHash('sha256');
  let size = 0;
  let n = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const flush = async (all: boolean): Promise<void> => {
    let buffer = Buffer.concat(pending);
    while (buffer.length >= CHUNK_SIZE || (all && buffer.length > 0)) {
      const chunk = buffer.subarray(0, CHUNK_SIZE);
      await db.query(`INSERT INTO media_chunks (message_id, n, data) VALUES ($1, $2, decode($3, 'base64'))`, [file.messageId, n++, chunk.toString('base64')]);
      buffer = buffer.subarray(chunk.length);
    }
    pending = buffer.length > 0 ? [buffer] : [];
    pendingBytes = buffer.length;
  };
  for await (const piece of stream) {
    size += piece.length;
    if (size > limit) throw new MediaTooLargeError(limit, size);
    hash.update(piece);
    pending.push(Buffer.from(piece.buffer, piece.byteOffset, piece.length));
    pendingBytes += piece.length;
    if (pendingBytes >= CHUNK_SIZE) await flush(false);
  }
  await flush(true);
  const sha256 = hash.digest('hex');
  await db.query('UPDATE media SET size_bytes = $2, sha256 = $3 WHERE message_id = $1', [file.messageId, size, sha256]);
  return { sizeBytes: size, sha256 };
}

/** Drops a file that was not published (a failed download, or its message was a redelivery). */
export async function discardMedia(db: Queryable, messageId: string): Promise<void> {
  await db.query('DELETE FROM media WHERE message_id = $1 AND stored_at IS NULL', [messageId]);
}

/**
 * SQL (a data-modifying CTE body): makes the written file of each message id in `ids` (a table
 * expression with column `id`) visible, in the statement that stores the message.
 */
export const PUBLISH_MEDIA_SQL = (ids: string): string =>
  `UPDATE media SET stored_at = now() WHERE message_id IN (SELECT id FROM ${ids}) AND stored_at IS NULL AND sha256 IS NOT NULL RETURNING 1`;

/** Makes a written file visible on its own (an upload: no message is stored with it). */
export async function publishMedia(db: Queryable, id: string): Promise<void> {
  await db.query(`WITH ids AS (SELECT $1::text AS id), published AS (${PUBLISH_MEDIA_SQL('ids')}) SELECT count(*) FROM published`, [id]);
}

/** Deletes a stored file of the account, chunks and all; false if there was none. */
export async function deleteStoredMedia(db: Queryable, accountId: string, id: string): Promise<boolean> {
  const rows = await db.query('DELETE FROM media WHERE message_id = $1 AND account_id = $2 AND stored_at IS NOT NULL RETURNING 1', [id, accountId]);
  return rows.length > 0;
}

/**
 * A stored upload's row: the predicate of media_uploads_idx (migration 0054), written as a
 * constant so that the planner matches it (the pattern has no quote to escape).
 */
export const IS_UPLOAD = `message_id ~ '${UPLOAD_ID_PATTERN}' AND stored_at IS NOT NULL`;

/** The account's stored uploads, newest first (a page of them), and how many there are. */
export async function listUploads(db: Queryable, accountId: string, limit: number, offset: number): Promise<{ rows: StoredMedia[]; total: number }> {
  const [count] = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM media WHERE account_id = $1 AND ${IS_UPLOAD}`, [accountId]);
  const rows = await db.query<MediaRow>(
    `SELECT ${MEDIA_COLUMNS} FROM media WHERE account_id = $1 AND ${IS_UPLOAD} ORDER BY created_at DESC, message_id DESC LIMIT $2 OFFSET $3`,
    [accountId, limit, offset],
  );
  return { rows: rows.map(toStoredMedia), total: count?.n ?? 0 };
}

/** The bytes the account's uploads hold (stored ones: a file being written does not count yet). */
export async function uploadBytesHeld(db: Queryable, accountId: string): Promise<number> {
  const [row] = await db.query<{ bytes: number }>(
    `SELECT coalesce(sum(size_bytes), 0)::float8 AS bytes FROM media WHERE account_id = $1 AND ${IS_UPLOAD}`,
    [accountId],
  );
  return row!.bytes;
}

type MediaRow = {
  message_id: string; content_type: string; file_name: string | null; size_bytes: string | number; sha256: string; chunk_size: number; created_at: Date; stored_at: Date;
};
const MEDIA_COLUMNS = 'message_id, content_type, file_name, size_bytes, sha256, chunk_size, created_at, stored_at';

function toStoredMedia(row: MediaRow): StoredMedia {
  return {
    messageId: row.message_id,
    contentType: row.content_type,
    fileName: row.file_name,
    sizeBytes: Number(row.size_bytes),
    sha256: row.sha256,
    chunkSize: row.chunk_size,
    createdAt: row.created_at,
    storedAt: row.stored_at,
  };
}

/** A stored file of the account (undefined: none, another account's, not finished, or pruned). */
export async function getStoredMedia(db: Queryable, accountId: string, messageId: string): Promise<StoredMedia | undefined> {
  const [row] = await db.query<MediaRow>(`SELECT ${MEDIA_COLUMNS} FROM media WHERE message_id = $1 AND account_id = $2 AND stored_at IS NOT NULL`, [messageId, accountId]);
  return row && toStoredMedia(row);
}

/**
 * The bytes `start`..`end` (inclusive) of a stored file, a chunk per statement (only the part of
 * a chunk the range covers is read). Ends early, without error, if the file is pruned meanwhile.
 */
export async function* readMedia(db: Queryable, file: Pick<StoredMedia, 'messageId' | 'chunkSize'>, start: number, end: number): AsyncGenerator<Buffer> {
  const size = file.chunkSize;
  for (let n = Math.floor(start / size); n * size <= end; n++) {
    const from = Math.max(start - n * size, 0);
    const to = Math.min(end - n * size, size - 1);
    const [row] = await db.query<{ data: string }>(`SELECT encode(substring(data FROM $3 FOR $4), 'base64') AS data FROM media_chunks WHERE message_id = $1 AND n = $2`, [
      file.messageId,
      n,
      from + 1,
      to - from + 1,
    ]);
    if (!row) return;
    yield Buffer.from(row.data, 'base64');
  }
}

/**
 * One bounded batch of retention: files stored more than `days` ago go (oldest first, at most
 * `batch` files and, past the first, no more than `byteBudget` bytes, so one statement never
 * deletes a mountain of chunks), and their messages say so (media.status EXPIRED, mediaUrl
 * null); so do files whose writing never finished. Returns how many files went.
 */
export async function pruneExpiredMedia(db: Queryable, days: number, batch: number, byteBudget: number): Promise<number> {
  const rows = await db.query<{ message_id: string }>(
    `WITH expired AS (
       SELECT message_id FROM (
         SELECT message_id, size_bytes, sum(size_bytes) OVER (ORDER BY created_at, message_id) AS running
           FROM (SELECT message_id, size_bytes, created_at FROM media
                  WHERE created_at < now() - interval '${UNFINISHED_AFTER}' AND (stored_at IS NULL OR created_at < now() - $1::int * interval '1 day')
                  ORDER BY created_at, message_id LIMIT $2) AS oldest) AS counted
        WHERE running - size_bytes < $3),
     gone AS (DELETE FROM media m USING expired e WHERE m.message_id = e.message_id RETURNING m.message_id, m.stored_at IS NOT NULL AS published),
     said AS (
       UPDATE messages SET media_url = NULL,
              media = jsonb_set(media - 'error', '{status}', '"EXPIRED"')
         FROM gone WHERE messages.id = gone.message_id AND gone.published AND messages.media IS NOT NULL
       RETURNING 1)
     SELECT message_id FROM gone`,
    [days, batch, byteBudget],
  );
  return rows.length;
}
