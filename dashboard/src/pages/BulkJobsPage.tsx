import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { DIRECT_SEND_MAX } from '../../../src/messaging/message-limits';
import { api } from '../api';
import type { BulkJob, Listing } from '../types';
import { ConfirmButton, PageHeader, Pager, QueryStatus, Time, useCursorPages } from '../ui';
import { ACTIVE_JOB, JobBar } from './JobProgress';

export function BulkJobsPage() {
  const client = useQueryClient();
  const [status, setStatus] = useState('');
  const { page, cursor, onPage } = useCursorPages(status);
  const jobs = useQuery({
    queryKey: ['bulk-jobs', 'list', cursor, status],
    queryFn: () => api<Listing<BulkJob>>('/messages/bulk-jobs', { query: { cursor, limit: 20, status } }),
    // Every second while a job on the page runs; otherwise now and then.
    refetchInterval: (query) => (query.state.data?.data.some((job) => ACTIVE_JOB.has(job.status)) ? 1000 : 10_000),
  });
  return (
    <section>
      <PageHeader title="Bulk jobs" description="Messages to many recipients, sent one after another from a device. Progress updates live." actions={<Link className="button primary" to="/send">New message</Link>} />
      <div className="filters">
        <label htmlFor="job-status">Status</label>
        <select id="job-status" value={status} onChange={(e) => setStatus(e.target.value)}>
          <option value="">All</option>
          {['SCHEDULED', 'PROCESSING', 'COMPLETED', 'CANCELLED'].map((value) => (
            <option key={value}>{value}</option>
          ))}
        </select>
      </div>
      <QueryStatus
        query={jobs}
        what="bulk jobs"
        empty={`No bulk jobs${status ? ` with status ${status}` : ''}. Send to more than ${DIRECT_SEND_MAX} numbers, or to a group, to start one.`}
      />
      <ul className="job-list">
        {jobs.data?.data.map((job) => (
          <li key={job.id} className="card">
            <div className="row between wrap">
              <div>
                <h2 className="h3">
                  {job.type.charAt(0) + job.type.slice(1).toLowerCase()} to {job.totalContacts.toLocaleString()} recipients
                </h2>
                <div className="small muted">
                  <code>{job.id}</code> · created <Time value={job.createdAt} />
                  {job.scheduledAt ? (
                    <>
                      {' '}
                      · scheduled for <Time value={job.scheduledAt} />
                    </>
                  ) : null}
                  {job.completedAt ? (
                    <>
                      {' '}
                      · completed <Time value={job.completedAt} />
                    </>
                  ) : null}
                </div>
              </div>
              <div className="row">
                <Link className="button secondary small" to={`/messages?jobId=${job.id}`} aria-label={`Messages of bulk job ${job.id}`}>
                  Messages
                </Link>
                {ACTIVE_JOB.has(job.status) ? (
                  <ConfirmButton
                    label="Cancel"
                    accessibleName={`Cancel bulk job ${job.id}`}
                    title="Cancel this job?"
                    message={<p>Messages not sent yet are cancelled and refunded. Messages already sent stay sent.</p>}
                    confirmLabel="Cancel job"
                    onConfirm={async () => {
                      await api(`/messages/bulk-jobs/${job.id}/cancel`, { method: 'POST' });
                      await client.invalidateQueries({ queryKey: ['bulk-jobs'] });
                    }}
                  />
                ) : null}
              </div>
            </div>
            <JobBar job={job} />
          </li>
        ))}
      </ul>
      {jobs.data ? <Pager label="Bulk jobs" page={page} limit={jobs.data.meta.limit} total={jobs.data.meta.total} totalExact={jobs.data.meta.totalExact} hasNext={jobs.data.meta.nextCursor !== null} shown={status ? jobs.data.data.length : undefined} onPage={(value) => onPage(value, jobs.data?.meta.nextCursor)} /> : null}
    </section>
  );
}
