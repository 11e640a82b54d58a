/**
 * Sending: POST /messages/send and the message records. 1–10 recipients and no groups is a
 * direct send that waits for the network's acknowledgement; more recipients, or any group, is
 * a bulk job whose recipients are frozen at acceptance and fanned out into messages by a worker.
 * Acceptance is in accept.ts (direct) and job-store.ts (bulk), hand-over in dispatch.ts, the
 * outcomes in outcomes.ts.
 */
import type { Database } from '../platform/database.js';
import { AppError, invalidFields, type FieldError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import { messageTransitions } from '../platform/metrics.js';
import { isMediaType, type MessageRef, type MessageType } from '../network/network.js';
import type { AckTicket, AckWaiter } from './ack-waiter.js';
import type { Lister, Listing, ListingRequest } from '../platform/listing.js';
import { MESSAGE_TYPES, PRIORITY, networkMessageIdFor, toBulkJob, toMessage, type Message, type MessageRow } from './message-model.js';
import { appendEvents } from '../events/event-store.js';
import { normalizePhone } from '../platform/phone.js';
import { isGroupChatId } from '../conversations/chat-ids.js';
import { chooseDevice, noDeviceError } from '../devices/device-choice.js';
import { DirectAccepts, type Acceptance } from './accept.js';
import type { Dispatcher } from './dispatch.js';
import * as jobs from './job-store.js';
import type { NewJob } from './job-store.js';
import * as store from './message-store.js';
import { CANCELLABLE_STATUSES, OPEN_JOB_STATUSES, isSettled } from './message-states.js';
import { quotaExceeded, refundQuota, reserveQuota } from './quota-store.js';
import { checkKind, referenceProblem, type KindInput } from './message-kinds.js';
import { deleteDecision, editContentProblem, editRefusal } from './message-actions.js';
import { DIRECT_SEND_MAX, MAX_CAPTION_LENGTH, MAX_POLL_QUESTION, MAX_TEXT_LENGTH } from './message-limits.js';
import { recordAction } from './action-store.js';
import { BatchedCall } from '../platform/batch-pump.js';
import { uploadProblem } from '../media/uploads.js';


const PAST_TOLERANCE_MS = 60_000;
const MAX_AHEAD_MS = 365 * 24 * 3600 * 1000;
const TIMEZONE = /(Z|[+-]\d{2}:?\d{2})$/i;

export interface SendInput extends KindInput {
  type: string;
  /** Required for the seed's types (TEXT, IMAGE, VIDEO, DOCUMENT). */
  content?: string | undefined;
  mediaUrl?: string | undefined;
  recipients?: string[] | undefined;
  to?: string | string[] | undefined;
  groupIds?: string[] | undefined;
  /** WhatsApp group chats (`<digits>@g.us`): each one recipient. */
  chatIds?: string[] | undefined;
  caption?: string | undefined;
  scheduledAt?: string | undefined;
  deviceId?: string | undefined;
}

/** A send that passed every rule: what a job is made of (content is the caption for media), the device asked for, and the message it quotes. */
export type ValidSend = Omit<NewJob, 'id' | 'accountId' | 'deviceId' | 'status'> & { deviceId: string | undefined; replyTo: string | null };

/** The seed's types, whose body always has `content`. */
const SEED_TYPES: readonly MessageType[] = ['TEXT', 'IMAGE', 'VIDEO', 'DOCUMENT'];
/** Types whose message has a caption. */
const CAPTIONED: readonly MessageType[] = ['IMAGE', 'VIDEO', 'DOCUMENT'];
/** Types whose message has no text at all. */
const WITHOUT_TEXT: readonly MessageType[] = ['AUDIO', 'STICKER', 'CONTACT', 'REACTION'];

export type SendResponse =
  | { statusCode: 200 | 202; body: { success: true; message: Message; messages: Message[]; async: false } }
  | { statusCode: 202; body: { success: true; jobId: string; status: 'PROCESSING' | 'SCHEDULED'; message: string; totalContacts: number; async: true } };

/** The text, a media message's caption, a poll's question or a location's comment. */
function checkContent(input: SendInput, type: MessageType, errors: FieldError[]): string {
  if (input.content === undefined && SEED_TYPES.includes(type)) errors.push({ field: 'content', message: `is required for ${type} messages` });
  const content = input.content ?? '';
  if (input.caption !== undefined && !CAPTIONED.includes(type)) errors.push({ field: 'caption', message: 'is only for media messages (IMAGE, VIDEO, DOCUMENT)' });
  if (type === 'TEXT') {
    if (input.content !== undefined && content.trim().length === 0) errors.push({ field: 'content', message: 'must not be empty for a TEXT message' });
    if (content.length > MAX_TEXT_LENGTH) errors.push({ field: 'content', message: `must have at most ${MAX_TEXT_LENGTH} characters` });
    return content;
  }
  if (type === 'POLL') {
    if (content.trim().length === 0) errors.push({ field: 'content', message: 'is the question of a POLL: it must not be empty' });
    if (content.length > MAX_POLL_QUESTION) errors.push({ field: 'content', message: `a poll question may have at most ${MAX_POLL_QUESTION} characters` });
    return content;
  }
  if (WITHOUT_TEXT.includes(type)) {
    if (content.length > 0) errors.push({ field: 'content', message: `is not used by ${type} messages` });
    return '';
  }
  const caption = input.caption ?? content;
  if (caption.length > MAX_CAPTION_LENGTH) errors.push({ field: input.caption !== undefined ? 'caption' : 'content', message: `a caption may have at most ${MAX_CAPTION_LENGTH} characters` });
  return caption;
}

function checkMediaUrl(input: SendInput, type: MessageType, errors: FieldError[]): string | null {
  if (!isMediaType(type)) {
    if (input.mediaUrl !== undefined) errors.push({ field: 'mediaUrl', message: `is not allowed for ${type} messages` });
    return null;
  }
  if (!input.mediaUrl) {
    errors.push({ field: 'mediaUrl', message: `is required for ${type} messages` });
    return null;
  }
  try {
    const url = new URL(input.mediaUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('protocol');
    return url.toString();
  } catch {
    errors.push({ field: 'mediaUrl', message: 'must be an http(s) URL' });
    return null;
  }
}

/** The recipients, normalised and de-duplicated in order (`recipients`, then `to`). */
function checkRecipients(input: SendInput, errors: FieldError[]): string[] {
  const recipients = new Set<string>();
  const add = (raw: string, field: string, capped: boolean): void => {
    const phone = normalizePhone(raw);
    if (phone.ok) recipients.add(phone.digits);
    else if (!capped || errors.length < 100) {
      errors.push({ field, message: isGroupChatId(raw.trim()) ? 'is a group chat id, not a phone number: send into a group with chatIds' : phone.message });
    }
  };
  input.recipients?.forEach((raw, index) => add(raw, `recipients[${index}]`, true));
  if (typeof input.to === 'string') add(input.to, 'to', false);
  else input.to?.forEach((raw, index) => add(raw, `to[${index}]`, true));
  input.chatIds?.forEach((raw, index) => {
    if (isGroupChatId(raw.trim())) recipients.add(raw.trim());
    else errors.push({ field: `chatIds[${index}]`, message: 'must be a group chat id, <digits>@g.us (GET /chats?type=group)' });
  });
  return [...recipients];
}

function checkSchedule(scheduledAt: string | undefined, now: Date, errors: FieldError[]): Date | null {
  if (scheduledAt === undefined) return null;
  const parsed = new Date(scheduledAt);
  if (!TIMEZONE.test(scheduledAt) || Number.isNaN(parsed.getTime())) {
    errors.push({ field: 'scheduledAt', message: 'must be an ISO 8601 date-time with a timezone, e.g. 2026-12-01T09:00:00Z' });
  } else if (parsed.getTime() < now.getTime() - PAST_TOLERANCE_MS) {
    errors.push({ field: 'scheduledAt', message: 'is more than 60 seconds in the past' });
  } else if (parsed.getTime() > now.getTime() + MAX_AHEAD_MS) {
    errors.push({ field: 'scheduledAt', message: 'is more than 365 days ahead' });
  } else return parsed;
  return null;
}

/** Checks every rule of the send body and reports every broken one at once. */
export function validateSend(input: SendInput, now: Date = new Date()): ValidSend {
  const errors: FieldError[] = [];
  const type = input.type.toUpperCase() as MessageType;
  const known = MESSAGE_TYPES.includes(type);
  if (!known) errors.push({ field: 'type', message: `must be one of ${MESSAGE_TYPES.join(', ')}` });
  const content = known ? checkContent(input, type, errors) : (input.content ?? '');
  const mediaUrl = known ? checkMediaUrl(input, type, errors) : null;
  const kind = known ? checkKind(input, type, errors) : { payload: null, replyTo: null, mentions: null };
  const recipients = checkRecipients(input, errors);
  const groupIds = [...new Set(input.groupIds ?? [])];
  const given =
    (input.recipients?.length ?? 0) + (input.to === undefined ? 0 : typeof input.to === 'string' ? 1 : input.to.length) + groupIds.length + (input.chatIds?.length ?? 0);
  if (given === 0) errors.push({ field: 'recipients', message: 'give at least one of recipients (or to), chatIds and groupIds' });
  if (isBulk(groupIds, recipients)) {
    if (type === 'REACTION') errors.push({ field: 'type', message: `a REACTION is always a direct send: 1–${DIRECT_SEND_MAX} recipients and no groupIds` });
    if (kind.replyTo !== null) errors.push({ field: 'replyTo', message: "quotes a message of one chat: give that chat as the only recipient" });
  }
  const scheduledAt = checkSchedule(input.scheduledAt, now, errors);
  if (errors.length > 0) throw invalidFields(errors);
  return { type, content, mediaUrl, ...kind, recipients, groupIds, scheduledAt, deviceId: input.deviceId };
}

/** More than DIRECT_SEND_MAX recipients, or any group: a bulk job. */
const isBulk = (groupIds: string[], recipients: string[]): boolean => groupIds.length > 0 || recipients.length > DIRECT_SEND_MAX;

/** The message a send refers to (its replyTo, or a REACTION's target), as the network knows it. */
export class MessageService {
  private readonly accepts: DirectAccepts;
  /**
   * The rows of direct sends acknowledged by a worker in another process (it sends only their
   * ids): the reads of requests answered together are one statement.
   */
  private readonly rowReads = new BatchedCall((reads: string[][]) => this.readRows(reads), { maxInFlight: 2, maxBatch: 1_000, sizeOf: (ids) => ids.length });

  constructor(
    private readonly database: Database,
    private readonly acks: AckWaiter,
    private readonly sendWaitMs: number,
    private readonly lister: Lister,
    private readonly dispatcher: Dispatcher,
  ) {
    this.accepts = new DirectAccepts(database, () => dispatcher.directWorker());
  }

  async send(accountId: string, input: SendInput, now: Date = new Date()): Promise<SendResponse> {
    const valid = validateSend(input, now);
    if (valid.mediaUrl !== null && isMediaType(valid.type)) {
      const problem = await uploadProblem(this.database, accountId, valid.mediaUrl, valid.type);
      if (problem) throw invalidFields([problem]);
    }
    const scheduled = valid.scheduledAt !== null && valid.scheduledAt.getTime() > now.getTime();
    if (!isBulk(valid.groupIds, valid.recipients)) return this.sendDirect(accountId, await this.withReference(accountId, valid), scheduled, now);
    return this.createBulkJob(accountId, valid, scheduled, now);
  }

  /**
   * A reply or a reaction: the message it refers to must be of the account, in the chat of every
   * recipient (and on the device asked for, else the send goes out on that message's device).
   */
  private async withReference(accountId: string, valid: ValidSend): Promise<ValidSend & { reference: MessageRef | null }> {
    const [field, id] = valid.payload?.reaction ? ['reaction.messageId', valid.payload.reaction.messageId] : ['replyTo', valid.replyTo];
    if (id === null || id === undefined) return { ...valid, reference: null };
    const referenced = await store.getReferenced(this.database, accountId, id);
    const problem = referenceProblem(referenced, valid.recipients, valid.deviceId, field);
    if (problem) throw invalidFields([problem]);
    return { ...valid, deviceId: referenced!.device_id, reference: store.messageRefOf(referenced!) };
  }

  /** Accepts a direct send, hands it to its device's owner, and waits (up to sendWaitMs) for the network's answer. */
  private async sendDirect(accountId: string, valid: ValidSend & { reference: MessageRef | null }, scheduled: boolean, now: Date): Promise<SendResponse> {
    const ids = valid.recipients.map(() => newId('msg'));
    const nids = ids.map(networkMessageIdFor);
    // Listen for the acknowledgements before the messages exist, so none can be missed.
    const ticket = scheduled || this.sendWaitMs === 0 ? undefined : this.acks.expect(ids);
    const accepted = await this.accepts
      .accept({
        accountId,
        deviceId: valid.deviceId ?? null,
        type: valid.type,
        content: valid.content,
        mediaUrl: valid.mediaUrl,
        payload: valid.payload,
        replyTo: valid.replyTo,
        mentions: valid.mentions,
        status: scheduled ? 'SCHEDULED' : 'QUEUED',
        dueAt: scheduled ? valid.scheduledAt! : now,
        scheduledAt: valid.scheduledAt,
        ids,
        recipients: valid.recipients,
        nids,
        now,
        // Only sends whose request waits for them may be taken by the worker in this process at once.
        local: ticket !== undefined,
      })
      .then((row) => this.explainRefusal(accountId, valid, ids.length, row))
      .catch((error: unknown) => {
        ticket?.cancel();
        throw error;
      });
    this.dispatch(accountId, valid, ids, nids, accepted);
    messageTransitions.inc({ status: 'ACCEPTED' }, ids.length);
    // A device known to be down (DISCONNECTED) cannot acknowledge anything now: answer 202 with the
    // messages QUEUED at once instead of holding the request for sendWaitMs.
    try {
      if (ticket && accepted.device_connected) await this.awaitAcks(ticket, ids);
    } finally {
      ticket?.cancel();
    }
    return this.directResponse(ids, ticket);
  }

  /** The acceptance, or the error that says why nothing was written (this path is rare: it may cost a query or two). */
  private async explainRefusal(accountId: string, valid: ValidSend, count: number, row: Acceptance | undefined): Promise<Acceptance> {
    if (row && row.inserted > 0) return row;
    if (!row) throw new AppError('NOT_FOUND', 'Account not found');
    if (!row.device_id) throw await noDeviceError(this.database, accountId, valid.deviceId);
    throw await quotaExceeded(this.database, accountId, count, row);
  }

  /** Inserted already claimed by the worker in this process: it sends them now; otherwise the device's owner is woken. */
  private dispatch(accountId: string, valid: ValidSend & { reference: MessageRef | null }, ids: string[], nids: string[], accepted: Acceptance): void {
    const deviceId = accepted.device_id!;
    if (!accepted.taken) return this.dispatcher.wake(deviceId);
    this.dispatcher.handOver(
      deviceId,
      ids.map((id, i) => ({
        id,
        accountId,
        jobId: null,
        to: valid.recipients[i]!,
        type: valid.type,
        content: valid.content,
        mediaUrl: valid.mediaUrl,
        payload: valid.payload,
        mentions: valid.mentions,
        reference: valid.reference,
        networkMessageId: nids[i]!,
        attempts: 1,
        priority: PRIORITY.direct,
      })),
    );
  }

  private async awaitAcks(ticket: AckTicket, ids: string[]): Promise<void> {
    await ticket.wait(this.sendWaitMs, async () => (await store.countUnsettled(this.database, ids)) === 0);
  }

  /**
   * 200 once every message is settled, else 202; an in-process worker handed its rows over with the
   * acknowledgement. `async` is false for every direct send (the seed's single send) and true only
   * for a bulk job, so a client tells the two answers apart by it.
   */
  private async directResponse(ids: string[], ticket: AckTicket | undefined): Promise<SendResponse> {
    const rows: MessageRow[] =
      ticket && ids.every((id) => ticket.rows.has(id)) ? ids.map((id) => ticket.rows.get(id)!) : await this.rowReads.call(ids);
    const byId = new Map(rows.map((row) => [row.id, toMessage(row)]));
    const messages = ids.map((id) => byId.get(id)!);
    const settled = messages.every((m) => isSettled(m.status));
    return { statusCode: settled ? 200 : 202, body: { success: true, message: messages[0]!, messages, async: false } };
  }

  /** The rows of each read's ids, in one statement. */
  private async readRows(reads: string[][]): Promise<MessageRow[][]> {
    const byId = new Map((await store.getMessages(this.database, reads.flat())).map((row) => [row.id, row]));
    return reads.map((ids) => ids.flatMap((id) => byId.get(id) ?? []));
  }

  /** Accepts a bulk job: its recipients frozen and its quota reserved in one transaction; a worker fans it out. */
  private async createBulkJob(accountId: string, valid: ValidSend, scheduled: boolean, now: Date): Promise<SendResponse> {
    const jobId = newId('job');
    const status = scheduled ? 'SCHEDULED' : 'PROCESSING';
    const total = await this.database.transaction(async (tx) => {
      // What is wrong with the request itself (unknown groups) is said before the state of the account (no device).
      const missing = await jobs.unknownGroups(tx, accountId, valid.groupIds);
      if (missing.length > 0) {
        const fields = missing.map((id) => ({ field: `groupIds[${valid.groupIds.indexOf(id)}]`, message: `no group ${id} in this account` }));
        throw new AppError('VALIDATION_ERROR', `No such group: ${missing.join(', ')}`, fields);
      }
      const deviceId = await chooseDevice(tx, accountId, valid.deviceId);
      const { replyTo: _, ...job } = valid;
      const count = await jobs.insertJob(tx, { ...job, id: jobId, accountId, deviceId, status });
      if (count === 0) {
        throw new AppError('VALIDATION_ERROR', 'The groups have no members and no recipients were given: nothing to send', [
          { field: 'groupIds', message: 'the groups are empty' },
        ]);
      }
      await jobs.setJobQuotaPeriod(tx, jobId, await reserveQuota(tx, accountId, count, now));
      await jobs.announceFanOut(tx);
      return count;
    });
    messageTransitions.inc({ status: 'ACCEPTED' }, total);
    const when = scheduled ? `, scheduled for ${valid.scheduledAt!.toISOString()}` : '';
    const message = `Bulk job ${jobId} created for ${total} recipient${total === 1 ? '' : 's'}${when}`;
    return { statusCode: 202, body: { success: true, jobId, status, totalContacts: total, message, async: true } };
  }

  async list(accountId: string, options: ListingRequest & Omit<store.MessageFilter, 'peer'> & { to?: string | undefined }): Promise<Listing<Message>> {
    let peer: string | undefined;
    if (options.to) {
      const phone = normalizePhone(options.to);
      if (!phone.ok) throw new AppError('VALIDATION_ERROR', `to ${phone.message}`, [{ field: 'to', message: phone.message }]);
      peer = phone.digits;
    }
    const listing = await this.lister.list<MessageRow>(store.messageListingSource(accountId, { ...options, peer }), options);
    return { data: listing.data.map(toMessage), meta: listing.meta };
  }

  async get(accountId: string, id: string): Promise<Message> {
    const row = await store.getMessage(this.database, accountId, id);
    if (!row) throw new AppError('NOT_FOUND', 'Message not found');
    return toMessage(row);
  }

  /** Cancels a message that has not been handed to the network yet (SCHEDULED or QUEUED). */
  async cancel(accountId: string, id: string): Promise<Message> {
    await this.database.transaction(async (tx) => {
      const status = await store.lockMessageStatus(tx, accountId, id);
      if (!status) throw new AppError('NOT_FOUND', 'Message not found');
      if (!CANCELLABLE_STATUSES.includes(status)) {
        throw new AppError('CONFLICT', `The message is ${status}; only ${CANCELLABLE_STATUSES.join(' or ')} messages can be cancelled`, { status });
      }
      const { jobIds } = await store.cancelMessages(tx, { message: id });
      await jobs.completeJobs(tx, jobIds);
    });
    return this.get(accountId, id);
  }

  /**
   * Edits the text (or caption) of a message the account sent, within the network's window: the
   * record and its message.edited event at once, the network through the device's owner. Not
   * counted against the plan.
   */
  async edit(accountId: string, id: string, content: string, now: Date = new Date()): Promise<Message> {
    const deviceId = await this.database.transaction(async (tx) => {
      const row = await store.lockMessage(tx, accountId, id);
      if (!row) throw new AppError('NOT_FOUND', 'Message not found');
      const refusal = editRefusal(row, 'account', now);
      if (refusal) throw new AppError('NOT_EDITABLE', refusal, { status: row.status, type: row.type, sentAt: row.sent_at?.toISOString() ?? null });
      const problem = editContentProblem(row.type, content);
      if (problem) throw new AppError('VALIDATION_ERROR', `content ${problem}`, [{ field: 'content', message: problem }]);
      return recordAction(tx, id, 'edit', { content, event: 'message.edited', toNetwork: true });
    });
    if (deviceId) this.dispatcher.wakeActions(deviceId);
    return this.get(accountId, id);
  }

  /**
   * Deletes a message the account sent for everyone, within the network's window (a SCHEDULED or
   * QUEUED one is cancelled and refunded instead); deleting it again changes nothing. The record
   * and its message.deleted event at once, the network through the device's owner.
   */
  async deleteForEveryone(accountId: string, id: string, now: Date = new Date()): Promise<Message> {
    const deviceId = await this.database.transaction(async (tx) => {
      const row = await store.lockMessage(tx, accountId, id);
      if (!row) throw new AppError('NOT_FOUND', 'Message not found');
      const decision = deleteDecision(row, 'account', now);
      switch (decision.kind) {
        case 'refuse':
          throw new AppError('NOT_DELETABLE', decision.reason, { status: row.status, type: row.type, sentAt: row.sent_at?.toISOString() ?? null });
        case 'already':
          return undefined;
        case 'cancel': {
          const { jobIds } = await store.cancelMessages(tx, { message: id });
          await jobs.completeJobs(tx, jobIds);
          await recordAction(tx, id, 'delete', { event: 'message.deleted', toNetwork: false });
          return undefined;
        }
        case 'revoke':
          return recordAction(tx, id, 'delete', { event: 'message.deleted', toNetwork: true });
      }
    });
    if (deviceId) this.dispatcher.wakeActions(deviceId);
    return this.get(accountId, id);
  }

  /** Sends the read receipt of an incoming message (once: marking it again changes nothing). */
  async markRead(accountId: string, id: string): Promise<Message> {
    const deviceId = await this.database.transaction(async (tx) => {
      const row = await store.lockMessage(tx, accountId, id);
      if (!row) throw new AppError('NOT_FOUND', 'Message not found');
      if (row.direction !== 'in') {
        throw new AppError('CONFLICT', 'Only an incoming message is marked read; the read receipts of sent messages come from the network (readAt)', { direction: row.direction });
      }
      if (row.read_at) return undefined;
      return recordAction(tx, id, 'read', { toNetwork: true });
    });
    if (deviceId) this.dispatcher.wakeActions(deviceId);
    return this.get(accountId, id);
  }
}

export class BulkJobService {
  constructor(
    private readonly database: Database,
    private readonly lister: Lister,
  ) {}

  async list(accountId: string, options: ListingRequest & { status?: string | undefined }): Promise<Listing<ReturnType<typeof toBulkJob>>> {
    const listing = await this.lister.list<Parameters<typeof toBulkJob>[0]>(jobs.jobListingSource(accountId, options.status), options);
    return { data: listing.data.map(toBulkJob), meta: listing.meta };
  }

  async get(accountId: string, id: string): Promise<ReturnType<typeof toBulkJob>> {
    const row = await jobs.getJob(this.database, accountId, id);
    if (!row) throw new AppError('NOT_FOUND', 'Bulk job not found');
    return toBulkJob(row);
  }

  /**
   * Cancels a job: messages not yet handed to the network, and recipients not yet fanned out,
   * are CANCELLED and refunded, and a bulk_job.cancelled event is written. Workers hear of it
   * (NOTIFY 'cancel:<jobId>' on commit) and cancel the messages they had claimed but not yet
   * handed over (MessageQueue.cancelClaimed); only those already with the network still finish.
   */
  async cancel(accountId: string, id: string): Promise<ReturnType<typeof toBulkJob>> {
    await this.database.transaction(async (tx) => {
      const job = await jobs.lockJob(tx, accountId, id);
      if (!job) throw new AppError('NOT_FOUND', 'Bulk job not found');
      if (!OPEN_JOB_STATUSES.includes(job.status)) {
        throw new AppError('CONFLICT', `The job is ${job.status}; only ${OPEN_JOB_STATUSES.join(' or ')} jobs can be cancelled`, { status: job.status });
      }
      await store.cancelMessages(tx, { job: id });
      // Recipients never fanned out have no message to cancel: counted and refunded here.
      const notFannedOut = job.fanned_out_at ? 0 : job.total_contacts - (await store.countJobMessages(tx, id));
      const event = await jobs.markJobCancelled(tx, id, notFannedOut);
      await refundQuota(tx, [{ accountId, periodStart: job.quota_period_start, count: notFannedOut }]);
      await appendEvents(tx, [{ accountId, type: 'bulk_job.cancelled', data: event }]);
      await jobs.announceCancel(tx, id);
    });
    return this.get(accountId, id);
  }
}
