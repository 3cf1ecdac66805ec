// Emails: search every project's mail (id, recipient, sender, subject, status, tag, time range), newest
// first a page at a time; one email's recipients and the timeline of its events with the remote answers.
// The search lives in the address (?to=…), so a reload or a shared link shows the same page.
import type { FormEvent } from 'react';
import { api, ok } from '../api';
import { ErrorBox, Loading, num, Page, Status, Table, Time } from '../components/ui';
import { usePoll } from '../hooks';
import { Link, navigate, useLocation } from '../router';

const STATUSES = ['queued', 'sending', 'sent', 'delivered', 'bounced', 'rejected', 'complained', 'failed', 'scheduled', 'canceled'] as const;
type EmailStatus = (typeof STATUSES)[number];
const TEXT = [
  { key: 'to', label: 'Recipient', type: 'email' },
  { key: 'from', label: 'Sender', type: 'text' },
  { key: 'subject', label: 'Subject', type: 'text' },
  { key: 'id', label: 'Email id', type: 'text' },
  { key: 'project', label: 'Project', type: 'text' },
  { key: 'tag', label: 'Tag (name:value)', type: 'text' },
] as const;

/** datetime-local values are local time; the API takes ISO instants. */
const toIso = (local: string) => (local ? new Date(local).toISOString() : '');
const toLocal = (iso: string | null) => {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};

function Search() {
  const { query } = useLocation();
  const qs = query.toString();
  const { data, error, loading } = usePoll(
    () => {
      const q: Record<string, string> = {};
      for (const [k, v] of new URLSearchParams(qs)) if (v) q[k] = v;
      return ok(api.GET('/admin/v1/emails', { params: { query: { ...q, status: q.status as EmailStatus | undefined, limit: '25' } } }));
    },
    [qs],
    query.get('after') ? undefined : 5000,
  );

  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const next = new URLSearchParams();
    for (const [k, v] of form) {
      if (typeof v !== 'string' || !v.trim()) continue;
      next.set(k, k === 'since' || k === 'until' ? toIso(v) : v.trim());
    }
    const s = next.toString();
    navigate(`/emails${s ? `?${s}` : ''}`);
  };
  const older = (cursor: string) => {
    const next = new URLSearchParams(qs);
    next.set('after', cursor);
    navigate(`/emails?${next}`);
  };
  const first = () => {
    const next = new URLSearchParams(qs);
    next.delete('after');
    const s = next.toString();
    navigate(`/emails${s ? `?${s}` : ''}`);
  };

  return (
    <Page title="Emails">
      <form className="card search" onSubmit={submit} aria-label="Search emails" key={qs}>
        <div className="fields">
          {TEXT.map((f) => (
            <label key={f.key}>
              <span>{f.label}</span>
              <input name={f.key} type={f.type === 'email' ? 'text' : f.type} defaultValue={query.get(f.key) ?? ''} spellCheck={false} />
            </label>
          ))}
          <label>
            <span>Status</span>
            <select name="status" defaultValue={query.get('status') ?? ''}>
              <option value="">any</option>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <label>
            <span>From date</span>
            <input name="since" type="datetime-local" defaultValue={toLocal(query.get('since'))} />
          </label>
          <label>
            <span>To date</span>
            <input name="until" type="datetime-local" defaultValue={toLocal(query.get('until'))} />
          </label>
        </div>
        <div className="row">
          <button type="submit" className="primary">
            Search
          </button>
          <button type="button" onClick={() => navigate('/emails')}>
            Clear
          </button>
        </div>
      </form>
      <ErrorBox error={error} />
      <Loading show={loading && !data} />
      {data ? (
        <>
          <Table label="Emails found" head={['Created', 'Project', 'From', 'To', 'Subject', 'Status']} empty="No emails match.">
            {data.data.map((e) => (
              <tr key={e.id}>
                <td>
                  <Link to={`/emails/${encodeURIComponent(e.id)}`}>
                    <Time iso={e.created_at} />
                  </Link>
                </td>
                <td>{e.project}</td>
                <td className="wrap-text">{e.from}</td>
                <td className="wrap-text">{e.to.join(', ')}</td>
                <td className="wrap-text">
                  <Link to={`/emails/${encodeURIComponent(e.id)}`}>{e.subject || '(no subject)'}</Link>
                </td>
                <td>
                  <Status value={e.status} />
                </td>
              </tr>
            ))}
          </Table>
          <div className="row pager">
            {query.get('after') ? (
              <button type="button" onClick={first}>
                Newest
              </button>
            ) : null}
            {data.next ? (
              <button type="button" onClick={() => older(data.next as string)}>
                Older
              </button>
            ) : null}
            {data.scanned_until ? (
              <span className="muted small">
                Searched back to <Time iso={data.scanned_until} />
              </span>
            ) : null}
          </div>
        </>
      ) : null}
    </Page>
  );
}

/** The remote answer as the server gave it; its code and enhanced code in front when the text lacks them. */
function answerOf(ev: { code: number | string | null; enhanced_code: string | null; response: string | null }): string {
  const response = ev.response ?? '';
  const code = ev.code === null ? '' : String(ev.code);
  if (code && response.startsWith(code)) return response;
  return [code, ev.enhanced_code && !response.includes(ev.enhanced_code) ? ev.enhanced_code : '', response].filter(Boolean).join(' ');
}

function EmailDetail({ id }: { id: string }) {
  const { data: e, error, loading } = usePoll(() => ok(api.GET('/admin/v1/emails/{id}', { params: { path: { id } } })), [id], 5000);
  return (
    <Page title={e ? e.subject || '(no subject)' : 'Email'} actions={e ? <Status value={e.status} /> : null}>
      <p className="crumbs">
        <Link to="/emails">Emails</Link> / <code>{id}</code>
      </p>
      <ErrorBox error={error} />
      <Loading show={loading && !e} />
      {e ? (
        <>
          <dl className="facts card">
            <dt>Project</dt>
            <dd>
              <Link to={`/projects/${encodeURIComponent(e.project.slug)}`}>{e.project.name}</Link>
            </dd>
            <dt>From</dt>
            <dd>{e.from}</dd>
            <dt>To</dt>
            <dd>{e.to.join(', ')}</dd>
            {e.cc.length ? (
              <>
                <dt>Cc</dt>
                <dd>{e.cc.join(', ')}</dd>
              </>
            ) : null}
            {e.bcc.length ? (
              <>
                <dt>Bcc</dt>
                <dd>{e.bcc.join(', ')}</dd>
              </>
            ) : null}
            <dt>Created</dt>
            <dd>
              <Time iso={e.created_at} />
            </dd>
            {e.scheduled_at ? (
              <>
                <dt>Scheduled</dt>
                <dd>
                  <Time iso={e.scheduled_at} />
                </dd>
              </>
            ) : null}
            <dt>Size</dt>
            <dd>
              {[e.html_size ? `HTML ${num(e.html_size)} B` : '', e.text_size ? `text ${num(e.text_size)} B` : '', e.bulk ? 'bulk' : '']
                .filter(Boolean)
                .join(', ') || '—'}
            </dd>
            {e.tags.length ? (
              <>
                <dt>Tags</dt>
                <dd>{e.tags.map((t) => `${t.name}:${t.value}`).join(', ')}</dd>
              </>
            ) : null}
          </dl>
          <h2>Recipients</h2>
          <Table label="Recipients" head={['Address', 'Kind', 'Status', 'Updated']}>
            {e.recipients.map((r) => (
              <tr key={`${r.kind}:${r.address}`}>
                <td className="wrap-text">{r.address}</td>
                <td>{r.kind}</td>
                <td>
                  <Status value={r.status} />
                </td>
                <td>
                  <Time iso={r.updated_at} />
                </td>
              </tr>
            ))}
          </Table>
          <h2>Timeline</h2>
          {e.events.length === 0 ? <p className="muted">No events yet.</p> : null}
          <ol className="timeline" aria-label="Events">
            {e.events.map((ev, i) => (
              // biome-ignore lint/suspicious/noArrayIndexKey: events are in order and never reordered
              <li key={i} className={`event ${ev.type}`}>
                <div className="event-head">
                  <Status value={ev.type} />
                  <Time iso={ev.at} />
                  {ev.recipient ? <span>{ev.recipient}</span> : null}
                  {ev.attempt ? <span className="muted">attempt {ev.attempt}</span> : null}
                </div>
                <div className="event-body">
                  {ev.provider || ev.mx ? (
                    <span className="muted">
                      {ev.provider ?? ''}
                      {ev.mx ? ` via ${ev.mx}` : ''}
                    </span>
                  ) : null}
                  {ev.code || ev.response ? <code className="answer">{answerOf(ev)}</code> : null}
                  {ev.cause ? <span className="muted">cause: {ev.cause}</span> : null}
                  {ev.rule ? (
                    <span className="muted">
                      rule: <code>{ev.rule}</code>
                    </span>
                  ) : null}
                </div>
              </li>
            ))}
          </ol>
        </>
      ) : null}
    </Page>
  );
}

export default function Emails({ id }: { id?: string }) {
  return id ? <EmailDetail id={id} /> : <Search />;
}
