// What pacing reads and sets in SQLite: throttles, warm-up day 1, bulk volume,
// announced or approved allowances, held mail.
import { DAY_MS, dayOf } from '../../../core/clock.js';
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { AllowanceRow, BulkVolume, PacingData, ThrottleRow } from '../index.js';

export class SqlitePacing implements PacingData {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
  ) {
    this.q = {
      throttles: db.prepare('SELECT * FROM throttles ORDER BY provider'),
      upsertThrottle: db.prepare(`INSERT INTO throttles (provider, daily_norm, growth, max_daily_norm, rate_per_minute, connections, updated_at)
        VALUES (@provider, @dailyNorm, @growth, @maxDailyNorm, @ratePerMinute, @connections, @updatedAt)
        ON CONFLICT(provider) DO UPDATE SET daily_norm = excluded.daily_norm, growth = excluded.growth, max_daily_norm = excluded.max_daily_norm,
          rate_per_minute = excluded.rate_per_minute, connections = excluded.connections, updated_at = excluded.updated_at`),
      firstSend: db.prepare("SELECT MIN(created_at) FROM emails WHERE project_id = ? AND status <> 'failed'").pluck(),
      bulkDay: db.prepare('SELECT count FROM bulk_daily WHERE project_id = ? AND day = ?').pluck(),
      bulkSince: db.prepare('SELECT COALESCE(SUM(count), 0) FROM bulk_daily WHERE project_id = ? AND day >= ? AND day < ?').pluck(),
      allowed: db.prepare('SELECT COALESCE(MAX(volume), 0) FROM volume_allowances WHERE project_id = ? AND day = ?').pluck(),
      heldCount: db.prepare('SELECT count(*) FROM emails WHERE project_id = ? AND held IS NOT NULL').pluck(),
      heldByProject: db.prepare('SELECT project_id, count(*) AS held FROM emails WHERE held IS NOT NULL GROUP BY project_id'),
      insertAllowance: db.prepare('INSERT INTO volume_allowances (project_id, day, volume, source, created_at) VALUES (?, ?, ?, ?, ?)'),
      allowances: db.prepare('SELECT day, volume, source, created_at FROM volume_allowances WHERE project_id = ? AND day >= ? ORDER BY day, id'),
      releaseHeld: db.prepare('UPDATE emails SET held = NULL WHERE project_id = ? AND held IS NOT NULL'),
    };
  }

  async throttles(): Promise<ThrottleRow[]> {
    return this.q.throttles.all().map((r: any) => ({
      provider: r.provider,
      dailyNorm: r.daily_norm,
      growth: r.growth,
      maxDailyNorm: r.max_daily_norm,
      ratePerMinute: r.rate_per_minute,
      connections: r.connections,
      updatedAt: r.updated_at,
    }));
  }

  setThrottle(t: ThrottleRow): Promise<void> {
    return this.writer.run(() => void this.q.upsertThrottle.run(t));
  }

  async firstSendAt(projectId: string): Promise<number | null> {
    return (this.q.firstSend.get(projectId) as number | null) ?? null;
  }

  async bulkVolume(projectId: string, at: number, days: number): Promise<BulkVolume> {
    const today = dayOf(at);
    return {
      today: (this.q.bulkDay.get(projectId, today) as number | undefined) ?? 0,
      average: (this.q.bulkSince.get(projectId, dayOf(at - days * DAY_MS), today) as number) / days,
      allowed: this.q.allowed.get(projectId, today) as number,
      held: this.q.heldCount.get(projectId) as number,
    };
  }

  addAllowance(projectId: string, forDay: string, volume: number, source: AllowanceRow['source'], at: number): Promise<void> {
    return this.writer.run(() => void this.q.insertAllowance.run(projectId, forDay, volume, source, at));
  }

  async allowances(projectId: string, fromDay: string): Promise<AllowanceRow[]> {
    return this.q.allowances.all(projectId, fromDay).map((r: any) => ({ day: r.day, volume: r.volume, source: r.source, createdAt: r.created_at }));
  }

  releaseHeld(projectId: string): Promise<number> {
    return this.writer.run(() => this.q.releaseHeld.run(projectId).changes);
  }

  async heldByProject(): Promise<Array<{ projectId: string; held: number }>> {
    return this.q.heldByProject.all().map((r: any) => ({ projectId: r.project_id, held: r.held }));
  }
}
