/**
 * The rules of the added kinds of message (DESIGN.md §9), for sends and for the sandbox's
 * incoming messages alike: which field belongs to which type, and what each must hold. Every
 * broken field is reported, as validateSend does.
 */
import type { FieldError } from '../platform/errors.js';
import { normalizePhone } from '../platform/phone.js';
import type { ContactCard, Location, MessageType } from '../network/network.js';
import type { KindPayload, MessageRow } from './message-model.js';

import { MAX_CONTACTS, MAX_EMOJI_LENGTH, MAX_MENTIONS, POLL_OPTIONS } from './message-limits.js';

/** The kind fields of a request body, as the route's schema shaped them. */
export interface KindInput {
  voice?: boolean | undefined;
  location?: Location | undefined;
  contacts?: ContactCard[] | undefined;
  poll?: { options: string[]; multiple?: boolean | undefined } | undefined;
  reaction?: { messageId: string; emoji: string } | undefined;
  replyTo?: string | undefined;
  mentions?: string[] | undefined;
}

/** The kind fields that passed every rule, as they are stored. */
export interface ValidKind {
  payload: KindPayload | null;
  replyTo: string | null;
  mentions: string[] | null;
}

/** The one field each added type requires, and the fields no other type may carry. */
const OWN_FIELD: Partial<Record<MessageType, keyof KindInput>> = {
  AUDIO: 'voice',
  LOCATION: 'location',
  CONTACT: 'contacts',
  POLL: 'poll',
  REACTION: 'reaction',
};
const REQUIRED: ReadonlySet<keyof KindInput> = new Set(['location', 'contacts', 'poll', 'reaction']);

function checkContacts(contacts: ContactCard[], errors: FieldError[]): ContactCard[] {
  if (contacts.length === 0 || contacts.length > MAX_CONTACTS) errors.push({ field: 'contacts', message: `must hold 1 to ${MAX_CONTACTS} contacts` });
  return contacts.map((contact, index) => {
    if (contact.name.trim().length === 0) errors.push({ field: `contacts[${index}].name`, message: 'must not be empty' });
    const phone = normalizePhone(contact.phoneNumber);
    if (!phone.ok) errors.push({ field: `contacts[${index}].phoneNumber`, message: phone.message });
    return { name: contact.name.trim(), phoneNumber: phone.ok ? phone.digits : contact.phoneNumber };
  });
}

function checkPoll(poll: NonNullable<KindInput['poll']>, errors: FieldError[]): NonNullable<KindPayload['poll']> {
  const { min, max, maxLength } = POLL_OPTIONS;
  if (poll.options.length < min || poll.options.length > max) errors.push({ field: 'poll.options', message: `must hold ${min} to ${max} options` });
  const seen = new Set<string>();
  const options = poll.options.map((raw, index) => {
    const option = raw.trim();
    if (option.length === 0) errors.push({ field: `poll.options[${index}]`, message: 'must not be empty' });
    else if (option.length > maxLength) errors.push({ field: `poll.options[${index}]`, message: `must have at most ${maxLength} characters` });
    else if (seen.has(option)) errors.push({ field: `poll.options[${index}]`, message: 'repeats an earlier option' });
    seen.add(option);
    return option;
  });
  return { options, multiple: poll.multiple ?? false };
}

function checkMentions(mentions: string[], errors: FieldError[]): string[] {
  if (mentions.length > MAX_MENTIONS) errors.push({ field: 'mentions', message: `must hold at most ${MAX_MENTIONS} numbers` });
  const numbers = new Set<string>();
  mentions.forEach((raw, index) => {
    const phone = normalizePhone(raw);
    if (phone.ok) numbers.add(phone.digits);
    else if (errors.length < 100) errors.push({ field: `mentions[${index}]`, message: phone.message });
  });
  return [...numbers];
}

/** Checks the kind fields of a message of `type` (a known type); reports every broken field in `errors`. */
export function checkKind(input: KindInput, type: MessageType, errors: FieldError[]): ValidKind {
  for (const [owner, field] of Object.entries(OWN_FIELD) as [MessageType, keyof KindInput][]) {
    if (owner !== type && input[field] !== undefined) errors.push({ field, message: `is only for ${owner} messages` });
    if (owner === type && REQUIRED.has(field) && input[field] === undefined) errors.push({ field, message: `is required for ${type} messages` });
  }
  if (type === 'REACTION') {
    if (input.replyTo !== undefined) errors.push({ field: 'replyTo', message: 'is not for REACTION messages' });
    if (input.mentions !== undefined) errors.push({ field: 'mentions', message: 'is not for REACTION messages' });
  }
  let payload: KindPayload | null = null;
  if (type === 'AUDIO' && input.voice) payload = { voice: true };
  if (type === 'LOCATION' && input.location) payload = { location: input.location };
  if (type === 'CONTACT' && input.contacts) payload = { contacts: checkContacts(input.contacts, errors) };
  if (type === 'POLL' && input.poll) payload = { poll: checkPoll(input.poll, errors) };
  if (type === 'REACTION' && input.reaction) {
    const { messageId, emoji } = input.reaction;
    if (messageId.length === 0) errors.push({ field: 'reaction.messageId', message: 'must not be empty' });
    if (emoji.length > MAX_EMOJI_LENGTH) errors.push({ field: 'reaction.emoji', message: 'must be one emoji, or "" to remove the reaction' });
    payload = { reaction: { messageId, emoji } };
  }
  if (input.replyTo !== undefined && input.replyTo.length === 0) errors.push({ field: 'replyTo', message: 'must be a message id' });
  const mentions = input.mentions && type !== 'REACTION' ? checkMentions(input.mentions, errors) : null;
  return { payload, replyTo: type === 'REACTION' ? null : (input.replyTo ?? null), mentions: mentions && mentions.length > 0 ? mentions : null };
}

/** The message a send refers to (replyTo, or a REACTION's target): what the checks and the network need of it. */
export type Referenced = Pick<MessageRow, 'id' | 'device_id' | 'peer' | 'chat_id' | 'direction' | 'network_message_id' | 'type' | 'content' | 'payload'>;

/** The chat a message is in: a group chat for a member's message there, else the other party. */
export const chatOfReferenced = (referenced: Pick<Referenced, 'peer' | 'chat_id'>): string => referenced.chat_id ?? referenced.peer;

/**
 * Checks that the referenced message (`field` names it) is a message of the account in the chat
 * of every recipient (a number, or a group chat); returns a problem, or undefined when it fits.
 */
export function referenceProblem(referenced: Referenced | undefined, recipients: string[], deviceId: string | undefined, field: string): FieldError | undefined {
  if (!referenced) return { field, message: 'is not a message of this account' };
  const chat = chatOfReferenced(referenced);
  if (recipients.some((to) => to !== chat)) return { field, message: `is a message of the chat with ${chat}; send it to that chat only` };
  if (deviceId !== undefined && deviceId !== referenced.device_id) return { field, message: 'is a message of another device' };
  return undefined;
}
