// A project's email templates in SQLite (control/templates). Each templated send reads its
// template: rows are cached per project (hits only, so asking for names that do not exist
// fills nothing), and every change publishes the project's id.
import type { Db } from '../../../core/sqlite/open.js';
import type { GroupWriter } from '../../../core/sqlite/group-writer.js';
import type { Invalidator } from '../../../core/invalidation.js';
import { STORE_CHANNELS, type ProjectCache } from '../cache.js';
import type { TemplateQuery, TemplateRow, Templates } from '../index.js';
import { pageOf } from '../page.js';
import { templateColumns, toTemplate } from '../rows.js';

/** Templates (by id or alias) kept per project. */
const MAX_CACHED_PER_PROJECT = 100;

const isUniqueViolation = (err: unknown) => (err as { code?: string })?.code === 'SQLITE_CONSTRAINT_UNIQUE';

export class SqliteTemplates implements Templates {
  private readonly q;

  constructor(
    db: Db,
    private readonly writer: GroupWriter,
    private readonly cache: ProjectCache<Map<string, TemplateRow>>,
    private readonly invalidator: Invalidator,
  ) {
    this.q = {
      insert: db.prepare(`INSERT INTO templates (id, project_id, name, alias, draft, published, published_at, created_at, updated_at)
        VALUES (@id, @projectId, @name, @alias, @draft, @published, @publishedAt, @createdAt, @updatedAt)`),
      get: db.prepare('SELECT * FROM templates WHERE project_id = ? AND (id = ? OR alias = ?)'),
      list: db.prepare('SELECT * FROM templates WHERE project_id = ? ORDER BY id DESC LIMIT ?'),
      listAfter: db.prepare('SELECT * FROM templates WHERE project_id = ? AND id < ? ORDER BY id DESC LIMIT ?'),
      listBefore: db.prepare('SELECT * FROM templates WHERE project_id = ? AND id > ? ORDER BY id ASC LIMIT ?'),
      update: db.prepare(
        'UPDATE templates SET name = @name, alias = @alias, draft = @draft, updated_at = @updatedAt WHERE id = @id AND project_id = @projectId',
      ),
      publish: db.prepare('UPDATE templates SET published = draft, published_at = ?, updated_at = ? WHERE id = ? AND project_id = ?'),
      byId: db.prepare('SELECT * FROM templates WHERE id = ? AND project_id = ?'),
      remove: db.prepare('DELETE FROM templates WHERE id = ? AND project_id = ?'),
    };
  }

  /** Inside the write (as domains.ts): no read comes between it and the commit. */
  private changed(projectId: string): void {
    this.invalidator.publish(STORE_CHANNELS.templates, projectId);
  }

  create(t: TemplateRow): Promise<'created' | 'alias_taken'> {
    return this.writer.run(() => {
      try {
        this.q.insert.run(templateColumns(t));
      } catch (err) {
        if (isUniqueViolation(err)) return 'alias_taken';
        throw err;
      }
      this.changed(t.projectId);
      return 'created';
    });
  }

  async get(projectId: string, idOrAlias: string): Promise<TemplateRow | undefined> {
    const rows = this.cache.get(projectId, () => new Map());
    let t = rows.get(idOrAlias);
    if (t === undefined) {
      const r = this.q.get.get(projectId, idOrAlias, idOrAlias);
      if (!r) return undefined;
      t = toTemplate(r);
      // A template is up to two bodies of limits.maxBodyBytes: a project reading many of them starts its entries over.
      if (rows.size >= MAX_CACHED_PER_PROJECT) rows.clear();
      rows.set(idOrAlias, t);
    }
    return t;
  }

  async list(projectId: string, q: TemplateQuery): Promise<{ templates: TemplateRow[]; hasMore: boolean }> {
    const rows =
      q.after !== undefined
        ? this.q.listAfter.all(projectId, q.after, q.limit + 1)
        : q.before !== undefined
          ? this.q.listBefore.all(projectId, q.before, q.limit + 1)
          : this.q.list.all(projectId, q.limit + 1);
    const { items, hasMore } = pageOf(rows, q.limit, q.after === undefined && q.before !== undefined, toTemplate);
    return { templates: items, hasMore };
  }

  update(t: TemplateRow): Promise<'updated' | 'not_found' | 'alias_taken'> {
    return this.writer.run(() => {
      let changes: number;
      try {
        changes = this.q.update.run(templateColumns(t)).changes;
      } catch (err) {
        if (isUniqueViolation(err)) return 'alias_taken';
        throw err;
      }
      if (!changes) return 'not_found';
      this.changed(t.projectId);
      return 'updated';
    });
  }

  publish(projectId: string, id: string, at: number): Promise<TemplateRow | undefined> {
    return this.writer.run(() => {
      if (!this.q.publish.run(at, at, id, projectId).changes) return undefined;
      this.changed(projectId);
      return toTemplate(this.q.byId.get(id, projectId));
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
