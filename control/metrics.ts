// Prometheus text exposition of a few counters and gauges; no labels beyond what is passed.
export class Metrics {
  private readonly counters = new Map<string, number>();
  private readonly gauges = new Map<string, () => number>();
  private readonly help = new Map<string, string>();

  inc(name: string, by = 1): void {
    this.counters.set(name, (this.counters.get(name) ?? 0) + by);
  }

  describe(name: string, help: string): void {
    this.help.set(name, help);
  }

  gauge(name: string, read: () => number, help?: string): void {
    this.gauges.set(name, read);
    if (help) this.help.set(name, help);
  }

  render(): string {
    const lines: string[] = [];
    const metricName = (k: string) => k.replace(/\{.*$/, '');
    const typed = new Set<string>();
    const head = (k: string, type: string) => {
      const n = metricName(k);
      if (typed.has(n)) return;
      typed.add(n);
      if (this.help.has(n)) lines.push(`# HELP ${n} ${this.help.get(n)}`);
      lines.push(`# TYPE ${n} ${type}`);
    };
    for (const [k, v] of [...this.counters].sort()) {
      head(k, 'counter');
      lines.push(`${k} ${v}`);
    }
    for (const [k, read] of [...this.gauges].sort()) {
      head(k, 'gauge');
      lines.push(`${k} ${read()}`);
    }
    return `${lines.join('\n')}\n`;
  }
}
