import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useSearchParams } from 'react-router';
import { api } from '../api';
import type { Listing, Message } from '../types';
import { ConfirmButton, DataTable, formatPhone, PageHeader, Pager, QueryStatus, StatusBadge, Time, useCursorPages } from '../ui';
import { browserUrl, MessageBody, MessageMarks, Quote, Reactions, reactionsByTarget } from '../message-view';

const STATUSES = ['SCHEDULED', 'QUEUED', 'SENDING', 'SENT', 'DELIVERED', 'READ', 'FAILED', 'CANCELLED', 'RECEIVED'];
const MOVING = new Set(['SCHEDULED', 'QUEUED', 'SENDING', 'SENT', 'DELIVERED']);

export function MessagesPage() {
  const client = useQueryClient();
  const [params, setParams] = useSearchParams();
  const status = params.get('status') ?? '';
  const to = params.get('to') ?? '';
  const jobId = params.get('jobId') ?? '';
  const { page, cursor, onPage } = useCursorPages(`${status}|${to}|${jobId}`);
  const [draft, setDraft] = useState({ status, to, jobId });

  const messages = useQuery({
    queryKey: ['messages', { status, to, jobId, cursor }],
    queryFn: () => api<Listing<Message>>('/messages', { query: { status, to: to.replace(/[^\d]/g, ''), jobId, cursor, limit: 25 } }),
    // Statuses move on their own (receipts): keep the page current while some still can.
    refetchInterval: (query) => (query.state.data?.data.some((message) => MOVING.has(message.status)) ? 3000 : 15_000),
  });
  const apply = (event: FormEvent): void => {
    event.preventDefault();
    const next = new URLSearchParams();
    if (draft.status) next.set('status', draft.status);
    if (draft.to.trim()) next.set('to', draft.to.trim());
    if (draft.jobId.trim()) next.set('jobId', draft.jobId.trim());
    setParams(next);
  };
  const shown = messages.data?.data ?? [];
  const byId = new Map(shown.map((message) => [message.id, message]));
  const reactions = reactionsByTarget(shown);

  return (
    <section>
      <PageHeader title="Messages" description="Every message sent or received, newest first, with where it is now." />
      <form className="filters" onSubmit={apply} aria-label="Filter messages">
        <div className="field">
          <label htmlFor="filter-status">Status</label>
          <select id="filter-status" value={draft.status} onChange={(e) => setDraft({ ...draft, status: e.target.value })}>
            <option value="">All</option>
            {STATUSES.map((value) => (
              <option key={value}>{value}</option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor="filter-to">Number</label>
          <input id="filter-to" inputMode="tel" value={draft.to} onChange={(e) => setDraft({ ...draft, to: e.target.value })} />
        </div>
        <div className="field">
          <label htmlFor="filter-job">Bulk job id</label>
          <input id="filter-job" value={draft.jobId} onChange={(e) => setDraft({ ...draft, jobId: e.target.value })} />
        </div>
        <button type="submit" className="button secondary">
          Filter
        </button>
      </form>
      <QueryStatus query={messages} what="messages" empty="No messages match." />
      {messages.data && messages.data.data.length > 0 ? (
        <DataTable caption="Messages" columns={['To / from', 'Message', 'Status', 'Created']} actions>
          {messages.data.data.map((message) => (
            <tr key={message.id}>
              <td data-label="To / from" className="nowrap">
                {message.direction === 'in' ? <span className="muted small">from </span> : null}
                {formatPhone(message.direction === 'in' ? message.from : message.to)}
              </td>
              <td data-label="Message" className="message-cell" data-message={message.id}>
                {message.type !== 'TEXT' ? <span className="badge badge-neutral">{message.type}</span> : null}
                {message.replyTo ? <Quote id={message.replyTo} known={byId.get(message.replyTo)} /> : null}
                <MessageBody message={message} media={browserUrl(message.mediaUrl)} />
                <Reactions emoji={reactions.get(message.id)} />
                <MessageMarks message={message} />
                {message.error ? <div className="small error-text">{message.error.code}: {message.error.message}</div> : null}
              </td>
              <td data-label="Status" className="status-cell">
                <StatusBadge status={message.status} />
                <StatusTimes message={message} />
              </td>
              <td data-label="Created" className="nowrap">
                <Time value={message.createdAt} />
                {message.scheduledAt ? (
                  <div className="small muted">
                    for <Time value={message.scheduledAt} />
                  </div>
                ) : null}
              </td>
              <td>
                {message.status === 'SCHEDULED' || message.status === 'QUEUED' ? (
                  <ConfirmButton
                    label="Cancel"
                    accessibleName={`Cancel message to ${formatPhone(message.to)}`}
                    title="Cancel this message?"
                    message={<p>It will not be sent, and it is refunded to your quota.</p>}
                    confirmLabel="Cancel message"
                    onConfirm={async () => {
                      await api(`/messages/${message.id}/cancel`, { method: 'POST' });
                      await client.invalidateQueries({ queryKey: ['messages'] });
                    }}
                  />
                ) : null}
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
      {messages.data ? <Pager label="Messages" page={page} limit={messages.data.meta.limit} total={messages.data.meta.total} totalExact={messages.data.meta.totalExact} hasNext={messages.data.meta.nextCursor !== null} shown={status || to ? shown.length : undefined} onPage={(value) => onPage(value, messages.data?.meta.nextCursor)} /> : null}
    </section>
  );
}

/** When the message reached each step so far. */
function StatusTimes({ message }: { message: Message }) {
  const steps: Array<[string, string | null]> = [
    ['sent', message.sentAt],
    ['delivered', message.deliveredAt],
    ['read', message.readAt],
    ['failed', message.failedAt],
  ];
  const reached = steps.filter(([, at]) => at !== null);
  if (reached.length === 0) return null;
  return (
    <ul className="plain small muted times">
      {reached.map(([step, at]) => (
        <li key={step}>
          {step} <Time value={at} short />
        </li>
      ))}
    </ul>
  );
}
