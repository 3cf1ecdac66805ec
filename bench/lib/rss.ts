// Resident memory of a process and all its descendants, from /proc (Linux).
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

const rssOf = (pid: number): number => {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
};

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

/** Bytes resident in `root` and every process below it. */
export function treeRss(root: number): number {
  return tree(root).reduce((sum, pid) => sum + rssOf(pid), 0);
}
