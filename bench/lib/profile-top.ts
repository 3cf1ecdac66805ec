// `node --import tsx bench/lib/profile-top.ts <file.cpuprofile> [N]`: where a process spent its CPU,
// from a profile written with BENCH_PROFILE=<dir>: self time by function (top N), by package or
// source area, and inclusive time of postgate's own functions.
import fs from 'node:fs';

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const [file, nArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: profile-top.ts <file.cpuprofile> [N]');
  process.exit(2);
}
const N = Number(nArg || 30);
// Piped into head: a closed pipe ends the listing, not with a stack trace.
process.stdout.on('error', () => process.exit(0));
const p = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// Self time per node from the samples and their time deltas (µs).
const self = new Map<number, number>();
for (const [i, id] of p.samples.entries()) self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const idle = [...self].filter(([id]) => byId.get(id)!.callFrame.functionName === '(idle)').reduce((a, [, t]) => a + t, 0);

const area = (url: string): string => {
  if (!url) return '(native/vm)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0)
    return url
      .slice(nm + 13)
      .split('/')
      .slice(0, url.slice(nm + 13).startsWith('@') ? 2 : 1)
      .join('/');
  if (url.startsWith('node:')) return url;
  const m = url.match(/\/dist[^/]*\/(.+)$/);
  return m ? m[1]! : url.replace(/^file:\/\//, '');
};
const label = (n: Node) => `${n.callFrame.functionName || '(anonymous)'} ${area(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
const fnSelf = new Map<string, number>();
const areaSelf = new Map<string, number>();
for (const [id, t] of self) {
  const n = byId.get(id)!;
  add(fnSelf, label(n), t);
  add(areaSelf, area(n.callFrame.url) + (n.callFrame.url ? '' : ` ${n.callFrame.functionName}`), t);
}
// Inclusive time of every function with a source of our own (each counted once per sample stack).
const incl = new Map<string, number>();
p.samples.forEach((id, i) => {
  const seen = new Set<string>();
  for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
    const n = byId.get(cur)!;
    if (!n.callFrame.url || n.callFrame.url.includes('node_modules') || n.callFrame.url.startsWith('node:')) continue;
    const k = label(n);
    if (!seen.has(k)) {
      seen.add(k);
      add(incl, k, p.timeDeltas[i] ?? 0);
    }
  }
});

const pct = (t: number) => `${((100 * t) / (total - idle)).toFixed(1).padStart(5)}%`;
const show = (title: string, m: Map<string, number>, n: number) => {
  console.log(`\n${title}`);
  for (const [k, t] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${pct(t)} ${(t / 1000).toFixed(0).padStart(7)} ms  ${k}`);
};
console.log(`${file}: ${((total - idle) / 1000).toFixed(0)} ms busy of ${(total / 1000).toFixed(0)} ms sampled (percentages of busy)`);
show('self time by function', fnSelf, N);
show('self time by package / area', areaSelf, N);
show("inclusive time of postgate's functions", incl, N);
