// Projects (plan, quotas, pause) in SQLite.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { NewApiKey, PlanLimitsRow, Project, Projects, ProjectStatus } from '../index.js';
import { toProject } from './rows.js';

export class SqliteProjects implements Projects {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
  ) {
    this.q = {
      insert: db.prepare('INSERT INTO projects (id, slug, name, status, plan, created_at) VALUES (@id, @slug, @name, @status, @plan, @createdAt)'),
      insertKey: db.prepare(
        'INSERT INTO api_keys (id, project_id, kind, scope, hash, hint, created_at) VALUES (@id, @projectId, @kind, @scope, @hash, @hint, @createdAt)',
      ),
      all: db.prepare('SELECT * FROM projects ORDER BY created_at, slug'),
      bySlug: db.prepare('SELECT * FROM projects WHERE slug = ?'),
      byId: db.prepare('SELECT * FROM projects WHERE id = ?'),
      setStatus: db.prepare('UPDATE projects SET status = ? WHERE id = ?'),
      setPlan: db.prepare('UPDATE projects SET plan = @plan, daily_quota = @dailyQuota, monthly_quota = @monthlyQuota, rate_limit = @rateLimit WHERE id = @id'),
    };
  }

  create(p: Pick<Project, 'id' | 'slug' | 'name' | 'plan' | 'createdAt'>, keys: NewApiKey[]): Promise<Project> {
    return this.writer.run(() => {
      this.q.insert.run({ ...p, status: 'active' });
      for (const k of keys) this.q.insertKey.run(k);
      return { ...p, status: 'active' as const, dailyQuota: null, monthlyQuota: null, rateLimit: null };
    });
  }

  async list(): Promise<Project[]> {
    return this.q.all.all().map(toProject);
  }

  async bySlug(slug: string): Promise<Project | undefined> {
    const r = this.q.bySlug.get(slug);
    return r ? toProject(r) : undefined;
  }

  async byId(id: string): Promise<Project | undefined> {
    const r = this.q.byId.get(id);
    return r ? toProject(r) : undefined;
  }

  setStatus(id: string, status: ProjectStatus): Promise<void> {
    return this.writer.run(() => void this.q.setStatus.run(status, id));
  }

  setPlan(id: string, plan: string, limits: PlanLimitsRow): Promise<void> {
    return this.writer.run(() => void this.q.setPlan.run({ id, plan, ...limits }));
  }
}
