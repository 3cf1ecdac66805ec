// Providers: each receiving provider's live state (queue, connections, rate, shaping, answers by
// enhanced code), its throttle (editable), and the operator's suspend, resume and send now.
import { type FormEvent, useEffect, useState } from 'react';
import { api, ok } from '../api';
import { Badge, Clip, ConfirmButton, ErrorBox, Loading, num, Page, Stat, Table, Time } from '../components/ui';
import { useAction, usePoll } from '../hooks';

/** The gateways keep at most this many characters of a trigger or sample answer (gateway/shaping, gateway/state):
 * one that long was cut there. */
const RECORDED_MAX = 300;

type Status = Awaited<ReturnType<typeof loadAll>>;
type Provider = Status['status']['providers'][number];
type Throttle = Status['throttles'][number];
type Suspension = Status['suspensions'][number];

async function loadAll() {
  const [status, throttles, suspensions] = await Promise.all([
    ok(api.GET('/admin/v1/queue/status')),
    ok(api.GET('/admin/v1/throttles')),
    ok(api.GET('/admin/v1/queue/suspensions')),
  ]);
  return { status, throttles: throttles.data, suspensions: suspensions.data };
}

const FIELDS = [
  { key: 'rate_per_minute', label: 'Rate per minute', hint: '0 = unlimited', step: '1' },
  { key: 'connections', label: 'Connections', hint: '0 = unlimited', step: '1' },
  { key: 'daily_norm', label: 'Daily norm (first day)', hint: '0 = no norm', step: '1' },
  { key: 'growth', label: 'Daily growth', hint: '1 to 10', step: '0.01' },
  { key: 'max_daily_norm', label: 'Max daily norm', hint: '0 = no cap', step: '1' },
] as const;

function ThrottleForm({ provider, throttle, onSaved }: { provider: string; throttle: Throttle | undefined; onSaved: () => void }) {
  const { busy, error, run } = useAction();
  const [saved, setSaved] = useState(false);
  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const body: Record<string, number> = {};
    for (const f of FIELDS) {
      const v = form.get(f.key);
      if (typeof v === 'string' && v.trim() !== '' && Number(v) !== (throttle ? throttle[f.key] : undefined)) body[f.key] = Number(v);
    }
    if (Object.keys(body).length === 0) return;
    setSaved(false);
    const out = await run(() => ok(api.POST('/admin/v1/throttles/{provider}', { params: { path: { provider } }, body })));
    if (out) {
      setSaved(true);
      onSaved();
    }
  };
  return (
    <form className="throttle" onSubmit={submit} aria-label={`Throttle of ${provider}`}>
      <div className="fields">
        {FIELDS.map((f) => (
          <label key={f.key}>
            <span>{f.label}</span>
            <input name={f.key} type="number" min="0" step={f.step} defaultValue={throttle ? throttle[f.key] : ''} placeholder={f.hint} />
          </label>
        ))}
      </div>
      <div className="row">
        <button type="submit" disabled={busy}>
          Save throttle
        </button>
        {throttle ? (
          <span className="muted small">
            From {throttle.source}
            {throttle.updated_at ? (
              <>
                , changed <Time iso={throttle.updated_at} />
              </>
            ) : null}
          </span>
        ) : null}
        {saved ? (
          <span className="ok-text" role="status">
            Saved.
          </span>
        ) : null}
      </div>
      <ErrorBox error={error} />
    </form>
  );
}

function Controls({ provider, suspensions, onChange }: { provider: string; suspensions: Suspension[]; onChange: () => void }) {
  const { busy, error, run } = useAction();
  const [reason, setReason] = useState('');
  const [until, setUntil] = useState('');
  const [woken, setWoken] = useState<number>();
  const suspend = async () => {
    const body: { provider: string; reason?: string; until?: string } = { provider };
    if (reason.trim()) body.reason = reason.trim();
    if (until) body.until = new Date(until).toISOString();
    if (await run(() => ok(api.POST('/admin/v1/queue/suspensions', { body })))) onChange();
  };
  const resume = async (id: string) => {
    if (await run(() => ok(api.DELETE('/admin/v1/queue/suspensions/{id}', { params: { path: { id } } })))) onChange();
  };
  const sendNow = async () => {
    const out = await run(() => ok(api.POST('/admin/v1/queue/send-now', { body: { provider } })));
    if (out) {
      setWoken(out.woken);
      onChange();
    }
  };
  return (
    <div className="controls">
      {suspensions.length ? (
        <ul className="plain">
          {suspensions.map((s) => (
            <li key={s.id}>
              <Badge tone="bad">suspended</Badge> {s.project ? `project ${s.project}, ` : ''}
              {s.until ? (
                <>
                  until <Time iso={s.until} />
                </>
              ) : (
                'until resumed'
              )}
              {s.reason ? ` (${s.reason})` : ''}{' '}
              <button type="button" disabled={busy} onClick={() => resume(s.id)}>
                Resume {provider}
              </button>
            </li>
          ))}
        </ul>
      ) : null}
      <div className="row wrap">
        <label className="inline">
          <span>Reason</span>
          <input value={reason} onChange={(e) => setReason(e.target.value)} maxLength={500} placeholder="optional" />
        </label>
        <label className="inline">
          <span>Until</span>
          <input type="datetime-local" value={until} onChange={(e) => setUntil(e.target.value)} />
        </label>
        <ConfirmButton label={`Suspend ${provider}`} confirmText="Mail to it waits until resumed." disabled={busy} onConfirm={suspend} />
        <button type="button" disabled={busy} onClick={sendNow}>
          Send now to {provider}
        </button>
        {woken !== undefined ? (
          <span className="ok-text" role="status">
            {num(woken)} queued item{woken === 1 ? '' : 's'} woken.
          </span>
        ) : null}
      </div>
      <ErrorBox error={error} />
    </div>
  );
}

const activity = (p: Provider, suspensions: Suspension[]) =>
  (suspensions.length || p.actions.length ? 1000 : 0) +
  (p.queue.ready + p.queue.in_flight + Object.values(p.queue.deferred).reduce((a, b) => a + b, 0) > 0 ? 100 : 0) +
  (p.windows.last_day.delivered + p.windows.last_day.deferred + p.windows.last_day.bounced > 0 ? 10 : 0);

function State({ p, suspensions }: { p: Provider; suspensions: Suspension[] }) {
  const suspended = suspensions.length > 0 || p.actions.some((a) => a.action === 'suspend');
  const shaped = p.actions.some((a) => a.action !== 'suspend');
  return (
    <span className="badges">
      {suspended ? <Badge tone="bad">suspended</Badge> : null}
      {shaped ? <Badge tone="warn">shaped</Badge> : null}
      {!suspended && !shaped ? <Badge tone="ok">normal</Badge> : null}
    </span>
  );
}

function ProviderCard({
  p,
  throttle,
  suspensions,
  onChange,
}: {
  p: Provider;
  throttle: Throttle | undefined;
  suspensions: Suspension[];
  onChange: () => void;
}) {
  const deferred = Object.values(p.queue.deferred).reduce((a, b) => a + b, 0);
  const h = p.windows.last_hour;
  return (
    <article className="card provider" id={p.provider} aria-labelledby={`p-${p.provider}`}>
      <header className="card-head">
        <h2 id={`p-${p.provider}`}>{p.provider}</h2>
        <State p={p} suspensions={suspensions} />
      </header>
      <div className="stats">
        <Stat label="Ready" value={num(p.queue.ready)} />
        <Stat label="In flight" value={num(p.queue.in_flight)} />
        <Stat label="Deferred" value={num(deferred)} />
        <Stat
          label="Connections open / limit"
          value={`${num(p.connections.open)} / ${p.connections.limit === null ? '∞' : num(p.connections.limit)}`}
          hint="busy + idle kept for reuse"
        />
        <Stat
          label="Rate per minute"
          value={num(p.rate.per_minute)}
          hint={`configured ${p.rate.configured === null ? '∞' : num(p.rate.configured)}, effective ${p.rate.effective === null ? '∞' : num(p.rate.effective)}`}
        />
        <Stat
          label="Last hour"
          value={`${num(h.delivered)} delivered`}
          hint={`${num(h.deferred)} deferred, ${num(h.bounced)} bounced, ${num(h.complained)} complained`}
        />
      </div>
      <h3>Shaping actions</h3>
      {p.actions.length === 0 ? (
        <p className="muted small">No shaping in force.</p>
      ) : (
        <Table
          label={`Shaping actions of ${p.provider}`}
          head={['Rule', 'Action', 'Value', 'Project', 'Since', 'Until', 'Trigger']}
          empty="No shaping in force."
        >
          {p.actions.map((a) => (
            <tr key={`${a.rule}:${a.project}:${a.action}`}>
              <td>
                <code>{a.rule}</code>
              </td>
              <td>{a.action}</td>
              <td>{a.action === 'suspend' ? '—' : num(a.value)}</td>
              <td>{a.project ?? 'all'}</td>
              <td>
                <Time iso={a.since} />
              </td>
              <td>{a.until ? <Time iso={a.until} /> : 'until lifted'}</td>
              <td className="wrap-text">
                <Clip text={a.trigger} cut={a.trigger.length >= RECORDED_MAX} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      <h3>Answers by enhanced code</h3>
      {p.answers.length === 0 ? (
        <p className="muted small">No answers recorded.</p>
      ) : (
        <Table label={`Answers of ${p.provider}`} head={['Enhanced code', 'Count', 'Sample answer', 'Last']} empty="No answers recorded.">
          {p.answers.map((a) => (
            <tr key={a.enhanced_code}>
              <td>
                <code>{a.enhanced_code}</code>
              </td>
              <td>{num(a.count)}</td>
              <td className="wrap-text">
                <Clip text={a.sample} cut={a.sample.length >= RECORDED_MAX} />
              </td>
              <td>
                <Time iso={a.last_at} />
              </td>
            </tr>
          ))}
        </Table>
      )}
      <div className="two">
        <div>
          <h3>Throttle</h3>
          <ThrottleForm provider={p.provider} throttle={throttle} onSaved={onChange} />
        </div>
        <div>
          <h3>Queue control</h3>
          <Controls provider={p.provider} suspensions={suspensions} onChange={onChange} />
        </div>
      </div>
    </article>
  );
}

/** Suspend or wake a provider that has no card yet (no mail queued and no throttle). */
function OtherProvider({ known, onChange }: { known: string[]; onChange: () => void }) {
  const [name, setName] = useState('');
  const valid = /^[a-z0-9-]{1,40}$/.test(name) && !known.includes(name);
  return (
    <section className="card" aria-labelledby="other-h">
      <h2 id="other-h">Another provider</h2>
      <label className="inline">
        <span>Provider name</span>
        <input value={name} onChange={(e) => setName(e.target.value.trim().toLowerCase())} placeholder="e.g. google" maxLength={40} />
      </label>
      {valid ? <Controls provider={name} suspensions={[]} onChange={onChange} /> : null}
    </section>
  );
}

export default function Providers() {
  const { data, error, loading, reload } = usePoll(loadAll, [], 5000);
  const names = data ? [...new Set([...data.status.providers.map((p) => p.provider), ...data.throttles.map((t) => t.provider)])] : [];
  const empty = (name: string): Provider => ({
    provider: name,
    queue: { ready: 0, in_flight: 0, deferred: { receiver: 0, network: 0, pacing: 0, volume: 0, shaping: 0, suspended: 0 } },
    connections: { open: 0, limit: null },
    rate: { per_minute: 0, configured: null, effective: null },
    warmup: [],
    answers: [],
    windows: {
      last_5m: { delivered: 0, deferred: 0, bounced: 0, complained: 0 },
      last_hour: { delivered: 0, deferred: 0, bounced: 0, complained: 0 },
      last_day: { delivered: 0, deferred: 0, bounced: 0, complained: 0 },
    },
    actions: [],
    projects: [],
  });
  const everywhere = data?.suspensions.filter((s) => s.provider === null) ?? [];
  // Providers with something to look at first (suspended, shaped, mail waiting, traffic), then by name.
  const cards = names
    .map((name) => ({
      p: data?.status.providers.find((p) => p.provider === name) ?? empty(name),
      suspensions: data?.suspensions.filter((s) => s.provider === name) ?? [],
    }))
    .map((c) => ({ ...c, weight: activity(c.p, c.suspensions) }))
    .sort((a, b) => b.weight - a.weight || a.p.provider.localeCompare(b.p.provider));
  const hasData = data !== undefined;
  // An address with #provider (a link from the overview) scrolls to its card once the cards are there.
  useEffect(() => {
    if (!hasData || !window.location.hash) return;
    document.getElementById(decodeURIComponent(window.location.hash.slice(1)))?.scrollIntoView();
  }, [hasData]);
  return (
    <Page title="Providers">
      <ErrorBox error={error} />
      <Loading show={loading && !data} />
      {data ? (
        <>
          {data.status.held.emails ? (
            <p className="notice">
              {num(data.status.held.emails)} email{data.status.held.emails === 1 ? '' : 's'} held by volume pacing.
            </p>
          ) : null}
          {everywhere.length ? (
            <p className="notice">
              {everywhere.length} suspension{everywhere.length === 1 ? '' : 's'} cover every provider
              {everywhere.map((s) => (s.project ? ` (project ${s.project})` : '')).join('')}.
            </p>
          ) : null}
          {names.length === 0 ? <p className="muted">No provider has mail or a throttle yet.</p> : null}
          <Table
            label="All providers"
            head={['Provider', 'State', 'Ready', 'In flight', 'Deferred', 'Connections open / limit', 'Per minute', 'Delivered, hour', 'Bounced, hour']}
          >
            {cards.map(({ p, suspensions }) => (
              <tr key={p.provider}>
                <td>
                  <a href={`#${p.provider}`}>{p.provider}</a>
                </td>
                <td>
                  <State p={p} suspensions={suspensions} />
                </td>
                <td>{num(p.queue.ready)}</td>
                <td>{num(p.queue.in_flight)}</td>
                <td>{num(Object.values(p.queue.deferred).reduce((a, b) => a + b, 0))}</td>
                <td title="open connections (busy + idle kept for reuse) / the limit">
                  {num(p.connections.open)} / {p.connections.limit === null ? '∞' : num(p.connections.limit)}
                </td>
                <td>{num(p.rate.per_minute)}</td>
                <td>{num(p.windows.last_hour.delivered)}</td>
                <td>{num(p.windows.last_hour.bounced)}</td>
              </tr>
            ))}
          </Table>
          {cards.map(({ p, suspensions }) => (
            <ProviderCard key={p.provider} p={p} throttle={data.throttles.find((t) => t.provider === p.provider)} suspensions={suspensions} onChange={reload} />
          ))}
          <OtherProvider known={names} onChange={reload} />
        </>
      ) : null}
    </Page>
  );
}
