// Sender domains on PostgreSQL. Whether a domain is verified is asked on every send:
// it is cached per project, and every change publishes the project's id once committed.
import type { Invalidator } from '../../../core/invalidation.js';
import { STORE_CHANNELS, type ProjectCache } from '../cache.js';
import { DEFAULT_DOMAIN_SETTINGS, type DomainQuery, type DomainRow, type Domains, type DomainSettings, type NewDomain } from '../index.js';
import { pageOf } from '../page.js';
import type { PgDb, Tx } from './db.js';
import { toDomain } from './rows.js';

export class PgDomains implements Domains {
  constructor(
    private readonly db: PgDb,
    private readonly verified: ProjectCache<Map<string, Promise<boolean>>>,
    private readonly invalidator: Invalidator,
  ) {}

  /** After the commit: a node that reloaded before it would cache the old rows again. */
  private changed(tx: Tx, projectId: string): void {
    tx.afterCommit(() => this.invalidator.publish(STORE_CHANNELS.domains, projectId));
  }

  create(d: NewDomain): Promise<void> {
    const settings = d.settings ?? DEFAULT_DOMAIN_SETTINGS;
    return this.db.tx(async (tx) => {
      await tx.query(
        `INSERT INTO domains (id, project_id, name, status, selector, dkim_private, dkim_public, records, created_at, region,
           open_tracking, click_tracking, tls, tracking_subdomain, receiving)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
        [
          d.id,
          d.projectId,
          d.name,
          d.status,
          d.selector,
          d.dkimPrivate,
          d.dkimPublic,
          JSON.stringify(d.records),
          d.createdAt,
          d.region ?? null,
          settings.openTracking,
          settings.clickTracking,
          settings.tls,
          settings.trackingSubdomain,
          settings.receiving,
        ],
      );
      this.changed(tx, d.projectId);
    });
  }

  updateSettings(projectId: string, id: string, s: DomainSettings, records: DomainRow['records']): Promise<boolean> {
    return this.db.tx(async (tx) => {
      const r = await tx.query(
        `UPDATE domains SET open_tracking = $3, click_tracking = $4, tls = $5, tracking_subdomain = $6, receiving = $7, records = $8
         WHERE id = $1 AND project_id = $2`,
        [id, projectId, s.openTracking, s.clickTracking, s.tls, s.trackingSubdomain, s.receiving, JSON.stringify(records)],
      );
      if (r.rowCount === 0) return false;
      this.changed(tx, projectId);
      return true;
    });
  }

  async list(projectId: string, q: DomainQuery = {}): Promise<{ domains: DomainRow[]; hasMore: boolean } | undefined> {
    // List order is (created_at, name), unique per project: a cursor is a place in it. LIMIT NULL: no limit.
    const cursorId = q.after ?? q.before;
    const backwards = q.after === undefined && q.before !== undefined;
    const args: unknown[] = [projectId, q.limit === undefined ? null : q.limit + 1];
    let where = '';
    if (cursorId !== undefined) {
      const at = (
        await this.db.query<{ created_at: string | number; name: string }>('SELECT created_at, name FROM domains WHERE id = $1 AND project_id = $2', [
          cursorId,
          projectId,
        ])
      ).rows[0];
      if (!at) return undefined;
      args.push(at.created_at, at.name);
      where = `AND (created_at, name) ${backwards ? '<' : '>'} ($3, $4)`;
    }
    const order = backwards ? 'DESC' : 'ASC';
    const r = await this.db.query(`SELECT * FROM domains WHERE project_id = $1 ${where} ORDER BY created_at ${order}, name ${order} LIMIT $2`, args);
    const { items, hasMore } = pageOf(r.rows, q.limit ?? Number.POSITIVE_INFINITY, backwards, toDomain);
    return { domains: items, hasMore };
  }

  async get(projectId: string, id: string): Promise<DomainRow | undefined> {
    const r = (await this.db.query('SELECT * FROM domains WHERE id = $1 AND project_id = $2', [id, projectId])).rows[0];
    return r ? toDomain(r) : undefined;
  }

  async byName(projectId: string, name: string): Promise<DomainRow | undefined> {
    const r = (await this.db.query('SELECT * FROM domains WHERE project_id = $1 AND name = $2', [projectId, name])).rows[0];
    return r ? toDomain(r) : undefined;
  }

  isVerified(projectId: string, name: string): Promise<boolean> {
    const names = this.verified.get(projectId, () => new Map());
    let ok = names.get(name);
    if (ok === undefined) {
      ok = this.db
        .query<{ status: string }>('SELECT status FROM domains WHERE project_id = $1 AND name = $2', [projectId, name])
        .then((r) => r.rows[0]?.status === 'verified');
      // A failed read is not an answer: the next send asks again.
      ok.catch(() => names.delete(name));
      names.set(name, ok);
    }
    return ok;
  }

  update(id: string, status: DomainRow['status'], records: DomainRow['records'], checkedAt: number, verifiedAt: number | null): Promise<void> {
    return this.db.tx(async (tx) => {
      const r = await tx.query<{ project_id: string }>(
        'UPDATE domains SET status = $1, records = $2, checked_at = $3, verified_at = $4 WHERE id = $5 RETURNING project_id',
        [status, JSON.stringify(records), checkedAt, verifiedAt, id],
      );
      if (r.rows[0]) this.changed(tx, r.rows[0].project_id);
    });
  }

  remove(projectId: string, id: string): Promise<boolean> {
    return this.db.tx(async (tx) => {
      const gone = (await tx.query('DELETE FROM domains WHERE id = $1 AND project_id = $2', [id, projectId])).rowCount > 0;
      if (gone) this.changed(tx, projectId);
      return gone;
    });
  }
}
