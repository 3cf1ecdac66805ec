// Sender domains in SQLite. Whether a domain is verified is asked on every send:
// it is cached per project, and every change publishes the project's id.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { Invalidator } from '../../../core/invalidation.js';
import { STORE_CHANNELS, type ProjectCache } from '../cache.js';
import { DEFAULT_DOMAIN_SETTINGS, type DomainQuery, type DomainRow, type Domains, type DomainSettings, type NewDomain } from '../index.js';
import { pageOf } from '../page.js';
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
      insert: db.prepare(`INSERT INTO domains (id, project_id, name, status, selector, dkim_private, dkim_public, records, created_at, region,
          open_tracking, click_tracking, tls, tracking_subdomain, receiving)
        VALUES (@id, @projectId, @name, @status, @selector, @dkimPrivate, @dkimPublic, @records, @createdAt, @region,
          @openTracking, @clickTracking, @tls, @trackingSubdomain, @receiving)`),
      settings: db.prepare(`UPDATE domains SET open_tracking = @openTracking, click_tracking = @clickTracking, tls = @tls,
          tracking_subdomain = @trackingSubdomain, receiving = @receiving, records = @records WHERE id = @id AND project_id = @projectId`),
      // List order is (created_at, name), unique per project: a cursor is a place in it. LIMIT -1: no limit.
      list: db.prepare('SELECT * FROM domains WHERE project_id = ? ORDER BY created_at, name LIMIT ?'),
      listAfter: db.prepare('SELECT * FROM domains WHERE project_id = ? AND (created_at, name) > (?, ?) ORDER BY created_at, name LIMIT ?'),
      listBefore: db.prepare('SELECT * FROM domains WHERE project_id = ? AND (created_at, name) < (?, ?) ORDER BY created_at DESC, name DESC LIMIT ?'),
      cursor: db.prepare('SELECT created_at, name FROM domains WHERE id = ? AND project_id = ?'),
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

  create(d: NewDomain): Promise<void> {
    const settings = d.settings ?? DEFAULT_DOMAIN_SETTINGS;
    return this.writer.run(() => {
      this.q.insert.run({ ...d, records: JSON.stringify(d.records), region: d.region ?? null, ...settingsColumns(settings) });
      this.changed(d.projectId);
    });
  }

  updateSettings(projectId: string, id: string, settings: DomainSettings, records: DomainRow['records']): Promise<boolean> {
    return this.writer.run(() => {
      const done = this.q.settings.run({ id, projectId, records: JSON.stringify(records), ...settingsColumns(settings) }).changes > 0;
      if (done) this.changed(projectId);
      return done;
    });
  }

  async list(projectId: string, q: DomainQuery = {}): Promise<{ domains: DomainRow[]; hasMore: boolean } | undefined> {
    const limit = q.limit ?? -1;
    const read = limit < 0 ? -1 : limit + 1;
    const cursorId = q.after ?? q.before;
    let rows: unknown[];
    if (cursorId === undefined) rows = this.q.list.all(projectId, read);
    else {
      const at = this.q.cursor.get(cursorId, projectId) as { created_at: number; name: string } | undefined;
      if (!at) return undefined;
      rows = (q.after !== undefined ? this.q.listAfter : this.q.listBefore).all(projectId, at.created_at, at.name, read);
    }
    const { items, hasMore } = pageOf(rows, limit < 0 ? Number.POSITIVE_INFINITY : limit, q.after === undefined && q.before !== undefined, toDomain);
    return { domains: items, hasMore };
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

/** SQLite keeps booleans as 0/1. */
const settingsColumns = (s: DomainSettings) => ({
  openTracking: s.openTracking ? 1 : 0,
  clickTracking: s.clickTracking ? 1 : 0,
  tls: s.tls,
  trackingSubdomain: s.trackingSubdomain,
  receiving: s.receiving ? 1 : 0,
});
