import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api } from '../api';
import type { BulkJob, One } from '../types';
import { StatusBadge } from '../ui';

export const ACTIVE_JOB = new Set(['SCHEDULED', 'PROCESSING']);

/** Messages that reached an end for the job's progress: sent (or further), failed, cancelled. */
export function jobDone(job: BulkJob): number {
  return Math.min(job.totalContacts, job.sentCount + job.failedCount + job.cancelledCount);
}

export function jobPercent(job: BulkJob): number {
  if (job.status === 'COMPLETED') return 100;
  return job.totalContacts === 0 ? 0 : Math.floor((jobDone(job) / job.totalContacts) * 100);
}

/** A job's progress bar and counters. */
export function JobBar({ job }: { job: BulkJob }) {
  const percent = jobPercent(job);
  const labelId = `job-${job.id}-label`;
  return (
    <div className="job-bar" data-job-id={job.id}>
      <div className="row between">
        <span id={labelId}>
          <StatusBadge status={job.status} testId="job-status" /> <strong data-testid="job-percent">{percent}%</strong>{' '}
          <span className="muted small">
            {jobDone(job).toLocaleString()} of {job.totalContacts.toLocaleString()} done
          </span>
        </span>
        <span className="small muted">
          {job.sentCount.toLocaleString()} sent · {job.deliveredCount.toLocaleString()} delivered · {job.readCount.toLocaleString()} read ·{' '}
          <span className={job.failedCount > 0 ? 'error-text' : ''}>{job.failedCount.toLocaleString()} failed</span>
          {job.cancelledCount > 0 ? ` · ${job.cancelledCount.toLocaleString()} cancelled` : ''}
        </span>
      </div>
      <progress max={100} value={percent} aria-labelledby={labelId}>
        {percent}%
      </progress>
    </div>
  );
}

/**
 * One job, watched: read again every second while it runs, and (with `watchAfterMs`) every two
 * seconds for that long after it completed, as receipts go on counting deliveries and reads.
 */
export function WatchedJob({ jobId, watchAfterMs = 0 }: { jobId: string; watchAfterMs?: number }) {
  const [since] = useState(() => Date.now());
  const job = useQuery({
    queryKey: ['bulk-jobs', 'one', jobId],
    queryFn: () => api<One<BulkJob>>(`/messages/bulk-jobs/${jobId}`),
    refetchInterval: (query) => {
      const current = query.state.data?.data;
      if (!current || ACTIVE_JOB.has(current.status)) return 1000;
      const settled = current.readCount + current.failedCount + current.cancelledCount >= current.totalContacts;
      return !settled && Date.now() - since < watchAfterMs ? 2000 : false;
    },
  });
  return job.data ? <JobBar job={job.data.data} /> : null;
}
