/** Fetches media through the SSRF guard, within the size cap of its type: a send's file, and the sandbox phone's. */
import type { Readable } from 'node:stream';
import type { MediaType, OutgoingMedia } from '../network/network.js';
import type { GuardedHttp } from './ssrf.js';
import { UnsafeUrlError, unsafeCause } from './ssrf.js';

import { SIZE_CAPS } from './media-limits.js';

export const MEDIA_LIMITS: Record<MediaType, number> = SIZE_CAPS;

/** A WebP file: "RIFF", 4 bytes of length, "WEBP". */
const isWebp = (data: Buffer): boolean => data.length >= 12 && data.toString('latin1', 0, 4) === 'RIFF' && data.toString('latin1', 8, 12) === 'WEBP';

export type MediaResult = { ok: true; media: OutgoingMedia } | MediaFailure;

const FETCH_TIMEOUT_MS = 30_000;

function fileNameOf(url: URL, contentDisposition: string | undefined): string | undefined {
  const fromHeader = contentDisposition ? /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(contentDisposition)?.[1] : undefined;
  if (fromHeader) return decodeURIComponent(fromHeader);
  const last = url.pathname.split('/').filter(Boolean).pop();
  return last ? decodeURIComponent(last) : undefined;
}

export type MediaFailure = { ok: false; permanent: boolean; code: string; message: string };

/** A media URL answered: its body still to read, with what its headers say. */
export interface OpenedMedia {
  ok: true;
  body: Readable;
  /** The Content-Type without parameters, if any. */
  mimeType: string | undefined;
  fileName: string | undefined;
}

/**
 * Requests a media URL through the SSRF guard: a redirect, an error status or a declared size
 * over `limit` is a failure (4xx but 429 permanent); otherwise the body, to be read within
 * `limit` by the caller.
 */
export async function openMedia(http: GuardedHttp, rawUrl: string, limit: number, label: string): Promise<OpenedMedia | MediaFailure> {
  try {
    const response = await http.request(rawUrl, { timeoutMs: FETCH_TIMEOUT_MS, allowPrivate: http.allowPrivate });
    if (response.status >= 300 && response.status < 400) {
      response.body.destroy();
      return { ok: false, permanent: true, code: 'MEDIA_REDIRECT', message: `The media URL answered ${response.status} (redirects are not followed)` };
    }
    if (response.status < 200 || response.status >= 300) {
      response.body.destroy();
      const permanent = response.status < 500 && response.status !== 429;
      return { ok: false, permanent, code: 'MEDIA_UNREACHABLE', message: `The media URL answered HTTP ${response.status}` };
    }
    const declared = Number(response.header('content-length') ?? NaN);
    if (Number.isFinite(declared) && declared > limit) {
      response.body.destroy();
      return { ok: false, permanent: true, code: 'MEDIA_TOO_LARGE', message: `The media is ${declared} bytes; ${label} allows ${limit}` };
    }
    const type = response.header('content-type');
    return {
      ok: true,
      body: response.body,
      mimeType: type ? type.split(';')[0]!.trim() || undefined : undefined,
      fileName: fileNameOf(new URL(rawUrl), response.header('content-disposition')),
    };
  } catch (error) {
    return fetchFailure(error);
  }
}

function fetchFailure(error: unknown): MediaFailure {
  const unsafe = error instanceof UnsafeUrlError ? error : unsafeCause(error);
  if (unsafe) return { ok: false, permanent: true, code: 'MEDIA_URL_REFUSED', message: unsafe.message };
  return { ok: false, permanent: false, code: 'MEDIA_UNREACHABLE', message: `The media could not be fetched: ${(error as Error).message}` };
}

/** Fetches a message's media at send time, within the size cap of its type. */
export async function fetchMedia(http: GuardedHttp, rawUrl: string, type: MediaType): Promise<MediaResult> {
  const opened = await openMedia(http, rawUrl, MEDIA_LIMITS[type], type);
  if (!opened.ok) return opened;
  try {
    return await readMediaBody(opened.body, type, opened);
  } catch (error) {
    return fetchFailure(error);
  }
}

/**
 * Reads a file to send (an answered media URL's body, or an upload from the media store) within
 * the size cap of its type; a STICKER must be WebP, whatever its type was declared as.
 */
export async function readMediaBody(body: AsyncIterable<Uint8Array> & Partial<Pick<Readable, 'destroy'>>, type: MediaType, declared: { mimeType: string | undefined; fileName: string | undefined }): Promise<MediaResult> {
  const limit = MEDIA_LIMITS[type];
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) {
      body.destroy?.();
      return { ok: false, permanent: true, code: 'MEDIA_TOO_LARGE', message: `The media is over ${limit} bytes, the limit for ${type}` };
    }
    chunks.push(Buffer.from(chunk));
  }
  const data = Buffer.concat(chunks);
  // A sticker is a WebP image whatever the server calls it: its bytes say so.
  if (type === 'STICKER' && !isWebp(data)) return { ok: false, permanent: true, code: 'MEDIA_NOT_WEBP', message: 'A STICKER must be a WebP image' };
  return {
    ok: true,
    media: { data, mimeType: type === 'STICKER' ? 'image/webp' : (declared.mimeType ?? 'application/octet-stream'), fileName: declared.fileName },
  };
}
