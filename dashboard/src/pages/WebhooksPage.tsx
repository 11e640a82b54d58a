import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { SUBSCRIBABLE_EVENT_TYPES } from '../../../src/events/event-types';
import { api, ApiError } from '../api';
import type { Listing, One, Page, Webhook, WebhookDelivery, WebhookHealthState } from '../types';
import { ConfirmButton, CopyButton, DataTable, Empty, ErrorBox, Field, Loading, Notice, PageHeader, StatusBadge, Time } from '../ui';
import { WEBHOOK_DESCRIPTION_MAX } from '../../../src/platform/text-limits';

const HEALTH_WORDS: Record<WebhookHealthState, string> = {
  HEALTHY: 'Its latest delivery attempt succeeded.',
  FAILING: 'Its latest delivery attempt failed: check the delivery log.',
  DISABLED: 'Turned off: it receives no events.',
  NO_ATTEMPTS: 'Nothing delivered yet: send a test event to try it.',
};

export function WebhooksPage() {
  // Read again every few seconds: the health of each endpoint changes as deliveries are attempted.
  const webhooks = useQuery({ queryKey: ['webhooks', 'list'], queryFn: () => api<Page<Webhook>>('/webhooks', { query: { limit: 100 } }), refetchInterval: 5000 });
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
            if (secret) setCreated({ id, secret });
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

/** Adds an endpoint, or (given `editing`) changes its URL, description and events. */
function WebhookForm({ onCreated, onCancel, editing }: { onCreated: (id: string, secret: string | null) => void; onCancel: () => void; editing?: Webhook }) {
  const client = useQueryClient();
  const [url, setUrl] = useState(editing?.url ?? '');
  const [description, setDescription] = useState(editing?.description ?? '');
  const [events, setEvents] = useState<string[]>(editing?.events ?? []);
  const create = useMutation({
    mutationFn: async () => {
      const fields = { url: url.trim(), events, description: description.trim() ? description.trim() : null };
      if (editing) {
        const result = await api<One<Webhook>>(`/webhooks/${editing.id}`, { method: 'PATCH', body: fields });
        return { id: result.data.id, secret: null };
      }
      const result = await api<One<Webhook & { secret: string }>>('/webhooks', { method: 'POST', body: { ...fields, description: fields.description ?? undefined } });
      return { id: result.data.id, secret: result.data.secret };
    },
    onSuccess: async (result) => {
      await client.invalidateQueries({ queryKey: ['webhooks'] });
      await client.invalidateQueries({ queryKey: ['overview'] });
      onCreated(result.id, result.secret);
    },
  });
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    create.mutate();
  };
  const titleId = useId();
  return (
    <form className={editing ? 'edit-form' : 'card'} onSubmit={submit} aria-labelledby={titleId}>
      <h2 id={titleId} className="h3">
        {editing ? 'Edit endpoint' : 'New endpoint'}
      </h2>
      <ErrorBox error={create.error} title={editing ? 'Could not save the endpoint.' : 'Could not add the endpoint.'} />
      <Field label="URL" hint="https://… — it must answer 2xx within 15 s." error={create.error instanceof ApiError ? create.error.fieldMessage('url') : undefined}>
        {(props) => <input {...props} type="url" required value={url} onChange={(e) => setUrl(e.target.value)} placeholder="https://example.com/waygate" />}
      </Field>
      <Field label="Description (optional)">{(props) => <input {...props} maxLength={WEBHOOK_DESCRIPTION_MAX} value={description} onChange={(e) => setDescription(e.target.value)} />}</Field>
      <fieldset>
        <legend>Events</legend>
        <p className="hint">None chosen means every event.</p>
        <div className="checkbox-grid">
          {SUBSCRIBABLE_EVENT_TYPES.map((type) => (
            <label key={type} className="checkbox">
              <input type="checkbox" checked={events.includes(type)} onChange={(e) => setEvents(e.target.checked ? [...events, type] : events.filter((t) => t !== type))} />{' '}
              <code>{type}</code>
            </label>
          ))}
        </div>
      </fieldset>
      <div className="row">
        <button type="submit" className="button primary" disabled={create.isPending || url.trim() === ''}>
          {create.isPending ? 'Saving…' : editing ? 'Save changes' : 'Add endpoint'}
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
  const [editing, setEditing] = useState(false);
  const [rotated, setRotated] = useState<{ secret: string; previousSecretExpiresAt: string | null } | null>(null);
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
        <StatusBadge status={webhook.health.state} testId="webhook-health" />
      </div>
      <p className="small" data-testid="webhook-health-detail">
        {HEALTH_WORDS[webhook.health.state]}
        {webhook.health.consecutiveFailures > 0 ? ` ${webhook.health.consecutiveFailures} failed attempt${webhook.health.consecutiveFailures === 1 ? '' : 's'} in a row.` : ''}{' '}
        <span className="muted">
          Last success: <Time value={webhook.health.lastSuccessAt} empty="never" />. Last failure: <Time value={webhook.health.lastFailureAt} empty="none" />.
        </span>
      </p>
      <div className="row wrap card-actions">
        <button type="button" className="button secondary small" disabled={test.isPending} onClick={() => test.mutate()} aria-label={`Send test event to ${webhook.url}`}>
          Send test event
        </button>
        <button type="button" className="button secondary small" aria-expanded={showLog} onClick={() => setShowLog(!showLog)} aria-label={`${showLog ? 'Hide delivery log' : 'Delivery log'} of ${webhook.url}`}>
          {showLog ? 'Hide delivery log' : 'Delivery log'}
        </button>
        <button type="button" className="button secondary small" aria-expanded={editing} onClick={() => setEditing(!editing)} aria-label={`Edit endpoint ${webhook.url}`}>
          Edit
        </button>
        <ConfirmButton
          label="Rotate secret"
          accessibleName={`Rotate the secret of ${webhook.url}`}
          className="button secondary small"
          title="Rotate the signing secret?"
          message={<p>A new secret signs every call from now on. The old one keeps signing too, beside it, for 24 hours, so you have time to update your receiver.</p>}
          confirmLabel="Rotate secret"
          onConfirm={async () => {
            const result = await api<One<{ secret: string; previousSecretExpiresAt: string | null }>>(`/webhooks/${webhook.id}/rotate-secret`, { method: 'POST' });
            setRotated(result.data);
            setSecret(null);
          }}
        />
        {secret === null ? (
          <button type="button" className="button secondary small" disabled={reveal.isPending} onClick={() => reveal.mutate()} aria-label={`Reveal the secret of ${webhook.url}`}>
            Reveal secret
          </button>
        ) : (
          <button type="button" className="button secondary small" onClick={() => setSecret(null)}>
            Hide secret
          </button>
        )}
        <button type="button" className="button secondary small" disabled={toggle.isPending} onClick={() => toggle.mutate()} aria-label={`${webhook.active ? 'Turn off' : 'Turn on'} ${webhook.url}`}>
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
      {editing ? <WebhookForm editing={webhook} onCreated={() => setEditing(false)} onCancel={() => setEditing(false)} /> : null}
      {rotated ? (
        <div className="secret-row" role="status">
          <span className="small">
            New secret (the old one also signs until <Time value={rotated.previousSecretExpiresAt} />):
          </span>
          <code className="mono secret" data-testid="rotated-secret">
            {rotated.secret}
          </code>
          <CopyButton value={rotated.secret} />
        </div>
      ) : null}
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
  const replay = useMutation({
    // Every failed delivery of the last 7 days goes out again now.
    mutationFn: () => api<One<{ requeued: number }>>(`/webhooks/${webhookId}/replay`, { method: 'POST', body: { since: new Date(Date.now() - 7 * 86_400_000).toISOString() } }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['webhooks', 'deliveries', webhookId] }),
  });
  const anyFailed = deliveries.data?.data.some((delivery) => delivery.status === 'FAILED') ?? false;
  return (
    <div className="delivery-log">
      <div className="row between wrap">
        <h3>Delivery log</h3>
        {anyFailed ? (
          <button type="button" className="button secondary small" disabled={replay.isPending} onClick={() => replay.mutate()}>
            Retry every failed delivery now
          </button>
        ) : null}
      </div>
      {replay.data ? (
        <p className="small" role="status">
          {replay.data.data.requeued} deliver{replay.data.data.requeued === 1 ? 'y' : 'ies'} sent again.
        </p>
      ) : null}
      {deliveries.isPending ? <Loading what="deliveries" /> : null}
      <ErrorBox error={deliveries.error ?? retry.error ?? replay.error} />
      {deliveries.data && deliveries.data.data.length === 0 ? <p className="small muted">No deliveries yet. Send a test event to try the endpoint.</p> : null}
      {deliveries.data && deliveries.data.data.length > 0 ? (
        <DataTable caption="Deliveries, newest first" columns={['Event', 'Status', 'Attempts', 'Last answer', 'Created']} actions>
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
                    <button
                      type="button"
                      className="button secondary small"
                      disabled={retry.isPending}
                      onClick={() => retry.mutate(delivery.id)}
                      aria-label={`Retry now: ${delivery.eventType}${delivery.eventSeq !== null ? ` #${delivery.eventSeq}` : ''}`}
                    >
                      Retry now
                    </button>
                  ) : null}
                </td>
              </tr>
            );
          })}
        </DataTable>
      ) : null}
    </div>
  );
}
