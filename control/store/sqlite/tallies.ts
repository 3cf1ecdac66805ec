// Daily counters that every email touches (usage for quotas, analytics per status)
// are summed in memory while a group of writes runs and written once per key just
// before the group commits. Quota checks read committed + pending counts from
// memory, so an email costs no counter query; control is the only writer of these
// tables, which keeps the memory copy exact. A failed commit drops both.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupHooks } from '../../../core/sqlite/group-writer.js';

interface Pending {
  projectId: string;
  day: string;
  status: string | null;
  n: number;
}

export class DayTallies implements GroupHooks {
  private readonly pending = new Map<string, Pending>();
  /** Per project: today's and this month's usage, committed plus pending. */
  private readonly usage = new Map<string, { day: string; dayCount: number; monthCount: number }>();
  /** What the current write added, to take back if it fails. */
  private readonly journal: Array<{ key: string; usage: boolean }> = [];
  private readonly q;

  constructor(db: Db) {
    this.q = {
      usageDay: db.prepare('SELECT count FROM usage_daily WHERE project_id = ? AND day = ?').pluck(),
      usageSince: db.prepare('SELECT COALESCE(SUM(count), 0) FROM usage_daily WHERE project_id = ? AND day >= ? AND day <= ?').pluck(),
      addUsage: db.prepare(
        'INSERT INTO usage_daily (project_id, day, count) VALUES (?, ?, ?) ON CONFLICT(project_id, day) DO UPDATE SET count = count + excluded.count',
      ),
      addStatus: db.prepare(`INSERT INTO analytics_daily (project_id, day, status, count) VALUES (?, ?, ?, ?)
        ON CONFLICT(project_id, day, status) DO UPDATE SET count = count + excluded.count`),
    };
  }

  /** Emails counted against the project's quotas today and this month (UTC days, 'YYYY-MM-DD'). */
  usageOf(projectId: string, today: string): { day: number; month: number } {
    let u = this.usage.get(projectId);
    if (!u || u.day !== today) {
      const monthStart = `${today.slice(0, 8)}01`;
      u = {
        day: today,
        dayCount: ((this.q.usageDay.get(projectId, today) as number | undefined) ?? 0) + this.pendingUsage(projectId, today, today),
        monthCount: (this.q.usageSince.get(projectId, monthStart, today) as number) + this.pendingUsage(projectId, monthStart, today),
      };
      this.usage.set(projectId, u);
    }
    return { day: u.dayCount, month: u.monthCount };
  }

  countUsage(projectId: string, today: string): void {
    this.usageOf(projectId, today);
    const u = this.usage.get(projectId)!;
    u.dayCount++;
    u.monthCount++;
    this.add(projectId, today, null, true);
  }

  countStatus(projectId: string, day: string, status: string): void {
    this.add(projectId, day, status);
  }

  /** Writes the group's sums; runs inside the group's transaction, right before the commit. */
  beforeCommit(): void {
    for (const p of this.pending.values()) {
      if (p.n === 0) continue;
      if (p.status === null) this.q.addUsage.run(p.projectId, p.day, p.n);
      else this.q.addStatus.run(p.projectId, p.day, p.status, p.n);
    }
    this.pending.clear();
  }

  beginWrite(): void {
    this.journal.length = 0;
  }

  /** The current write rolled back to its savepoint: its counts never happened. */
  writeFailed(): void {
    for (const { key, usage } of this.journal) {
      const p = this.pending.get(key)!;
      p.n--;
      if (usage) {
        const u = this.usage.get(p.projectId);
        if (u) {
          u.monthCount--;
          if (u.day === p.day) u.dayCount--;
        }
      }
    }
    this.journal.length = 0;
  }

  /** The group rolled back: its counts never happened. */
  afterRollback(): void {
    this.pending.clear();
    this.usage.clear();
    this.journal.length = 0;
  }

  private add(projectId: string, day: string, status: string | null, usage = false): void {
    const key = `${projectId}|${day}|${status ?? ''}`;
    const p = this.pending.get(key);
    if (p) p.n++;
    else this.pending.set(key, { projectId, day, status, n: 1 });
    this.journal.push({ key, usage });
  }

  private pendingUsage(projectId: string, from: string, to: string): number {
    let n = 0;
    for (const p of this.pending.values()) if (p.status === null && p.projectId === projectId && p.day >= from && p.day <= to) n += p.n;
    return n;
  }
}
