/**
 * WhatsApp groups in the Inbox: a form that creates one, and a group chat's panel with its
 * members. Where the device is an admin the panel renames the group, adds members (one number a
 * line, checked as typed by the Send page's rule), makes or unmakes admins, removes members and
 * shows the invite link (or replaces it); any member may leave. Each change is asked of WhatsApp
 * through the API (POST /chats, PATCH /chats/:chatId, …/participants, …/invite, …/leave); what
 * WhatsApp refused for a number is said beside the number.
 */
import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ApiError } from '../api';
import { lineProblems, readNumbers } from '../recipients';
import type { ChatDetail, Device, GroupInvite, One, ParticipantsChange } from '../types';
import { ConfirmButton, CopyButton, ErrorBox, Field, formatPhone } from '../ui';
import type { ParticipantAction } from '../../../src/conversations/chat-record';
import { deviceInGroup } from '../../../src/conversations/group-membership';
import { WHATSAPP_GROUP_NAME_MAX } from '../../../src/platform/text-limits';

export function NewGroupForm({ devices, onCreated, onCancel }: { devices: Device[]; onCreated: (chat: ChatDetail) => void; onCancel: () => void }) {
  const client = useQueryClient();
  const connected = devices.filter((device) => device.status === 'CONNECTED');
  const [name, setName] = useState('');
  const [members, setMembers] = useState('');
  const [deviceId, setDeviceId] = useState(connected[0]?.id ?? '');
  const numbers = readNumbers(members);
  const create = useMutation({
    mutationFn: () => api<One<ChatDetail>>('/chats', { method: 'POST', body: { name, participants: numbers.unique, ...(deviceId ? { deviceId } : {}) } }),
    onSuccess: async (created) => {
      await client.invalidateQueries({ queryKey: ['chats'] });
      onCreated(created.data);
    },
  });
  const fieldError = (field: string): string | undefined => (create.error instanceof ApiError ? create.error.fieldMessage(field) : undefined);
  const blocked = numbers.unique.length === 0 || numbers.lines.some((line) => line.problem) || !name.trim();
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    if (!blocked) create.mutate();
  };
  return (
    <form className="card group-form" onSubmit={submit} aria-label="New group">
      <h2 className="h3">New WhatsApp group</h2>
      <Field label="Group name" error={fieldError('name')}>
        {(props) => <input {...props} value={name} maxLength={WHATSAPP_GROUP_NAME_MAX} onChange={(e) => setName(e.target.value)} required />}
      </Field>
      <Field label="Members" hint="One number a line, with the country code. Your device's number is the group's admin." error={lineProblems(numbers.lines) ?? fieldError('participants')}>
        {(props) => <textarea {...props} rows={3} value={members} onChange={(e) => setMembers(e.target.value)} />}
      </Field>
      {connected.length > 1 ? (
        <Field label="From device">
          {(props) => (
            <select {...props} value={deviceId} onChange={(e) => setDeviceId(e.target.value)}>
              {connected.map((device) => (
                <option key={device.id} value={device.id}>
                  {device.name}
                </option>
              ))}
            </select>
          )}
        </Field>
      ) : null}
      <ErrorBox error={create.error && !fieldError('name') && !fieldError('participants') ? create.error : null} />
      <div className="row end">
        <button type="button" className="button secondary" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" className="button primary" disabled={blocked || create.isPending}>
          {create.isPending ? 'Creating…' : 'Create group'}
        </button>
      </div>
    </form>
  );
}

export function GroupPanel({ chat, ownNumber }: { chat: ChatDetail; ownNumber: string | null }) {
  const client = useQueryClient();
  const path = `/chats/${encodeURIComponent(chat.id)}`;
  const query = { deviceId: chat.deviceId };
  const participants = chat.participants ?? [];
  const { me, inGroup } = deviceInGroup(chat.participants, ownNumber);
  const admin = me ? me.admin : inGroup;
  const refresh = () => client.invalidateQueries({ queryKey: ['chats'] });

  const [refused, setRefused] = useState<{ phoneNumber: string; reason: string | null }[]>([]);
  const change = useMutation({
    mutationFn: (input: { action: ParticipantAction; phoneNumbers: string[] }) => api<One<ParticipantsChange>>(`${path}/participants`, { method: 'POST', query, body: input }),
    onSuccess: async (answer) => {
      setRefused(answer.data.results.filter((result) => !result.ok));
      await refresh();
    },
  });
  const [name, setName] = useState(chat.name ?? '');
  const rename = useMutation({
    mutationFn: () => api<One<ChatDetail>>(path, { method: 'PATCH', query, body: { name } }),
    onSuccess: refresh,
  });
  const [link, setLink] = useState<string | null>(null);
  const invite = useMutation({
    mutationFn: () => api<One<GroupInvite>>(`${path}/invite`, { query }),
    onSuccess: (answer) => setLink(answer.data.link),
  });
  const [adding, setAdding] = useState('');
  const toAdd = readNumbers(adding);

  if (!inGroup) {
    return (
      <section className="card group-panel" aria-label="Group">
        <p className="muted small">Your device is no longer in this group. Its messages stay here.</p>
      </section>
    );
  }
  return (
    <section className="card group-panel" aria-label="Group">
      {admin ? (
        <form
          className="row wrap"
          onSubmit={(event) => {
            event.preventDefault();
            if (name.trim()) rename.mutate();
          }}
        >
          <label className="visually-hidden" htmlFor="group-name">
            Group name
          </label>
          <input id="group-name" value={name} maxLength={WHATSAPP_GROUP_NAME_MAX} onChange={(e) => setName(e.target.value)} />
          <button type="submit" className="button secondary small" disabled={rename.isPending || !name.trim() || name.trim() === chat.name}>
            Rename
          </button>
        </form>
      ) : null}
      <h3 className="small muted">{participants.length} participants</h3>
      <ul className="plain group-stack" aria-label="Participants">
        {participants.map((p) => {
          const self = p.phoneNumber === ownNumber;
          const who = p.phoneNumber.endsWith('@lid') ? p.phoneNumber : formatPhone(p.phoneNumber);
          return (
            <li key={p.phoneNumber} className="row wrap participant" data-participant={p.phoneNumber}>
              <span className="clip">
                {who}
                {self ? ' (this device)' : ''}
              </span>
              {p.admin ? <span className="badge badge-good">admin</span> : null}
              {admin && !self ? (
                <span className="row participant-actions">
                  <button
                    type="button"
                    className="button secondary small"
                    disabled={change.isPending}
                    aria-label={`${p.admin ? 'Remove admin' : 'Make admin'} ${who}`}
                    onClick={() => change.mutate({ action: p.admin ? 'demote' : 'promote', phoneNumbers: [p.phoneNumber] })}
                  >
                    {p.admin ? 'Remove admin' : 'Make admin'}
                  </button>
                  <button
                    type="button"
                    className="button danger small"
                    disabled={change.isPending}
                    aria-label={`Remove ${who}`}
                    onClick={() => change.mutate({ action: 'remove', phoneNumbers: [p.phoneNumber] })}
                  >
                    Remove
                  </button>
                </span>
              ) : null}
            </li>
          );
        })}
      </ul>
      {refused.length > 0 ? (
        <div className="alert alert-error small" role="status">
          {refused.map((r) => (
            <div key={r.phoneNumber}>
              {formatPhone(r.phoneNumber)} {r.reason}
            </div>
          ))}
        </div>
      ) : null}
      {admin ? (
        <form
          className="group-stack"
          onSubmit={(event) => {
            event.preventDefault();
            if (toAdd.unique.length > 0 && !toAdd.lines.some((line) => line.problem)) {
              change.mutate({ action: 'add', phoneNumbers: toAdd.unique }, { onSuccess: () => setAdding('') });
            }
          }}
        >
          <Field label="Add members" hint="One number a line, with the country code." error={lineProblems(toAdd.lines)}>
            {(props) => <textarea {...props} rows={2} value={adding} onChange={(e) => setAdding(e.target.value)} />}
          </Field>
          <div className="row">
            <button type="submit" className="button secondary small" disabled={change.isPending || toAdd.unique.length === 0 || toAdd.lines.some((line) => line.problem)}>
              Add
            </button>
          </div>
        </form>
      ) : null}
      <ErrorBox error={change.error ?? rename.error ?? invite.error} />
      <div className="row wrap">
        {admin ? (
          link ? (
            <>
              <code className="clip" data-testid="invite-link">
                {link}
              </code>
              <CopyButton value={link} label="Copy link" />
              <ConfirmButton
                label="New link"
                className="button secondary small"
                title="Replace the invite link?"
                message="A new invite link is made; the current one stops working for everyone it was shared with."
                confirmLabel="Replace link"
                onConfirm={async () => setLink((await api<One<GroupInvite>>(`${path}/invite/revoke`, { method: 'POST', query })).data.link)}
              />
            </>
          ) : (
            <button type="button" className="button secondary small" disabled={invite.isPending} onClick={() => invite.mutate()}>
              Invite link
            </button>
          )
        ) : null}
        <ConfirmButton
          label="Leave group"
          title="Leave this group?"
          message="Your device's number leaves the WhatsApp group. The conversation stays here, but nothing more can be sent into it."
          confirmLabel="Leave"
          onConfirm={async () => {
            await api(`${path}/leave`, { method: 'POST', query });
            await refresh();
          }}
        />
      </div>
    </section>
  );
}
