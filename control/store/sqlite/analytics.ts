// Usage and per-status daily counts in SQLite (written by tallies.ts).
import { dayOf } from '../../../core/clock.js';
import type { Db } from '../../../core/sqlite/open.js';
import type { Analytics, EmailStatus } from '../index.js';
import type { DayTallies } from './tallies.js';

export class SqliteAnalytics implements Analytics {
  private readonly q;

  constructor(
    db: Db,
    private readonly tallies: DayTallies,
  ) {
    this.q = { daily: db.prepare('SELECT day, status, count FROM analytics_daily WHERE project_id = ? AND day >= ? AND day <= ?') };
  }

  async usage(projectId: string, at: number): Promise<{ day: number; month: number }> {
    return this.tallies.usageOf(projectId, dayOf(at));
  }

  async daily(projectId: string, fromDay: string, toDay: string): Promise<Array<{ day: string; status: EmailStatus | 'opened' | 'clicked'; count: number }>> {
    return this.q.daily.all(projectId, fromDay, toDay) as Array<{ day: string; status: EmailStatus; count: number }>;
  }
}
