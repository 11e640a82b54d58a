/**
 * What the sandbox's phone sends the device, checked as the real network's counterpart would be:
 * a message's kind fields (as a send's, message-kinds.ts), a vote on a poll the device sent, and
 * the sender's edit or delete for everyone (with the windows of message-actions.ts). A field
 * error is a VALIDATION_ERROR naming every problem; a quote, reaction, vote or change points at a
 * message of the same chat, which the network knows by its network id.
 */
import type { Database } from '../../platform/database.js';
import type { SandboxPayload } from '../../network/sandbox/world.js';
import { checkKind, referenceProblem, type KindInput } from '../../messaging/message-kinds.js';
import { getMessage, getReferenced } from '../../messaging/message-store.js';
import { deleteDecision, editContentProblem, editRefusal } from '../../messaging/message-actions.js';
import type { MessageType } from '../../network/network.js';
import { AppError, invalidFields, type FieldError } from '../../platform/errors.js';
import { KindBodyFields } from '../schemas.js';

/**
 * A vote by `from` on a poll the device sent into `chat` (`from` itself, or a group chat `from`
 * is a member of): a choice among its options (one, unless the poll takes several).
 */
export async function votePayload(
  database: Database,
  accountId: string,
  deviceId: string,
  chat: string,
  vote: { messageId: string; options: string[] },
  body: Record<string, unknown>,
): Promise<SandboxPayload> {
  const errors: FieldError[] = [];
  for (const field of ['type', 'mediaUrl', 'edit', 'delete', ...Object.keys(KindBodyFields)]) {
    if (body[field] !== undefined) errors.push({ field, message: 'is not used with vote' });
  }
  if (body.content !== '') errors.push({ field: 'content', message: 'must be "" with vote' });
  const poll = await getReferenced(database, accountId, vote.messageId);
  const problem = referenceProblem(poll, [chat], deviceId, 'vote.messageId');
  if (problem) errors.push(problem);
  else if (poll!.type !== 'POLL' || !poll!.payload?.poll) errors.push({ field: 'vote.messageId', message: 'is not a POLL' });
  const options = poll?.payload?.poll?.options ?? [];
  vote.options.forEach((option, index) => {
    if (!options.includes(option)) errors.push({ field: `vote.options[${index}]`, message: 'is not an option of the poll' });
    else if (vote.options.indexOf(option) !== index) errors.push({ field: `vote.options[${index}]`, message: 'repeats an earlier option' });
  });
  if (poll?.payload?.poll && !poll.payload.poll.multiple && vote.options.length > 1) errors.push({ field: 'vote.options', message: 'the poll takes one option' });
  if (errors.length > 0) throw invalidFields(errors);
  return { vote: { networkMessageId: poll!.network_message_id, options: vote.options } };
}

/**
 * The sender edits or deletes for everyone one of the messages they sent the device, with the
 * real network's windows and errors (message-actions.ts, as PATCH and DELETE /messages/:id).
 */
export async function changePayload(
  database: Database,
  accountId: string,
  deviceId: string,
  from: string,
  change: { edit: { messageId: string; content: string } } | { delete: { messageId: string } },
  body: Record<string, unknown>,
): Promise<SandboxPayload> {
  const name = 'edit' in change ? 'edit' : 'delete';
  const messageId = 'edit' in change ? change.edit.messageId : change.delete.messageId;
  const errors: FieldError[] = [];
  for (const field of ['type', 'mediaUrl', 'vote', ...Object.keys(KindBodyFields), ...(name === 'edit' ? ['delete'] : ['edit'])]) {
    if (body[field] !== undefined) errors.push({ field, message: `is not used with ${name}` });
  }
  if (body.content !== '') errors.push({ field: 'content', message: `must be "" with ${name}` });
  const target = await getMessage(database, accountId, messageId);
  const problem = referenceProblem(target, [from], deviceId, `${name}.messageId`);
  if (problem) errors.push(problem);
  const contentProblem = 'edit' in change && target ? editContentProblem(target.type, change.edit.content) : undefined;
  if (contentProblem) errors.push({ field: 'edit.content', message: contentProblem });
  if (errors.length > 0) throw invalidFields(errors);
  if ('edit' in change) {
    const refusal = editRefusal(target!, 'other side');
    if (refusal) throw new AppError('NOT_EDITABLE', refusal, { status: target!.status, type: target!.type });
    return { edit: { networkMessageId: target!.network_message_id, content: change.edit.content } };
  }
  const decision = deleteDecision(target!, 'other side');
  if (decision.kind === 'refuse') throw new AppError('NOT_DELETABLE', decision.reason, { status: target!.status, type: target!.type });
  if (decision.kind !== 'revoke') throw new AppError('NOT_DELETABLE', 'The message was deleted for everyone already', { status: target!.status });
  return { delete: { networkMessageId: target!.network_message_id } };
}

/**
 * The kind fields of a message the phone sends into `chat` (`from` itself, or a group chat),
 * checked as a send's are; a quote and a reaction point at a message of that chat, which the
 * network knows by its network id.
 */
export async function incomingPayload(database: Database, accountId: string, deviceId: string, chat: string, type: MessageType, input: KindInput): Promise<SandboxPayload> {
  const errors: FieldError[] = [];
  const { payload, replyTo, mentions } = checkKind(input, type, errors);
  const { reaction, ...kind } = payload ?? {};
  const result: SandboxPayload = { ...kind, ...(mentions ? { mentions } : {}) };
  const refer = async (id: string, field: string): Promise<string | undefined> => {
    const referenced = await getReferenced(database, accountId, id);
    const problem = referenceProblem(referenced, [chat], deviceId, field);
    if (problem) errors.push(problem);
    return referenced?.network_message_id;
  };
  if (replyTo !== null) result.replyTo = await refer(replyTo, 'replyTo');
  if (reaction?.messageId) {
    const target = await refer(reaction.messageId, 'reaction.messageId');
    if (target) result.reaction = { networkMessageId: target, emoji: reaction.emoji };
  }
  if (errors.length > 0) throw invalidFields(errors);
  return result;
}
