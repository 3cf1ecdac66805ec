// Suppressions: search every project's list (or one project's) by address, with where each entry came
// from (reason, scope, the email that caused it); remove an address after a confirmation.
import { type FormEvent, useState } from 'react';
import { api, ok } from '../api';
import { ConfirmButton, ErrorBox, Loading, Page, Status, Table, Time } from '../components/ui';
import { useAction, usePoll } from '../hooks';
import { Link, navigate, useLocation } from '../router';

export default function Suppressions() {
  const { query } = useLocation();
  const qs = query.toString();
  const act = useAction();
  const [removed, setRemoved] = useState<string>();
  const { data, error, loading, reload } = usePoll(
    () => {
      const q = new URLSearchParams(qs);
      const p: { project?: string; q?: string; after?: string; limit: string } = { limit: '50' };
      for (const k of ['project', 'q', 'after'] as const) {
        const v = q.get(k);
        if (v) p[k] = v;
      }
      return ok(api.GET('/admin/v1/suppressions', { params: { query: p } }));
    },
    [qs],
    5000,
  );
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const next = new URLSearchParams();
    for (const k of ['q', 'project']) {
      const v = form.get(k);
      if (typeof v === 'string' && v.trim()) next.set(k, v.trim());
    }
    const s = next.toString();
    navigate(`/suppressions${s ? `?${s}` : ''}`);
  };
  const remove = async (project: string, address: string) => {
    const done = await act.run(async () => {
      const r = await api.DELETE('/admin/v1/projects/{slug}/suppressions/{address}', { params: { path: { slug: project, address } } });
      if (!r.response.ok) await ok(Promise.resolve(r));
      return true;
    });
    if (done) {
      setRemoved(`${address} (${project})`);
      reload();
    }
  };
  const older = (cursor: string) => {
    const next = new URLSearchParams(qs);
    next.set('after', cursor);
    navigate(`/suppressions?${next}`);
  };
  return (
    <Page title="Suppressions">
      <form className="card search" onSubmit={submit} aria-label="Search suppressions" key={qs}>
        <div className="fields">
          <label>
            <span>Address</span>
            <input name="q" defaultValue={query.get('q') ?? ''} placeholder="all or part of an address" spellCheck={false} />
          </label>
          <label>
            <span>Project</span>
            <input name="project" defaultValue={query.get('project') ?? ''} placeholder="slug" spellCheck={false} />
          </label>
        </div>
        <div className="row">
          <button type="submit" className="primary">
            Search
          </button>
        </div>
      </form>
      <ErrorBox error={error} />
      <ErrorBox error={act.error} />
      {removed ? (
        <p className="notice" role="status">
          Removed {removed}.
        </p>
      ) : null}
      <Loading show={loading && !data} />
      {data ? (
        <>
          <Table label="Suppressed addresses" head={['Address', 'Project', 'Reason', 'Scope', 'Caused by', 'Since', '']} empty="No suppressed address matches.">
            {data.data.map((s) => (
              <tr key={`${s.project}:${s.address}`}>
                <td className="wrap-text">{s.address}</td>
                <td>
                  <Link to={`/projects/${encodeURIComponent(s.project)}`}>{s.project}</Link>
                </td>
                <td>
                  <Status value={s.reason} />
                </td>
                <td>{s.scope}</td>
                <td>{s.email_id ? <Link to={`/emails/${encodeURIComponent(s.email_id)}`}>email</Link> : <span className="muted">—</span>}</td>
                <td>
                  <Time iso={s.created_at} />
                </td>
                <td>
                  <ConfirmButton label={`Remove ${s.address}`} onConfirm={() => remove(s.project, s.address)} disabled={act.busy} />
                </td>
              </tr>
            ))}
          </Table>
          <div className="row pager">
            {query.get('after') ? (
              <button type="button" onClick={() => navigate('/suppressions')}>
                Newest
              </button>
            ) : null}
            {data.next ? (
              <button type="button" onClick={() => older(data.next as string)}>
                Older
              </button>
            ) : null}
          </div>
        </>
      ) : null}
    </Page>
  );
}
