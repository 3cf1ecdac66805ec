// Sender domains in SQLite. Whether a domain is verified is asked on every send:
// it is cached per project, and every change publishes the project's id.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { Invalidator } from '../../../core/invalidation.js';
import { STORE_CHANNELS, type ProjectCache } from '../cache.js';
import type { DomainRow, Domains } from '../index.js';
import { toDomain } from './rows.js';

export class SqliteDomains implements Domains {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
    private readonly verified: ProjectCache<Map<string, boolean>>,
    private readonly invalidator: Invalidator,
  ) {
    this.q = {
      insert: db.prepare(`INSERT INTO domains (id, project_id, name, status, selector, dkim_private, dkim_public, records, created_at, region)
        VALUES (@id, @projectId, @name, @status, @selector, @dkimPrivate, @dkimPublic, @records, @createdAt, @region)`),
      list: db.prepare('SELECT * FROM domains WHERE project_id = ? ORDER BY created_at, name'),
      get: db.prepare('SELECT * FROM domains WHERE id = ? AND project_id = ?'),
      byName: db.prepare('SELECT * FROM domains WHERE project_id = ? AND name = ?'),
      status: db.prepare('SELECT status FROM domains WHERE project_id = ? AND name = ?').pluck(),
      projectOf: db.prepare('SELECT project_id FROM domains WHERE id = ?').pluck(),
      remove: db.prepare('DELETE FROM domains WHERE id = ? AND project_id = ?'),
      update: db.prepare('UPDATE domains SET status = ?, records = ?, checked_at = ?, verified_at = ? WHERE id = ?'),
    };
  }

  /**
   * Inside the write: a group of writes runs synchronously, so no read comes between
   * this and the commit, and a rolled-back group clears the caches (store.ts).
   */
  private changed(projectId: string): void {
    this.invalidator.publish(STORE_CHANNELS.domains, projectId);
  }

  create(d: Omit<DomainRow, 'verifiedAt' | 'checkedAt'>): Promise<void> {
    return this.writer.run(() => {
      this.q.insert.run({ ...d, records: JSON.stringify(d.records), region: d.region ?? null });
      this.changed(d.projectId);
    });
  }

  async list(projectId: string): Promise<DomainRow[]> {
    return this.q.list.all(projectId).map(toDomain);
  }

  async get(projectId: string, id: string): Promise<DomainRow | undefined> {
    const r = this.q.get.get(id, projectId);
    return r ? toDomain(r) : undefined;
  }

  async byName(projectId: string, name: string): Promise<DomainRow | undefined> {
    const r = this.q.byName.get(projectId, name);
    return r ? toDomain(r) : undefined;
  }

  async isVerified(projectId: string, name: string): Promise<boolean> {
    const names = this.verified.get(projectId, () => new Map());
    let ok = names.get(name);
    if (ok === undefined) {
      ok = this.q.status.get(projectId, name) === 'verified';
      names.set(name, ok);
    }
    return ok;
  }

  update(id: string, status: DomainRow['status'], records: DomainRow['records'], checkedAt: number, verifiedAt: number | null): Promise<void> {
    return this.writer.run(() => {
      this.q.update.run(status, JSON.stringify(records), checkedAt, verifiedAt, id);
      const projectId = this.q.projectOf.get(id) as string | undefined;
      if (projectId) this.changed(projectId);
    });
  }

  remove(projectId: string, id: string): Promise<boolean> {
    return this.writer.run(() => {
      const gone = this.q.remove.run(id, projectId).changes > 0;
      if (gone) this.changed(projectId);
      return gone;
    });
  }
}
