// Webhooks: every endpoint (one project's or all) with how its latest messages stand; an endpoint's
// messages with the event each carried, the receiver's answer code and failures, and retry now.
import type { FormEvent } from 'react';
import { api, ok } from '../api';
import { Badge, ErrorBox, Loading, num, Page, Status, Table, Time } from '../components/ui';
import { useAction, usePoll } from '../hooks';
import { Link, navigate, useLocation } from '../router';

type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** A long subscription shortened: the first three events and how many more (all of them in the title). */
const eventsOf = (events: string[]) => (events.length <= 4 ? events.join(', ') : `${events.slice(0, 3).join(', ')} +${events.length - 3} more`);

/** The receiver's answer in one line: the last error (it names the HTTP status when there was one), else the
 * status code; `2xx` for a delivered message recorded without one. */
function answer(d: { status: string; answer_code: number | null; last_error: string | null }): string {
  const code = d.answer_code === null ? '' : `HTTP ${d.answer_code}`;
  if (d.last_error) return code && !d.last_error.includes(String(d.answer_code)) ? `${code}: ${d.last_error}` : d.last_error;
  return code || (d.status === 'delivered' ? '2xx' : '—');
}

function Endpoints() {
  const { query } = useLocation();
  const project = query.get('project') ?? '';
  const { data, error, loading } = usePoll(() => ok(api.GET('/admin/v1/webhooks', { params: { query: project ? { project } : {} } })), [project], 5000);
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const v = new FormData(e.currentTarget).get('project');
    navigate(typeof v === 'string' && v.trim() ? `/webhooks?project=${encodeURIComponent(v.trim())}` : '/webhooks');
  };
  return (
    <Page title="Webhooks">
      <form className="card search row wrap" onSubmit={submit} aria-label="Filter webhooks" key={project}>
        <label className="inline">
          <span>Project</span>
          <input name="project" defaultValue={project} placeholder="slug, or empty for all" spellCheck={false} />
        </label>
        <button type="submit">Show</button>
      </form>
      <ErrorBox error={error} />
      <Loading show={loading && !data} />
      {data ? (
        <Table label="Webhook endpoints" head={['Endpoint', 'Project', 'Events', 'Enabled', 'Delivered', 'Failed', 'Pending']} empty="No webhook endpoints.">
          {data.data.map((w) => (
            <tr key={w.id}>
              <td className="wrap-text">
                <Link to={`/webhooks/${encodeURIComponent(w.id)}`}>{w.url}</Link>
              </td>
              <td>{w.project}</td>
              <td className="wrap-text small" title={w.events.join(', ')}>
                {eventsOf(w.events)}
              </td>
              <td>{w.enabled ? <Badge tone="ok">enabled</Badge> : <Badge>disabled</Badge>}</td>
              <td>{num(w.recent.delivered)}</td>
              <td>{w.recent.failed ? <Badge tone="bad">{num(w.recent.failed)}</Badge> : '0'}</td>
              <td>{num(w.recent.pending)}</td>
            </tr>
          ))}
        </Table>
      ) : null}
    </Page>
  );
}

function Deliveries({ id }: { id: string }) {
  const { query } = useLocation();
  const status = (query.get('status') ?? '') as DeliveryStatus | '';
  const act = useAction();
  const { data, error, loading, reload } = usePoll(
    () => ok(api.GET('/admin/v1/webhooks/{id}/deliveries', { params: { path: { id }, query: { limit: '50', ...(status ? { status } : {}) } } })),
    [id, status],
    5000,
  );
  // The endpoint's address and project for the heading (the list is short: one row per endpoint).
  const endpoint = usePoll(() => ok(api.GET('/admin/v1/webhooks', { params: { query: {} } })), []).data?.data.find((w) => w.id === id);
  const retry = async (delivery: string) => {
    if (await act.run(() => ok(api.POST('/admin/v1/webhooks/deliveries/{id}/retry', { params: { path: { id: delivery } } })))) reload();
  };
  return (
    <Page title="Webhook deliveries">
      <p className="crumbs">
        <Link to="/webhooks">Webhooks</Link> / {endpoint ? <code>{endpoint.url}</code> : <code>{id}</code>}
        {endpoint ? (
          <>
            {' '}
            · <Link to={`/projects/${encodeURIComponent(endpoint.project)}`}>{endpoint.project}</Link> · {eventsOf(endpoint.events)}
          </>
        ) : null}
      </p>
      <div className="row wrap">
        <label className="inline">
          <span>Status</span>
          <select value={status} onChange={(e) => navigate(`/webhooks/${encodeURIComponent(id)}${e.target.value ? `?status=${e.target.value}` : ''}`, true)}>
            <option value="">any</option>
            <option value="failed">failed</option>
            <option value="pending">pending</option>
            <option value="delivered">delivered</option>
          </select>
        </label>
      </div>
      <ErrorBox error={error} />
      <ErrorBox error={act.error} />
      <Loading show={loading && !data} />
      {data ? (
        <Table label="Deliveries" head={['Created', 'Event', 'Status', 'Attempts', 'Answer', 'Next attempt', '']} empty="No messages.">
          {data.data.map((d) => (
            <tr key={d.id}>
              <td>
                <Time iso={d.created_at} />
              </td>
              <td>{d.event_type ?? <span className="muted">—</span>}</td>
              <td>
                <Status value={d.status} />
              </td>
              <td>{num(d.attempt)}</td>
              <td className="wrap-text">{answer(d)}</td>
              <td>{d.status === 'delivered' ? <Time iso={d.delivered_at} /> : <Time iso={d.next_attempt_at} />}</td>
              <td>
                {d.status !== 'delivered' ? (
                  <button type="button" onClick={() => retry(d.id)} disabled={act.busy}>
                    Retry now
                  </button>
                ) : null}
              </td>
            </tr>
          ))}
        </Table>
      ) : null}
    </Page>
  );
}

export default function Webhooks({ id }: { id?: string }) {
  return id ? <Deliveries id={id} /> : <Endpoints />;
}
