// Control's storage: the only place with SQL. The interface is async so that a
// shared engine (PostgreSQL) can stand behind it later; writes go through the
// group-commit writer, so a promise that resolves means the data is committed.
import path from 'node:path';
import { openDatabase, type Db } from './db.js';
import { GroupWriter } from './writer.js';
import { controlMigrations } from './migrations.js';
import { AuthStore, authMigrations } from './auth.js';
import type { StorageSettings } from '../../core/config.js';

export type KeyKind = 'live' | 'test';
export type KeyScope = 'all' | 'auth';
export type ProjectStatus = 'active' | 'paused';

export interface Project {
  id: string;
  slug: string;
  name: string;
  status: ProjectStatus;
  plan: string;
  createdAt: number;
}

export interface ApiKeyRow {
  id: string;
  projectId: string;
  kind: KeyKind;
  scope: KeyScope;
  hint: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface EmailRow {
  id: string;
  projectId: string;
  status: string;
  from: string;
  subject: string;
  bulk: boolean;
  request: string;
  error: string | null;
  errorCode: string | null;
  createdAt: number;
  updatedAt: number;
  dispatchedAt: number | null;
}

export interface RecipientRow {
  address: string;
  kind: 'to' | 'cc' | 'bcc';
  status: string;
  updatedAt: number;
}

export interface EventRow {
  type: string;
  recipient: string;
  attempt: number;
  at: number;
  details: Record<string, unknown> | null;
}

export interface NewEmail {
  id: string;
  projectId: string;
  status: string;
  from: string;
  subject: string;
  bulk: boolean;
  request: string;
  error?: string;
  errorCode?: string;
  createdAt: number;
  recipients: Array<{ address: string; kind: 'to' | 'cc' | 'bcc' }>;
}

/** One delivery event from a gateway, as it arrives from the stream. */
export interface GatewayEvent {
  seq: number;
  emailId: string;
  type: string;
  recipient: string;
  at: number;
  attempt: number;
  details: Record<string, unknown>;
}

export interface SuppressionRow {
  address: string;
  reason: string;
  scope: string;
  emailId: string | null;
  createdAt: number;
}

// Recipient status order: an event never moves a recipient backwards, except
// that a refused (rejected) recipient may be tried again.
const rank: Record<string, number> = { queued: 0, sending: 1, rejected: 2, bounced: 3, sent: 3, delivered: 4, complained: 5, failed: 6 };
const terminal = new Set(['sent', 'delivered', 'bounced', 'rejected', 'complained', 'failed']);

function recipientStatusAfter(current: string, event: string): string | null {
  const next = event === 'deferred' ? 'sending' : event;
  if (!(next in rank)) return null;
  if (current === 'rejected' && next === 'sending') return next;
  if (next === 'bounced' && current === 'sent') return next; // an asynchronous bounce after acceptance
  return rank[next]! > rank[current]! ? next : null;
}

/** The email's status from its recipients' (documented in the README). */
export function emailStatusOf(statuses: string[]): string {
  if (statuses.includes('complained')) return 'complained';
  if (statuses.length && statuses.every((s) => terminal.has(s))) {
    if (statuses.every((s) => s === 'delivered')) return 'delivered';
    if (statuses.some((s) => s === 'sent' || s === 'delivered')) return 'sent';
    if (statuses.some((s) => s === 'rejected')) return 'rejected';
    if (statuses.some((s) => s === 'bounced')) return 'bounced';
    return 'failed';
  }
  return statuses.some((s) => s !== 'queued') ? 'sending' : 'queued';
}

const toProject = (r: any): Project => ({ id: r.id, slug: r.slug, name: r.name, status: r.status, plan: r.plan, createdAt: r.created_at });
const toKey = (r: any): ApiKeyRow => ({ id: r.id, projectId: r.project_id, kind: r.kind, scope: r.scope, hint: r.hint, createdAt: r.created_at, revokedAt: r.revoked_at });
const toEmail = (r: any): EmailRow => ({
  id: r.id, projectId: r.project_id, status: r.status, from: r.from_addr, subject: r.subject, bulk: !!r.bulk, request: r.request,
  error: r.error, errorCode: r.error_code, createdAt: r.created_at, updatedAt: r.updated_at, dispatchedAt: r.dispatched_at,
});

export class Store {
  readonly db: Db;
  readonly writer: GroupWriter;
  readonly auth: AuthStore;
  private readonly q;

  constructor(dataDir: string, settings: StorageSettings) {
    this.db = openDatabase(path.join(dataDir, 'postgate.db'), [...controlMigrations, ...authMigrations], { synchronous: settings.synchronous });
    this.writer = new GroupWriter(this.db, settings.maxBatch);
    this.auth = new AuthStore(this.db, this.writer);
    const db = this.db;
    this.q = {
      insertProject: db.prepare('INSERT INTO projects (id, slug, name, status, plan, created_at) VALUES (@id, @slug, @name, @status, @plan, @createdAt)'),
      projects: db.prepare('SELECT * FROM projects ORDER BY created_at, slug'),
      projectBySlug: db.prepare('SELECT * FROM projects WHERE slug = ?'),
      projectById: db.prepare('SELECT * FROM projects WHERE id = ?'),
      setProjectStatus: db.prepare('UPDATE projects SET status = ? WHERE id = ?'),
      insertKey: db.prepare('INSERT INTO api_keys (id, project_id, kind, scope, hash, hint, created_at) VALUES (@id, @projectId, @kind, @scope, @hash, @hint, @createdAt)'),
      keyByHash: db.prepare('SELECT * FROM api_keys WHERE hash = ?'),
      keys: db.prepare('SELECT * FROM api_keys WHERE project_id = ? ORDER BY created_at, id'),
      revokeKey: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND project_id = ? AND revoked_at IS NULL'),
      keyById: db.prepare('SELECT * FROM api_keys WHERE id = ? AND project_id = ?'),
      insertEmail: db.prepare(`INSERT INTO emails (id, project_id, status, from_addr, subject, bulk, request, error, error_code, created_at, updated_at)
        VALUES (@id, @projectId, @status, @from, @subject, @bulk, @request, @error, @errorCode, @createdAt, @createdAt)`),
      insertRecipient: db.prepare('INSERT OR IGNORE INTO email_recipients (email_id, address, kind, status, updated_at) VALUES (?, ?, ?, ?, ?)'),
      insertEvent: db.prepare('INSERT OR IGNORE INTO email_events (email_id, type, recipient, attempt, at, details) VALUES (?, ?, ?, ?, ?, ?)'),
      email: db.prepare('SELECT * FROM emails WHERE id = ? AND project_id = ?'),
      emailById: db.prepare('SELECT id, status FROM emails WHERE id = ?'),
      recipients: db.prepare('SELECT address, kind, status, updated_at FROM email_recipients WHERE email_id = ? ORDER BY rowid'),
      events: db.prepare('SELECT type, recipient, attempt, at, details FROM email_events WHERE email_id = ? ORDER BY id'),
      undispatched: db.prepare("SELECT * FROM emails WHERE dispatched_at IS NULL AND status = 'queued' ORDER BY created_at LIMIT ?"),
      markDispatched: db.prepare('UPDATE emails SET dispatched_at = ? WHERE id = ?'),
      setEmailStatus: db.prepare('UPDATE emails SET status = ?, updated_at = ? WHERE id = ?'),
      setRecipientStatus: db.prepare('UPDATE email_recipients SET status = ?, updated_at = ? WHERE email_id = ? AND address = ?'),
      cursor: db.prepare('SELECT seq FROM gateway_cursors WHERE gateway = ?').pluck(),
      setCursor: db.prepare('INSERT INTO gateway_cursors (gateway, seq) VALUES (?, ?) ON CONFLICT(gateway) DO UPDATE SET seq = excluded.seq'),
      suppress: db.prepare(`INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT(project_id, address) DO NOTHING`),
      suppressions: db.prepare('SELECT address, reason, scope, email_id, created_at FROM suppressions WHERE project_id = ? ORDER BY created_at, address'),
      projectOfEmail: db.prepare('SELECT project_id FROM emails WHERE id = ?').pluck(),
    };
  }

  // Projects and keys

  createProject(p: Omit<Project, 'status' | 'plan'> & { plan: string }, keys: Array<ApiKeyRow & { hash: string }>): Promise<Project> {
    return this.writer.run(() => {
      this.q.insertProject.run({ ...p, status: 'active' });
      for (const k of keys) this.q.insertKey.run(k);
      return { ...p, status: 'active' as const };
    });
  }

  async listProjects(): Promise<Project[]> {
    return this.q.projects.all().map(toProject);
  }

  async projectBySlug(slug: string): Promise<Project | undefined> {
    const r = this.q.projectBySlug.get(slug);
    return r ? toProject(r) : undefined;
  }

  async projectById(id: string): Promise<Project | undefined> {
    const r = this.q.projectById.get(id);
    return r ? toProject(r) : undefined;
  }

  setProjectStatus(id: string, status: ProjectStatus): Promise<void> {
    return this.writer.run(() => void this.q.setProjectStatus.run(status, id));
  }

  createKey(k: ApiKeyRow & { hash: string }): Promise<void> {
    return this.writer.run(() => void this.q.insertKey.run(k));
  }

  async keyByHash(hash: string): Promise<ApiKeyRow | undefined> {
    const r = this.q.keyByHash.get(hash);
    return r ? toKey(r) : undefined;
  }

  async listKeys(projectId: string): Promise<ApiKeyRow[]> {
    return this.q.keys.all(projectId).map(toKey);
  }

  /** Returns the revoked key (with its hash, for cache invalidation), or undefined when there was none to revoke. */
  revokeKey(projectId: string, keyId: string, at: number): Promise<{ hash: string } | undefined> {
    return this.writer.run(() => {
      const changed = this.q.revokeKey.run(at, keyId, projectId).changes;
      if (!changed) return undefined;
      return { hash: (this.q.keyById.get(keyId, projectId) as any).hash as string };
    });
  }

  // Emails

  insertEmail(e: NewEmail): Promise<void> {
    return this.writer.run(() => this.insertEmailNow(e));
  }

  /** Several emails in one savepoint each, one commit for all (batch sends). */
  insertEmails(list: NewEmail[]): Promise<void> {
    return this.writer.run(() => {
      for (const e of list) this.insertEmailNow(e);
    });
  }

  private insertEmailNow(e: NewEmail): void {
    this.q.insertEmail.run({ ...e, bulk: e.bulk ? 1 : 0, error: e.error ?? null, errorCode: e.errorCode ?? null });
    const recipientStatus = e.status === 'failed' ? 'failed' : 'queued';
    for (const r of e.recipients) this.q.insertRecipient.run(e.id, r.address, r.kind, recipientStatus, e.createdAt);
    const details = e.error ? JSON.stringify({ reason: e.error, code: e.errorCode }) : null;
    this.q.insertEvent.run(e.id, e.status, '', 0, e.createdAt, details);
  }

  async getEmail(projectId: string, id: string): Promise<{ email: EmailRow; recipients: RecipientRow[]; events: EventRow[] } | undefined> {
    const r = this.q.email.get(id, projectId);
    if (!r) return undefined;
    return {
      email: toEmail(r),
      recipients: this.q.recipients.all(id).map((x: any) => ({ address: x.address, kind: x.kind, status: x.status, updatedAt: x.updated_at })),
      events: this.q.events.all(id).map((x: any) => ({ type: x.type, recipient: x.recipient, attempt: x.attempt, at: x.at, details: x.details ? JSON.parse(x.details) : null })),
    };
  }

  async undispatched(limit: number): Promise<Array<EmailRow & { recipients: RecipientRow[] }>> {
    return this.q.undispatched.all(limit).map((r: any) => ({
      ...toEmail(r),
      recipients: this.q.recipients.all(r.id).map((x: any) => ({ address: x.address, kind: x.kind, status: x.status, updatedAt: x.updated_at })),
    }));
  }

  markDispatched(ids: string[], at: number): Promise<void> {
    return this.writer.run(() => {
      for (const id of ids) this.q.markDispatched.run(at, id);
    });
  }

  async gatewayCursor(gateway: string): Promise<number> {
    return (this.q.cursor.get(gateway) as number | undefined) ?? 0;
  }

  /**
   * Records a run of events from one gateway and moves its cursor, in one
   * commit: after a crash the stream resumes from the cursor, so no event is
   * lost or counted twice. Returns the events that changed something.
   */
  applyGatewayEvents(gateway: string, events: GatewayEvent[]): Promise<Array<GatewayEvent & { emailStatus: string; projectId: string }>> {
    return this.writer.run(() => {
      const cursor = (this.q.cursor.get(gateway) as number | undefined) ?? 0;
      const applied: Array<GatewayEvent & { emailStatus: string; projectId: string }> = [];
      let last = cursor;
      for (const ev of events) {
        if (ev.seq <= cursor) continue;
        last = Math.max(last, ev.seq);
        const projectId = this.q.projectOfEmail.get(ev.emailId) as string | undefined;
        if (!projectId) continue;
        const inserted = this.q.insertEvent.run(ev.emailId, ev.type, ev.recipient, ev.attempt, ev.at, JSON.stringify(ev.details)).changes;
        if (!inserted) continue;
        const recipients = this.q.recipients.all(ev.emailId) as Array<{ address: string; status: string }>;
        for (const r of recipients) {
          if (ev.recipient && r.address !== ev.recipient) continue;
          const next = recipientStatusAfter(r.status, ev.type);
          if (!next) continue;
          r.status = next;
          this.q.setRecipientStatus.run(next, ev.at, ev.emailId, r.address);
          if (next === 'bounced') this.q.suppress.run(projectId, r.address, 'bounced', 'all', ev.emailId, ev.at);
        }
        const emailStatus = emailStatusOf(recipients.map((r) => r.status));
        this.q.setEmailStatus.run(emailStatus, ev.at, ev.emailId);
        applied.push({ ...ev, emailStatus, projectId });
      }
      if (last > cursor) this.q.setCursor.run(gateway, last);
      return applied;
    });
  }

  async suppressions(projectId: string): Promise<SuppressionRow[]> {
    return this.q.suppressions.all(projectId).map((r: any) => ({ address: r.address, reason: r.reason, scope: r.scope, emailId: r.email_id, createdAt: r.created_at }));
  }

  close(): void {
    this.writer.close();
    this.db.close();
  }
}
