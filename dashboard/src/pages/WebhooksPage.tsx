import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ApiError } from '../api';
import type { Listing, One, Page, Webhook, WebhookDelivery } from '../types';
import { ConfirmButton, CopyButton, Empty, ErrorBox, Field, Loading, Notice, PageHeader, StatusBadge, Time } from '../ui';

const EVENT_TYPES = ['message.received', 'message.status', 'message.reaction', 'poll.vote', 'device.status', 'bulk_job.completed', 'bulk_job.cancelled'];

export function WebhooksPage() {
  const webhooks = useQuery({ queryKey: ['webhooks', 'list'], queryFn: () => api<Page<Webhook>>('/webhooks', { query: { limit: 100 } }) });
  const [adding, setAdding] = useState(false);
  const [created, setCreated] = useState<{ id: string; secret: string } | null>(null);
  return (
    <section>
      <PageHeader
        title="Webhooks"
        description="Waygate calls your endpoints when messages arrive or change status. Each call is signed (Standard Webhooks) with the endpoint's secret."
        actions={
          <button type="button" className="button primary" aria-expanded={adding} onClick={() => setAdding(!adding)}>
            Add endpoint
          </button>
        }
      />
      {adding ? (
        <WebhookForm
          onCreated={(id, secret) => {
            setAdding(false);
            setCreated({ id, secret });
          }}
          onCancel={() => setAdding(false)}
        />
      ) : null}
      {created ? (
        <div className="card new-secret" role="region" aria-label="New endpoint's signing secret">
          <Notice tone="success">Endpoint added. Its signing secret, to verify each call (you can reveal it again later):</Notice>
          <div className="secret-row">
            <code className="mono secret">{created.secret}</code>
            <CopyButton value={created.secret} />
          </div>
          <button type="button" className="button secondary small" onClick={() => setCreated(null)}>
            Close
          </button>
        </div>
      ) : null}
      {webhooks.isPending ? <Loading what="webhooks" /> : null}
      <ErrorBox error={webhooks.error} />
      {webhooks.data && webhooks.data.data.length === 0 && !adding ? <Empty>No endpoints yet. Add one to receive events.</Empty> : null}
      <ul className="webhook-list">
        {webhooks.data?.data.map((webhook) => (
          <li key={webhook.id}>
            <WebhookCard webhook={webhook} />
          </li>
        ))}
      </ul>
    </section>
  );
}

function WebhookForm({ onCreated, onCancel }: { onCreated: (id: string, secret: string) => void; onCancel: () => void }) {
  const client = useQueryClient();
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, setEvents] = useState<string[]>([]);
  const create = useMutation({
    mutationFn: () =>
      api<One<Webhook & { secret: string }>>('/webhooks', {
        method: 'POST',
        body: { url: url.trim(), events, ...(description.trim() ? { description: description.trim() } : {}) },
      }),
    onSuccess: async (result) => {
      await client.invalidateQueries({ queryKey: ['webhooks'] });
      onCreated(result.data.id, result.data.secret);
    },
  });
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <form className="card" onSubmit={submit} aria-labelledby="new-webhook-title">
      <h2 id="new-webhook-title" className="h3">
        New endpoint
      </h2>
      <ErrorBox error={create.error} title="Could not add the endpoint." />
      <Field label="URL" hint="https://… — it must answer 2xx within 15 s." error={create.error instanceof ApiError ? create.error.fieldMessage('url') : undefined}>
        {(props) => <input {...props} type="url" required value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://example.com/waygate" />}
      </Field>
      <Field label="Description (optional)">{(props) => <input {...props} maxLength={500} value={description} onChange={(e) => setDescription(e.target.value)} />}</Field>
      <fieldset>
        <legend>Events</legend>
        <p className="hint">None chosen means every event.</p>
        <div className="checkbox-grid">
          {EVENT_TYPES.map((type) => (
            <label key={type} className="checkbox">
              <input type="checkbox" checked={events.includes(type)} onChange={(e) => setEvents(e.target.checked ? [...events, type] : events.filter((t) => t !== type))} />{' '}
              <code>{type}</code>
            </label>
          ))}
        </div>
      </fieldset>
      <div className="row">
        <button type="submit" className="button primary" disabled={create.isPending || url.trim() === ''}>
          {create.isPending ? 'Adding…' : 'Add endpoint'}
        </button>
        <button type="button" className="button secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

function WebhookCard({ webhook }: { webhook: Webhook }) {
  const client = useQueryClient();
  const refresh = () => client.invalidateQueries({ queryKey: ['webhooks'] });
  const [secret, setSecret] = useState<string | null>(null);
  const [showLog, setShowLog] = useState(false);
  const reveal = useMutation({
    mutationFn: () => api<One<{ secret: string }>>(`/webhooks/${webhook.id}/secret`),
    onSuccess: (result) => setSecret(result.data.secret),
  });
  const test = useMutation({
    mutationFn: () => api(`/webhooks/${webhook.id}/test`, { method: 'POST' }),
    onSuccess: async () => {
      setShowLog(true);
      await client.invalidateQueries({ queryKey: ['webhooks', 'deliveries', webhook.id] });
    },
  });
  const toggle = useMutation({ mutationFn: () => api(`/webhooks/${webhook.id}`, { method: 'PATCH', body: { active: !webhook.active } }), onSuccess: refresh });
  return (
    <article className="card" aria-label={`Endpoint ${webhook.url}`} data-webhook-id={webhook.id}>
      <div className="row between wrap">
        <div className="grow">
          <h2 className="h3 mono break">{webhook.url}</h2>
          <div className="small muted">
            {webhook.description ? `${webhook.description} · ` : ''}
            {webhook.events.length === 0 ? 'every event' : webhook.events.join(', ')} · added <Time value={webhook.createdAt} />
          </div>
          {webhook.disabledReason ? <div className="small error-text">Turned off: {webhook.disabledReason}</div> : null}
        </div>
        <StatusBadge status={webhook.active ? 'ACTIVE' : 'INACTIVE'} />
      </div>
      <div className="row wrap card-actions">
        <button type="button" className="button secondary small" disabled={test.isPending} onClick={() => test.mutate()}>
          Send test event
        </button>
        <button type="button" className="button secondary small" aria-expanded={showLog} onClick={() => setShowLog(!showLog)}>
          {showLog ? 'Hide delivery log' : 'Delivery log'}
        </button>
        {secret === null ? (
          <button type="button" className="button secondary small" disabled={reveal.isPending} onClick={() => reveal.mutate()}>
            Reveal secret
          </button>
        ) : (
          <button type="button" className="button secondary small" onClick={() => setSecret(null)}>
            Hide secret
          </button>
        )}
        <button type="button" className="button secondary small" disabled={toggle.isPending} onClick={() => toggle.mutate()}>
          {webhook.active ? 'Turn off' : 'Turn on'}
        </button>
        <ConfirmButton
          label="Delete"
          accessibleName={`Delete endpoint ${webhook.url}`}
          title="Delete this endpoint?"
          message={<p>No more events are sent to {webhook.url}. Its delivery log goes with it.</p>}
          confirmLabel="Delete endpoint"
          onConfirm={async () => {
            await api(`/webhooks/${webhook.id}`, { method: 'DELETE' });
            await refresh();
          }}
        />
      </div>
      <ErrorBox error={test.error ?? reveal.error ?? toggle.error} />
      {secret !== null ? (
        <div className="secret-row">
          <code className="mono secret" data-testid="webhook-secret">
            {secret}
          </code>
          <CopyButton value={secret} />
        </div>
      ) : null}
      {showLog ? <DeliveryLog webhookId={webhook.id} /> : null}
    </article>
  );
}

function DeliveryLog({ webhookId }: { webhookId: string }) {
  const client = useQueryClient();
  const deliveries = useQuery({
    queryKey: ['webhooks', 'deliveries', webhookId],
    queryFn: () => api<Listing<WebhookDelivery>>(`/webhooks/${webhookId}/deliveries`, { query: { limit: 20 } }),
    // Pending deliveries settle within seconds: watch them.
    refetchInterval: (query) => (query.state.data?.data.some((delivery) => delivery.status === 'PENDING') ? 1500 : 10_000),
  });
  const retry = useMutation({
    mutationFn: (deliveryId: string) => api(`/webhooks/${webhookId}/deliveries/${deliveryId}/retry`, { method: 'POST' }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['webhooks', 'deliveries', webhookId] }),
  });
  return (
    <div className="delivery-log">
      <h3>Delivery log</h3>
      {deliveries.isPending ? <Loading what="deliveries" /> : null}
      <ErrorBox error={deliveries.error ?? retry.error} />
      {deliveries.data && deliveries.data.data.length === 0 ? <p className="small muted">No deliveries yet. Send a test event to try the endpoint.</p> : null}
      {deliveries.data && deliveries.data.data.length > 0 ? (
        <div className="table-wrap">
          <table>
            <caption className="visually-hidden">Deliveries, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last answer</th>
                <th scope="col">Created</th>
                <th scope="col">
                  <span className="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {deliveries.data.data.map((delivery) => {
                const last = delivery.lastAttempts[0];
                return (
                  <tr key={delivery.id} data-testid="delivery-row">
                    <td data-label="Event">
                      <code>{delivery.eventType}</code>
                      <div className="small muted">#{delivery.eventSeq}</div>
                    </td>
                    <td data-label="Status">
                      <StatusBadge status={delivery.status} />
                      {delivery.status === 'PENDING' && delivery.nextAttemptAt ? (
                        <div className="small muted">
                          next <Time value={delivery.nextAttemptAt} />
                        </div>
                      ) : null}
                    </td>
                    <td data-label="Attempts">{delivery.attempts}</td>
                    <td data-label="Last answer" className="small">
                      {delivery.lastStatusCode !== null ? `HTTP ${delivery.lastStatusCode}` : delivery.lastError ?? '—'}
                      {last ? <span className="muted"> · {last.latencyMs} ms</span> : null}
                    </td>
                    <td data-label="Created" className="nowrap">
                      <Time value={delivery.createdAt} />
                    </td>
                    <td>
                      {delivery.status !== 'PENDING' ? (
                        <button type="button" className="button secondary small" disabled={retry.isPending} onClick={() => retry.mutate(delivery.id)}>
                          Retry
                        </button>
                      ) : null}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : null}
    </div>
  );
}
