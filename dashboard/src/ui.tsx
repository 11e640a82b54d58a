/** Small shared pieces: page heading, errors, status badges, pager, confirmation, copy, dates. */
import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { ApiError, errorMessage } from './api';

/** The page's one h1; it takes focus when the page opens, so screen readers announce the new page. */
export function PageHeader({ title, description, actions }: { title: string; description?: ReactNode; actions?: ReactNode }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Waygate`;
    ref.current?.focus();
  }, [title]);
  return (
    <header className="page-header">
      <div>
        <h1 ref={ref} tabIndex={-1}>
          {title}
        </h1>
        {description ? <p className="muted">{description}</p> : null}
      </div>
      {actions ? <div className="page-actions">{actions}</div> : null}
    </header>
  );
}

/** An error from the API, with its code and request id for support. */
export function ErrorBox({ error, title }: { error: unknown; title?: string }) {
  if (!error) return null;
  const api = error instanceof ApiError ? error : undefined;
  const details = api && Array.isArray(api.details) && api.details.length > 1 ? api.details : [];
  return (
    <div className="alert alert-error" role="alert">
      <strong>{title ?? 'That did not work.'}</strong> {errorMessage(error)}
      {details.length > 0 ? (
        <ul>
          {details.map((detail) => (
            <li key={`${detail.field}:${detail.message}`}>
              <code>{detail.field}</code> {detail.message}
            </li>
          ))}
        </ul>
      ) : null}
      {api?.requestId ? <div className="small muted">Request {api.requestId}</div> : null}
    </div>
  );
}

export function Notice({ children, tone = 'info' }: { children: ReactNode; tone?: 'info' | 'success' | 'warning' }) {
  return (
    <div className={`alert alert-${tone}`} role="status">
      {children}
    </div>
  );
}

const STATUS_TONES: Record<string, string> = {
  CONNECTED: 'good',
  SENT: 'good',
  DELIVERED: 'good',
  READ: 'good',
  COMPLETED: 'good',
  SUCCEEDED: 'good',
  ACTIVE: 'good',
  RECEIVED: 'good',
  PENDING: 'wait',
  SCHEDULED: 'wait',
  QUEUED: 'wait',
  SENDING: 'wait',
  PROCESSING: 'wait',
  DISCONNECTED: 'warn',
  FAILED: 'bad',
  LOGGED_OUT: 'bad',
  REVOKED: 'bad',
  EXPIRED: 'bad',
  CANCELLED: 'neutral',
  INACTIVE: 'neutral',
  HEALTHY: 'good',
  FAILING: 'bad',
  DISABLED: 'neutral',
  NO_ATTEMPTS: 'wait',
};

export function StatusBadge({ status, testId }: { status: string; testId?: string }) {
  return (
    <span className={`badge badge-${STATUS_TONES[status] ?? 'neutral'}`} data-testid={testId}>
      {status.replace('_', ' ')}
    </span>
  );
}

/**
 * Where the user is in a listing of the server's unbounded tables: Next takes the answer's
 * nextCursor, Previous walks back along the cursors that led here. A filter without an index of
 * its own reads a bounded number of rows a page, so its pages may be short or even empty and still
 * have a next one, which only the cursor reaches. The walk starts again when `filters` changes.
 */
export function useCursorPages(filters: string): { page: number; cursor: string | undefined; onPage: (page: number, nextCursor: string | null | undefined) => void } {
  const [walk, setWalk] = useState<{ filters: string; cursors: (string | undefined)[] }>({ filters, cursors: [undefined] });
  const cursors = walk.filters === filters ? walk.cursors : [undefined];
  return {
    page: cursors.length,
    cursor: cursors.at(-1),
    onPage(page, nextCursor) {
      if (page > cursors.length && nextCursor) setWalk({ filters, cursors: [...cursors, nextCursor] });
      else if (page < cursors.length) setWalk({ filters, cursors: cursors.slice(0, Math.max(1, page)) });
    },
  };
}

/**
 * Previous/next over a listing. A total that is not exact (meta.totalExact false: counting stopped
 * at the server's cap) is shown as "N+", and Next follows the server's nextCursor instead of the count.
 */
export function Pager({
  page,
  limit,
  total,
  onPage,
  label,
  totalExact = true,
  hasNext,
  shown,
}: {
  page: number;
  limit: number;
  total: number;
  onPage: (page: number) => void;
  label: string;
  totalExact?: boolean;
  hasNext?: boolean;
  /** Rows on this page, when a page may be short before the end (a filter read a bounded number of rows). */
  shown?: number;
}) {
  const pages = Math.max(1, Math.ceil(total / limit));
  if (total === 0 && !hasNext && page <= 1) return null;
  const first = (page - 1) * limit + 1;
  const last = totalExact ? Math.min(total, page * limit) : page * limit;
  const next = hasNext ?? page < pages;
  return (
    <nav className="pager" aria-label={`${label} pages`}>
      <span className="muted">
        {shown !== undefined && !totalExact ? (
          // Pages of a bounded filter may be short, so positions are not known: say what is.
          `${shown.toLocaleString()} on this page, at least ${total.toLocaleString()} in all`
        ) : (
          <>
            {first}–{last} of {total.toLocaleString()}
            {totalExact ? '' : '+'}
          </>
        )}
      </span>
      <button type="button" className="button secondary small" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        Previous
      </button>
      <span aria-current="page">{totalExact ? `Page ${page} of ${pages}` : `Page ${page}`}</span>
      <button type="button" className="button secondary small" disabled={!next} onClick={() => onPage(page + 1)}>
        Next
      </button>
    </nav>
  );
}

/** A button that asks first, in a modal dialog (focus stays inside; Escape cancels). */
export function ConfirmButton({
  label,
  title,
  message,
  confirmLabel,
  onConfirm,
  className = 'button danger small',
  disabled,
  accessibleName,
}: {
  label: string;
  /** The button's name for assistive technology when `label` alone repeats on every row (e.g. "Delete contact Ana"). */
  accessibleName?: string;
  title: string;
  message: ReactNode;
  confirmLabel: string;
  onConfirm: () => Promise<unknown> | void;
  className?: string;
  disabled?: boolean;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const titleId = useId();
  const confirm = async (): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      dialog.current?.close();
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" className={className} disabled={disabled} aria-label={accessibleName} onClick={() => dialog.current?.showModal()}>
        {label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId} className="dialog">
        <h2 id={titleId}>{title}</h2>
        <div>{message}</div>
        <ErrorBox error={error} />
        <div className="row end">
          <button type="button" className="button secondary" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
          <button type="button" className="button danger" disabled={busy} onClick={() => void confirm()}>
            {busy ? 'Working…' : confirmLabel}
          </button>
        </div>
      </dialog>
    </>
  );
}

/** Copies a value to the clipboard and says so (also to screen readers). */
export function CopyButton({ value, label = 'Copy' }: { value: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async (): Promise<void> => {
    try {
      await navigator.clipboard.writeText(value);
      setState('copied');
    } catch {
      setState('failed');
    }
    window.setTimeout(() => setState('idle'), 4000);
  };
  return (
    <>
      <button type="button" className="button secondary small" onClick={() => void copy()}>
        {state === 'copied' ? 'Copied' : label}
      </button>
      <span className="visually-hidden" role="status">
        {state === 'copied' ? 'Copied to the clipboard' : state === 'failed' ? 'Copying failed: select the text and copy it by hand' : ''}
      </span>
      {state === 'failed' ? <span className="small error-text">Select the text and copy it by hand.</span> : null}
    </>
  );
}

const dateFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
export function formatDate(value: string | null | undefined, empty = '—'): string {
  return value ? dateFormat.format(new Date(value)) : empty;
}

const timeFormat = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' });
/** Today's times as the time alone; other days with the date. */
export function formatShort(value: string): string {
  const date = new Date(value);
  return date.toDateString() === new Date().toDateString() ? timeFormat.format(date) : formatDate(value);
}

export function Time({ value, empty = '—', short = false }: { value: string | null | undefined; empty?: string; short?: boolean }) {
  return value ? (
    <time dateTime={value} title={formatDate(value)}>
      {short ? formatShort(value) : formatDate(value)}
    </time>
  ) : (
    <span className="muted">{empty}</span>
  );
}

/** A size in bytes as people read it (1024 to a KB). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export function formatPhone(digits: string | null | undefined): string {
  return digits ? `+${digits}` : '—';
}

/** A labelled form control with its hint and error wired up for assistive technology. */
export function Field({
  label,
  hint,
  error,
  children,
}: {
  label: string;
  hint?: ReactNode;
  error?: string | undefined;
  children: (props: { id: string; 'aria-describedby'?: string; 'aria-invalid'?: boolean }) => ReactNode;
}) {
  const id = useId();
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const describedBy = [hint ? hintId : '', error ? errorId : ''].filter(Boolean).join(' ');
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({ id, ...(describedBy ? { 'aria-describedby': describedBy } : {}), ...(error ? { 'aria-invalid': true } : {}) })}
      {hint ? (
        <div id={hintId} className="hint">
          {hint}
        </div>
      ) : null}
      {error ? (
        <div id={errorId} className="error-text">
          {error}
        </div>
      ) : null}
    </div>
  );
}

/**
 * A table of rows (the children: <tr>s whose cells carry data-label, which labels each cell when
 * a phone shows the rows as cards, styles.css .table-wrap): a caption, shown only with
 * `showCaption` (else for screen readers alone), a header cell for each of `columns`, and with
 * `actions` a last, unnamed column for each row's buttons.
 */
export function DataTable({ caption, columns, actions = false, showCaption = false, children }: { caption: string; columns: string[]; actions?: boolean; showCaption?: boolean; children: ReactNode }) {
  return (
    <div className="table-wrap">
      <table>
        <caption className={showCaption ? undefined : 'visually-hidden'}>{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) => (
              <th scope="col" key={column}>
                {column}
              </th>
            ))}
            {actions ? (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </div>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="empty">{children}</div>;
}

interface QueryLike<T> {
  isPending: boolean;
  error: unknown;
  data?: T | undefined;
}

/** A page of a list, as every listing route answers it. */
interface ListPage {
  data: readonly unknown[];
  meta?: { readonly [key: string]: unknown };
}

type QueryStatusProps = { what: string; errorTitle?: string } & (
  | { query: QueryLike<unknown>; empty?: undefined }
  | { query: QueryLike<ListPage>; empty: ReactNode }
);

/**
 * What a page shows of a query besides its content: that it loads, why it failed, and for a list
 * (`empty` given) that its page is empty. An empty page with a next cursor is not the end of the
 * list (a filter read as far as it may and found nothing there), so it says so instead of `empty`.
 */
export function QueryStatus({ query, what, errorTitle, empty }: QueryStatusProps) {
  const page = empty === undefined ? undefined : (query.data as ListPage | undefined);
  return (
    <>
      {query.isPending ? <Loading what={what} /> : null}
      <ErrorBox error={query.error} title={errorTitle} />
      {page && page.data.length === 0 ? <Empty>{typeof page.meta?.nextCursor === 'string' ? `None among these ${what}; Next looks at older ones.` : empty}</Empty> : null}
    </>
  );
}
