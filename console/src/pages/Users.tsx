// Users: one project's sign-in users in one environment (live or test), searched by address (its start),
// number or provider, newest first in pages; a user's identities, live sessions (end one, end all),
// passkeys, second factor (reset), metadata (read only); ban (a reason, an optional end), unban, delete.
// Every value a user or an app supplied (name, metadata, user agent) is shown as text.
import { type FormEvent, useState } from 'react';
import { api, ok } from '../api';
import type { paths } from '../gen/admin-api';
import { Badge, ConfirmButton, ErrorBox, Loading, Page, Table, Time } from '../components/ui';
import { useAction, usePoll } from '../hooks';
import { Link, navigate, useLocation } from '../router';

type Env = 'live' | 'test';
type UserList = paths['/admin/v1/projects/{slug}/auth/users']['get']['responses'][200]['content']['application/json'];
type ListQuery = NonNullable<paths['/admin/v1/projects/{slug}/auth/users']['get']['parameters']['query']>;
type User = UserList['data'][number];

const FILTERS = ['email_prefix', 'phone', 'provider'] as const;
const envOf = (q: URLSearchParams): Env => (q.get('env') === 'test' ? 'test' : 'live');
const base = (slug: string) => `/users/${encodeURIComponent(slug)}`;
/** The user's address, else number, else id: how the page names a user. */
const who = (u: Pick<User, 'email' | 'phone' | 'id'>) => u.email ?? u.phone ?? u.id;

function BanBadge({ u }: { u: Pick<User, 'banned' | 'ban'> }) {
  if (!u.banned) return null;
  return <Badge tone="bad">banned</Badge>;
}

/** Runs a change through the typed client: an answer that is not a success becomes the action's error. */
async function done<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<true> {
  await ok(p);
  return true;
}

function List({ slug }: { slug: string }) {
  const { query } = useLocation();
  const qs = query.toString();
  const env = envOf(query);
  const project = usePoll(() => ok(api.GET('/admin/v1/projects/{slug}', { params: { path: { slug } } })), [slug]);
  const name = project.data?.name ?? slug;
  const { data, error, loading } = usePoll(
    () => {
      const q = new URLSearchParams(qs);
      const p: ListQuery = { env: envOf(q), limit: '25' };
      for (const k of [...FILTERS, 'after'] as const) {
        const v = q.get(k);
        if (v) p[k] = v;
      }
      return ok(api.GET('/admin/v1/projects/{slug}/auth/users', { params: { path: { slug }, query: p } }));
    },
    [slug, qs],
    5000,
  );
  const go = (next: URLSearchParams) => {
    if (next.get('env') === 'live') next.delete('env');
    const s = next.toString();
    navigate(`${base(slug)}${s ? `?${s}` : ''}`);
  };
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const next = new URLSearchParams({ env });
    for (const k of FILTERS) {
      const v = form.get(k);
      if (typeof v === 'string' && v.trim()) next.set(k, v.trim());
    }
    go(next);
  };
  const setEnv = (value: string) => {
    const next = new URLSearchParams(qs);
    next.delete('after');
    next.set('env', value);
    go(next);
  };
  const page = (after: string | null) => {
    const next = new URLSearchParams(qs);
    if (after) next.set('after', after);
    else next.delete('after');
    go(next);
  };
  const detail = (id: string) => `${base(slug)}/${encodeURIComponent(id)}${env === 'test' ? '?env=test' : ''}`;
  return (
    <Page
      title={`Users: ${name}`}
      actions={
        <label className="inline">
          <span>Environment</span>
          <select value={env} onChange={(e) => setEnv(e.target.value)}>
            <option value="live">live</option>
            <option value="test">test</option>
          </select>
        </label>
      }
    >
      <p className="crumbs">
        <Link to="/users">Users</Link> / <Link to={`/projects/${encodeURIComponent(slug)}`}>{name}</Link>
      </p>
      <form className="card search" onSubmit={submit} aria-label="Search users" key={qs}>
        <div className="fields">
          <label>
            <span>Email</span>
            <input name="email_prefix" defaultValue={query.get('email_prefix') ?? ''} placeholder="the start of an address" spellCheck={false} />
          </label>
          <label>
            <span>Phone</span>
            <input name="phone" type="tel" defaultValue={query.get('phone') ?? ''} placeholder="+14155550100" spellCheck={false} />
          </label>
          <label>
            <span>Provider</span>
            <input name="provider" defaultValue={query.get('provider') ?? ''} placeholder="email, google, telegram…" spellCheck={false} />
          </label>
        </div>
        <div className="row">
          <button type="submit" className="primary">
            Search
          </button>
        </div>
      </form>
      <ErrorBox error={error} />
      <Loading show={loading && !data} />
      {data ? (
        <>
          <Table label="Users found" head={['Email', 'Phone', 'Provider', 'Created', 'Last sign-in', 'Status']} empty="No user matches.">
            {data.data.map((u) => (
              <tr key={u.id}>
                <td className="wrap-text">
                  <Link to={detail(u.id)}>{u.email ?? (u.phone ? '(no address)' : u.name || u.id)}</Link>
                </td>
                <td>{u.phone ?? <span className="muted">—</span>}</td>
                <td>{u.provider}</td>
                <td>
                  <Time iso={u.createdAt} />
                </td>
                <td>
                  <Time iso={u.lastSignIn} />
                </td>
                <td>
                  <BanBadge u={u} />
                </td>
              </tr>
            ))}
          </Table>
          <div className="row pager">
            {query.get('after') ? (
              <button type="button" onClick={() => page(null)}>
                Newest
              </button>
            ) : null}
            {data.hasMore && data.nextCursor ? (
              <button type="button" onClick={() => page(data.nextCursor)}>
                Older
              </button>
            ) : null}
          </div>
        </>
      ) : null}
    </Page>
  );
}

function BanForm({ onBan, busy }: { onBan: (reason: string, until?: string) => void; busy: boolean }) {
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const reason = String(form.get('reason') ?? '').trim();
    const end = String(form.get('until') ?? '');
    // datetime-local is the browser's local time; the API takes an instant.
    onBan(reason, end ? new Date(end).toISOString() : undefined);
  };
  return (
    <form className="card" onSubmit={submit} aria-label="Ban this user">
      <h2>Ban</h2>
      <p className="muted small">Its sessions end at once; every sign-in answers USER_BANNED until the end, or until lifted.</p>
      <div className="fields">
        <label>
          <span>Reason</span>
          <input name="reason" required maxLength={500} />
        </label>
        <label>
          <span>Until (optional)</span>
          <input name="until" type="datetime-local" />
        </label>
      </div>
      <div className="row">
        <button type="submit" className="danger" disabled={busy}>
          Ban user
        </button>
      </div>
    </form>
  );
}

function Detail({ slug, id }: { slug: string; id: string }) {
  const { query } = useLocation();
  const env = envOf(query);
  const params = { path: { slug, id }, query: { env } };
  const act = useAction();
  const [notice, setNotice] = useState<string>();
  const { data: u, error, loading, reload } = usePoll(() => ok(api.GET('/admin/v1/projects/{slug}/auth/users/{id}', { params })), [slug, id, env], 5000);
  const back = `${base(slug)}${env === 'test' ? '?env=test' : ''}`;
  const change = async (what: string, fn: () => Promise<unknown>) => {
    if (await act.run(fn)) {
      setNotice(what);
      reload();
    }
  };
  const ban = (reason: string, until?: string) =>
    change('Banned.', () => done(api.POST('/admin/v1/projects/{slug}/auth/users/{id}/ban', { params, body: until ? { reason, until } : { reason } })));
  const unban = () => change('Ban lifted.', () => done(api.POST('/admin/v1/projects/{slug}/auth/users/{id}/unban', { params })));
  const revoke = (sessionId: string) =>
    change('Session ended.', () =>
      done(api.DELETE('/admin/v1/projects/{slug}/auth/users/{id}/sessions/{sessionId}', { params: { path: { slug, id, sessionId }, query: { env } } })),
    );
  const revokeAll = () => change('Every session ended.', () => done(api.DELETE('/admin/v1/projects/{slug}/auth/users/{id}/sessions', { params })));
  const resetTwoFactor = () => change('Second factor reset.', () => done(api.DELETE('/admin/v1/projects/{slug}/auth/users/{id}/two-factor', { params })));
  const remove = async () => {
    const gone = await act.run(() => done(api.DELETE('/admin/v1/projects/{slug}/auth/users/{id}', { params })));
    if (gone) navigate(back);
  };
  const label = u ? who(u) : id;
  return (
    <Page title={u ? label : 'User'} actions={u ? <BanBadge u={u} /> : null}>
      <p className="crumbs">
        <Link to="/users">Users</Link> / <Link to={back}>{slug}</Link> / <code>{env}</code>
      </p>
      <ErrorBox error={error} />
      <ErrorBox error={act.error} />
      {notice ? (
        <p className="notice" role="status">
          {notice}
        </p>
      ) : null}
      <Loading show={loading && !u} />
      {u ? (
        <>
          <dl className="facts card" aria-label="User">
            <dt>Id</dt>
            <dd>
              <code>{u.id}</code>
            </dd>
            <dt>Email</dt>
            <dd>
              {u.email ?? '—'} {u.email ? <Badge tone={u.emailVerified ? 'ok' : undefined}>{u.emailVerified ? 'verified' : 'unverified'}</Badge> : null}
            </dd>
            <dt>Phone</dt>
            <dd>
              {u.phone ?? '—'} {u.phone ? <Badge tone={u.phoneVerified ? 'ok' : undefined}>{u.phoneVerified ? 'verified' : 'unverified'}</Badge> : null}
            </dd>
            <dt>Name</dt>
            <dd>{u.name ?? '—'}</dd>
            {u.username ? (
              <>
                <dt>Username</dt>
                <dd>{u.username}</dd>
              </>
            ) : null}
            <dt>Provider</dt>
            <dd>{u.provider}</dd>
            <dt>Created</dt>
            <dd>
              <Time iso={u.createdAt} />
            </dd>
            <dt>Last sign-in</dt>
            <dd>
              <Time iso={u.lastSignIn} />
            </dd>
            <dt>Status</dt>
            <dd>
              {u.ban ? (
                <>
                  <Badge tone="bad">banned</Badge> {u.ban.reason} (since <Time iso={u.ban.bannedAt} />
                  {u.ban.expiresAt ? (
                    <>
                      , until <Time iso={u.ban.expiresAt} />
                    </>
                  ) : (
                    ', until lifted'
                  )}
                  )
                </>
              ) : (
                <Badge tone="ok">active</Badge>
              )}
            </dd>
          </dl>

          <h2>Identities</h2>
          <Table label="Identities" head={['Provider', 'Subject', 'Linked']} empty="No identities.">
            {u.identities.map((i) => (
              <tr key={`${i.provider}:${i.subject}`}>
                <td>{i.provider}</td>
                <td className="wrap-text">{i.subject}</td>
                <td>
                  <Time iso={i.createdAt} />
                </td>
              </tr>
            ))}
          </Table>

          <div className="card-head">
            <h2>Live sessions</h2>
            {u.sessions.length ? (
              <ConfirmButton label="End every session" confirmText={`Every token of ${label} stops working.`} onConfirm={revokeAll} disabled={act.busy} />
            ) : null}
          </div>
          <Table label="Live sessions" head={['Started', 'Provider', 'IP', 'User agent', 'Expires', '']} empty="No live sessions.">
            {u.sessions.map((s) => (
              <tr key={s.id}>
                <td>
                  <Time iso={s.createdAt} />
                </td>
                <td>{s.provider}</td>
                <td>{s.ip ?? '—'}</td>
                <td className="wrap-text small">{s.userAgent ?? '—'}</td>
                <td>
                  <Time iso={s.expiresAt} />
                </td>
                <td>
                  <ConfirmButton label={`End session ${s.id.slice(0, 8)}`} onConfirm={() => revoke(s.id)} disabled={act.busy} />
                </td>
              </tr>
            ))}
          </Table>

          <h2>Passkeys</h2>
          <Table label="Passkeys" head={['Name', 'Kind', 'Added', 'Last used']} empty="No passkeys.">
            {u.passkeys.map((p) => (
              <tr key={p.id}>
                <td className="wrap-text">{p.name}</td>
                <td>{p.deviceType === 'multiDevice' ? `synced${p.backedUp ? ', backed up' : ''}` : 'this device only'}</td>
                <td>
                  <Time iso={p.createdAt} />
                </td>
                <td>
                  <Time iso={p.lastUsedAt} />
                </td>
              </tr>
            ))}
          </Table>

          <section className="card" aria-labelledby="tf-h">
            <div className="card-head">
              <h2 id="tf-h">Two-factor</h2>
              {u.twoFactor.totp || u.twoFactor.backupCodesLeft > 0 ? (
                <ConfirmButton
                  label="Reset two-factor"
                  confirmText="The authenticator app and backup codes are removed."
                  onConfirm={resetTwoFactor}
                  disabled={act.busy}
                />
              ) : null}
            </div>
            <p>
              {u.twoFactor.totp ? (
                <>
                  <Badge tone="ok">authenticator app</Badge> since <Time iso={u.twoFactor.confirmedAt} />, {u.twoFactor.backupCodesLeft} backup codes left
                </>
              ) : (
                <span className="muted">No second factor.</span>
              )}
            </p>
          </section>

          <section aria-labelledby="meta-h">
            <h2 id="meta-h">Metadata</h2>
            <pre className="json card">{JSON.stringify(u.metadata, null, 2)}</pre>
          </section>

          {u.ban ? (
            <section className="card" aria-label="Ban">
              <h2>Banned</h2>
              <div className="row">
                <button type="button" onClick={unban} disabled={act.busy}>
                  Unban user
                </button>
              </div>
            </section>
          ) : (
            <BanForm onBan={ban} busy={act.busy} />
          )}

          <section className="card" aria-labelledby="del-h">
            <h2 id="del-h">Delete</h2>
            <p className="muted small">Its sessions end and its personal data is removed; signing in again makes a new user.</p>
            <ConfirmButton label={`Delete ${label}`} confirmText={`${label} and everything about it is deleted.`} onConfirm={remove} disabled={act.busy} />
          </section>
        </>
      ) : null}
    </Page>
  );
}

function PickProject() {
  const { data, error, loading } = usePoll(() => ok(api.GET('/admin/v1/projects')), []);
  return (
    <Page title="Users">
      <p className="muted">The users who sign in to a project's apps: choose one.</p>
      <ErrorBox error={error} />
      <Loading show={loading && !data} />
      {data ? (
        <Table label="Projects" head={['Project', 'Slug']} empty="No projects yet.">
          {data.data.map((p) => (
            <tr key={p.id}>
              <td>
                <Link to={base(p.slug)}>{p.name}</Link>
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

export default function Users({ slug, id }: { slug?: string; id?: string }) {
  if (!slug) return <PickProject />;
  return id ? <Detail slug={slug} id={id} /> : <List slug={slug} />;
}
