// Usage and per-status daily counts on PostgreSQL (written in the transactions that change them).
import { dayOf } from '../../../core/clock.js';
import type { Analytics, EmailStatus } from '../index.js';
import type { PgDb } from './db.js';

export class PgAnalytics implements Analytics {
  constructor(private readonly db: PgDb) {}

  async usage(projectId: string, at: number): Promise<{ day: number; month: number }> {
    const today = dayOf(at);
    const r = await this.db.query<{ day: number; month: number }>(
      `SELECT COALESCE((SELECT count FROM usage_daily WHERE project_id = $1 AND day = $2), 0) AS day,
              COALESCE((SELECT count FROM usage_monthly WHERE project_id = $1 AND month = $3), 0) AS month`,
      [projectId, today, today.slice(0, 7)],
    );
    return { day: r.rows[0]!.day, month: r.rows[0]!.month };
  }

  async daily(projectId: string, fromDay: string, toDay: string): Promise<Array<{ day: string; status: EmailStatus | 'opened' | 'clicked'; count: number }>> {
    return (
      await this.db.query<{ day: string; status: EmailStatus; count: number }>(
        'SELECT day, status, count FROM analytics_daily WHERE project_id = $1 AND day >= $2 AND day <= $3 ORDER BY day, status',
        [projectId, fromDay, toDay],
      )
    ).rows;
  }
}
