// Small shared pieces: the page frame, errors, a confirmation step for destructive actions (in the page,
// not window.confirm), scrollable tables, badges and formatting.
import { type ReactNode, useState } from 'react';
import { ApiFailure } from '../api';

export function Page({ title, actions, children }: { title: string; actions?: ReactNode; children: ReactNode }) {
  return (
    <section className="page">
      <header className="page-head">
        <h1>{title}</h1>
        {actions ? <div className="page-actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

export function ErrorBox({ error }: { error: Error | undefined }) {
  if (!error) return null;
  return (
    <div className="error" role="alert">
      {error.message}
      {error instanceof ApiFailure ? <span className="code"> {error.code}</span> : null}
    </div>
  );
}

export function Loading({ show }: { show: boolean }) {
  return show ? <p className="muted">Loading…</p> : null;
}

/**
 * A button that asks first: the first click shows "Confirm <label>" and "Keep" in its place, the second
 * runs the action.
 */
export function ConfirmButton({
  label,
  confirmText,
  onConfirm,
  disabled,
  danger = true,
}: {
  label: string;
  confirmText?: string;
  onConfirm: () => unknown;
  disabled?: boolean;
  danger?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" className={danger ? 'danger' : undefined} disabled={disabled} onClick={() => setAsking(true)}>
        {label}
      </button>
    );
  }
  return (
    <fieldset className="confirm" aria-label={`Confirm ${label}`}>
      {confirmText ? <span className="confirm-text">{confirmText}</span> : null}
      <button
        type="button"
        className="danger solid"
        disabled={disabled}
        onClick={async () => {
          setAsking(false);
          await onConfirm();
        }}
      >
        Confirm {label.charAt(0).toLowerCase() + label.slice(1)}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Keep
      </button>
    </fieldset>
  );
}

export function Table({ label, head, children, empty }: { label: string; head: ReactNode[]; children: ReactNode; empty?: string }) {
  const rows = Array.isArray(children) ? children.length : children ? 1 : 0;
  return (
    <div className="table-wrap">
      <table aria-label={label}>
        <thead>
          <tr>
            {head.map((h, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: fixed columns
              <th key={i} scope="col">
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows === 0 ? (
            <tr>
              <td colSpan={head.length} className="muted empty">
                {empty ?? 'None.'}
              </td>
            </tr>
          ) : (
            children
          )}
        </tbody>
      </table>
    </div>
  );
}

export function Badge({ tone, children }: { tone?: 'ok' | 'warn' | 'bad' | 'info'; children: ReactNode }) {
  return <span className={`badge ${tone ?? ''}`}>{children}</span>;
}

const STATUS_TONE: Record<string, 'ok' | 'warn' | 'bad' | 'info'> = {
  delivered: 'ok',
  sent: 'ok',
  verified: 'ok',
  active: 'ok',
  queued: 'info',
  sending: 'info',
  scheduled: 'info',
  pending: 'warn',
  deferred: 'warn',
  paused: 'warn',
  canceled: 'warn',
  bounced: 'bad',
  rejected: 'bad',
  complained: 'bad',
  failed: 'bad',
};
export const Status = ({ value }: { value: string }) => <Badge tone={STATUS_TONE[value]}>{value}</Badge>;

export function Stat({ label, value, hint }: { label: string; value: ReactNode; hint?: ReactNode }) {
  return (
    <div className="stat">
      <div className="stat-label">{label}</div>
      <div className="stat-value">{value}</div>
      {hint ? <div className="stat-hint">{hint}</div> : null}
    </div>
  );
}

const nf = new Intl.NumberFormat('en');
export const num = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : nf.format(n));
export const pct = (r: number | null | undefined, digits = 2): string => (r === null || r === undefined ? '—' : `${(r * 100).toFixed(digits)} %`);
const pad = (n: number) => String(n).padStart(2, '0');
/** The one date format of the console (tables, charts, legends): `2026-11-29 04:43:38`, 24-hour, local time,
 * the same in every browser locale. `seconds: false` drops the seconds (chart buckets). */
export function fmtDate(d: Date, seconds = true): string {
  const day = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
  const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return `${day} ${hm}${seconds ? `:${pad(d.getSeconds())}` : ''}`;
}
export function time(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : fmtDate(d);
}
/** Long text (an MX answer) cut to `max` characters with an ellipsis; the whole text is in the title. `cut` says the
 * text was already cut where it was recorded, so it gets an ellipsis too. */
export function Clip({ text, max = 120, cut = false }: { text: string | null | undefined; max?: number; cut?: boolean }) {
  if (!text) return <span className="muted">—</span>;
  const whole = cut ? `${text}…` : text;
  if (text.length <= max) return <span title={cut ? whole : undefined}>{whole}</span>;
  const space = text.lastIndexOf(' ', max);
  return <span title={whole}>{`${text.slice(0, space > max * 0.6 ? space : max).replace(/[\s.,;:]+$/, '')}…`}</span>;
}
export const Time = ({ iso }: { iso: string | null | undefined }) => (iso ? <time dateTime={iso}>{time(iso)}</time> : <span className="muted">—</span>);
