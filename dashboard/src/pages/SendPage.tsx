import { useMutation, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, ApiError } from '../api';
import type { Device, Group, Page, SendResult } from '../types';
import { ErrorBox, Field, formatPhone, Notice, PageHeader, StatusBadge } from '../ui';
import { WatchedJob } from './JobProgress';

const TYPES = ['TEXT', 'IMAGE', 'VIDEO', 'DOCUMENT'] as const;

/** Numbers typed or pasted: one per line, or separated by commas or semicolons. */
function parseNumbers(text: string): string[] {
  return [...new Set(text.split(/[\n,;]+/).map((value) => value.trim()).filter(Boolean))];
}

export function SendPage() {
  const devices = useQuery({ queryKey: ['devices', 'list'], queryFn: () => api<Page<Device>>('/devices', { query: { limit: 100 } }) });
  const groups = useQuery({ queryKey: ['groups', 'all'], queryFn: () => api<Page<Group>>('/groups', { query: { limit: 100 } }) });
  const [type, setType] = useState<(typeof TYPES)[number]>('TEXT');
  const [content, setContent] = useState('');
  const [mediaUrl, setMediaUrl] = useState('');
  const [numbers, setNumbers] = useState('');
  // "Send to group" on the Groups page arrives with ?groupId=….
  const [params] = useSearchParams();
  const [groupIds, setGroupIds] = useState<string[]>(() => params.getAll('groupId'));
  const [deviceId, setDeviceId] = useState('');
  const [when, setWhen] = useState<'now' | 'later'>('now');
  const [scheduledAt, setScheduledAt] = useState('');

  const send = useMutation({
    mutationFn: () =>
      api<SendResult>('/messages/send', {
        method: 'POST',
        // One key per submission: a double click or a retried request sends nothing twice.
        headers: { 'idempotency-key': crypto.randomUUID() },
        body: {
          type,
          content,
          ...(type !== 'TEXT' ? { mediaUrl: mediaUrl.trim() } : {}),
          recipients: parseNumbers(numbers),
          ...(groupIds.length > 0 ? { groupIds } : {}),
          ...(deviceId ? { deviceId } : {}),
          ...(when === 'later' && scheduledAt ? { scheduledAt: new Date(scheduledAt).toISOString() } : {}),
        },
      }),
  });
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    send.mutate();
  };
  const fieldError = (field: string) => (send.error instanceof ApiError ? send.error.fieldMessage(field) : undefined);
  const recipientCount = parseNumbers(numbers).length;
  const selectedGroups = (groups.data?.data ?? []).filter((group) => groupIds.includes(group.id));
  const memberCount = selectedGroups.reduce((sum, group) => sum + group.contactsCount, 0);
  const linked = (devices.data?.data ?? []).filter((device) => device.status !== 'LOGGED_OUT' && device.status !== 'PENDING');
  const result = send.data;

  return (
    <section>
      <PageHeader title="Send" description="A text or media message to numbers and groups, now or at a time you choose. More than 10 recipients, or any group, runs as a bulk job." />
      {devices.data && linked.length === 0 ? (
        <Notice tone="warning">
          No linked device yet: <Link to="/devices">link a number</Link> first.
        </Notice>
      ) : null}
      <form className="card send-form" onSubmit={submit} noValidate>
        <ErrorBox error={send.error} title="Not sent." />
        <fieldset>
          <legend>Message type</legend>
          <div className="segmented">
            {TYPES.map((value) => (
              <label key={value}>
                <input type="radio" name="type" value={value} checked={type === value} onChange={() => setType(value)} /> {value.charAt(0) + value.slice(1).toLowerCase()}
              </label>
            ))}
          </div>
        </fieldset>
        {type !== 'TEXT' ? (
          <Field label="Media URL" hint="An http(s) address Waygate downloads when sending (image ≤ 5 MB, video ≤ 16 MB, document ≤ 100 MB)." error={fieldError('mediaUrl')}>
            {(props) => <input {...props} type="url" required value={mediaUrl} onChange={(e) => setMediaUrl(e.target.value)} placeholder="https://…" />}
          </Field>
        ) : null}
        <Field label={type === 'TEXT' ? 'Message' : 'Caption (optional)'} hint={`${content.length} / 4096 characters`} error={fieldError('content')}>
          {(props) => <textarea {...props} rows={4} maxLength={4096} value={content} onChange={(e) => setContent(e.target.value)} />}
        </Field>
        <Field
          label="Phone numbers"
          hint={`One per line, or separated by commas; with the country code (+62 812…). ${recipientCount} number${recipientCount === 1 ? '' : 's'}.`}
          error={fieldError('recipients')}
        >
          {(props) => <textarea {...props} rows={4} value={numbers} onChange={(e) => setNumbers(e.target.value)} placeholder={'+62 812 3456 7890\n+62 813 …'} />}
        </Field>
        <fieldset>
          <legend>Groups</legend>
          {groups.data && groups.data.data.length === 0 ? (
            <p className="hint">
              No groups yet. <Link to="/groups">Create one</Link> to send to many contacts at once.
            </p>
          ) : (
            <div className="checkbox-grid">
              {groups.data?.data.map((group) => (
                <label key={group.id} className="checkbox">
                  <input
                    type="checkbox"
                    checked={groupIds.includes(group.id)}
                    onChange={(e) => setGroupIds(e.target.checked ? [...groupIds, group.id] : groupIds.filter((id) => id !== group.id))}
                  />{' '}
                  {group.name} <span className="muted">({group.contactsCount})</span>
                </label>
              ))}
            </div>
          )}
        </fieldset>
        <div className="grid-2">
          <Field label="Send from" hint="Default: your oldest connected device." error={fieldError('deviceId')}>
            {(props) => (
              <select {...props} value={deviceId} onChange={(e) => setDeviceId(e.target.value)}>
                <option value="">Default device</option>
                {linked.map((device) => (
                  <option key={device.id} value={device.id}>
                    {device.name} ({formatPhone(device.phoneNumber)})
                  </option>
                ))}
              </select>
            )}
          </Field>
          <fieldset>
            <legend>When</legend>
            <div className="segmented">
              <label>
                <input type="radio" name="when" checked={when === 'now'} onChange={() => setWhen('now')} /> Now
              </label>
              <label>
                <input type="radio" name="when" checked={when === 'later'} onChange={() => setWhen('later')} /> Later
              </label>
            </div>
            {when === 'later' ? (
              <Field label="Send at (your time zone)" error={fieldError('scheduledAt')}>
                {(props) => <input {...props} type="datetime-local" required value={scheduledAt} onChange={(e) => setScheduledAt(e.target.value)} />}
              </Field>
            ) : null}
          </fieldset>
        </div>
        <div className="row between">
          <span className="muted small">
            {recipientCount} number{recipientCount === 1 ? '' : 's'}
            {selectedGroups.length > 0 ? ` + ${memberCount} group member${memberCount === 1 ? '' : 's'} (duplicates are sent once)` : ''}
          </span>
          <button type="submit" className="button primary" disabled={send.isPending || (recipientCount === 0 && groupIds.length === 0) || (when === 'later' && !scheduledAt)}>
            {send.isPending ? 'Sending…' : when === 'later' ? 'Schedule' : 'Send'}
          </button>
        </div>
      </form>
      {result ? <SendOutcome result={result} /> : null}
    </section>
  );
}

/** A direct send's messages not yet handed to the network or acknowledged by it. */
const WAITING: readonly string[] = ['SCHEDULED', 'QUEUED', 'SENDING'];

function SendOutcome({ result }: { result: SendResult }) {
  if (result.jobId) {
    return (
      <div className="card" role="status" aria-labelledby="outcome-title">
        <h2 id="outcome-title">Bulk job started</h2>
        <p>
          {result.totalContacts?.toLocaleString()} recipients, job <code>{result.jobId}</code>. <Link to="/bulk-jobs">All bulk jobs</Link>
        </p>
        <WatchedJob jobId={result.jobId} />
      </div>
    );
  }
  return (
    <div className="card" role="status" aria-labelledby="outcome-title">
      <h2 id="outcome-title">{result.messages?.some((message) => WAITING.includes(message.status)) ? 'Accepted' : 'Sent'}</h2>
      <ul className="plain">
        {result.messages?.map((message) => (
          <li key={message.id}>
            {formatPhone(message.to)} <StatusBadge status={message.status} /> {message.error ? <span className="small error-text">{message.error.message}</span> : null}
          </li>
        ))}
      </ul>
      <Link to="/messages">See all messages</Link>
    </div>
  );
}
