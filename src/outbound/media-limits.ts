/**
 * The size cap of each media type, and so of an upload (the largest cap). Imports nothing, so the
 * dashboard can import these values; outbound/media.ts types it by MediaType (every type has one).
 */
export const SIZE_CAPS = {
  IMAGE: 5 * 1024 * 1024,
  VIDEO: 16 * 1024 * 1024,
  DOCUMENT: 100 * 1024 * 1024,
  AUDIO: 16 * 1024 * 1024,
  STICKER: 1024 * 1024,
} as const;

/** The largest upload (POST /media): the largest cap of any type, a DOCUMENT's. */
export const UPLOAD_LIMIT = Math.max(...Object.values(SIZE_CAPS));
