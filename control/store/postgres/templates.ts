// A project's email templates on PostgreSQL (control/templates). Each templated send reads its
// template: rows are cached per project (hits only), and every change publishes the project's id
// once committed, so no node keeps sending an old version.
import type { Invalidator } from '../../../core/invalidation.js';
import { STORE_CHANNELS, type ProjectCache } from '../cache.js';
import type { TemplateQuery, TemplateRow, Templates } from '../index.js';
import { pageOf } from '../page.js';
import { templateColumns, toTemplate } from '../rows.js';
import type { PgDb, Tx } from './db.js';

/** Templates (by id or alias) kept per project. */
const MAX_CACHED_PER_PROJECT = 100;

const isUniqueViolation = (err: unknown) => (err as { code?: string })?.code === '23505';

export class PgTemplates implements Templates {
  constructor(
    private readonly db: PgDb,
    private readonly cache: ProjectCache<Map<string, Promise<TemplateRow | undefined>>>,
    private readonly invalidator: Invalidator,
  ) {}

  private changed(tx: Tx, projectId: string): void {
    tx.afterCommit(() => this.invalidator.publish(STORE_CHANNELS.templates, projectId));
  }

  async create(t: TemplateRow): Promise<'created' | 'alias_taken'> {
    const c = templateColumns(t);
    return this.db.tx(async (tx) => {
      // ON CONFLICT DO NOTHING: the id is new, so a conflict is the alias (templates_project_alias).
      const r = await tx.query(
        `INSERT INTO templates (id, project_id, name, alias, draft, published, published_at, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5::jsonb, $6::jsonb, $7, $8, $9) ON CONFLICT DO NOTHING`,
        [c.id, c.projectId, c.name, c.alias, c.draft, c.published, c.publishedAt, c.createdAt, c.updatedAt],
      );
      if (r.rowCount === 0) return 'alias_taken';
      this.changed(tx, t.projectId);
      return 'created';
    });
  }

  get(projectId: string, idOrAlias: string): Promise<TemplateRow | undefined> {
    const rows = this.cache.get(projectId, () => new Map());
    let t = rows.get(idOrAlias);
    if (t === undefined) {
      t = this.db.query('SELECT * FROM templates WHERE project_id = $1 AND (id = $2 OR alias = $2)', [projectId, idOrAlias]).then((r) => {
        const row = r.rows[0] ? toTemplate(r.rows[0]) : undefined;
        // Hits only: names that do not exist fill nothing; a failed read is asked again.
        if (!row) rows.delete(idOrAlias);
        return row;
      });
      t.catch(() => rows.delete(idOrAlias));
      // A template is up to two bodies of limits.maxBodyBytes: a project reading many of them starts its entries over.
      if (rows.size >= MAX_CACHED_PER_PROJECT) rows.clear();
      rows.set(idOrAlias, t);
    }
    return t;
  }

  async list(projectId: string, q: TemplateQuery): Promise<{ templates: TemplateRow[]; hasMore: boolean }> {
    const backwards = q.after === undefined && q.before !== undefined;
    const cursor = q.after ?? q.before;
    const r =
      cursor === undefined
        ? await this.db.query('SELECT * FROM templates WHERE project_id = $1 ORDER BY id DESC LIMIT $2', [projectId, q.limit + 1])
        : await this.db.query(
            `SELECT * FROM templates WHERE project_id = $1 AND id ${backwards ? '>' : '<'} $2 ORDER BY id ${backwards ? 'ASC' : 'DESC'} LIMIT $3`,
            [projectId, cursor, q.limit + 1],
          );
    const { items, hasMore } = pageOf(r.rows, q.limit, backwards, toTemplate);
    return { templates: items, hasMore };
  }

  async update(t: TemplateRow): Promise<'updated' | 'not_found' | 'alias_taken'> {
    const c = templateColumns(t);
    try {
      return await this.db.tx(async (tx) => {
        const r = await tx.query('UPDATE templates SET name = $3, alias = $4, draft = $5::jsonb, updated_at = $6 WHERE id = $1 AND project_id = $2', [
          c.id,
          c.projectId,
          c.name,
          c.alias,
          c.draft,
          c.updatedAt,
        ]);
        if (r.rowCount === 0) return 'not_found';
        this.changed(tx, t.projectId);
        return 'updated';
      });
    } catch (err) {
      if (isUniqueViolation(err)) return 'alias_taken';
      throw err;
    }
  }

  publish(projectId: string, id: string, at: number): Promise<TemplateRow | undefined> {
    return this.db.tx(async (tx) => {
      const r = await tx.query('UPDATE templates SET published = draft, published_at = $3, updated_at = $3 WHERE id = $1 AND project_id = $2 RETURNING *', [
        id,
        projectId,
        at,
      ]);
      if (!r.rows[0]) return undefined;
      this.changed(tx, projectId);
      return toTemplate(r.rows[0]);
    });
  }

  remove(projectId: string, id: string): Promise<boolean> {
    return this.db.tx(async (tx) => {
      const gone = (await tx.query('DELETE FROM templates WHERE id = $1 AND project_id = $2', [id, projectId])).rowCount > 0;
      if (gone) this.changed(tx, projectId);
      return gone;
    });
  }
}
