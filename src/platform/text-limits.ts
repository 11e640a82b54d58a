/**
 * The sizes of the names and descriptions a client gives things: checked by the services that
 * own them, published by the route schemas, and held to by the dashboard's inputs, which bundle
 * this module (so it imports nothing). A message's own fields are in messaging/message-limits.ts.
 */

/** A contact's name, after line breaks become spaces and the ends are trimmed. */
export const CONTACT_NAME_MAX = 200;
/** A contact group's name, cleaned as a contact's. */
export const GROUP_NAME_MAX = 200;
/** A device's name. */
export const DEVICE_NAME_MAX = 100;
/** An API token's name. */
export const TOKEN_NAME_MAX = 100;
/** A WhatsApp group's name (its subject), trimmed: WhatsApp takes at most 100 characters. */
export const WHATSAPP_GROUP_NAME_MAX = 100;
/** A webhook endpoint's description, trimmed. */
export const WEBHOOK_DESCRIPTION_MAX = 500;
