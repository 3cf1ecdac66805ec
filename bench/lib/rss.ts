// Resident memory of a process and all its descendants, from /proc (Linux).
//
// Two figures. The RSS sum adds each process's resident set; processes that run the same
// executable each count its resident pages again (for node about 40 MB apiece), though the
// machine holds them once. The stack's memory counts every file's resident pages once
// (the largest any one process has of it) plus every process's own anonymous memory:
// what the machine actually spends on the stack.
import fs from 'node:fs';

function children(): Map<number, number[]> {
  const byParent = new Map<number, number[]>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // Field 4 of /proc/<pid>/stat is the parent; the command name (field 2) may hold spaces, so split after ')'.
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      byParent.set(ppid, [...(byParent.get(ppid) ?? []), Number(name)]);
    } catch {
      /* exited meanwhile */
    }
  }
  return byParent;
}

/** The pid and every process below it. */
export function tree(root: number): number[] {
  const byParent = children();
  const out: number[] = [];
  const todo = [root];
  while (todo.length) {
    const pid = todo.pop()!;
    out.push(pid);
    todo.push(...(byParent.get(pid) ?? []));
  }
  return out;
}

/** Resident bytes of one process: anonymous, and per mapped file. */
function residentOf(pid: number): { anon: number; files: Map<string, number> } {
  const files = new Map<string, number>();
  let anon = 0;
  let file: string | undefined;
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return { anon, files };
  }
  for (const line of text.split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) {
      const name = line.split(/\s+/)[5];
      file = name?.startsWith('/') ? name : undefined;
    } else if (line.startsWith('Rss:')) {
      const bytes = Number(line.slice(4).trim().split(' ')[0]) * 1024;
      if (file) files.set(file, (files.get(file) ?? 0) + bytes);
      else anon += bytes;
    }
  }
  return { anon, files };
}

export interface Memory {
  /** Every process's RSS added up. */
  rssSum: number;
  /** Anonymous memory of each process plus each file's resident pages once. */
  stack: number;
}

export function memoryOf(pids: number[]): Memory {
  const files = new Map<string, number>();
  let anon = 0;
  let rssSum = 0;
  for (const pid of pids) {
    const r = residentOf(pid);
    anon += r.anon;
    rssSum += r.anon;
    for (const [f, bytes] of r.files) {
      rssSum += bytes;
      files.set(f, Math.max(files.get(f) ?? 0, bytes));
    }
  }
  return { rssSum, stack: anon + [...files.values()].reduce((a, b) => a + b, 0) };
}

/** Samples the peak memory of a process tree (or of the process alone) every 200 ms until stopped. */
export function peakMemory(root: () => number, withChildren = true): { stop(): Memory } {
  const peak: Memory = { rssSum: 0, stack: 0 };
  const measure = () => {
    const m = memoryOf(withChildren ? tree(root()) : [root()]);
    peak.rssSum = Math.max(peak.rssSum, m.rssSum);
    peak.stack = Math.max(peak.stack, m.stack);
  };
  const timer = setInterval(measure, 200);
  return {
    stop() {
      clearInterval(timer);
      measure();
      return peak;
    },
  };
}
