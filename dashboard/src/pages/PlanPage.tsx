import { useState } from 'react';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { api } from '../api';
import { browserUrl } from '../message-view';
import type { AccountSummary, One, Page, Upload } from '../types';
import { ConfirmButton, DataTable, formatBytes, PageHeader, Pager, QueryStatus, Time } from '../ui';

export function PlanPage() {
  const account = useQuery({ queryKey: ['account'], queryFn: () => api<One<AccountSummary>>('/account'), refetchInterval: 15_000 });
  const devices = useQuery({ queryKey: ['devices', 'count'], queryFn: () => api<{ meta: { total: number } }>('/devices', { query: { limit: 1 } }) });
  const webhooks = useQuery({ queryKey: ['webhooks', 'list'], queryFn: () => api<{ data: Array<{ active: boolean }> }>('/webhooks', { query: { limit: 100 } }) });
  const summary = account.data?.data;
  return (
    <section>
      <PageHeader title="Plan and usage" description="What your plan includes and how much of this period's quota is used." />
      <QueryStatus query={account} what="your plan" />
      {summary ? (
        <>
          <div className="card">
            <div className="row between wrap">
              <div>
                <h2>{summary.plan.name} plan</h2>
                <p className="muted small">
                  Period <Time value={summary.period.start} /> – <Time value={summary.period.end} /> (renews every {summary.plan.period})
                </p>
              </div>
            </div>
            <Quota label="Messages this period" used={summary.usage.messages} limit={summary.limits.messages} resetsAt={summary.period.end} />
          </div>
          <div className="stats">
            <Stat label="Devices" used={devices.data?.meta.total} limit={summary.limits.devices} />
            <Stat label="Active webhooks" used={webhooks.data?.data.filter((hook) => hook.active).length} limit={summary.limits.activeWebhooks} />
            <Stat label="Contacts" used={summary.usage.contacts} limit={null} />
            <Stat label="Uploaded files" used={summary.usage.uploadBytes} limit={summary.limits.uploadBytes} format={formatBytes} />
          </div>
          <UploadedFiles />
          <p className="small muted">
            A message counts when it is accepted, once per recipient, and is refunded if it ends failed or cancelled. Uploaded files count until
            they are deleted or pruned. Plans are changed by the
            administrator (<code>waygate accounts set-plan</code>).
          </p>
        </>
      ) : null}
    </section>
  );
}

function Quota({ label, used, limit, resetsAt }: { label: string; used: number; limit: number | null; resetsAt: string }) {
  if (limit === null) {
    return (
      <p>
        <strong>{used.toLocaleString()}</strong> messages sent this period. <span className="muted">Unlimited plan: no quota.</span>
      </p>
    );
  }
  const percent = Math.min(100, Math.round((used / Math.max(1, limit)) * 100));
  return (
    <div className="quota">
      <div className="row between">
        <span id="quota-label">{label}</span>
        <span>
          <strong>{used.toLocaleString()}</strong> of {limit.toLocaleString()} ({percent}%)
        </span>
      </div>
      <meter min={0} max={limit} low={limit * 0.75} high={limit * 0.9} optimum={0} value={used} aria-labelledby="quota-label">
        {percent}%
      </meter>
      <p className="small muted">
        {Math.max(0, limit - used).toLocaleString()} left; resets <Time value={resetsAt} />.
      </p>
    </div>
  );
}

function Stat({ label, used, limit, format = (n) => n.toLocaleString() }: { label: string; used: number | undefined; limit: number | null; format?: (n: number) => string }) {
  return (
    <div className="card stat">
      <div className="muted small">{label}</div>
      <div className="stat-value">
        {used === undefined ? '…' : format(used)}
        <span className="muted small"> {limit === null ? 'no limit' : `of ${format(limit)}`}</span>
      </div>
    </div>
  );
}

/** The account's uploads (GET /media), newest first, each with a download link and Delete: what makes room under the plan. */
function UploadedFiles() {
  const client = useQueryClient();
  const [page, setPage] = useState(1);
  const uploads = useQuery({ queryKey: ['uploads', page], queryFn: () => api<Page<Upload>>('/media', { query: { page, limit: 20 } }) });
  return (
    <div className="card">
      <h2>Uploaded files</h2>
      <p className="small muted">Files uploaded to send, kept until they are deleted or pruned. Deleting one makes room; messages already sent keep it.</p>
      <QueryStatus query={uploads} what="your uploaded files" empty="No uploaded files." />
      {uploads.data && uploads.data.data.length > 0 ? (
        <>
          <DataTable caption="Uploaded files" columns={['File', 'Type', 'Size', 'Uploaded', 'Kept until']} actions>
            {uploads.data.data.map((upload) => (
              <tr key={upload.id} data-upload-id={upload.id}>
                <th scope="row" data-label="File">
                  <a href={browserUrl(upload.mediaUrl) ?? undefined} target="_blank" rel="noreferrer">
                    {upload.fileName ?? upload.id}
                  </a>
                </th>
                <td data-label="Type" className="small">{upload.contentType}</td>
                <td data-label="Size">{formatBytes(upload.sizeBytes)}</td>
                <td data-label="Uploaded">
                  <Time value={upload.createdAt} />
                </td>
                <td data-label="Kept until">
                  <Time value={upload.expiresAt} />
                </td>
                <td>
                  <ConfirmButton
                    label="Delete"
                    accessibleName={`Delete ${upload.fileName ?? upload.id}`}
                    title={`Delete “${upload.fileName ?? upload.id}”?`}
                    message={<p>Messages already sent keep the file; a message still waiting to be sent with it ends failed.</p>}
                    confirmLabel="Delete file"
                    onConfirm={async () => {
                      await api(`/media/${upload.id}`, { method: 'DELETE' });
                      await Promise.all([client.invalidateQueries({ queryKey: ['uploads'] }), client.invalidateQueries({ queryKey: ['account'] })]);
                    }}
                  />
                </td>
              </tr>
            ))}
          </DataTable>
          <Pager label="Uploaded files" page={page} limit={uploads.data.meta.limit} total={uploads.data.meta.total} onPage={setPage} />
        </>
      ) : null}
    </div>
  );
}
