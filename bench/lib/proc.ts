// CPU time and memory of process trees, from /proc (Linux): what a contender costs, summed
// over every process it runs.
//
// CPU: utime + stime of each live process of the tree, plus cutime + cstime (the CPU of its
// children that have exited and been reaped): Postfix's master forks and reaps its daemons
// (smtpd, cleanup, smtp…) as they come and go, and their time must not be lost. A difference of
// two readings is the tree's CPU in between.
//
// Memory: PSS (proportional set size, /proc/<pid>/smaps_rollup) summed over the tree, so pages
// the processes share (the node executable, libc) count once in total, split between the
// processes that map them. PSS also splits them with processes outside the tree that map the
// same files (other node processes on the machine), so on a busy machine it reads a little low;
// bench/lib/rss.ts gives the other figure (each process's own memory, each file once).
import fs from 'node:fs';
import { memoryOf, tree, uniqueFilePages } from './rss.js';

export { tree };

const TICK_MS = 1000 / 100; // USER_HZ is 100 on Linux

function statFields(pid: number): string[] | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined; // exited meanwhile
  }
}

/** CPU ms of one process: its own (utime + stime) and its reaped children's (cutime + cstime). */
export function cpuOf(pid: number): { self: number; children: number } {
  const f = statFields(pid);
  if (!f) return { self: 0, children: 0 };
  // Fields 14-17 of /proc/<pid>/stat, here at 11-14 (the list starts at field 3).
  return { self: (Number(f[11]) + Number(f[12])) * TICK_MS, children: (Number(f[13]) + Number(f[14])) * TICK_MS };
}

/** The command name of a process (/proc/<pid>/comm). */
export function commOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '?';
  }
}

/** Total CPU ms of the trees under the roots. */
export function cpuMs(roots: number[]): number {
  let ms = 0;
  for (const pid of new Set(roots.flatMap((r) => tree(r)))) {
    const c = cpuOf(pid);
    ms += c.self + c.children;
  }
  return ms;
}

/**
 * CPU ms of the trees under the roots from now until stop(): the exact total (live processes and
 * reaped children, as cpuMs), and a breakdown by process name that follows processes which come
 * and go (Postfix's daemons exit after 100 uses and are forked again): every process is read each
 * `everyMs`, and one that exits is counted up to its last reading. What it spent after that reading
 * is the breakdown's remainder, "exited between readings".
 */
export function trackCpu(
  roots: () => number[],
  name: (pid: number) => string = commOf,
  everyMs = 200,
): { stop(): { total: number; byName: Map<string, number> } } {
  const seen = new Map<number, { name: string; first: number; last: number }>();
  const read = (initial: boolean) => {
    for (const pid of new Set(roots().flatMap((r) => tree(r)))) {
      const self = cpuOf(pid).self;
      const s = seen.get(pid);
      if (s) s.last = self;
      else seen.set(pid, { name: name(pid), first: initial ? self : 0, last: self });
    }
  };
  const total0 = cpuMs(roots());
  read(true);
  const timer = setInterval(() => read(false), everyMs);
  return {
    stop() {
      clearInterval(timer);
      read(false);
      const total = cpuMs(roots()) - total0;
      const byName = new Map<string, number>();
      for (const s of seen.values()) if (s.last > s.first) byName.set(s.name, (byName.get(s.name) ?? 0) + s.last - s.first);
      const rest = total - [...byName.values()].reduce((a, b) => a + b, 0);
      if (rest >= TICK_MS) byName.set('exited between readings', rest);
      return { total, byName };
    },
  };
}

/** PSS bytes of one process (0 once it has exited, or for a process we may not read). */
export function pssOf(pid: number): number {
  try {
    const text = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    return Number(/^Pss:\s+(\d+) kB/m.exec(text)?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

export interface TreeMemory {
  /** Peak of the tree's PSS sum. */
  pss: number;
  /** Peak of each process's own memory plus each mapped file once (bench/lib/rss.ts). */
  filesOnce: number;
  /** Peak of the processes' RSS added up. */
  rssSum: number;
  /** Processes in the tree at the last sample. */
  processes: number;
  /** Peak PSS of each process, by name (processes of one name summed), when a namer is given. */
  byName: Record<string, number>;
}

/**
 * Samples the memory of the trees under the roots until stopped; the peaks. Every `everyMs` each
 * process's own memory and resident file pages (/proc/<pid>/status, cheap); every `detailMs` what
 * needs smaps (each file's pages once, PSS), which walks the page tables under the process's
 * memory map lock. A Node process's peak (a burst of garbage before a full collection) lasts
 * well under a second: sampled once a second, a round's peak was missed more often than not.
 */
export function sampleMemory(roots: () => number[], everyMs = 200, nameOf?: (pid: number) => string, detailMs = 1000): { stop(): TreeMemory } {
  const peak: TreeMemory = { pss: 0, filesOnce: 0, rssSum: 0, processes: 0, byName: {} };
  let filePages = 0;
  let detailAt = 0;
  const measure = () => {
    const pids = [...new Set(roots().flatMap((r) => tree(r)))];
    if (performance.now() - detailAt >= detailMs) {
      detailAt = performance.now();
      filePages = uniqueFilePages(pids);
      let pss = 0;
      const byName: Record<string, number> = {};
      for (const pid of pids) {
        const own = pssOf(pid);
        pss += own;
        // A process that exited between listing and reading has nothing to show.
        if (nameOf && own) byName[nameOf(pid)] = (byName[nameOf(pid)] ?? 0) + own;
      }
      for (const [k, v] of Object.entries(byName)) peak.byName[k] = Math.max(peak.byName[k] ?? 0, v);
      peak.pss = Math.max(peak.pss, pss);
    }
    const m = memoryOf(pids, filePages);
    peak.filesOnce = Math.max(peak.filesOnce, m.stack);
    peak.rssSum = Math.max(peak.rssSum, m.rssSum);
    peak.processes = pids.length;
  };
  measure();
  const timer = setInterval(measure, everyMs);
  return {
    stop() {
      clearInterval(timer);
      detailAt = 0;
      measure();
      return { ...peak, byName: { ...peak.byName } };
    },
  };
}
