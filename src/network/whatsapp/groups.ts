/**
 * WhatsApp group chats, read receipts and presence as Baileys shapes them: group metadata (with
 * the session's cache, which Baileys also reads when sending into a group), participants as
 * numbers (the LID when WhatsApp hides the number), the keys of a read receipt.
 */
import type { ContactPresenceState, GroupInfo, GroupParticipant, PresenceState, ReadMessage } from '../network.js';
import { chatJid, jidToPhone, normalizeLid } from './jid.js';
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
