/**
 * What a chat id looks like: a person's number (E.164 digits), a person the network knows only by
 * a LID (`<digits>@lid`), or a WhatsApp group (`<digits>@g.us`, older groups
 * `<creator digits>-<seconds>@g.us`).
 */
import { normalizePhone } from '../platform/phone.js';

const GROUP_ID = /^[0-9]{5,25}(-[0-9]{5,15})?@g\.us$/;
const LID_ID = /^[0-9]{5,25}@lid$/;

export const isGroupChatId = (id: string): boolean => GROUP_ID.test(id);
export const isLidChatId = (id: string): boolean => LID_ID.test(id);

/** A chat id as stored (a number loses its `+`, spaces and dashes), or undefined when it names no chat. */
export function normalizeChatId(raw: string): string | undefined {
  const id = raw.trim();
  if (GROUP_ID.test(id) || LID_ID.test(id)) return id;
  const phone = normalizePhone(id);
  return phone.ok ? phone.digits : undefined;
}
