// Projects: the list, then one project: usage against its plan's quotas, sending paused or not, keys
// (create: the key is shown once; revoke), domains with their DNS checks, bounce and complaint rates;
// pause, resume and cancel queued mail.
import { useState } from 'react';
import { api, ok } from '../api';
import { Badge, ConfirmButton, ErrorBox, Loading, num, Page, pct, Stat, Status, Table, Time } from '../components/ui';
import { useAction, usePoll } from '../hooks';
import { Link } from '../router';

/** postgate's own sender (sign-in codes), made at start (control/domains/system.ts SYSTEM_PROJECT_SLUG). */
const SYSTEM_SLUG = 'postgate-system';

function ProjectList() {
  const { data, error, loading } = usePoll(() => ok(api.GET('/admin/v1/projects')), [], 5000);
  return (
    <Page title="Projects">
      <ErrorBox error={error} />
      <Loading show={loading && !data} />
      {data ? (
        <Table label="Projects" head={['Project', 'Slug', 'Plan', 'Status', 'Created']} empty="No projects yet (postgate project create).">
          {data.data.map((p) => (
            <tr key={p.id}>
              <td>
                <Link to={`/projects/${encodeURIComponent(p.slug)}`}>{p.name}</Link>
                {p.slug === SYSTEM_SLUG ? (
                  <>
                    {' '}
                    <Badge tone="info">system</Badge>
                  </>
                ) : null}
              </td>
              <td>
                <code>{p.slug}</code>
              </td>
              <td>{p.plan}</td>
              <td>
                <Status value={p.status} />
              </td>
              <td>
                <Time iso={p.created_at} />
              </td>
            </tr>
          ))}
        </Table>
      ) : null}
    </Page>
  );
}

function Meter({ label, used, limit }: { label: string; used: number; limit: number }) {
  const ratio = limit > 0 ? Math.min(1, used / limit) : 0;
  return (
    <div className="meter">
      <div className="meter-label">
        <span>{label}</span>
        <span>
          {num(used)} / {limit > 0 ? num(limit) : '∞'}
        </span>
      </div>
      <progress max={1} value={ratio} aria-label={`${label}: ${num(used)} of ${limit > 0 ? num(limit) : 'unlimited'}`} className={ratio > 0.9 ? 'high' : ''} />
    </div>
  );
}

function NewKey({ slug, onCreated }: { slug: string; onCreated: () => void }) {
  const { busy, error, run } = useAction();
  const [kind, setKind] = useState<'live' | 'test'>('live');
  const [scope, setScope] = useState<'all' | 'auth' | 'users'>('all');
  const [shown, setShown] = useState<{ key: string; kind: string; scope: string }>();
  const create = async () => {
    const out = await run(() => ok(api.POST('/admin/v1/projects/{slug}/keys', { params: { path: { slug } }, body: { kind, scope } })));
    if (out) {
      setShown({ key: out.key, kind: out.kind, scope: out.scope });
      onCreated();
    }
  };
  return (
    <div>
      <div className="row wrap">
        <label className="inline">
          <span>Kind</span>
          <select value={kind} onChange={(e) => setKind(e.target.value as 'live' | 'test')}>
            <option value="live">live</option>
            <option value="test">test</option>
          </select>
        </label>
        <label className="inline">
          <span>Scope</span>
          <select value={scope} onChange={(e) => setScope(e.target.value as 'all' | 'auth' | 'users')}>
            <option value="all">all</option>
            <option value="auth">auth</option>
            <option value="users">users</option>
          </select>
        </label>
        <button type="button" onClick={create} disabled={busy}>
          Create key
        </button>
      </div>
      {shown ? (
        <div className="newkey" role="status" aria-label="New key">
          <p>
            <strong>
              New {shown.kind} key ({shown.scope}).
            </strong>{' '}
            Copy it now: it is not shown again.
          </p>
          <code className="secret" data-testid="new-key">
            {shown.key}
          </code>
          <button type="button" onClick={() => setShown(undefined)}>
            Dismiss
          </button>
        </div>
      ) : null}
      <ErrorBox error={error} />
    </div>
  );
}

function ProjectDetail({ slug }: { slug: string }) {
  const { data: p, error, loading, reload } = usePoll(() => ok(api.GET('/admin/v1/projects/{slug}', { params: { path: { slug } } })), [slug], 5000);
  const act = useAction();
  const [canceled, setCanceled] = useState<{ canceled: number; dropped: number }>();
  const path = { params: { path: { slug } } };
  const pause = async () => {
    if (await act.run(() => ok(api.POST('/admin/v1/projects/{slug}/pause', path)))) reload();
  };
  const resume = async () => {
    if (await act.run(() => ok(api.POST('/admin/v1/projects/{slug}/resume', path)))) reload();
  };
  const cancel = async () => {
    const out = await act.run(() => ok(api.POST('/admin/v1/projects/{slug}/cancel-queued', path)));
    if (out) {
      setCanceled(out);
      reload();
    }
  };
  const revoke = async (id: string) => {
    if (await act.run(() => ok(api.DELETE('/admin/v1/projects/{slug}/keys/{id}', { params: { path: { slug, id } } })))) reload();
  };
  return (
    <Page
      title={p ? p.name : slug}
      actions={
        p ? (
          <>
            <Status value={p.status} />
            {p.status === 'active' ? (
              <ConfirmButton label="Pause sending" confirmText="The API refuses its mail while paused." onConfirm={pause} disabled={act.busy} />
            ) : (
              <button type="button" onClick={resume} disabled={act.busy}>
                Resume sending
              </button>
            )}
            <ConfirmButton label="Cancel queued mail" confirmText="Every queued email of this project is canceled." onConfirm={cancel} disabled={act.busy} />
          </>
        ) : null
      }
    >
      <p className="crumbs">
        <Link to="/projects">Projects</Link> / <code>{slug}</code> · <Link to={`/sign-in/${encodeURIComponent(slug)}`}>Sign-in activity</Link> ·{' '}
        <Link to={`/emails?project=${encodeURIComponent(slug)}`}>Emails</Link> · <Link to={`/webhooks?project=${encodeURIComponent(slug)}`}>Webhooks</Link>
      </p>
      <ErrorBox error={error} />
      <ErrorBox error={act.error} />
      {canceled ? (
        <p className="notice" role="status">
          {num(canceled.canceled)} queued email{canceled.canceled === 1 ? '' : 's'} canceled ({num(canceled.dropped)} queue items dropped).
        </p>
      ) : null}
      <Loading show={loading && !p} />
      {p ? (
        <>
          <section aria-labelledby="usage-h">
            <h2 id="usage-h">Usage and plan</h2>
            <div className="stats">
              <Stat label="Plan" value={p.plan} hint={`rate ${p.limits.rate > 0 ? `${num(p.limits.rate)}/s` : 'unlimited'}`} />
              <Stat label={`Bounce rate, ${p.rates.window_days} days`} value={pct(p.rates.bounce_rate)} hint={`${num(p.rates.bounced)} bounced`} />
              <Stat
                label={`Complaint rate, ${p.rates.window_days} days`}
                value={pct(p.rates.complaint_rate, 3)}
                hint={`${num(p.rates.complained)} complained`}
              />
              <Stat
                label={`Sent (accepted by the receiver), ${p.rates.window_days} days`}
                value={num(p.rates.sent)}
                hint={`${num(p.rates.delivered)} confirmed by a delivery report`}
              />
            </div>
            <div className="meters">
              <Meter label="Today" used={p.usage.day} limit={p.limits.daily_quota} />
              <Meter label="This month" used={p.usage.month} limit={p.limits.monthly_quota} />
            </div>
          </section>
          <section aria-labelledby="keys-h">
            <h2 id="keys-h">API keys</h2>
            <NewKey slug={slug} onCreated={reload} />
            <Table label="API keys" head={['Key', 'Kind', 'Scope', 'Created', 'Revoked', '']}>
              {p.keys.map((k) => (
                <tr key={k.id}>
                  <td>
                    <code>{k.prefix}</code>
                  </td>
                  <td>{k.kind}</td>
                  <td>{k.scope}</td>
                  <td>
                    <Time iso={k.created_at} />
                  </td>
                  <td>{k.revoked_at ? <Time iso={k.revoked_at} /> : <Badge tone="ok">active</Badge>}</td>
                  <td>{k.revoked_at ? null : <ConfirmButton label={`Revoke ${k.prefix}`} onConfirm={() => revoke(k.id)} disabled={act.busy} />}</td>
                </tr>
              ))}
            </Table>
          </section>
          <section aria-labelledby="domains-h">
            <h2 id="domains-h">Domains</h2>
            {p.domains.length === 0 ? <p className="muted">No domains.</p> : null}
            {p.domains.map((d) => (
              <div key={d.id} className="domain">
                <h3>
                  {d.name} <Status value={d.status} />
                </h3>
                <p className="muted small">
                  Checked <Time iso={d.checked_at} />
                  {d.verified_at ? (
                    <>
                      {' '}
                      · verified <Time iso={d.verified_at} />
                    </>
                  ) : null}
                </p>
                <Table label={`DNS records of ${d.name}`} head={['Type', 'Name', 'Value', 'Check']}>
                  {d.records.map((r) => (
                    <tr key={`${r.type}:${r.name}:${r.value}`}>
                      <td>{r.type}</td>
                      <td className="wrap-text">
                        <code>{r.name}</code>
                      </td>
                      <td className="wrap-text value">
                        <code>{r.value}</code>
                      </td>
                      <td>
                        <Status value={r.status} />
                        {'problem' in r && r.problem ? <div className="small muted">{r.problem}</div> : null}
                      </td>
                    </tr>
                  ))}
                </Table>
              </div>
            ))}
          </section>
        </>
      ) : null}
    </Page>
  );
}

export default function Projects({ slug }: { slug?: string }) {
  return slug ? <ProjectDetail slug={slug} /> : <ProjectList />;
}
