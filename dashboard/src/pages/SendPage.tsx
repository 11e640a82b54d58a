import { useMutation, useQuery } from '@tanstack/react-query';
import { useRef, useState, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { DIRECT_SEND_MAX, MAX_ADDRESS_LENGTH, MAX_CAPTION_LENGTH, MAX_CONTACTS, MAX_NAME_LENGTH, MAX_POLL_QUESTION, MAX_TEXT_LENGTH, POLL_OPTIONS } from '../../../src/messaging/message-limits';
import { api, ApiError } from '../api';
import { lineOfRecipient, lineProblems, numberProblem, readNumbers } from '../recipients';
import type { Device, Group, Message, One, Page, SendResult } from '../types';
import { ErrorBox, Field, formatPhone, Notice, PageHeader, StatusBadge } from '../ui';
import { UploadField, useUpload } from '../upload';
import { WatchedJob } from './JobProgress';

/** Every type POST /messages/send takes from this form (REACTION and replies are made from a message, not here). */
const TYPES = ['TEXT', 'IMAGE', 'VIDEO', 'DOCUMENT', 'AUDIO', 'STICKER', 'LOCATION', 'CONTACT', 'POLL'] as const;
type SendType = (typeof TYPES)[number];
const TYPE_LABELS: Record<SendType, string> = {
  TEXT: 'Text',
  IMAGE: 'Image',
  VIDEO: 'Video',
  DOCUMENT: 'Document',
  AUDIO: 'Audio',
  STICKER: 'Sticker',
  LOCATION: 'Location',
  CONTACT: 'Contact card',
  POLL: 'Poll',
};
const MEDIA_TYPES: ReadonlySet<SendType> = new Set(['IMAGE', 'VIDEO', 'DOCUMENT', 'AUDIO', 'STICKER']);
const CAPTIONED: ReadonlySet<SendType> = new Set(['IMAGE', 'VIDEO', 'DOCUMENT']);
const MEDIA_HINTS: Partial<Record<SendType, string>> = {
  IMAGE: 'JPEG or PNG, up to 5 MB.',
  VIDEO: 'MP4, up to 16 MB.',
  DOCUMENT: 'Any file, up to 100 MB.',
  AUDIO: 'MP3, OGG or M4A, up to 16 MB.',
  STICKER: 'WebP, up to 1 MB.',
};
/** More recipients than this ask for a confirmation first. */
const CONFIRM_ABOVE = 100;

interface Draft {
  content: string;
  mediaUrl: string;
  voice: boolean;
  latitude: string;
  longitude: string;
  placeName: string;
  address: string;
  contactCards: string;
  pollOptions: string;
  pollMultiple: boolean;
  numbers: string;
}
const EMPTY: Draft = {
  content: '',
  mediaUrl: '',
  voice: false,
  latitude: '',
  longitude: '',
  placeName: '',
  address: '',
  contactCards: '',
  pollOptions: '',
  pollMultiple: false,
  numbers: '',
};

/** Contact cards typed one per line as "Name, +62 812…". */
function readCards(text: string): Array<{ name: string; phoneNumber: string; line: number; problem: string | null }> {
  return text
    .split('\n')
    .map((row, index) => ({ row: row.trim(), line: index + 1 }))
    .filter(({ row }) => row)
    .map(({ row, line }) => {
      const comma = row.lastIndexOf(',');
      const name = comma === -1 ? '' : row.slice(0, comma).trim();
      const phoneNumber = comma === -1 ? row : row.slice(comma + 1).trim();
      const numberIssue = name ? numberProblem(phoneNumber) : null;
      const problem = !name ? 'needs a name, a comma, then the number' : numberIssue ? `${phoneNumber} ${numberIssue}` : null;
      return { name, phoneNumber, line, problem };
    });
}

const pollOptionsOf = (text: string): string[] => text.split('\n').map((option) => option.trim()).filter(Boolean);

/** The body of POST /messages/send for the draft's type. */
function kindFields(type: SendType, draft: Draft): Record<string, unknown> {
  const content = draft.content.trim();
  switch (type) {
    case 'TEXT':
      return { content };
    // The API's own types (TEXT, IMAGE, VIDEO, DOCUMENT) always have `content`: here the caption, '' for none.
    case 'IMAGE':
    case 'VIDEO':
    case 'DOCUMENT':
      return { mediaUrl: draft.mediaUrl.trim(), content };
    case 'AUDIO':
      return { mediaUrl: draft.mediaUrl.trim(), ...(draft.voice ? { voice: true } : {}) };
    case 'STICKER':
      return { mediaUrl: draft.mediaUrl.trim() };
    case 'LOCATION':
      return {
        location: {
          latitude: Number(draft.latitude),
          longitude: Number(draft.longitude),
          ...(draft.placeName.trim() ? { name: draft.placeName.trim() } : {}),
          ...(draft.address.trim() ? { address: draft.address.trim() } : {}),
        },
        ...(content ? { content } : {}),
      };
    case 'CONTACT':
      return { contacts: readCards(draft.contactCards).map(({ name, phoneNumber }) => ({ name, phoneNumber })) };
    case 'POLL':
      return { content, poll: { options: pollOptionsOf(draft.pollOptions), ...(draft.pollMultiple ? { multiple: true } : {}) } };
  }
}

/** What is missing or wrong before the draft can be sent (checked as it is typed); empty when ready. */
function draftProblems(type: SendType, draft: Draft): string[] {
  const problems: string[] = [];
  if (type === 'TEXT' && !draft.content.trim()) problems.push('Write the message.');
  if (MEDIA_TYPES.has(type) && !/^https?:\/\/\S+$/i.test(draft.mediaUrl.trim())) problems.push('Give the media’s address (https://…), or upload a file.');
  if (type === 'LOCATION') {
    const lat = Number(draft.latitude);
    const lng = Number(draft.longitude);
    if (draft.latitude.trim() === '' || !Number.isFinite(lat) || lat < -90 || lat > 90) problems.push('Latitude must be a number from −90 to 90.');
    if (draft.longitude.trim() === '' || !Number.isFinite(lng) || lng < -180 || lng > 180) problems.push('Longitude must be a number from −180 to 180.');
  }
  if (type === 'CONTACT') {
    const cards = readCards(draft.contactCards);
    if (cards.length === 0 || cards.length > MAX_CONTACTS) problems.push(`Give 1 to ${MAX_CONTACTS} contact cards, one per line.`);
    for (const card of cards) if (card.problem) problems.push(`Card on line ${card.line}: ${card.problem}.`);
  }
  if (type === 'POLL') {
    const options = pollOptionsOf(draft.pollOptions);
    if (!draft.content.trim()) problems.push('Write the poll’s question.');
    if (options.length < POLL_OPTIONS.min || options.length > POLL_OPTIONS.max) problems.push(`Give ${POLL_OPTIONS.min} to ${POLL_OPTIONS.max} options, one per line.`);
    if (new Set(options).size !== options.length) problems.push('Each option must be different.');
  }
  return problems;
}

/** A server field path in words: recipients[1] → "line 2: 12345", poll.options[0] → "poll option 1". */
function fieldInWords(field: string, numbers: ReturnType<typeof readNumbers>): string {
  const line = lineOfRecipient(field, numbers.unique, numbers.lines);
  if (line !== undefined) return `line ${line}: ${numbers.lines.find((l) => l.line === line)?.raw ?? ''}`;
  const indexed = /^(contacts|poll\.options|mentions)\[(\d+)\](?:\.(\w+))?$/.exec(field);
  if (indexed) {
    const what = indexed[1] === 'contacts' ? 'contact card' : indexed[1] === 'poll.options' ? 'poll option' : 'mention';
    return `${what} ${Number(indexed[2]) + 1}${indexed[3] === 'phoneNumber' ? ' (number)' : ''}`;
  }
  const names: Record<string, string> = {
    content: 'the message',
    mediaUrl: 'the media address',
    recipients: 'the numbers',
    groupIds: 'the groups',
    deviceId: 'the device',
    scheduledAt: 'the time',
    'location.latitude': 'the latitude',
    'location.longitude': 'the longitude',
  };
  return names[field] ?? field;
}

export function SendPage() {
  const devices = useQuery({ queryKey: ['devices', 'list'], queryFn: () => api<Page<Device>>('/devices', { query: { limit: 100 } }) });
  const groups = useQuery({ queryKey: ['groups', 'all'], queryFn: () => api<Page<Group>>('/groups', { query: { limit: 100 } }) });
  const [type, setType] = useState<SendType>('TEXT');
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const set = <K extends keyof Draft>(key: K, value: Draft[K]): void => setDraft((previous) => ({ ...previous, [key]: value }));
  // "Send to group" on the Groups page arrives with ?groupId=….
  const [params] = useSearchParams();
  const [groupIds, setGroupIds] = useState<string[]>(() => params.getAll('groupId'));
  const [deviceId, setDeviceId] = useState('');
  const [when, setWhen] = useState<'now' | 'later'>('now');
  const [scheduledAt, setScheduledAt] = useState('');
  const confirmDialog = useRef<HTMLDialogElement>(null);

  const numbers = readNumbers(draft.numbers);
  const contentLimit = type === 'TEXT' ? MAX_TEXT_LENGTH : type === 'POLL' ? MAX_POLL_QUESTION : MAX_CAPTION_LENGTH;
  const badLines = numbers.lines.filter((line) => line.problem);
  const upload = useUpload((uploaded) => set('mediaUrl', uploaded.mediaUrl));
  const send = useMutation({
    mutationFn: (body: Record<string, unknown>) =>
      api<SendResult>('/messages/send', {
        method: 'POST',
        // One key per submission: a double click or a retried request sends nothing twice.
        headers: { 'idempotency-key': crypto.randomUUID() },
        body,
      }),
    onSuccess: () => {
      // Cleared, so the same message cannot go out twice by a second click.
      setDraft(EMPTY);
      upload.reset();
      setGroupIds([]);
      setScheduledAt('');
    },
  });
  const selectedGroups = (groups.data?.data ?? []).filter((group) => groupIds.includes(group.id));
  const memberCount = selectedGroups.reduce((sum, group) => sum + group.contactsCount, 0);
  const linked = (devices.data?.data ?? []).filter((device) => device.status !== 'LOGGED_OUT' && device.status !== 'PENDING');
  const noDevice = devices.data !== undefined && linked.length === 0;
  const problems = draftProblems(type, draft);
  const recipients = numbers.unique.length + memberCount;
  const ready =
    !noDevice && !upload.isPending && problems.length === 0 && badLines.length === 0 && (numbers.unique.length > 0 || groupIds.length > 0) && (when === 'now' || scheduledAt !== '');

  const body = (): Record<string, unknown> => ({
    type,
    ...kindFields(type, draft),
    recipients: numbers.unique,
    ...(groupIds.length > 0 ? { groupIds } : {}),
    ...(deviceId ? { deviceId } : {}),
    ...(when === 'later' && scheduledAt ? { scheduledAt: new Date(scheduledAt).toISOString() } : {}),
  });
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    if (!ready || send.isPending) return;
    if (recipients > CONFIRM_ABOVE) confirmDialog.current?.showModal();
    else send.mutate(body());
  };
  const serverDetails = send.error instanceof ApiError && Array.isArray(send.error.details) ? send.error.details : [];

  return (
    <section>
      <PageHeader
        title="Send"
        description={`A message to numbers and groups, now or at a time you choose. More than ${DIRECT_SEND_MAX} recipients, or any group, runs as a bulk job.`}
      />
      {noDevice ? (
        <Notice tone="warning">
          No linked device, so nothing can be sent yet. <Link to="/devices">Link a number on the Devices page</Link>, then come back.
        </Notice>
      ) : null}
      <form className="card send-form" onSubmit={submit} noValidate aria-describedby={noDevice ? 'no-device' : undefined}>
        {send.error ? (
          <div className="alert alert-error" role="alert">
            <strong>Not sent.</strong> {serverDetails.length === 0 ? send.error.message : null}
            {serverDetails.length > 0 ? (
              <ul data-testid="send-errors">
                {serverDetails.map((detail) => (
                  <li key={`${detail.field}:${detail.message}`}>
                    {fieldInWords(detail.field, numbers)} {detail.message}
                  </li>
                ))}
              </ul>
            ) : null}
          </div>
        ) : null}
        <fieldset>
          <legend>Message type</legend>
          <div className="segmented">
            {TYPES.map((value) => (
              <label key={value}>
                <input type="radio" name="type" value={value} checked={type === value} onChange={() => setType(value)} /> {TYPE_LABELS[value]}
              </label>
            ))}
          </div>
        </fieldset>
        {MEDIA_TYPES.has(type) ? (
          <div className="grid-2 media-source">
            <Field label="Media URL" hint={`An http(s) address Waygate downloads when sending. ${MEDIA_HINTS[type] ?? ''}`}>
              {(props) => <input {...props} type="url" required value={draft.mediaUrl} onChange={(e) => set('mediaUrl', e.target.value)} placeholder="https://…" />}
            </Field>
            <UploadField upload={upload} mediaUrl={draft.mediaUrl} type={type} />
          </div>
        ) : null}
        {type === 'AUDIO' ? (
          <label className="checkbox">
            <input type="checkbox" checked={draft.voice} onChange={(e) => set('voice', e.target.checked)} /> Send as a voice note
          </label>
        ) : null}
        {type === 'LOCATION' ? (
          <div className="grid-2">
            <Field label="Latitude" hint="−90 to 90, e.g. -6.2088">
              {(props) => <input {...props} inputMode="decimal" value={draft.latitude} onChange={(e) => set('latitude', e.target.value)} />}
            </Field>
            <Field label="Longitude" hint="−180 to 180, e.g. 106.8456">
              {(props) => <input {...props} inputMode="decimal" value={draft.longitude} onChange={(e) => set('longitude', e.target.value)} />}
            </Field>
            <Field label="Place name (optional)">{(props) => <input {...props} maxLength={MAX_NAME_LENGTH} value={draft.placeName} onChange={(e) => set('placeName', e.target.value)} />}</Field>
            <Field label="Address (optional)">{(props) => <input {...props} maxLength={MAX_ADDRESS_LENGTH} value={draft.address} onChange={(e) => set('address', e.target.value)} />}</Field>
          </div>
        ) : null}
        {type === 'CONTACT' ? (
          <Field label="Contact cards" hint="One per line: the name, a comma, then the number (up to 10).">
            {(props) => (
              <textarea {...props} rows={3} value={draft.contactCards} onChange={(e) => set('contactCards', e.target.value)} placeholder={'Ana Putri, +62 812 3456 7890'} />
            )}
          </Field>
        ) : null}
        {type === 'TEXT' || CAPTIONED.has(type) || type === 'POLL' || type === 'LOCATION' ? (
          <Field
            label={type === 'TEXT' ? 'Message' : type === 'POLL' ? 'Question' : type === 'LOCATION' ? 'Comment (optional)' : 'Caption (optional)'}
            hint={`${draft.content.length} / ${contentLimit} characters`}
          >
            {(props) => (
              <textarea
                {...props}
                rows={type === 'TEXT' ? 4 : 2}
                maxLength={contentLimit}
                value={draft.content}
                onChange={(e) => set('content', e.target.value)}
              />
            )}
          </Field>
        ) : null}
        {type === 'POLL' ? (
          <>
            <Field label="Options" hint={`One per line, ${POLL_OPTIONS.min} to ${POLL_OPTIONS.max}, each different.`}>
              {(props) => <textarea {...props} rows={4} value={draft.pollOptions} onChange={(e) => set('pollOptions', e.target.value)} />}
            </Field>
            <label className="checkbox">
              <input type="checkbox" checked={draft.pollMultiple} onChange={(e) => set('pollMultiple', e.target.checked)} /> People may pick more than one
            </label>
          </>
        ) : null}
        <Field
          label="Phone numbers"
          hint={`One per line, or separated by commas; with the country code (+62 812…). ${numbers.unique.length} valid number${numbers.unique.length === 1 ? '' : 's'}.`}
          error={lineProblems(numbers.lines)}
        >
          {(props) => <textarea {...props} rows={4} value={draft.numbers} onChange={(e) => set('numbers', e.target.value)} placeholder={'+62 812 3456 7890\n+62 813 …'} />}
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
          <Field label="Send from" hint="Default: your oldest connected device.">
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
              <Field label="Send at (your time zone)">
                {(props) => <input {...props} type="datetime-local" required value={scheduledAt} onChange={(e) => setScheduledAt(e.target.value)} />}
              </Field>
            ) : null}
          </fieldset>
        </div>
        {problems.length > 0 && (draft !== EMPTY || type !== 'TEXT') ? (
          <ul className="plain small muted" aria-label="Still needed">
            {problems.map((problem) => (
              <li key={problem}>{problem}</li>
            ))}
          </ul>
        ) : null}
        <div className="row between wrap">
          <span className="muted small" data-testid="recipient-count">
            {numbers.unique.length} number{numbers.unique.length === 1 ? '' : 's'}
            {selectedGroups.length > 0 ? ` + ${memberCount} group member${memberCount === 1 ? '' : 's'} (duplicates are sent once)` : ''}
          </span>
          <span className="row">
            {noDevice ? (
              <Link id="no-device" to="/devices" className="small">
                Link a device to send
              </Link>
            ) : null}
            <button type="submit" className="button primary" disabled={!ready || send.isPending}>
              {send.isPending ? 'Sending…' : when === 'later' ? 'Schedule' : 'Send'}
            </button>
          </span>
        </div>
      </form>
      <dialog ref={confirmDialog} aria-labelledby="confirm-send-title" className="dialog">
        <h2 id="confirm-send-title">Send to {recipients.toLocaleString()} recipients?</h2>
        <p>
          This starts a bulk job of up to {recipients.toLocaleString()} messages{when === 'later' ? ' at the time you chose' : ''}. It counts against your plan, and messages
          already sent cannot be taken back.
        </p>
        <div className="row end">
          <button type="button" className="button secondary" onClick={() => confirmDialog.current?.close()}>
            Go back
          </button>
          <button
            type="button"
            className="button primary"
            onClick={() => {
              confirmDialog.current?.close();
              send.mutate(body());
            }}
          >
            Send to {recipients.toLocaleString()}
          </button>
        </div>
      </dialog>
      {send.data ? <SendOutcome result={send.data} /> : null}
    </section>
  );
}

/** Settled for good: nothing will change about the message any more (a SENT one may still be delivered and read). */
const FINAL = new Set(['READ', 'FAILED', 'CANCELLED']);
/** How long the page keeps watching messages that stay SENT or DELIVERED (a phone may be off). */
const WATCH_MS = 120_000;
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
        <WatchedJob jobId={result.jobId} watchAfterMs={WATCH_MS} />
      </div>
    );
  }
  return (
    <div className="card" aria-labelledby="outcome-title">
      <h2 id="outcome-title">{result.async || result.messages?.some((message) => WAITING.includes(message.status)) ? 'Accepted' : 'Sent'}</h2>
      <ul className="plain" aria-live="polite">
        {result.messages?.map((message) => <WatchedMessage key={message.id} first={message} />)}
      </ul>
      <Link to="/messages">See all messages</Link>
    </div>
  );
}

/** One message of a direct send, read again every second and a half until it is final (or for two minutes). */
function WatchedMessage({ first }: { first: Message }) {
  const [since] = useState(() => Date.now());
  const current = useQuery({
    queryKey: ['messages', 'one', first.id],
    queryFn: () => api<One<Message>>(`/messages/${first.id}`),
    initialData: { success: true as const, data: first },
    refetchInterval: (query) => (FINAL.has(query.state.data?.data.status ?? '') || Date.now() - since > WATCH_MS ? false : 1500),
  });
  const message = current.data.data;
  return (
    <li data-testid="sent-message">
      {formatPhone(message.to)} <StatusBadge status={message.status} testId="sent-status" />{' '}
      {message.error ? <span className="small error-text">{message.error.message}</span> : null}
      <ErrorBox error={current.error} />
    </li>
  );
}
