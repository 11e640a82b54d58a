import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { Link } from 'react-router';
import { api } from '../api';
import { DailyChart, type ChartSeries } from '../charts';
import { useLive } from '../live';
import type { Overview } from '../types';
import { DataTable, Empty, formatPhone, PageHeader, QueryStatus, StatusBadge, Time } from '../ui';

const PERIODS = [7, 30, 90] as const;
const OUTCOMES = [
  { key: 'sent', label: 'Sent', color: '--chart-sent' },
  { key: 'delivered', label: 'Delivered', color: '--chart-delivered' },
  { key: 'read', label: 'Read', color: '--chart-read' },
  { key: 'failed', label: 'Failed', color: '--chart-failed' },
  { key: 'incoming', label: 'Incoming', color: '--chart-incoming' },
] as const;

const percent = (rate: number | null): string => (rate === null ? '—' : `${(rate * 100).toFixed(rate >= 0.995 || rate === 0 ? 0 : 1)}%`);

/** The dashboard's home: what was sent and received, how it went, and what needs attention. */
export function OverviewPage() {
  const [days, setDays] = useState<(typeof PERIODS)[number]>(30);
  const overview = useQuery({
    queryKey: ['overview', days],
    queryFn: () => api<{ data: Overview }>('/account/overview', { query: { days } }),
    refetchInterval: 30_000,
  });
  const data = overview.data?.data;
  return (
    <section>
      <PageHeader
        title="Overview"
        description="Messages per day by outcome, counted on the UTC day each outcome happened."
        actions={
          <fieldset className="segmented period">
            <legend className="visually-hidden">Period</legend>
            {PERIODS.map((value) => (
              <label key={value}>
                <input type="radio" name="period" value={value} checked={days === value} onChange={() => setDays(value)} /> {value} days
              </label>
            ))}
          </fieldset>
        }
      />
      <QueryStatus query={overview} what="the overview" errorTitle="Could not load the overview." />
      {data ? <OverviewBody data={data} /> : null}
    </section>
  );
}

function OverviewBody({ data }: { data: Overview }) {
  const { totals, rates } = data;
  const chartDays = useMemo(() => data.daily.map((day) => day.day), [data]);
  const series = useMemo<ChartSeries[]>(() => OUTCOMES.map((o) => ({ label: o.label, color: o.color, values: data.daily.map((day) => day[o.key]) })), [data]);
  const summary = `Messages per day from ${data.from} to ${data.to}: ${OUTCOMES.map((o) => `${totals[o.key].toLocaleString()} ${o.label.toLowerCase()}`).join(', ')}.`;
  return (
    <>
      <div className="stats overview-stats">
        <Figure testId="sent" label="Sent" value={totals.sent} />
        <Figure testId="delivered" label="Delivered" value={totals.delivered} note={`${percent(rates.delivery)} of sent`} noteTestId="delivery-rate" />
        <Figure testId="read" label="Read" value={totals.read} note={`${percent(rates.read)} of delivered`} noteTestId="read-rate" />
        <Figure testId="failed" label="Failed" value={totals.failed} note={`${percent(rates.failure)} of finished`} tone={totals.failed > 0 ? 'bad' : undefined} />
        <Figure testId="incoming" label="Incoming" value={totals.incoming} />
      </div>

      <div className="card">
        <h2>Messages per day</h2>
        <DailyChart days={chartDays} series={series} label={summary} />
        <details className="chart-table">
          <summary>Show the numbers</summary>
          <DataTable caption="Messages per day" columns={['Day (UTC)', ...OUTCOMES.map((o) => o.label)]}>
            {[...data.daily].reverse().map((day) => (
              <tr key={day.day}>
                <th scope="row" data-label="Day">
                  {day.day}
                </th>
                {OUTCOMES.map((o) => (
                  <td key={o.key} data-label={o.label}>
                    {day[o.key].toLocaleString()}
                  </td>
                ))}
              </tr>
            ))}
          </DataTable>
        </details>
      </div>

      <div className="split overview-split">
        <div className="card">
          <h2>Failures by reason</h2>
          {data.failuresByCode.length === 0 ? (
            <p className="muted">No failed messages in these {data.days} days.</p>
          ) : (
            <ul className="plain bars" aria-label="Failures by error code">
              {data.failuresByCode.map((failure) => (
                <li key={failure.code} data-testid="failure-code">
                  <div className="row between">
                    <code>{failure.code}</code>
                    <strong>{failure.count.toLocaleString()}</strong>
                  </div>
                  <div className="bar" aria-hidden="true">
                    <span style={{ width: `${Math.max(2, (failure.count / Math.max(1, totals.failed)) * 100)}%` }} />
                  </div>
                </li>
              ))}
            </ul>
          )}
          {totals.failed > 0 ? <Link to="/messages?status=FAILED">See the failed messages</Link> : null}
        </div>
        <WebhookHealth webhooks={data.webhooks} />
      </div>

      <DeviceHealth devices={data.devices} />
    </>
  );
}

function Figure({ label, value, note, testId, noteTestId, tone }: { label: string; value: number; note?: string; testId: string; noteTestId?: string; tone?: 'bad' }) {
  return (
    <div className={`card stat ${tone === 'bad' ? 'stat-bad' : ''}`}>
      <div className="muted small">{label}</div>
      <div className="stat-value" data-testid={`overview-${testId}`}>
        {value.toLocaleString()}
      </div>
      {note ? (
        <div className="small muted" data-testid={noteTestId ? `overview-${noteTestId}` : undefined}>
          {note}
        </div>
      ) : null}
    </div>
  );
}

function DeviceHealth({ devices }: { devices: Overview['devices'] }) {
  const { connected } = useLive();
  return (
    <div className="card">
      <div className="row between wrap">
        <h2>Devices</h2>
        <Link to="/devices">Manage devices</Link>
      </div>
      {devices.length === 0 ? (
        <Empty>
          No device yet. <Link to="/devices">Link a number</Link> to start sending.
        </Empty>
      ) : (
        <ul className="plain health-list">
          {devices.map((device) => (
            <li key={device.id} className="health-item" data-testid="overview-device">
              <div className="row between wrap">
                <div>
                  <strong>{device.name}</strong> <span className="muted">{formatPhone(device.phoneNumber)}</span>
                </div>
                <StatusBadge status={device.status} />
              </div>
              <div className="small muted">
                {device.totals.sent.toLocaleString()} sent · {device.totals.failed.toLocaleString()} failed · {device.totals.incoming.toLocaleString()} incoming
                {!connected ? ' · status may be out of date' : ''}
              </div>
              {device.lastError ? <div className="small error-text">{device.lastError}</div> : null}
              {device.warmup ? (
                <div className="small warmup">
                  {device.warmup.day !== null && device.warmup.dailyCap !== null ? (
                    <>
                      Warming up: day {device.warmup.day} of {device.warmup.days}, {device.warmup.sentToday.toLocaleString()} of {device.warmup.dailyCap.toLocaleString()} bulk
                      messages today; no cap after <Time value={device.warmup.endsAt} />.
                    </>
                  ) : null}
                  {device.warmup.bulkPausedUntil ? (
                    <>
                      {' '}
                      Bulk sending paused until <Time value={device.warmup.bulkPausedUntil} />.
                    </>
                  ) : null}
                </div>
              ) : null}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function WebhookHealth({ webhooks }: { webhooks: Overview['webhooks'] }) {
  return (
    <div className="card">
      <div className="row between wrap">
        <h2>Webhooks</h2>
        <Link to="/webhooks">Manage webhooks</Link>
      </div>
      {webhooks.length === 0 ? (
        <p className="muted">No endpoints. Add one to hear about messages as they happen.</p>
      ) : (
        <ul className="plain health-list">
          {webhooks.map((webhook) => (
            <li key={webhook.id} className="health-item" data-testid="overview-webhook">
              <div className="row between wrap">
                <span className="mono break">{webhook.url}</span>
                <StatusBadge status={webhook.health.state} />
              </div>
              <div className="small muted">
                {webhook.health.consecutiveFailures > 0 ? `${webhook.health.consecutiveFailures} failed attempts in a row · ` : ''}
                last success <Time value={webhook.health.lastSuccessAt} empty="never" />
              </div>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
