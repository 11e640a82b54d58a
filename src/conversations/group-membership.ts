/**
 * Whether a device is still in a group, read from the group's stored participants: its own
 * number listed (then its entry, with its admin mark), or not listed while every participant is
 * named by number (then it left). Where WhatsApp names someone by LID only, that may be the
 * device: it counts as in, and the network decides what it may do. The API refuses early by it
 * (ConversationService) and the dashboard's Inbox shows it; the dashboard bundles this module,
 * so it imports types alone.
 */
import type { Participant } from './chat-record.js';

export function deviceInGroup(participants: Participant[] | null, ownNumber: string | null): { me: Participant | undefined; inGroup: boolean } {
  if (!participants || !ownNumber) return { me: undefined, inGroup: true };
  const me = participants.find((p) => p.phoneNumber === ownNumber);
  return { me, inGroup: me !== undefined || participants.some((p) => p.lid !== null || p.phoneNumber.endsWith('@lid')) };
}
