// The one metrics registry of both processes, rendered in Prometheus' text format (0.0.4).
//
// Every family is declared once, with its HELP, TYPE and label names; a label is declared with
// the values it may take (a list: every combination exists at 0 from the start) or, where the
// values cannot be listed up front (route patterns, project slugs), a pattern they must match.
// A value outside the declaration throws: labels stay bounded, and a mistake shows in the tests.
// Counters end in _total; histograms render _bucket (cumulative, le="+Inf" = count), _sum, _count.

/** The allowed values of a label: listed (bounded, pre-created at 0), or a pattern they must match. */
export type LabelValues = readonly string[] | RegExp;
export type LabelSpec<L extends string> = { readonly [K in L]: LabelValues };
export type Labels<L extends string> = { readonly [K in L]: string };

type Type = 'counter' | 'gauge' | 'histogram';

/** How long scrape() waits for the gauges it fetches. */
const REFRESH_MS = 1_000;

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** A label value as the text format writes it inside quotes. */
export const escapeLabelValue = (v: string): string => (/[\\"\n]/.test(v) ? v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n') : v);
const escapeHelp = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');

/** A sample value: Go's ParseFloat reads what String() writes, except the infinities. */
export function formatValue(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

abstract class Family<L extends string, S> {
  protected readonly series = new Map<string, S>();
  private readonly labelNames: readonly L[];

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: Type,
    private readonly spec: LabelSpec<L>,
  ) {
    if (!NAME.test(name)) throw new Error(`metrics: bad name ${name}`);
    if (!help.trim()) throw new Error(`metrics: ${name} has no HELP`);
    this.labelNames = Object.keys(spec) as L[];
    for (const l of this.labelNames) if (!LABEL.test(l) || l.startsWith('__')) throw new Error(`metrics: ${name} has a bad label name ${l}`);
  }

  /** Creates every combination of the listed values, when every label is listed (none: the one series). */
  protected precreate(): void {
    const lists = this.labelNames.map((l) => this.spec[l]);
    if (lists.some((v) => v instanceof RegExp)) return;
    const walk = (i: number, acc: Record<string, string>) => {
      if (i === lists.length) return void this.with(acc as Labels<L>);
      for (const v of lists[i] as readonly string[]) walk(i + 1, { ...acc, [this.labelNames[i]!]: v });
    };
    walk(0, {});
  }

  private single?: S;

  /** The one series of a family without labels (kept: hot paths call inc() or observe() on the family). */
  protected only(): S {
    return (this.single ??= this.with({} as Labels<L>));
  }

  /** The series of these label values (created at 0 the first time). Hot paths keep what this returns. */
  with(labels: Labels<L>): S {
    let key = '';
    for (const l of this.labelNames) {
      const v = labels[l];
      const allowed = this.spec[l];
      if (typeof v !== 'string' || (allowed instanceof RegExp ? !allowed.test(v) : !allowed.includes(v)))
        throw new Error(`metrics: ${this.name}: ${l}=${JSON.stringify(v)} is not an allowed value`);
      key += `${key ? ',' : ''}${l}="${escapeLabelValue(v)}"`;
    }
    if (Object.keys(labels).length !== this.labelNames.length)
      throw new Error(`metrics: ${this.name}: labels ${Object.keys(labels)} are not ${this.labelNames}`);
    let s = this.series.get(key);
    if (!s) this.series.set(key, (s = this.create()));
    return s;
  }

  protected abstract create(): S;
  protected abstract lines(name: string, labels: string, s: S, out: string[]): void;

  /** Called before rendering (gauges read at scrape). */
  protected collect(): void {}

  render(out: string[]): void {
    this.collect();
    out.push(`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`);
    for (const key of [...this.series.keys()].sort()) this.lines(this.name, key, this.series.get(key)!, out);
  }
}

const braces = (labels: string) => (labels ? `{${labels}}` : '');

class CounterCell {
  value = 0;
  inc(by = 1): void {
    if (!(by >= 0)) throw new Error('metrics: a counter only goes up');
    this.value += by;
  }
}

class GaugeCell {
  value = 0;
  set(v: number): void {
    this.value = v;
  }
  inc(by = 1): void {
    this.value += by;
  }
}

export interface CounterSeries {
  inc(by?: number): void;
  readonly value: number;
}

export class Counter<L extends string = never> extends Family<L, CounterSeries> {
  constructor(name: string, help: string, spec: LabelSpec<L>) {
    if (!name.endsWith('_total')) throw new Error(`metrics: counter ${name} must end in _total`);
    super(name, help, 'counter', spec);
    this.precreate();
  }

  protected create(): CounterSeries {
    return new CounterCell();
  }

  /** The label-free counter's one series. */
  inc(this: Counter<never>, by = 1): void {
    this.only().inc(by);
  }

  private reader?: () => number;

  /** A count kept elsewhere (only ever growing), read at each scrape. */
  collectFrom(this: Counter<never>, read: () => number): Counter<never> {
    this.reader = read;
    return this;
  }

  protected override collect(): void {
    if (!this.reader) return;
    const cell = this.with({} as Labels<L>) as CounterCell;
    try {
      cell.value = this.reader();
    } catch {
      // The source could not be read now: the last value stands.
    }
  }

  protected lines(name: string, labels: string, s: CounterSeries, out: string[]): void {
    out.push(`${name}${braces(labels)} ${formatValue(s.value)}`);
  }
}

export interface GaugeSeries {
  set(v: number): void;
  inc(by?: number): void;
  readonly value: number;
}

export interface GaugeOptions<L extends string> {
  labels?: LabelSpec<L>;
  /** Label-free: the value, read at each scrape. */
  read?: () => number;
  /**
   * Labelled, read at each scrape: every series is set back to 0 (those with a pattern-checked
   * label are dropped, so gone values go), then `put` sets what is there now.
   */
  collect?: (put: (labels: Labels<L>, value: number) => void) => void;
}

export class Gauge<L extends string = never> extends Family<L, GaugeSeries> {
  constructor(
    name: string,
    help: string,
    private readonly opts: GaugeOptions<L>,
  ) {
    if (name.endsWith('_total')) throw new Error(`metrics: gauge ${name} must not end in _total`);
    super(name, help, 'gauge', opts.labels ?? ({} as LabelSpec<L>));
    this.precreate();
    this.bounded = new Set(this.series.keys());
  }

  private readonly bounded: Set<string>;

  protected create(): GaugeSeries {
    return new GaugeCell();
  }

  set(this: Gauge<never>, v: number): void {
    this.only().set(v);
  }

  protected override collect(): void {
    const { read, collect } = this.opts;
    if (read) {
      let v: number;
      try {
        v = read();
      } catch {
        v = Number.NaN;
      }
      this.with({} as Labels<L>).set(v);
    }
    if (collect) {
      for (const [k, s] of this.series) {
        if (this.bounded.has(k)) s.set(0);
        else this.series.delete(k);
      }
      try {
        collect((labels, value) => this.with(labels).inc(value));
      } catch {
        // A reader that fails shows zeros rather than failing the whole scrape.
      }
    }
  }

  protected lines(name: string, labels: string, s: GaugeSeries, out: string[]): void {
    out.push(`${name}${braces(labels)} ${formatValue(s.value)}`);
  }
}

export interface HistogramSeries {
  observe(v: number): void;
  readonly count: number;
  readonly sum: number;
  /** Observations per bucket (not cumulative), the last one above every bound. */
  readonly counts: readonly number[];
}

export interface HistogramOptions<L extends string> {
  /** Upper bounds, ascending; +Inf is added. */
  buckets: readonly number[];
  labels?: LabelSpec<L>;
}

export class Histogram<L extends string = never> extends Family<L, HistogramSeries> {
  private readonly buckets: readonly number[];

  constructor(name: string, help: string, opts: HistogramOptions<L>) {
    if (name.endsWith('_total') || /_(bucket|sum|count)$/.test(name)) throw new Error(`metrics: histogram ${name} has a suffix of its own series`);
    if ('le' in (opts.labels ?? {})) throw new Error(`metrics: histogram ${name} cannot have a label named le`);
    super(name, help, 'histogram', opts.labels ?? ({} as LabelSpec<L>));
    const b = opts.buckets;
    if (!b.length || b.some((x, i) => !Number.isFinite(x) || (i > 0 && x <= b[i - 1]!)))
      throw new Error(`metrics: histogram ${name}: buckets must be finite and ascending`);
    this.buckets = b;
    this.precreate();
  }

  protected create(): HistogramSeries {
    const buckets = this.buckets;
    const s = {
      count: 0,
      sum: 0,
      counts: new Array<number>(buckets.length + 1).fill(0),
      observe(v: number) {
        let i = 0;
        while (i < buckets.length && v > buckets[i]!) i++;
        s.counts[i]!++;
        s.count++;
        s.sum += v;
      },
    };
    return s;
  }

  observe(this: Histogram<never>, v: number): void {
    this.only().observe(v);
  }

  protected lines(name: string, labels: string, s: HistogramSeries, out: string[]): void {
    const pre = labels ? `${labels},` : '';
    let cumulative = 0;
    for (let i = 0; i <= this.buckets.length; i++) {
      cumulative += s.counts[i]!;
      const le = i < this.buckets.length ? formatValue(this.buckets[i]!) : '+Inf';
      out.push(`${name}_bucket{${pre}le="${le}"} ${cumulative}`);
    }
    out.push(`${name}_sum${braces(labels)} ${formatValue(s.sum)}`, `${name}_count${braces(labels)} ${s.count}`);
  }
}

export class Registry {
  private readonly families = new Map<string, Family<string, unknown>>();
  private readonly sources: Array<() => Promise<string>> = [];
  private readonly refreshers: Array<() => Promise<void>> = [];

  private add<F extends Family<string, unknown>>(f: F): F {
    if (this.families.has(f.name)) throw new Error(`metrics: ${f.name} is declared twice`);
    this.families.set(f.name, f);
    return f;
  }

  counter<L extends string = never>(name: string, help: string, labels?: LabelSpec<L>): Counter<L> {
    return this.add(new Counter<L>(name, help, labels ?? ({} as LabelSpec<L>)));
  }

  gauge<L extends string = never>(name: string, help: string, opts: GaugeOptions<L> = {}): Gauge<L> {
    return this.add(new Gauge<L>(name, help, opts));
  }

  histogram<L extends string = never>(name: string, help: string, opts: HistogramOptions<L>): Histogram<L> {
    return this.add(new Histogram<L>(name, help, opts));
  }

  /** The declared family names. */
  names(): string[] {
    return [...this.families.keys()];
  }

  /** This registry's families, in the order they were declared. */
  render(): string {
    const out: string[] = [];
    for (const f of this.families.values()) f.render(out);
    return out.length ? `${out.join('\n')}\n` : '';
  }

  /** Text from elsewhere (control: its gateways' families) appended to each scrape. */
  append(source: () => Promise<string>): void {
    this.sources.push(source);
  }

  /** Run before each scrape() renders: sets gauges whose value must be fetched (a database count). A failure keeps the last value. */
  beforeScrape(refresh: () => Promise<void>): void {
    this.refreshers.push(refresh);
  }

  /** render() and the appended sources: what /metrics answers. */
  async scrape(): Promise<string> {
    // A source that does not answer within a second (a database away) keeps its last value: the scrape is not held.
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, REFRESH_MS);
    });
    await Promise.race([Promise.all(this.refreshers.map((r) => r().catch(() => undefined))), late]);
    clearTimeout(timer);
    const own = this.render();
    const more = await Promise.all(this.sources.map((s) => s()));
    return own + more.join('');
  }
}

/** The bits of one sample line: `name{labels} value`. */
function splitSample(line: string): { name: string; rest: string } {
  const i = line.search(/[{ ]/);
  return { name: line.slice(0, i), rest: line.slice(i) };
}

/**
 * Several expositions of the same families (one per gateway) as one: each family's HELP and
 * TYPE once, each sample with the part's labels added in front of its own.
 */
export function mergeExpositions(parts: ReadonlyArray<{ labels: Readonly<Record<string, string>>; text: string }>): string {
  const families = new Map<string, { head: string[]; samples: string[] }>();
  const familyOf = (sample: string, known: Set<string>) => {
    if (known.has(sample)) return sample;
    const base = sample.replace(/_(bucket|sum|count)$/, '');
    return known.has(base) ? base : sample;
  };
  for (const { labels, text } of parts) {
    const extra = Object.entries(labels)
      .map(([k, v]) => `${k}="${escapeLabelValue(v)}"`)
      .join(',');
    const known = new Set<string>();
    for (const line of text.split('\n')) {
      if (!line.trim()) continue;
      const meta = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (meta) {
        const name = meta[2]!;
        known.add(name);
        let f = families.get(name);
        if (!f) families.set(name, (f = { head: [], samples: [] }));
        if (f.head.length < 2 && !f.head.some((h) => h.startsWith(`# ${meta[1]} `))) f.head.push(line);
        continue;
      }
      if (line.startsWith('#')) continue;
      const { name, rest } = splitSample(line);
      const f = families.get(familyOf(name, known));
      if (!f) continue; // a sample with no declared family: not ours to guess
      const own = rest.startsWith('{') ? rest.slice(1) : `}${rest}`;
      f.samples.push(!extra ? line : `${name}{${extra}${own.startsWith('}') ? '' : ','}${own}`);
    }
  }
  const out: string[] = [];
  for (const f of families.values()) out.push(...f.head, ...f.samples);
  return out.length ? `${out.join('\n')}\n` : '';
}

/** Where a process's memory is: resident, the JavaScript heap (used of committed), what lives outside it (Buffers). */
export function processMemoryGauges(registry: Registry, prefix: string, who: string): void {
  for (const [name, field, help] of [
    ['rss', 'rss', `Resident memory of ${who}`],
    ['heap_used', 'heapUsed', `JavaScript heap in use by ${who} (live and not yet collected)`],
    ['heap_total', 'heapTotal', `JavaScript heap committed by ${who}`],
    ['external', 'external', `Memory of Buffers and other objects ${who} holds outside the heap`],
  ] as const) {
    registry.gauge(`${prefix}_${name}_bytes`, help, { read: () => process.memoryUsage()[field] });
  }
}
