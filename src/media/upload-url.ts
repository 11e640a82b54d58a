/**
 * What names an upload in a media URL: the path /media/upl_… (an id of newId('upl')), with or
 * without the /v1 prefix, on any host. Imports nothing, so the dashboard uses the same rule.
 */
const UPLOAD_ID = 'upl_[0-9a-z]{26}';
const UPLOAD_PATH = new RegExp(`^(?:/v1)?/media/(${UPLOAD_ID})$`);
/** An upload's whole id, as a pattern (PostgreSQL's `~` reads it the same). */
export const UPLOAD_ID_PATTERN = `^${UPLOAD_ID}$`;
const IS_UPLOAD_ID = new RegExp(UPLOAD_ID_PATTERN);

/** Whether `id` is an upload's (the media store also keys incoming messages' files by their ids). */
export const isUploadId = (id: string): boolean => IS_UPLOAD_ID.test(id);

/** The path that names (and serves) upload `id`. */
export const uploadPath = (id: string): string => `/media/${id}`;

/** The upload a media URL names, if it names one (a relative URL is read as a path). */
export function uploadIdOf(mediaUrl: string): string | undefined {
  try {
    return UPLOAD_PATH.exec(new URL(mediaUrl, 'http://relative.invalid').pathname)?.[1];
  } catch {
    return undefined;
  }
}
