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

const kB = (status: string, field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0) * 1024;

/** Resident bytes of one process from /proc/<pid>/status (cheap enough to sample often). */
function residentOf(pid: number): { own: number; file: number } {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return { own: kB(status, 'RssAnon') + kB(status, 'RssShmem'), file: kB(status, 'RssFile') };
  } catch {
    return { own: 0, file: 0 }; // exited meanwhile
  }
}

/**
 * Resident file pages of the processes with each file counted once (the most any one of
 * them has of it), from /proc/<pid>/smaps. Reading smaps walks the page tables and holds
 * the process's memory map lock, so it is read seldom: file pages barely change once a
 * process has started.
 */
export function uniqueFilePages(pids: number[]): number {
  const files = new Map<string, number>();
  for (const pid of pids) {
    let text: string;
    try {
      text = fs.readFileSync(`/proc/${pid}/smaps`, 'utf8');
    } catch {
      continue;
    }
    const mine = new Map<string, number>();
    let file: string | undefined;
    for (const line of text.split('\n')) {
      if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) {
        const name = line.split(/\s+/)[5];
        file = name?.startsWith('/') ? name : undefined;
      } else if (file && line.startsWith('Rss:')) {
        mine.set(file, (mine.get(file) ?? 0) + Number(line.slice(4).trim().split(' ')[0]) * 1024);
      }
    }
    for (const [f, bytes] of mine) files.set(f, Math.max(files.get(f) ?? 0, bytes));
  }
  return [...files.values()].reduce((a, b) => a + b, 0);
}

export interface Memory {
  /** Every process's RSS added up. */
  rssSum: number;
  /** Every process's own (anonymous) memory plus each file's resident pages once. */
  stack: number;
}

export function memoryOf(pids: number[], filePages = uniqueFilePages(pids), each?: (pid: number, rss: number) => void): Memory {
  let own = 0;
  let file = 0;
  for (const pid of pids) {
    const r = residentOf(pid);
    own += r.own;
    file += r.file;
    each?.(pid, r.own + r.file);
  }
  return { rssSum: own + file, stack: own + Math.min(file, filePages) };
}
