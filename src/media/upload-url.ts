/**
 * What names an upload in a media URL: the path /media/upl_… (an id of newId('upl')), with or
 * without the /v1 prefix, on any host. Imports nothing, so the dashboard uses the same rule.
 */
const UPLOAD_PATH = /^(?:\/v1)?\/media\/(upl_[0-9a-z]{26})$/;

/** The upload a media URL names, if it names one (a relative URL is read as a path). */
export function uploadIdOf(mediaUrl: string): string | undefined {
  try {
    return UPLOAD_PATH.exec(new URL(mediaUrl, 'http://relative.invalid').pathname)?.[1];
  } catch {
    return undefined;
  }
}
