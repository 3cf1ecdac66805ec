// Overview: what was accepted and what became of it (per minute over the last hour, per hour over the
// last day), the queue by state, the providers suspended or shaped now, and the alerts.
import { useMemo } from 'react';
import { api, ok } from '../api';
import { bucketTimes, COLORS, Chart, type Line } from '../components/Chart';
import { Badge, ErrorBox, Loading, num, Page, Stat, Table, Time, time } from '../components/ui';
import { usePoll } from '../hooks';
import { Link } from '../router';

const KINDS = ['accepted', 'delivered', 'deferred', 'bounced', 'complained'] as const;
// Drawn in this order: accepted last and dashed, so where delivered lies on it both still show.
const DRAWN = ['delivered', 'deferred', 'bounced', 'complained', 'accepted'] as const;
type Span = { start: string; step_s: number } & Record<(typeof KINDS)[number], number[]>;

function SpanChart({ title, span }: { title: string; span: Span }) {
  const times = useMemo(() => bucketTimes(span.start, span.step_s, span.accepted.length), [span]);
  const lines: Line[] = useMemo(() => DRAWN.map((k) => ({ label: k, values: span[k], color: COLORS[k], dash: k === 'accepted' })), [span]);
  return <Chart title={title} times={times} lines={lines} />;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

export function Overview() {
  const { data, error, loading } = usePoll(() => ok(api.GET('/admin/v1/overview')), [], 5000);
  return (
    <Page title="Overview" actions={data ? <span className="muted small">Updated {time(data.at)}</span> : null}>
      <ErrorBox error={error} />
      <Loading show={loading && !data} />
      {data ? (
        <>
          {data.unreachable.length ? (
            <div className="error" role="alert">
              Unreachable gateways: {data.unreachable.join(', ')}
            </div>
          ) : null}
          <section aria-labelledby="alerts-h">
            <h2 id="alerts-h">Alerts</h2>
            {data.alerts.length === 0 ? (
              <p className="muted">No alerts.</p>
            ) : (
              <ul className="alerts">
                {data.alerts.map((a) => (
                  <li key={`${a.kind}:${a.project}:${a.provider}`} className={`alert ${a.severity}`}>
                    <Badge tone={a.severity === 'critical' ? 'bad' : 'warn'}>{a.severity}</Badge> {a.message}
                  </li>
                ))}
              </ul>
            )}
          </section>
          <div className="stats">
            <Stat label="Accepted, last hour" value={num(sum(data.series.minute.accepted))} />
            <Stat label="Delivered, last hour" value={num(sum(data.series.minute.delivered))} />
            <Stat label="Bounced, last hour" value={num(sum(data.series.minute.bounced))} />
            <Stat label="Accepted, last day" value={num(sum(data.series.hour.accepted))} />
          </div>
          <div className="charts">
            <SpanChart title="Last hour, per minute" span={data.series.minute} />
            <SpanChart title="Last day, per hour" span={data.series.hour} />
          </div>
          <section aria-labelledby="queue-h">
            <h2 id="queue-h">Queue</h2>
            <div className="stats">
              <Stat label="Ready" value={num(data.queue.ready)} />
              <Stat label="In flight" value={num(data.queue.in_flight)} />
              <Stat label="Deferred" value={num(sum(Object.values(data.queue.deferred)))} />
              <Stat label="Held" value={num(data.queue.held)} />
              <Stat label="Scheduled" value={num(data.queue.scheduled)} />
              <Stat label="Oldest waiting" value={<Time iso={data.queue.oldest_at} />} />
            </div>
            <Table label="Deferred by cause" head={Object.keys(data.queue.deferred)}>
              <tr>
                {Object.entries(data.queue.deferred).map(([k, v]) => (
                  <td key={k}>{num(v)}</td>
                ))}
              </tr>
            </Table>
          </section>
          <section aria-labelledby="prov-h">
            <h2 id="prov-h">Providers suspended or shaped</h2>
            <Table label="Providers suspended or shaped" head={['Provider', 'State', 'Actions', 'Until']} empty="Every provider is sending normally.">
              {data.providers.map((p) => (
                <tr key={p.provider}>
                  <td>
                    <Link to={`/providers#${p.provider}`}>{p.provider}</Link>
                  </td>
                  <td>
                    {p.suspended ? <Badge tone="bad">suspended</Badge> : null} {p.shaped ? <Badge tone="warn">shaped</Badge> : null}
                  </td>
                  <td>
                    {p.actions.map((a) => (
                      <div key={`${a.rule}:${a.project}`}>
                        {a.action}
                        {a.action !== 'suspend' ? ` ${a.value}` : ''} by <code>{a.rule}</code>
                        {a.project ? ` (${a.project})` : ''}
                      </div>
                    ))}
                    {p.suspensions.map((s) => (
                      <div key={s.id}>suspended{s.reason ? `: ${s.reason}` : ''}</div>
                    ))}
                  </td>
                  <td>
                    {[...p.actions.map((a) => a.until), ...p.suspensions.map((s) => s.until)].map((u, i) => (
                      // biome-ignore lint/suspicious/noArrayIndexKey: one line per action, in order
                      <div key={i}>{u ? time(u) : 'until resumed'}</div>
                    ))}
                  </td>
                </tr>
              ))}
            </Table>
          </section>
          <p className="muted small">Nodes: {data.nodes.join(', ') || '—'}</p>
        </>
      ) : null}
    </Page>
  );
}
