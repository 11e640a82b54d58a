/** The message and bulk-job state machines (pure rules; the stores build their SQL guards from them). */
import { describe, expect, it } from 'vitest';
import {
  CANCELLABLE_STATUSES,
  INITIAL_OUT_STATUSES,
  JOB_TRANSITIONS,
  MESSAGE_TRANSITIONS,
  OPEN_JOB_STATUSES,
  RECEIPT_FROM,
  UNSETTLED_STATUSES,
  canTransition,
  isSettled,
  jobIsDone,
  jobIsDoneSql,
  sqlList,
  statusesBefore,
} from '../src/messaging/message-states.js';

describe('message transitions', () => {
  it('final statuses have no successor, and nothing leads back to SCHEDULED or RECEIVED', () => {
    for (const status of ['READ', 'FAILED', 'CANCELLED', 'RECEIVED'] as const) expect(MESSAGE_TRANSITIONS[status]).toEqual([]);
    expect(statusesBefore('SCHEDULED')).toEqual([]);
    expect(statusesBefore('RECEIVED')).toEqual([]);
  });

  it('receipts move forward only; a READ may overtake DELIVERED and SENT', () => {
    expect(RECEIPT_FROM.DELIVERED).toEqual(['SENDING', 'SENT']);
    expect(RECEIPT_FROM.READ).toEqual(['SENDING', 'SENT', 'DELIVERED']);
    expect(canTransition('READ', 'DELIVERED')).toBe(false);
    expect(canTransition('DELIVERED', 'SENT')).toBe(false);
  });

  it('a client cancels only what the network does not have yet; a worker may cancel what it claimed', () => {
    expect(CANCELLABLE_STATUSES).toEqual(['SCHEDULED', 'QUEUED']);
    for (const status of CANCELLABLE_STATUSES) expect(canTransition(status, 'CANCELLED')).toBe(true);
    expect(canTransition('SENDING', 'CANCELLED')).toBe(true);
    expect(canTransition('SENT', 'CANCELLED')).toBe(false);
  });

  it('what may still fail is exactly what is unsettled; a retry goes from SENDING back to QUEUED', () => {
    expect(statusesBefore('FAILED')).toEqual([...UNSETTLED_STATUSES]);
    expect(canTransition('SENDING', 'QUEUED')).toBe(true);
    expect(INITIAL_OUT_STATUSES.every((s) => !isSettled(s))).toBe(true);
    expect(['SENT', 'DELIVERED', 'READ', 'FAILED', 'CANCELLED'].every((s) => isSettled(s as never))).toBe(true);
  });
});

describe('bulk job completion', () => {
  const job = { status: 'PROCESSING' as const, fannedOut: true, totalContacts: 10, sent: 6, failed: 2, cancelled: 2 };

  it('is done once fanned out and every message ended, SCHEDULED or PROCESSING', () => {
    expect(jobIsDone(job)).toBe(true);
    expect(jobIsDone({ ...job, status: 'SCHEDULED' })).toBe(true);
    expect(jobIsDone({ ...job, sent: 5 })).toBe(false);
    expect(jobIsDone({ ...job, fannedOut: false })).toBe(false);
  });

  it('a job that ended (completed or cancelled) does not complete again', () => {
    expect(jobIsDone({ ...job, status: 'COMPLETED' })).toBe(false);
    expect(jobIsDone({ ...job, status: 'CANCELLED' })).toBe(false);
    for (const status of OPEN_JOB_STATUSES) expect(JOB_TRANSITIONS[status]).toContain('COMPLETED');
  });

  it('the SQL guard names the same open statuses', () => {
    expect(jobIsDoneSql('j', 'c.n')).toContain(`j.status IN ${sqlList(OPEN_JOB_STATUSES)}`);
    expect(jobIsDoneSql('j', 'c.n')).toContain('+ c.n >= j.total_contacts');
    expect(sqlList(['A', 'B'])).toBe("('A', 'B')");
  });
});
