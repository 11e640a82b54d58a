/**
 * The state machines of a message and of a bulk job, as data: which status may follow which,
 * what may be cancelled, what is settled, and when a job is done. Pure; the stores build their
 * SQL guards from these constants (`sqlList`), so a rule changes here and nowhere else.
 */
import type { BulkJobRow, MessageStatus } from './message-model.js';

export type JobStatus = BulkJobRow['status'];

/**
 * Every move a message may make. SENDING may jump to DELIVERED or READ (a receipt can overtake
 * the network's acknowledgement) and back to QUEUED (a retry, a release, a dead owner's messages
 * recovered). Statuses with no successor are final.
 */
export const MESSAGE_TRANSITIONS: Readonly<Record<MessageStatus, readonly MessageStatus[]>> = {
  SCHEDULED: ['SENDING', 'FAILED', 'CANCELLED'],
  QUEUED: ['SENDING', 'FAILED', 'CANCELLED'],
  SENDING: ['SENT', 'DELIVERED', 'READ', 'QUEUED', 'FAILED', 'CANCELLED'],
  SENT: ['DELIVERED', 'READ'],
  DELIVERED: ['READ'],
  READ: [],
  FAILED: [],
  CANCELLED: [],
  RECEIVED: [],
};

/** The statuses an outgoing message is created in. */
export const INITIAL_OUT_STATUSES: readonly MessageStatus[] = ['SCHEDULED', 'QUEUED', 'SENDING'];

export function canTransition(from: MessageStatus, to: MessageStatus): boolean {
  return MESSAGE_TRANSITIONS[from].includes(to);
}

/** The statuses a message may leave for `to`. */
export function statusesBefore(to: MessageStatus): MessageStatus[] {
  return (Object.keys(MESSAGE_TRANSITIONS) as MessageStatus[]).filter((from) => canTransition(from, to));
}

/** What a client may cancel: messages not yet handed to the network. */
export const CANCELLABLE_STATUSES: readonly MessageStatus[] = ['SCHEDULED', 'QUEUED'];

/** Not settled: the message may still be sent or fail (a direct send's request waits for these). */
export const UNSETTLED_STATUSES: readonly MessageStatus[] = ['SCHEDULED', 'QUEUED', 'SENDING'];

export const isSettled = (status: MessageStatus): boolean => !UNSETTLED_STATUSES.includes(status);

/** Statuses a delivery or read receipt moves a message from. */
export const RECEIPT_FROM: Readonly<Record<'DELIVERED' | 'READ', readonly MessageStatus[]>> = {
  DELIVERED: statusesBefore('DELIVERED'),
  READ: statusesBefore('READ'),
};

/** Every move a bulk job may make; COMPLETED and CANCELLED are final. */
export const JOB_TRANSITIONS: Readonly<Record<JobStatus, readonly JobStatus[]>> = {
  SCHEDULED: ['PROCESSING', 'COMPLETED', 'CANCELLED'],
  PROCESSING: ['COMPLETED', 'CANCELLED'],
  COMPLETED: [],
  CANCELLED: [],
};

/** Jobs still running: they fan out, count their messages, and may be cancelled or complete. */
export const OPEN_JOB_STATUSES: readonly JobStatus[] = ['SCHEDULED', 'PROCESSING'];

export interface JobProgress {
  status: JobStatus;
  fannedOut: boolean;
  totalContacts: number;
  /** Messages that ended: sent (or later), failed, cancelled. */
  sent: number;
  failed: number;
  cancelled: number;
}

/**
 * A job is done when it is open, every recipient has a message (fanned out), and every message
 * ended. A SCHEDULED job can be done too: its messages may all end before their time (cancelled
 * one by one, or failed when the device was unlinked).
 */
export function jobIsDone(job: JobProgress): boolean {
  return OPEN_JOB_STATUSES.includes(job.status) && job.fannedOut && job.sent + job.failed + job.cancelled >= job.totalContacts;
}

/** jobIsDone in SQL, for bulk_jobs row `j` once `added` (a SQL expression) more of its messages ended. */
export function jobIsDoneSql(j: string, added = '0'): string {
  return `(${j}.status IN ${sqlList(OPEN_JOB_STATUSES)} AND ${j}.fanned_out_at IS NOT NULL
           AND ${j}.sent_count + ${j}.failed_count + ${j}.cancelled_count + ${added} >= ${j}.total_contacts)`;
}

/** A list of statuses as a SQL literal list: ('A', 'B'). Statuses are constants, never input. */
export function sqlList(statuses: readonly string[]): string {
  return `(${statuses.map((s) => `'${s}'`).join(', ')})`;
}
