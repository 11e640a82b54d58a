/**
 * The sizes a send and its message's fields may have (the contract's limits, DESIGN.md §9). The send rules check them
 * (send-service.ts, message-kinds.ts, message-actions.ts), the route and record schemas publish
 * them, and the dashboard's Send page holds its inputs to them. No imports: the dashboard bundles
 * this file.
 */

/** Recipients a direct send takes at most: more, or any group, make a bulk job. */
export const DIRECT_SEND_MAX = 10;
/** A TEXT message's text, and an edit's. */
export const MAX_TEXT_LENGTH = 4096;
/** A message's mediaUrl. */
export const MAX_MEDIA_URL_LENGTH = 2048;
/** The caption of an IMAGE, VIDEO or DOCUMENT. */
export const MAX_CAPTION_LENGTH = 1024;
/** Contact cards of a CONTACT message. */
export const MAX_CONTACTS = 10;
/** A contact card's name, a LOCATION's place name. */
export const MAX_NAME_LENGTH = 256;
/** A LOCATION's address. */
export const MAX_ADDRESS_LENGTH = 512;
export const MAX_MENTIONS = 1024;
export const POLL_OPTIONS = { min: 2, max: 12, maxLength: 100 } as const;
export const MAX_POLL_QUESTION = 255;
export const MAX_EMOJI_LENGTH = 16;
