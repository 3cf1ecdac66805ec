// core/metrics.ts: the one registry of both processes. Families declared once with HELP and TYPE,
// counters ending in _total and at 0 from the start for every listed label value, label values
// checked against their declaration and escaped, gauges read at scrape, histograms cumulative with
// +Inf = count; several gateways' expositions merged with a label each. Parsed back with a real
// Prometheus text parser.
import { describe, expect, it } from 'vitest';
import { escapeLabelValue, formatValue, mergeExpositions, Registry } from '../../core/metrics.js';
import { expositionProblems, parseExposition } from '../helpers/prometheus.js';

describe('Registry', () => {
  it('counters: HELP and TYPE once, every listed combination at 0 from the start, incremented by series', () => {
    const r = new Registry();
    const c = r.counter('postgate_things_total', 'Things done', { kind: ['a', 'b'], outcome: ['ok', 'failed'] });
    const plain = r.counter('postgate_plain_total', 'No labels');
    expect(r.render()).toBe(
      [
        '# HELP postgate_things_total Things done',
        '# TYPE postgate_things_total counter',
        'postgate_things_total{kind="a",outcome="failed"} 0',
        'postgate_things_total{kind="a",outcome="ok"} 0',
        'postgate_things_total{kind="b",outcome="failed"} 0',
        'postgate_things_total{kind="b",outcome="ok"} 0',
        '# HELP postgate_plain_total No labels',
        '# TYPE postgate_plain_total counter',
        'postgate_plain_total 0',
        '',
      ].join('\n'),
    );
    c.with({ kind: 'b', outcome: 'ok' }).inc();
    c.with({ outcome: 'ok', kind: 'b' }).inc(2);
    plain.inc();
    expect(r.render()).toContain('postgate_things_total{kind="b",outcome="ok"} 3\n');
    expect(r.render()).toContain('postgate_plain_total 1\n');
    // A counter only goes up.
    expect(() => plain.inc(-1)).toThrow(/only goes up/);
  });

  it('refuses what would make a bad exposition: counters without _total, a family twice, no HELP, a value outside the declaration', () => {
    const r = new Registry();
    expect(() => r.counter('postgate_things', 'x')).toThrow(/_total/);
    expect(() => r.gauge('postgate_things_total', 'x')).toThrow(/_total/);
    expect(() => r.counter('postgate_x_total', ' ')).toThrow(/HELP/);
    expect(() => r.counter('bad-name_total', 'x')).toThrow(/bad name/);
    expect(() => r.histogram('postgate_h', 'x', { buckets: [1, 0.5] })).toThrow(/ascending/);
    expect(() => r.histogram('postgate_h2', 'x', { buckets: [1], labels: { le: ['1'] } })).toThrow(/le/);
    const c = r.counter('postgate_once_total', 'x', { provider: ['google', 'other'], project: /^[a-z0-9-]+$/ });
    expect(() => r.counter('postgate_once_total', 'x')).toThrow(/twice/);
    expect(() => c.with({ provider: 'example.com', project: 'acme' })).toThrow(/not an allowed value/);
    expect(() => c.with({ provider: 'google', project: 'a@b.test' })).toThrow(/not an allowed value/);
    expect(() => c.with({ provider: 'google' } as never)).toThrow();
    // With a pattern-checked label, nothing exists before it is used.
    expect(r.render()).not.toMatch(/^postgate_once_total/m);
    c.with({ provider: 'google', project: 'acme' }).inc();
    expect(r.render()).toContain('postgate_once_total{provider="google",project="acme"} 1\n');
  });

  it('label values and HELP are escaped per the text format', async () => {
    expect(escapeLabelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
    const r = new Registry();
    r.counter('postgate_odd_total', 'back\\slash and\nnewline', { v: /.*/s }).with({ v: 'x"y\\z\nw' }).inc();
    const text = r.render();
    expect(text).toContain('# HELP postgate_odd_total back\\\\slash and\\nnewline\n');
    expect(text).toContain('postgate_odd_total{v="x\\"y\\\\z\\nw"} 1\n');
    const parsed = await parseExposition(text);
    expect((parsed.postgate_odd_total!.data[0] as { labels: Record<string, string> }).labels.v).toBe('x"y\\z\nw');
  });

  it('gauges: set, read at each scrape, or collected per label (values gone since drop back to 0)', () => {
    const r = new Registry();
    let depth = 4;
    r.gauge('postgate_depth', 'Waiting', { read: () => depth });
    const set = r.gauge('postgate_set', 'Set by hand');
    let now: Array<[string, number]> = [
      ['ready', 2],
      ['deferred', 5],
    ];
    r.gauge('postgate_queue', 'By state', {
      labels: { state: ['ready', 'deferred', 'in_flight'] },
      collect: (put) => {
        for (const [state, n] of now) put({ state }, n);
      },
    });
    r.gauge('postgate_failing', 'A reader that throws', {
      read: () => {
        throw new Error('x');
      },
    });
    set.set(7);
    let text = r.render();
    expect(text).toContain('postgate_depth 4\n');
    expect(text).toContain('postgate_set 7\n');
    expect(text).toContain('postgate_queue{state="deferred"} 5\npostgate_queue{state="in_flight"} 0\npostgate_queue{state="ready"} 2\n');
    expect(text).toContain('postgate_failing NaN\n');
    depth = 9;
    now = [['in_flight', 1]];
    text = r.render();
    expect(text).toContain('postgate_depth 9\n');
    expect(text).toContain('postgate_queue{state="deferred"} 0\npostgate_queue{state="in_flight"} 1\npostgate_queue{state="ready"} 0\n');
  });

  it('counters read from a count kept elsewhere', () => {
    const r = new Registry();
    let commits = 3;
    r.counter('postgate_commits_total', 'Commits').collectFrom(() => commits);
    expect(r.render()).toContain('postgate_commits_total 3\n');
    commits = 5;
    expect(r.render()).toContain('postgate_commits_total 5\n');
  });

  it('histograms: cumulative buckets, +Inf = count, _sum and _count, every listed label at 0', async () => {
    const r = new Registry();
    const h = r.histogram('postgate_latency_seconds', 'Latency', { buckets: [0.1, 1, 10], labels: { provider: ['google', 'other'] } });
    for (const v of [0.05, 0.1, 0.5, 3, 60]) h.with({ provider: 'google' }).observe(v);
    const text = r.render();
    expect(text).toContain(
      [
        'postgate_latency_seconds_bucket{provider="google",le="0.1"} 2',
        'postgate_latency_seconds_bucket{provider="google",le="1"} 3',
        'postgate_latency_seconds_bucket{provider="google",le="10"} 4',
        'postgate_latency_seconds_bucket{provider="google",le="+Inf"} 5',
        'postgate_latency_seconds_sum{provider="google"} 63.65',
        'postgate_latency_seconds_count{provider="google"} 5',
        'postgate_latency_seconds_bucket{provider="other",le="0.1"} 0',
      ].join('\n'),
    );
    const parsed = await parseExposition(text);
    expect(expositionProblems(parsed)).toEqual([]);
    expect(parsed.postgate_latency_seconds).toMatchObject({ type: 'histogram', help: 'Latency' });
    expect(parsed.postgate_latency_seconds!.data).toEqual([
      { labels: { provider: 'google' }, count: 5, sum: 63.65, buckets: { '0.1': 2, '1': 3, '10': 4, '+Inf': 5 } },
      { labels: { provider: 'other' }, count: 0, sum: 0, buckets: { '0.1': 0, '1': 0, '10': 0, '+Inf': 0 } },
    ]);
  });

  it('numbers as Go reads them; an empty registry renders nothing', () => {
    expect(formatValue(Infinity)).toBe('+Inf');
    expect(formatValue(-Infinity)).toBe('-Inf');
    expect(formatValue(Number.NaN)).toBe('NaN');
    expect(formatValue(1e21)).toBe('1e+21');
    expect(new Registry().render()).toBe('');
  });

  it('scrape() refreshes what must be fetched, then appends the sources after the own families', async () => {
    const r = new Registry();
    r.counter('postgate_a_total', 'A');
    const fetched = r.gauge('postgate_fetched', 'Fetched before each scrape');
    let n = 0;
    r.beforeScrape(async () => fetched.set(++n));
    r.beforeScrape(async () => {
      throw new Error('database away');
    });
    expect(await r.scrape()).toContain('postgate_fetched 1\n');
    expect(await r.scrape()).toContain('postgate_fetched 2\n');
    // One that never answers holds the scrape a second at most.
    r.beforeScrape(() => new Promise<void>(() => {}));
    expect(await r.scrape()).toContain('postgate_fetched 3\n');
    r.append(async () => '# HELP postgate_b B\n# TYPE postgate_b gauge\npostgate_b 1\n');
    const text = await r.scrape();
    expect(Object.keys(await parseExposition(text))).toEqual(['postgate_a_total', 'postgate_fetched', 'postgate_b']);
  });
});

describe('mergeExpositions', () => {
  it("several gateways' text as one: each family once, each sample with its gateway label", async () => {
    const gw = () => {
      const r = new Registry();
      r.counter('postgate_gateway_attempts_total', 'Attempts', { provider: ['google', 'other'] });
      r.gauge('postgate_gateway_rss_bytes', 'Memory', { read: () => 10 });
      r.histogram('postgate_delivery_latency_seconds', 'Latency', { buckets: [1], labels: { provider: ['google'] } });
      return r;
    };
    const a = gw();
    const b = gw();
    const text = mergeExpositions([
      { labels: { gateway: '127.0.0.1:1' }, text: a.render() },
      { labels: { gateway: '127.0.0.1:2' }, text: b.render() },
    ]);
    const parsed = await parseExposition(text);
    expect(expositionProblems(parsed)).toEqual([]);
    expect(Object.keys(parsed)).toEqual(['postgate_gateway_attempts_total', 'postgate_gateway_rss_bytes', 'postgate_delivery_latency_seconds']);
    expect(text.match(/# TYPE postgate_gateway_attempts_total/g)).toHaveLength(1);
    const attempts = parsed.postgate_gateway_attempts_total!.data;
    expect(attempts).toHaveLength(4);
    expect(attempts.map((m) => m.labels)).toContainEqual({ gateway: '127.0.0.1:2', provider: 'other' });
    expect(text).toContain('postgate_gateway_rss_bytes{gateway="127.0.0.1:1"} 10\n');
    expect(parsed.postgate_delivery_latency_seconds!.data).toEqual([
      { labels: { gateway: '127.0.0.1:1', provider: 'google' }, buckets: { '1': 0, '+Inf': 0 }, count: 0, sum: 0 },
      { labels: { gateway: '127.0.0.1:2', provider: 'google' }, buckets: { '1': 0, '+Inf': 0 }, count: 0, sum: 0 },
    ]);
    expect(mergeExpositions([])).toBe('');
  });
});
