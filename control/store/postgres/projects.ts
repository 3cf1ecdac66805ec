// Projects (plan, quotas, pause) on PostgreSQL.
import type { NewApiKey, PlanLimitsRow, Project, Projects, ProjectStatus } from '../index.js';
import type { PgDb } from './db.js';
import { toProject } from './rows.js';

export class PgProjects implements Projects {
  constructor(private readonly db: PgDb) {}

  create(p: Pick<Project, 'id' | 'slug' | 'name' | 'plan' | 'createdAt'>, keys: NewApiKey[]): Promise<Project> {
    return this.db.tx(async (tx) => {
      await tx.query('INSERT INTO projects (id, slug, name, status, plan, created_at) VALUES ($1, $2, $3, $4, $5, $6)', [
        p.id,
        p.slug,
        p.name,
        'active',
        p.plan,
        p.createdAt,
      ]);
      for (const k of keys) {
        await tx.query('INSERT INTO api_keys (id, project_id, kind, scope, hash, hint, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
          k.id,
          k.projectId,
          k.kind,
          k.scope,
          k.hash,
          k.hint,
          k.createdAt,
        ]);
      }
      return { ...p, status: 'active' as const, dailyQuota: null, monthlyQuota: null, rateLimit: null };
    });
  }

  async list(): Promise<Project[]> {
    return (await this.db.query('SELECT * FROM projects ORDER BY created_at, slug')).rows.map(toProject);
  }

  async bySlug(slug: string): Promise<Project | undefined> {
    const r = (await this.db.query('SELECT * FROM projects WHERE slug = $1', [slug])).rows[0];
    return r ? toProject(r) : undefined;
  }

  async byId(id: string): Promise<Project | undefined> {
    const r = (await this.db.query('SELECT * FROM projects WHERE id = $1', [id])).rows[0];
    return r ? toProject(r) : undefined;
  }

  async setStatus(id: string, status: ProjectStatus): Promise<void> {
    await this.db.query('UPDATE projects SET status = $1 WHERE id = $2', [status, id]);
  }

  async setPlan(id: string, plan: string, limits: PlanLimitsRow): Promise<void> {
    await this.db.query('UPDATE projects SET plan = $1, daily_quota = $2, monthly_quota = $3, rate_limit = $4 WHERE id = $5', [
      plan,
      limits.dailyQuota,
      limits.monthlyQuota,
      limits.rateLimit,
      id,
    ]);
  }
}
