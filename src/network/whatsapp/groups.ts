/**
 * WhatsApp group chats, read receipts and presence as Baileys shapes them: group metadata (with
 * the session's cache, which Baileys also reads when sending into a group), participants as
 * numbers (the LID when WhatsApp hides the number), the keys of a read receipt, and what
 * WhatsApp answers a group admin's changes.
 */
import { NetworkRefusal, type ContactPresenceState, type GroupInfo, type GroupParticipant, type ParticipantOutcome, type PresenceState, type ReadMessage } from '../network.js';
import { chatJid, jidToPhone, normalizeLid, phoneToJid } from './jid.js';
import { messageKey } from './messages.js';
import type { WAGroupMetadata, WAGroupParticipant, WAMessageKey, WAPresence, WASocketLike } from './types.js';

/** How long group metadata is trusted before it is asked again (groups.update and participant changes refresh it at once). */
export const GROUP_CACHE_MS = 10 * 60_000;

export const isGroupJid = (jid: string | null | undefined): boolean => Boolean(jid?.endsWith('@g.us'));

/** A participant's number and LID as the metadata carries them (Baileys 7: id in either form, the other in phoneNumber / lid). */
export function participantIds(p: WAGroupParticipant): { phone: string | undefined; lid: string | undefined } {
  const phone = jidToPhone(p.phoneNumber) ?? jidToPhone(p.id);
  const lid = (p.lid ? normalizeLid(p.lid) : undefined) ?? normalizeLid(p.id);
  return { phone, lid };
}

/** A group as the network interface reports it; `phoneOf` finds the number behind a LID the metadata does not carry. */
export function toGroupInfo(metadata: WAGroupMetadata, phoneOf: (lid: string) => string | undefined): GroupInfo {
  const participants: GroupParticipant[] = metadata.participants.map((p) => {
    const { phone, lid } = participantIds(p);
    const number = phone ?? (lid ? phoneOf(lid) : undefined);
    return { phoneNumber: number ?? lid ?? p.id, lid, admin: p.admin === 'admin' || p.admin === 'superadmin' };
  });
  return { id: metadata.id, name: metadata.subject, participants, createdAt: metadata.creation ? new Date(metadata.creation * 1000) : undefined };
}

/** The keys Baileys' readMessages takes for incoming messages of a chat (a group's name their sender as participant). */
export function readKeys(chat: string, messages: ReadMessage[]): WAMessageKey[] {
  const remoteJid = chatJid(chat);
  const inGroup = isGroupJid(remoteJid);
  return messages.map((m) => messageKey({ networkMessageId: m.networkMessageId, fromMe: false, participant: inGroup ? m.from : undefined }, remoteJid));
}

export const PRESENCE: Record<PresenceState, WAPresence> = { typing: 'composing', recording: 'recording', paused: 'paused' };

/** Subscribes the device to a person's presence (typing in a group arrives without one). */
export async function subscribePresence(socket: Pick<WASocketLike, 'presenceSubscribe'>, chat: string): Promise<void> {
  const jid = chatJid(chat);
  if (!isGroupJid(jid)) await socket.presenceSubscribe(jid);
}

/** What a contact's WhatsApp presence means to Waygate (Baileys reports a chat's `paused` as available). */
export const CONTACT_PRESENCE: Record<WAPresence, ContactPresenceState> = {
  composing: 'typing',
  recording: 'recording',
  paused: 'online',
  available: 'online',
  unavailable: 'offline',
};

/** Group metadata kept by the session, each for GROUP_CACHE_MS. */
export class GroupCache {
  private readonly entries = new Map<string, { metadata: WAGroupMetadata; until: number }>();

  get(jid: string): WAGroupMetadata | undefined {
    const entry = this.entries.get(jid);
    if (!entry || entry.until < Date.now()) return undefined;
    return entry.metadata;
  }

  set(metadata: WAGroupMetadata): void {
    this.entries.set(metadata.id, { metadata, until: Date.now() + GROUP_CACHE_MS });
  }

  forget(jid: string): void {
    this.entries.delete(jid);
  }

  clear(): void {
    this.entries.clear();
  }
}

/** What WhatsApp's codes for one participant of a change mean (groupParticipantsUpdate's `status`). */
const PARTICIPANT_STATUS: Record<string, string> = {
  '401': 'was refused: the device is not allowed to change this member',
  '403': "cannot be added by others (their privacy settings): send them the group's invite link",
  '404': 'is not on WhatsApp, or not a participant',
  '406': 'was refused by WhatsApp (not acceptable)',
  '408': 'left the group recently and cannot be added back yet',
  '409': 'is already a participant',
  '500': 'was not changed: the group is full',
};

/**
 * Each requested number's outcome, from WhatsApp's answers. An answer names the participant by
 * number or by LID (`phoneOf` maps a LID); one that names neither is matched by its position.
 */
export function participantOutcomes(
  requested: string[],
  answers: { status: string; jid?: string | undefined }[],
  phoneOf: (lid: string) => string | undefined,
): ParticipantOutcome[] {
  const byPhone = new Map<string, string>();
  for (const answer of answers) {
    const lid = answer.jid ? normalizeLid(answer.jid) : undefined;
    const phone = jidToPhone(answer.jid) ?? (lid ? phoneOf(lid) : undefined);
    if (phone) byPhone.set(phone, answer.status);
  }
  return requested.map((phoneNumber, index) => {
    const status = byPhone.get(phoneNumber) ?? (answers.length === requested.length ? answers[index]?.status : undefined);
    if (status === '200') return { phoneNumber, ok: true, reason: null };
    if (status === undefined) return { phoneNumber, ok: false, reason: 'WhatsApp did not answer for this number' };
    return { phoneNumber, ok: false, reason: PARTICIPANT_STATUS[status] ?? `was refused by WhatsApp (${status})` };
  });
}

export const participantJids = (phoneNumbers: string[]): string[] => phoneNumbers.map(phoneToJid);

/** WhatsApp's error codes for a group query, and what they mean to the device. */
const GROUP_REFUSALS: Record<number, string> = {
  401: 'WhatsApp refused: the device is not an admin of this group',
  403: 'WhatsApp refused: the device is not in this group',
  404: 'WhatsApp does not know this group, or the device is not in it',
  406: 'WhatsApp refused the request as not acceptable (a name too long, or too many members)',
};

/**
 * A group query's error: WhatsApp's answer (an error node: Baileys' Boom with the code as `data`)
 * is a refusal the API reports as such; anything else (a dropped connection) stays as it is.
 */
export function groupQueryError(error: unknown): unknown {
  const code = (error as { data?: unknown } | null)?.data;
  if (typeof code !== 'number' || code < 400 || code >= 500 || code === 408) return error;
  return new NetworkRefusal(GROUP_REFUSALS[code] ?? `WhatsApp refused: ${(error as Error).message} (${code})`);
}

/** A group query, its failure told apart as groupQueryError does. */
export function groupQuery<T>(query: Promise<T>): Promise<T> {
  return query.catch((error: unknown) => {
    throw groupQueryError(error);
  });
}
