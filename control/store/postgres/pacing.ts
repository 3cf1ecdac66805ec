// What pacing reads and sets on PostgreSQL: throttles, warm-up day 1, bulk volume,
// announced or approved allowances, held mail.
import { DAY_MS, dayOf } from '../../../core/clock.js';
import type { AllowanceRow, BulkVolume, PacingData, ThrottleRow } from '../index.js';
import type { PgDb } from './db.js';

export class PgPacing implements PacingData {
  constructor(private readonly db: PgDb) {}

  async throttles(): Promise<ThrottleRow[]> {
    return (await this.db.query('SELECT * FROM throttles ORDER BY provider')).rows.map((r: any) => ({
      provider: r.provider,
      dailyNorm: r.daily_norm,
      growth: r.growth,
      maxDailyNorm: r.max_daily_norm,
      ratePerMinute: r.rate_per_minute,
      connections: r.connections,
      updatedAt: r.updated_at,
    }));
  }

  async setThrottle(t: ThrottleRow): Promise<void> {
    await this.db.query(
      `INSERT INTO throttles (provider, daily_norm, growth, max_daily_norm, rate_per_minute, connections, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (provider) DO UPDATE SET daily_norm = excluded.daily_norm, growth = excluded.growth, max_daily_norm = excluded.max_daily_norm,
         rate_per_minute = excluded.rate_per_minute, connections = excluded.connections, updated_at = excluded.updated_at`,
      [t.provider, t.dailyNorm, t.growth, t.maxDailyNorm, t.ratePerMinute, t.connections, t.updatedAt],
    );
  }

  async firstSendAt(projectId: string): Promise<number | null> {
    const r = await this.db.query<{ at: number | null }>("SELECT MIN(created_at) AS at FROM emails WHERE project_id = $1 AND status <> 'failed'", [projectId]);
    return r.rows[0]?.at ?? null;
  }

  async bulkVolume(projectId: string, at: number, days: number): Promise<BulkVolume> {
    const today = dayOf(at);
    const r = await this.db.query<{ today: number; since: number; allowed: number; held: number }>(
      `SELECT COALESCE((SELECT count FROM bulk_daily WHERE project_id = $1 AND day = $2), 0) AS today,
              (SELECT COALESCE(SUM(count), 0) FROM bulk_daily WHERE project_id = $1 AND day >= $3 AND day < $2) AS since,
              (SELECT COALESCE(MAX(volume), 0) FROM volume_allowances WHERE project_id = $1 AND day = $2) AS allowed,
              (SELECT count(*) FROM emails WHERE project_id = $1 AND held IS NOT NULL) AS held`,
      [projectId, today, dayOf(at - days * DAY_MS)],
    );
    const x = r.rows[0]!;
    return { today: x.today, average: x.since / days, allowed: x.allowed, held: x.held };
  }

  async addAllowance(projectId: string, forDay: string, volume: number, source: AllowanceRow['source'], at: number): Promise<void> {
    await this.db.query('INSERT INTO volume_allowances (project_id, day, volume, source, created_at) VALUES ($1, $2, $3, $4, $5)', [
      projectId,
      forDay,
      volume,
      source,
      at,
    ]);
  }

  async allowances(projectId: string, fromDay: string): Promise<AllowanceRow[]> {
    const r = await this.db.query('SELECT day, volume, source, created_at FROM volume_allowances WHERE project_id = $1 AND day >= $2 ORDER BY day, id', [
      projectId,
      fromDay,
    ]);
    return r.rows.map((x: any) => ({ day: x.day, volume: x.volume, source: x.source, createdAt: x.created_at }));
  }

  async releaseHeld(projectId: string): Promise<number> {
    return (await this.db.query('UPDATE emails SET held = NULL WHERE project_id = $1 AND held IS NOT NULL', [projectId])).rowCount;
  }

  async heldByProject(): Promise<Array<{ projectId: string; held: number }>> {
    const r = await this.db.query<{ project_id: string; held: number }>(
      'SELECT project_id, count(*)::int AS held FROM emails WHERE held IS NOT NULL GROUP BY project_id',
    );
    return r.rows.map((x) => ({ projectId: x.project_id, held: x.held }));
  }
}
