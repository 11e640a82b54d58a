import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { api, ApiError } from '../api';
import { useLive } from '../live';
import { useSession } from '../session';
import type { Device, DeviceQr, One, Page } from '../types';
import { ConfirmButton, ErrorBox, Field, formatPhone, Loading, PageHeader, QueryStatus, StatusBadge, Time } from '../ui';
import { DEVICE_NAME_MAX } from '../../../src/platform/text-limits';

const STATUS_HELP: Record<Device['status'], string> = {
  PENDING: 'Waiting for the phone to scan the QR code.',
  CONNECTED: 'Linked and sending.',
  DISCONNECTED: 'The connection dropped; it reconnects by itself.',
  LOGGED_OUT: 'Unlinked from the phone. Reconnect to show a new QR code.',
};

export function DevicesPage() {
  const client = useQueryClient();
  const live = useLive();
  const devices = useQuery({
    queryKey: ['devices', 'list'],
    queryFn: () => api<Page<Device>>('/devices', { query: { limit: 100 } }),
    // Live events keep the list current; this poll only covers a broken event stream.
    refetchInterval: live.connected ? false : 5000,
  });
  const [name, setName] = useState('');
  const add = useMutation({
    mutationFn: (deviceName: string) => api<One<Device>>('/devices', { method: 'POST', body: { name: deviceName } }),
    onSuccess: () => {
      setName('');
      void client.invalidateQueries({ queryKey: ['devices'] });
    },
  });
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    add.mutate(name.trim());
  };

  return (
    <section>
      <PageHeader
        title="Devices"
        description="A device is one of your phone numbers, linked by scanning a QR code with WhatsApp on the phone (Settings → Linked devices → Link a device)."
      />
      <form className="card inline-form" onSubmit={submit} aria-label="Add a device">
        <Field label="Device name" hint="For you, e.g. “Shop phone”." error={add.error instanceof ApiError ? add.error.fieldMessage('name') : undefined}>
          {(props) => <input {...props} required maxLength={DEVICE_NAME_MAX} value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <button type="submit" className="button primary" disabled={add.isPending || name.trim() === ''}>
          {add.isPending ? 'Adding…' : 'Add device'}
        </button>
      </form>
      <ErrorBox error={add.error} title="Could not add the device." />
      <p className="small muted live-state" role="status">
        {live.unreachable
          ? 'The server cannot be reached: the statuses below are the last ones known.'
          : live.connected
            ? 'Live: status changes appear here as they happen.'
            : 'Connecting to live updates…'}
      </p>
      <QueryStatus query={devices} what="devices" empty="No devices yet. Add one to link your first number." />
      <ul className="device-list">
        {devices.data?.data.map((device) => (
          <li key={device.id}>
            <DeviceCard device={device} stale={live.unreachable} />
          </li>
        ))}
      </ul>
    </section>
  );
}

/** A device; `stale` when the server cannot be reached, so its status is only the last one known. */
function DeviceCard({ device, stale }: { device: Device; stale: boolean }) {
  const client = useQueryClient();
  const refresh = () => client.invalidateQueries({ queryKey: ['devices'] });
  const reconnect = useMutation({ mutationFn: () => api(`/devices/${device.id}/reconnect`, { method: 'POST' }), onSuccess: refresh });
  return (
    <article className={`card device ${stale ? 'stale' : ''}`} aria-labelledby={`device-${device.id}`} data-device-id={device.id} data-stale={stale || undefined}>
      <div className="device-head">
        <div>
          <h2 id={`device-${device.id}`}>{device.name}</h2>
          <div className="muted small">
            {device.phoneNumber ? formatPhone(device.phoneNumber) : 'Not linked yet'} · added <Time value={device.createdAt} />
          </div>
        </div>
        <div>
          <StatusBadge status={device.status} testId="device-status" />
          {stale ? (
            <div className="small muted" data-testid="device-stale">
              last known
            </div>
          ) : null}
        </div>
      </div>
      <p className="small">{STATUS_HELP[device.status]}</p>
      {device.lastError ? <p className="small error-text">Last error: {device.lastError}</p> : null}
      {device.status === 'PENDING' ? <QrPanel device={device} /> : null}
      {device.status === 'CONNECTED' ? (
        <p className="small muted">
          Connected since <Time value={device.connectedAt} />
        </p>
      ) : null}
      <ErrorBox error={reconnect.error} />
      <div className="row card-actions">
        {device.status === 'DISCONNECTED' || device.status === 'LOGGED_OUT' ? (
          <button
            type="button"
            className="button secondary small"
            disabled={reconnect.isPending}
            onClick={() => reconnect.mutate()}
            aria-label={`${device.status === 'LOGGED_OUT' ? 'Link again' : 'Reconnect now'}: ${device.name}`}
          >
            {device.status === 'LOGGED_OUT' ? 'Link again' : 'Reconnect now'}
          </button>
        ) : null}
        <ConfirmButton
          label="Remove"
          accessibleName={`Remove device ${device.name}`}
          title={`Remove ${device.name}?`}
          message={<p>The number is unlinked. Its messages stay in the history; messages still waiting to go out from it fail and are refunded.</p>}
          confirmLabel="Remove device"
          onConfirm={async () => {
            await api(`/devices/${device.id}`, { method: 'DELETE' });
            await refresh();
          }}
        />
      </div>
    </article>
  );
}

/** The current QR code: fetched again a few seconds before it expires, and at once when the server shows a new one. */
function QrPanel({ device }: { device: Device }) {
  const session = useSession();
  const qr = useQuery({
    queryKey: ['devices', 'qr', device.id],
    queryFn: () => api<One<DeviceQr>>(`/devices/${device.id}/qr`),
    refetchInterval: (query) => {
      const expiresAt = query.state.data?.data.expiresAt;
      return expiresAt ? Math.max(1000, new Date(expiresAt).getTime() - Date.now() - 3000) : 2000;
    },
  });
  const secondsLeft = useSecondsUntil(qr.data?.data.expiresAt);
  return (
    <div className="qr">
      {qr.data ? (
        <>
          <img src={qr.data.data.image} width={220} height={220} alt={`QR code to link ${device.name}. Scan it with the phone.`} />
          <div className="qr-side">
            <ol className="small steps">
              <li>Open WhatsApp on the phone.</li>
              <li>Go to Settings → Linked devices → Link a device.</li>
              <li>Point the camera at this code.</li>
            </ol>
            <p className="small muted" aria-live="off">
              {secondsLeft > 0 ? `This code refreshes in ${secondsLeft} s.` : 'Refreshing the code…'}
            </p>
            {session.data?.network === 'sandbox' ? <SimulateScan code={qr.data.data.code} /> : <PairingCode deviceId={device.id} />}
          </div>
        </>
      ) : qr.error ? (
        <ErrorBox error={qr.error} title="No QR code yet." />
      ) : (
        <Loading what="the QR code" />
      )}
    </div>
  );
}

function useSecondsUntil(iso: string | undefined): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(timer);
  }, []);
  return iso ? Math.max(0, Math.round((new Date(iso).getTime() - now) / 1000)) : 0;
}

function randomSandboxNumber(): string {
  return `+62 811 ${String(Math.floor(1000 + Math.random() * 8999))} ${String(Math.floor(1000 + Math.random() * 8999))}`;
}

/** Sandbox only: plays the phone scanning the code, so the whole flow runs without a phone. */
function SimulateScan({ code }: { code: string }) {
  const [phoneNumber, setPhoneNumber] = useState(randomSandboxNumber);
  const scan = useMutation({ mutationFn: () => api('/sandbox/scan', { method: 'POST', body: { code, phoneNumber } }) });
  return (
    <form
      className="sandbox-box"
      onSubmit={(event) => {
        event.preventDefault();
        scan.mutate();
      }}
    >
      <p className="small">
        <strong>Sandbox:</strong> no phone needed. Play a phone scanning this code:
      </p>
      <Field label="Phone number of the simulated phone" error={scan.error instanceof ApiError ? scan.error.fieldMessage('phoneNumber') : undefined}>
        {(props) => <input {...props} inputMode="tel" value={phoneNumber} onChange={(e) => setPhoneNumber(e.target.value)} />}
      </Field>
      <button type="submit" className="button primary small" disabled={scan.isPending || scan.isSuccess}>
        {scan.isSuccess ? 'Scanned: connecting…' : 'Simulate phone scan'}
      </button>
      {scan.error && !(scan.error instanceof ApiError && scan.error.fieldMessage('phoneNumber')) ? <ErrorBox error={scan.error} /> : null}
    </form>
  );
}

/** On the real network: link by an 8-character code typed on the phone instead of scanning. */
function PairingCode({ deviceId }: { deviceId: string }) {
  const [phoneNumber, setPhoneNumber] = useState('');
  const request = useMutation({
    mutationFn: () => api<One<{ code: string; phoneNumber: string; expiresAt: string }>>(`/devices/${deviceId}/pairing-code`, { method: 'POST', body: { phoneNumber } }),
  });
  const secondsLeft = useSecondsUntil(request.data?.data.expiresAt);
  return (
    <details className="pairing">
      <summary>Link with phone number instead</summary>
      <form
        onSubmit={(event) => {
          event.preventDefault();
          request.mutate();
        }}
      >
        <Field label="The phone's number" hint="With the country code." error={request.error instanceof ApiError ? request.error.fieldMessage('phoneNumber') : undefined}>
          {(props) => <input {...props} inputMode="tel" required value={phoneNumber} onChange={(e) => setPhoneNumber(e.target.value)} />}
        </Field>
        <button type="submit" className="button secondary small" disabled={request.isPending || phoneNumber.trim() === ''}>
          {request.isPending ? 'Asking WhatsApp…' : 'Get a pairing code'}
        </button>
      </form>
      <ErrorBox error={request.error} />
      {request.data ? (
        <div role="status">
          <p className="pairing-code mono">{request.data.data.code}</p>
          <p className="small">
            On that phone: WhatsApp → Linked devices → Link a device → <em>Link with phone number instead</em>, and type this code
            {secondsLeft > 0 ? ` within ${secondsLeft} s` : ' (expired: get a new one)'}.
          </p>
        </div>
      ) : null}
    </details>
  );
}
