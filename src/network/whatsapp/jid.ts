/**
 * WhatsApp addresses ("JIDs"): `<digits>@s.whatsapp.net` for a phone number (with an optional
 * `:<device>` suffix, e.g. `6281234567890:12@s.whatsapp.net`), `<digits>@lid` for a user the
 * network addresses by an opaque "linked identity" instead of the number, `@g.us` groups,
 * `status@broadcast`, `@newsletter` channels.
 */
export const USER_SERVER = 's.whatsapp.net';

export interface ParsedJid {
  user: string;
  server: string;
  device?: number | undefined;
}

export function parseJid(jid: string | null | undefined): ParsedJid | undefined {
  if (!jid) return undefined;
  const at = jid.indexOf('@');
  if (at < 0) return undefined;
  const server = jid.slice(at + 1);
  const userPart = jid.slice(0, at);
  const [userAgent, device] = userPart.split(':');
  const user = userAgent!.split('_')[0]!;
  return { user, server, device: device === undefined ? undefined : Number(device) };
}

export function phoneToJid(phoneNumber: string): string {
  return `${phoneNumber}@${USER_SERVER}`;
}

/** A chat id as Waygate keeps it (a number's digits, `<digits>@lid`, a group id) as a WhatsApp address. */
export const chatJid = (chat: string): string => (chat.includes('@') ? chat : phoneToJid(chat));

/** The E.164 digits of a phone-number JID (device suffix dropped); undefined for anything else. */
export function jidToPhone(jid: string | null | undefined): string | undefined {
  const parsed = parseJid(jid);
  if (!parsed || (parsed.server !== USER_SERVER && parsed.server !== 'c.us')) return undefined;
  return /^\d{5,20}$/.test(parsed.user) ? parsed.user : undefined;
}

export function isLidJid(jid: string | null | undefined): boolean {
  return parseJid(jid)?.server === 'lid';
}

/** `<digits>@lid` without a device suffix (the form mappings are kept under). */
export function normalizeLid(jid: string): string | undefined {
  const parsed = parseJid(jid);
  return parsed?.server === 'lid' && parsed.user ? `${parsed.user}@lid` : undefined;
}

/** A one-to-one chat with a person (not a group, broadcast list, status or channel). */
export function isPersonJid(jid: string | null | undefined): boolean {
  const server = parseJid(jid)?.server;
  return server === USER_SERVER || server === 'c.us' || server === 'lid';
}

/** Status updates, broadcast lists and channels: traffic Waygate neither stores nor answers. */
export function isBroadcastJid(jid: string | null | undefined): boolean {
  const server = parseJid(jid)?.server;
  return server === 'broadcast' || server === 'newsletter';
}

/** The last four digits only, for logs: enough to tell numbers apart, not enough to reveal one. */
export function maskPhone(phone: string | undefined | null): string {
  if (!phone) return '?';
  return phone.length <= 4 ? '****' : `…${phone.slice(-4)}`;
}
