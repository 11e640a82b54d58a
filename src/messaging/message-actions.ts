/**
 * The rules of the actions on a message after it was sent (DESIGN.md §9): which message may be
 * edited, deleted for everyone or marked read, and when. Pure functions, shared by the API (the
 * account's own messages) and the sandbox network (the other side's messages, POST
 * /sandbox/incoming), so both answer the same windows with the same errors. The windows
 * themselves are the network's (MESSAGE_WINDOWS in src/network/network.ts).
 */
import { MESSAGE_WINDOWS, withinWindow, type MessageType } from '../network/network.js';
import type { MessageStatus } from './message-model.js';
import { CANCELLABLE_STATUSES } from './message-states.js';
import { MAX_CAPTION_LENGTH, MAX_TEXT_LENGTH } from './message-limits.js';

/** The text of a TEXT message and the caption of these: what an edit may change. */
export const EDITABLE_TYPES: readonly MessageType[] = ['TEXT', 'IMAGE', 'VIDEO', 'DOCUMENT'];
/** Statuses of a message the network has taken. */
const SENT_STATUSES: readonly MessageStatus[] = ['SENT', 'DELIVERED', 'READ', 'RECEIVED'];

/** What the rules read of a message. */
export interface ActionTarget {
  direction: 'out' | 'in';
  type: MessageType;
  status: MessageStatus;
  /** When the network took it: sentAt of an outgoing message, receivedAt of an incoming one. */
  sent_at: Date | null;
  received_at: Date | null;
  deleted_at?: Date | null;
}

/** Who acts: the account on a message it sent, or the other side on a message it sent the device. */
export type Sender = 'account' | 'other side';

const minutes = (ms: number): string => (ms % 3_600_000 === 0 ? `${ms / 3_600_000} hours` : `${ms / 60_000} minutes`);
const senderDirection = (sender: Sender): 'out' | 'in' => (sender === 'account' ? 'out' : 'in');
const takenAt = (target: ActionTarget): Date | null => (target.direction === 'out' ? target.sent_at : target.received_at);

/** Why `sender` may not edit the message (undefined: it may). */
export function editRefusal(target: ActionTarget, sender: Sender, now: Date = new Date()): string | undefined {
  if (target.direction !== senderDirection(sender)) return sender === 'account' ? 'Only a message the account sent can be edited' : 'Only a message the other side sent can be edited by it';
  if (target.deleted_at) return 'The message was deleted for everyone';
  if (!EDITABLE_TYPES.includes(target.type)) return `A ${target.type} message cannot be edited: only the text of a TEXT message and the caption of an IMAGE, VIDEO or DOCUMENT`;
  const at = takenAt(target);
  if (!SENT_STATUSES.includes(target.status) || !at) {
    const hint = CANCELLABLE_STATUSES.includes(target.status) ? '; cancel it and send it again instead' : '';
    return `The message is ${target.status}; only a message the network has taken can be edited${hint}`;
  }
  if (!withinWindow(at, MESSAGE_WINDOWS.editMs, now)) return `A message can be edited within ${minutes(MESSAGE_WINDOWS.editMs)} of being sent`;
  return undefined;
}

/** The new text or caption of an edit, checked; a problem names the field. */
export function editContentProblem(type: MessageType, content: string): string | undefined {
  if (content.trim().length === 0) return 'must not be empty';
  const max = type === 'TEXT' ? MAX_TEXT_LENGTH : MAX_CAPTION_LENGTH;
  if (content.length > max) return `must have at most ${max} characters${type === 'TEXT' ? '' : ' (a caption)'}`;
  return undefined;
}

/** What a delete for everyone does to a message. */
export type DeleteDecision =
  /** Not handed to the network yet: cancelled instead (and refunded). */
  | { kind: 'cancel' }
  /** Deleted on the network for everyone. */
  | { kind: 'revoke' }
  /** Deleted before: nothing more to do. */
  | { kind: 'already' }
  | { kind: 'refuse'; reason: string };

export function deleteDecision(target: ActionTarget, sender: Sender, now: Date = new Date()): DeleteDecision {
  if (target.direction !== senderDirection(sender)) {
    return { kind: 'refuse', reason: sender === 'account' ? 'Only a message the account sent can be deleted for everyone' : 'Only a message the other side sent can be deleted by it' };
  }
  if (target.deleted_at) return { kind: 'already' };
  if (CANCELLABLE_STATUSES.includes(target.status)) return { kind: 'cancel' };
  if (target.type === 'REACTION') return { kind: 'refuse', reason: 'A reaction is removed by sending it again with emoji ""' };
  const at = takenAt(target);
  if (!SENT_STATUSES.includes(target.status) || !at) {
    const why = target.status === 'SENDING' ? 'it is being handed to the network; try again in a moment' : 'it never reached the network';
    return { kind: 'refuse', reason: `The message is ${target.status}: ${why}` };
  }
  if (!withinWindow(at, MESSAGE_WINDOWS.deleteMs, now)) return { kind: 'refuse', reason: `A message can be deleted for everyone within ${minutes(MESSAGE_WINDOWS.deleteMs)} of being sent` };
  return { kind: 'revoke' };
}
