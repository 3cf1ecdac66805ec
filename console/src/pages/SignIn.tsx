// Sign-in: one project's sign-ins and failed sign-ins over the last day or week (chart), by method and
// by provider, and the project's auth audit log.
import { useMemo } from 'react';
import { api, ok } from '../api';
import { bucketTimes, COLORS, Chart, type Line } from '../components/Chart';
import { ErrorBox, Loading, num, Page, Table, Time } from '../components/ui';
import { usePoll } from '../hooks';
import { Link, navigate, useLocation } from '../router';

function Activity({ slug }: { slug: string }) {
  const { query } = useLocation();
  const period = query.get('period') === 'week' ? 'week' : 'day';
  const path = { slug };
  const activity = usePoll(() => ok(api.GET('/admin/v1/projects/{slug}/auth/activity', { params: { path, query: { period } } })), [slug, period], 5000);
  const log = usePoll(() => ok(api.GET('/admin/v1/projects/{slug}/audit', { params: { path, query: { limit: '50' } } })), [slug], 5000);
  // The page is titled with the project's name; its slug stays in the address.
  const project = usePoll(() => ok(api.GET('/admin/v1/projects/{slug}', { params: { path } })), [slug]);
  const name = project.data?.name ?? slug;
  const a = activity.data;
  const times = useMemo(() => (a ? bucketTimes(a.start, a.step_s, a.buckets.length) : []), [a]);
  const lines: Line[] = useMemo(
    () =>
      a
        ? [
            { label: 'signed in', values: a.buckets.map((b) => b.signed_in), color: COLORS.signed_in },
            { label: 'failed', values: a.buckets.map((b) => b.failed), color: COLORS.failed },
          ]
        : [],
    [a],
  );
  return (
    <Page
      title={`Sign-in: ${name}`}
      actions={
        <label className="inline">
          <span>Period</span>
          <select value={period} onChange={(e) => navigate(`/sign-in/${encodeURIComponent(slug)}?period=${e.target.value}`, true)}>
            <option value="day">last day, per hour</option>
            <option value="week">last week, per day</option>
          </select>
        </label>
      }
    >
      <p className="crumbs">
        <Link to="/sign-in">Sign-in</Link> / <Link to={`/projects/${encodeURIComponent(slug)}`}>{name}</Link>
      </p>
      <ErrorBox error={activity.error} />
      <Loading show={activity.loading && !a} />
      {a ? (
        <>
          <Chart title={period === 'day' ? 'Sign-ins per hour, last day' : 'Sign-ins per day, last week'} times={times} lines={lines} />
          <div className="two">
            <section aria-labelledby="method-h">
              <h2 id="method-h">By method</h2>
              <Table label="Sign-ins by method" head={['Method', 'Signed in', 'Failed']}>
                {a.by_method.map((m) => (
                  <tr key={m.method}>
                    <td>{m.method}</td>
                    <td>{num(m.signed_in)}</td>
                    <td>{num(m.failed)}</td>
                  </tr>
                ))}
              </Table>
            </section>
            <section aria-labelledby="provider-h">
              <h2 id="provider-h">By provider</h2>
              <Table label="Sign-ins by provider" head={['Provider', 'Signed in', 'Failed']}>
                {a.by_provider.map((m) => (
                  <tr key={m.provider ?? ''}>
                    <td>{m.provider ?? 'unknown'}</td>
                    <td>{num(m.signed_in)}</td>
                    <td>{num(m.failed)}</td>
                  </tr>
                ))}
              </Table>
            </section>
          </div>
        </>
      ) : null}
      <h2>Audit log</h2>
      <ErrorBox error={log.error} />
      {log.data ? (
        <Table label="Audit log" head={['At', 'Event', 'Env', 'User', 'Email', 'Provider', 'Reason', 'IP']} empty="No entries.">
          {log.data.data.map((e) => (
            <tr key={e.id}>
              <td>
                <Time iso={e.at} />
              </td>
              <td>
                <code>{e.type}</code>
                {e.suppressed ? <span className="muted small"> +{e.suppressed}</span> : null}
              </td>
              <td>{e.env}</td>
              <td className="wrap-text small">{e.user_id ?? '—'}</td>
              <td>{e.email ?? e.phone ?? '—'}</td>
              <td>{e.provider ?? '—'}</td>
              <td>{e.reason ?? '—'}</td>
              <td>{e.ip ?? '—'}</td>
            </tr>
          ))}
        </Table>
      ) : null}
    </Page>
  );
}

function PickProject() {
  const { data, error, loading } = usePoll(() => ok(api.GET('/admin/v1/projects')), []);
  return (
    <Page title="Sign-in">
      <p className="muted">Sign-ins and failures by project: choose one.</p>
      <ErrorBox error={error} />
      <Loading show={loading && !data} />
      {data ? (
        <Table label="Projects" head={['Project', 'Slug']} empty="No projects yet.">
          {data.data.map((p) => (
            <tr key={p.id}>
              <td>
                <Link to={`/sign-in/${encodeURIComponent(p.slug)}`}>{p.name}</Link>
              </td>
              <td>
                <code>{p.slug}</code>
              </td>
            </tr>
          ))}
        </Table>
      ) : null}
    </Page>
  );
}

export default function SignIn({ slug }: { slug?: string }) {
  return slug ? <Activity slug={slug} /> : <PickProject />;
}
