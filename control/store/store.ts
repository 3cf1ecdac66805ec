// Control's storage: the only place with SQL. The interface is async so that a
// shared engine (PostgreSQL) can stand behind it later; writes go through the
// group-commit writer, so a promise that resolves means the data is committed.
import crypto from 'node:crypto';
import path from 'node:path';
import { ApiError } from '../../core/errors.js';
import { DAY_MS, dayOf as day } from '../../core/clock.js';
import { openDatabase, type Db } from '../../core/sqlite/open.js';
import { GroupWriter } from '../../core/sqlite/group-writer.js';
import { DayTallies } from './tallies.js';
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
  /** Per-project overrides of the plan's numbers; null = the plan's. */
  dailyQuota: number | null;
  monthlyQuota: number | null;
  rateLimit: number | null;
  createdAt: number;
}

export interface Quota {
  daily: number;
  monthly: number;
}

/** Ingestion rules for bulk email, checked in the same transaction as the insert. */
export interface BulkRules {
  /** Bulk recipients with one subject per project per UTC day. */
  subjectLimit: number;
  /** A spike is bulk volume above max(floor, factor × the average of the previous `days` days). */
  spike: { factor: number; floor: number; days: number };
}

export interface ThrottleRow {
  provider: string;
  dailyNorm: number;
  growth: number;
  maxDailyNorm: number;
  ratePerMinute: number;
  connections: number;
  updatedAt: number;
}

export interface AllowanceRow {
  day: string;
  volume: number;
  source: 'project' | 'operator';
  createdAt: number;
}

export interface DomainRow {
  id: string;
  projectId: string;
  name: string;
  status: 'pending' | 'verified';
  selector: string;
  dkimPrivate: string;
  dkimPublic: string;
  records: Array<Record<string, unknown>>;
  createdAt: number;
  verifiedAt: number | null;
  checkedAt: number | null;
}

export interface WebhookRow {
  id: string;
  projectId: string;
  url: string;
  statuses: string[];
  secret: string;
  createdAt: number;
}

export interface WebhookDelivery {
  id: string;
  webhookId: string;
  projectId: string;
  payload: string;
  attempt: number;
  nextAttemptAt: number;
  status: 'pending' | 'delivered' | 'failed';
  lastError: string | null;
  createdAt: number;
  deliveredAt: number | null;
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
  /** status/reason set for a recipient refused at ingestion (suppressed, unsubscribed). */
  recipients: Array<{ address: string; kind: 'to' | 'cc' | 'bcc'; status?: 'failed'; reason?: string }>;
  /** Set by insertEmail when a bulk volume spike holds the email back (then it is not dispatched). */
  held?: string;
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
  /** Tells apart events of one attempt that are not repeats (pacing deferrals to different days). */
  dedupe?: string;
  /** A report names its recipient by position in the email (control/unsubscribe/tokens.ts). */
  recipientIndex?: number;
  /** Apply only when the email has exactly one recipient (a report to a pre-VERP-per-recipient return path). */
  soleRecipient?: boolean;
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

const toProject = (r: any): Project => ({
  id: r.id,
  slug: r.slug,
  name: r.name,
  status: r.status,
  plan: r.plan,
  dailyQuota: r.daily_quota,
  monthlyQuota: r.monthly_quota,
  rateLimit: r.rate_limit,
  createdAt: r.created_at,
});
const toDomain = (r: any): DomainRow => ({
  id: r.id,
  projectId: r.project_id,
  name: r.name,
  status: r.status,
  selector: r.selector,
  dkimPrivate: r.dkim_private,
  dkimPublic: r.dkim_public,
  records: JSON.parse(r.records),
  createdAt: r.created_at,
  verifiedAt: r.verified_at,
  checkedAt: r.checked_at,
});
const toWebhook = (r: any): WebhookRow => ({
  id: r.id,
  projectId: r.project_id,
  url: r.url,
  statuses: JSON.parse(r.statuses),
  secret: r.secret,
  createdAt: r.created_at,
});
const toDelivery = (r: any): WebhookDelivery => ({
  id: r.id,
  webhookId: r.webhook_id,
  projectId: r.project_id,
  payload: r.payload,
  attempt: r.attempt,
  nextAttemptAt: r.next_attempt_at,
  status: r.status,
  lastError: r.last_error,
  createdAt: r.created_at,
  deliveredAt: r.delivered_at,
});
/** What reach() and notify() need of an email. */
interface StatusRow {
  reached: string;
  from_addr: string;
  subject: string;
  request: string;
  created_at: number;
}

/** Subjects that differ only in case or spacing are the same subject. */
const subjectHash = (subject: string) =>
  crypto.createHash('sha256').update(subject.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase()).digest('hex').slice(0, 32);
const toKey = (r: any): ApiKeyRow => ({
  id: r.id,
  projectId: r.project_id,
  kind: r.kind,
  scope: r.scope,
  hint: r.hint,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
});
const toEmail = (r: any): EmailRow => ({
  id: r.id,
  projectId: r.project_id,
  status: r.status,
  from: r.from_addr,
  subject: r.subject,
  bulk: !!r.bulk,
  request: r.request,
  error: r.error,
  errorCode: r.error_code,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  dispatchedAt: r.dispatched_at,
});

export class Store {
  readonly db: Db;
  readonly writer: GroupWriter;
  readonly auth: AuthStore;
  private readonly tallies: DayTallies;
  /** Read on every send or event, changed rarely, and only through this class. */
  private readonly hooksCache = new Map<string, WebhookRow[]>();
  private readonly verifiedCache = new Map<string, boolean>();
  private readonly q;

  constructor(dataDir: string, settings: StorageSettings) {
    this.db = openDatabase(path.join(dataDir, 'postgate.db'), [...controlMigrations, ...authMigrations]);
    this.writer = new GroupWriter(this.db, settings.maxBatch, settings.synchronous === 'FULL');
    this.auth = new AuthStore(this.db, this.writer);
    this.tallies = new DayTallies(this.db);
    this.writer.addHooks(this.tallies);
    // Cached lists are read back from the database after a rollback.
    this.writer.addHooks({ writeFailed: () => this.forget(), afterRollback: () => this.forget() });
    const db = this.db;
    this.q = {
      insertProject: db.prepare('INSERT INTO projects (id, slug, name, status, plan, created_at) VALUES (@id, @slug, @name, @status, @plan, @createdAt)'),
      projects: db.prepare('SELECT * FROM projects ORDER BY created_at, slug'),
      projectBySlug: db.prepare('SELECT * FROM projects WHERE slug = ?'),
      projectById: db.prepare('SELECT * FROM projects WHERE id = ?'),
      setProjectStatus: db.prepare('UPDATE projects SET status = ? WHERE id = ?'),
      insertKey: db.prepare(
        'INSERT INTO api_keys (id, project_id, kind, scope, hash, hint, created_at) VALUES (@id, @projectId, @kind, @scope, @hash, @hint, @createdAt)',
      ),
      keyByHash: db.prepare('SELECT * FROM api_keys WHERE hash = ?'),
      keys: db.prepare('SELECT * FROM api_keys WHERE project_id = ? ORDER BY created_at, id'),
      revokeKey: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND project_id = ? AND revoked_at IS NULL'),
      keyById: db.prepare('SELECT * FROM api_keys WHERE id = ? AND project_id = ?'),
      insertEmail:
        db.prepare(`INSERT INTO emails (id, project_id, status, from_addr, subject, bulk, request, error, error_code, created_at, updated_at, reached)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      insertRecipient: db.prepare('INSERT OR IGNORE INTO email_recipients (email_id, address, kind, status, updated_at) VALUES (?, ?, ?, ?, ?)'),
      insertEvent: db.prepare('INSERT OR IGNORE INTO email_events (email_id, type, recipient, attempt, at, details) VALUES (?, ?, ?, ?, ?, ?)'),
      email: db.prepare('SELECT * FROM emails WHERE id = ? AND project_id = ?'),
      emailById: db.prepare('SELECT id, status FROM emails WHERE id = ?'),
      recipients: db.prepare('SELECT address, kind, status, updated_at FROM email_recipients WHERE email_id = ? ORDER BY rowid'),
      events: db.prepare('SELECT type, recipient, attempt, at, details FROM email_events WHERE email_id = ? ORDER BY id'),
      undispatched: db.prepare("SELECT * FROM emails WHERE dispatched_at IS NULL AND status = 'queued' AND held IS NULL ORDER BY created_at LIMIT ?"),
      undispatchedOf: db.prepare(
        "SELECT * FROM emails WHERE dispatched_at IS NULL AND status = 'queued' AND held IS NULL AND project_id = ? ORDER BY created_at LIMIT ?",
      ),
      insertEventKeyed: db.prepare('INSERT OR IGNORE INTO email_events (email_id, type, recipient, attempt, at, details, dedupe) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      setHeld: db.prepare('UPDATE emails SET held = ? WHERE id = ?'),
      releaseHeld: db.prepare('UPDATE emails SET held = NULL WHERE project_id = ? AND held IS NOT NULL'),
      heldCount: db.prepare('SELECT count(*) FROM emails WHERE project_id = ? AND held IS NOT NULL').pluck(),
      bulkDay: db.prepare('SELECT count FROM bulk_daily WHERE project_id = ? AND day = ?').pluck(),
      bulkSince: db.prepare('SELECT COALESCE(SUM(count), 0) FROM bulk_daily WHERE project_id = ? AND day >= ? AND day < ?').pluck(),
      addBulk: db.prepare(
        'INSERT INTO bulk_daily (project_id, day, count) VALUES (?, ?, ?) ON CONFLICT(project_id, day) DO UPDATE SET count = count + excluded.count',
      ),
      subjectDay: db.prepare('SELECT count FROM bulk_subject_daily WHERE project_id = ? AND day = ? AND subject_hash = ?').pluck(),
      addSubject: db.prepare(`INSERT INTO bulk_subject_daily (project_id, day, subject_hash, count) VALUES (?, ?, ?, ?)
        ON CONFLICT(project_id, day, subject_hash) DO UPDATE SET count = count + excluded.count`),
      allowed: db.prepare('SELECT COALESCE(MAX(volume), 0) FROM volume_allowances WHERE project_id = ? AND day = ?').pluck(),
      insertAllowance: db.prepare('INSERT INTO volume_allowances (project_id, day, volume, source, created_at) VALUES (?, ?, ?, ?, ?)'),
      allowances: db.prepare('SELECT day, volume, source, created_at FROM volume_allowances WHERE project_id = ? AND day >= ? ORDER BY day, id'),
      throttles: db.prepare('SELECT * FROM throttles ORDER BY provider'),
      upsertThrottle: db.prepare(`INSERT INTO throttles (provider, daily_norm, growth, max_daily_norm, rate_per_minute, connections, updated_at)
        VALUES (@provider, @dailyNorm, @growth, @maxDailyNorm, @ratePerMinute, @connections, @updatedAt)
        ON CONFLICT(provider) DO UPDATE SET daily_norm = excluded.daily_norm, growth = excluded.growth, max_daily_norm = excluded.max_daily_norm,
          rate_per_minute = excluded.rate_per_minute, connections = excluded.connections, updated_at = excluded.updated_at`),
      firstSend: db.prepare("SELECT MIN(created_at) FROM emails WHERE project_id = ? AND status <> 'failed'").pluck(),
      emailBulk: db.prepare('SELECT bulk FROM emails WHERE id = ?').pluck(),
      emailOwner: db.prepare('SELECT e.id, e.project_id, e.bulk, p.name AS project_name FROM emails e JOIN projects p ON p.id = e.project_id WHERE e.id = ?'),
      suppressAll: db.prepare(`INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at) VALUES (?, ?, ?, 'all', ?, ?)
        ON CONFLICT(project_id, address) DO UPDATE SET scope = 'all', reason = excluded.reason, email_id = excluded.email_id, created_at = excluded.created_at
        WHERE suppressions.scope <> 'all'`),
      markDispatched: db.prepare('UPDATE emails SET dispatched_at = ? WHERE id = ?'),
      // The platform's own mail (sign-in codes) keeps no body once the gateway holds it: the code lives only as a keyed hash.
      redactSystem: db.prepare(`UPDATE emails SET request = json_remove(request, '$.text', '$.html')
        WHERE id = ? AND json_extract(request, '$.system') = 1`),
      setEmailStatus: db.prepare('UPDATE emails SET status = ?, updated_at = ? WHERE id = ?'),
      setRecipientStatus: db.prepare('UPDATE email_recipients SET status = ?, updated_at = ? WHERE email_id = ? AND address = ?'),
      cursor: db.prepare('SELECT seq FROM gateway_cursors WHERE gateway = ?').pluck(),
      setCursor: db.prepare('INSERT INTO gateway_cursors (gateway, seq) VALUES (?, ?) ON CONFLICT(gateway) DO UPDATE SET seq = excluded.seq'),
      suppress: db.prepare(`INSERT INTO suppressions (project_id, address, reason, scope, email_id, created_at) VALUES (?, ?, ?, ?, ?, ?)
        ON CONFLICT(project_id, address) DO NOTHING`),
      suppressions: db.prepare('SELECT address, reason, scope, email_id, created_at FROM suppressions WHERE project_id = ? ORDER BY created_at, address'),
      projectOfEmail: db.prepare('SELECT project_id FROM emails WHERE id = ?').pluck(),
      emailForStatus: db.prepare('SELECT project_id, status, reached, from_addr, subject, request, created_at FROM emails WHERE id = ?'),
      setReached: db.prepare('UPDATE emails SET reached = ? WHERE id = ?'),
      setPlan: db.prepare('UPDATE projects SET plan = @plan, daily_quota = @dailyQuota, monthly_quota = @monthlyQuota, rate_limit = @rateLimit WHERE id = @id'),
      analytics: db.prepare('SELECT day, status, count FROM analytics_daily WHERE project_id = ? AND day >= ? AND day <= ?'),
      insertDomain: db.prepare(`INSERT INTO domains (id, project_id, name, status, selector, dkim_private, dkim_public, records, created_at)
        VALUES (@id, @projectId, @name, @status, @selector, @dkimPrivate, @dkimPublic, @records, @createdAt)`),
      domains: db.prepare('SELECT * FROM domains WHERE project_id = ? ORDER BY created_at, name'),
      domain: db.prepare('SELECT * FROM domains WHERE id = ? AND project_id = ?'),
      domainByName: db.prepare('SELECT * FROM domains WHERE project_id = ? AND name = ?'),
      domainStatus: db.prepare('SELECT status FROM domains WHERE project_id = ? AND name = ?').pluck(),
      deleteDomain: db.prepare('DELETE FROM domains WHERE id = ? AND project_id = ?'),
      updateDomain: db.prepare('UPDATE domains SET status = ?, records = ?, checked_at = ?, verified_at = ? WHERE id = ?'),
      isSuppressed: db.prepare('SELECT scope FROM suppressions WHERE project_id = ? AND address = ?').pluck(),
      deleteSuppression: db.prepare('DELETE FROM suppressions WHERE project_id = ? AND address = ?'),
      insertWebhook: db.prepare(
        'INSERT INTO webhooks (id, project_id, url, statuses, secret, created_at) VALUES (@id, @projectId, @url, @statuses, @secret, @createdAt)',
      ),
      webhooks: db.prepare('SELECT * FROM webhooks WHERE project_id = ? ORDER BY created_at, id'),
      webhook: db.prepare('SELECT * FROM webhooks WHERE id = ? AND project_id = ?'),
      webhookById: db.prepare('SELECT * FROM webhooks WHERE id = ?'),
      deleteWebhook: db.prepare('DELETE FROM webhooks WHERE id = ? AND project_id = ?'),
      dropDeliveries: db.prepare(
        "UPDATE webhook_deliveries SET status = 'failed', last_error = 'endpoint deleted' WHERE webhook_id = ? AND status = 'pending'",
      ),
      insertDelivery: db.prepare(`INSERT INTO webhook_deliveries (id, webhook_id, project_id, payload, attempt, next_attempt_at, status, created_at)
        VALUES (?, ?, ?, ?, 0, ?, 'pending', ?)`),
      dueDeliveries: db.prepare("SELECT * FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT ?"),
      nextDue: db.prepare("SELECT MIN(next_attempt_at) FROM webhook_deliveries WHERE status = 'pending'").pluck(),
      updateDelivery: db.prepare('UPDATE webhook_deliveries SET status = ?, attempt = ?, next_attempt_at = ?, last_error = ?, delivered_at = ? WHERE id = ?'),
      deliveries: db.prepare('SELECT * FROM webhook_deliveries WHERE webhook_id = ? ORDER BY created_at DESC LIMIT ?'),
    };
  }

  // Projects and keys

  createProject(p: Pick<Project, 'id' | 'slug' | 'name' | 'plan' | 'createdAt'>, keys: Array<ApiKeyRow & { hash: string }>): Promise<Project> {
    return this.writer.run(() => {
      this.q.insertProject.run({ ...p, status: 'active' });
      for (const k of keys) this.q.insertKey.run(k);
      return { ...p, status: 'active' as const, dailyQuota: null, monthlyQuota: null, rateLimit: null };
    });
  }

  setPlan(id: string, plan: string, limits: { dailyQuota: number | null; monthlyQuota: number | null; rateLimit: number | null }): Promise<void> {
    return this.writer.run(() => void this.q.setPlan.run({ id, plan, ...limits }));
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

  /**
   * Records one email. With a quota, the project's usage is checked and counted
   * in the same transaction, so concurrent sends never overshoot it.
   */
  insertEmail(e: NewEmail, quota?: Quota, bulk?: BulkRules): Promise<void> {
    return this.writer.run(() => this.insertEmailNow(e, quota, bulk));
  }

  /** Several emails, each in its own savepoint, one commit for all (batch sends); each settles on its own. */
  insertEmails(list: NewEmail[], quota?: Quota, bulk?: BulkRules): Array<Promise<void>> {
    return list.map((e) => this.writer.run(() => this.insertEmailNow(e, quota, bulk)));
  }

  /**
   * Bulk rules of one queued bulk email, in its insert's transaction: the same-subject
   * limit refuses (BULK_LIMIT_EXCEEDED, nothing recorded); volume far above the
   * project's recent average, not announced or approved, holds the email (e.held).
   */
  private checkBulk(e: NewEmail, rules: BulkRules): void {
    const n = e.recipients.filter((r) => r.status !== 'failed').length;
    const today = day(e.createdAt);
    const hash = subjectHash(e.subject);
    const sameSubject = (this.q.subjectDay.get(e.projectId, today, hash) as number | undefined) ?? 0;
    if (sameSubject + n > rules.subjectLimit) {
      throw new ApiError(
        'BULK_LIMIT_EXCEEDED',
        `The daily limit of ${rules.subjectLimit} bulk emails with the same subject is reached (${sameSubject} sent today)`,
      );
    }
    this.q.addSubject.run(e.projectId, today, hash, n);
    const bulkToday = (this.q.bulkDay.get(e.projectId, today) as number | undefined) ?? 0;
    const from = day(e.createdAt - rules.spike.days * DAY_MS);
    const average = (this.q.bulkSince.get(e.projectId, from, today) as number) / rules.spike.days;
    const allowed = Math.max(rules.spike.floor, rules.spike.factor * average, this.q.allowed.get(e.projectId, today) as number);
    if (bulkToday + n > allowed) {
      e.held = `bulk volume today (${bulkToday + n}) is far above this project's usual (${Math.round(average)} a day); announce it with POST /v1/pacing/announcements or ask the operator to approve it`;
    }
    this.q.addBulk.run(e.projectId, today, n);
  }

  private insertEmailNow(e: NewEmail, quota: Quota | undefined, bulk?: BulkRules): void {
    if (quota && e.status === 'queued') {
      const today = day(e.createdAt);
      const used = this.tallies.usageOf(e.projectId, today);
      if (used.day >= quota.daily) throw new ApiError('QUOTA_EXCEEDED', `The daily quota of ${quota.daily} emails is used up`);
      if (used.month >= quota.monthly) throw new ApiError('QUOTA_EXCEEDED', `The monthly quota of ${quota.monthly} emails is used up`);
      this.tallies.countUsage(e.projectId, today);
    }
    if (bulk && e.bulk && e.status === 'queued') this.checkBulk(e, bulk);
    // A new email has reached its first status already: no read-back for reach().
    const row: StatusRow = { reached: e.status, from_addr: e.from, subject: e.subject, request: e.request, created_at: e.createdAt };
    this.q.insertEmail.run(
      e.id,
      e.projectId,
      e.status,
      e.from,
      e.subject,
      e.bulk ? 1 : 0,
      e.request,
      e.error ?? null,
      e.errorCode ?? null,
      e.createdAt,
      e.createdAt,
      e.status,
    );
    this.tallies.countStatus(e.projectId, day(e.createdAt), e.status);

    for (const r of e.recipients) this.q.insertRecipient.run(e.id, r.address, r.kind, r.status ?? (e.status === 'failed' ? 'failed' : 'queued'), e.createdAt);
    const details = e.error ? JSON.stringify({ reason: e.error, code: e.errorCode }) : null;
    this.q.insertEvent.run(e.id, e.status, '', 0, e.createdAt, details);
    for (const r of e.recipients) {
      // A partly refused email says which recipients were left out, and why.
      if (r.status === 'failed' && e.status !== 'failed')
        this.q.insertEvent.run(e.id, 'failed', r.address, 0, e.createdAt, JSON.stringify({ reason: r.reason ?? 'refused' }));
    }
    this.notify(e.id, e.projectId, e.status, e.createdAt, { type: e.status, at: e.createdAt, ...(e.error ? { reason: e.error, code: e.errorCode } : {}) }, row);
    if (e.held) {
      // Held by control, not a gateway: the delay says so, and waits for an announcement or the operator.
      const details = { cause: 'volume', reason: e.held };
      this.q.setHeld.run(e.held, e.id);
      this.q.insertEventKeyed.run(e.id, 'deferred', '', 0, e.createdAt, JSON.stringify(details), 'volume');
      this.notify(e.id, e.projectId, e.status, e.createdAt, { type: 'deferred', at: e.createdAt, ...details }, row);
    }
  }

  /**
   * An email reached a status: counted once per status in the daily analytics,
   * and queued for every webhook that wants it, in the same transaction as the change.
   */
  private reach(emailId: string, projectId: string, status: string, at: number, event: Record<string, unknown>): void {
    const row = this.q.emailForStatus.get(emailId) as StatusRow;
    const reached: string[] = row.reached ? row.reached.split(',') : [];
    if (!reached.includes(status)) {
      reached.push(status);
      this.q.setReached.run(reached.join(','), emailId);
      this.tallies.countStatus(projectId, day(at), status);
    }
    this.notify(emailId, projectId, status, at, event, row);
  }

  /** Queues the change for every webhook of the project that wants it. */
  private notify(emailId: string, projectId: string, status: string, at: number, event: Record<string, unknown>, row: StatusRow): void {
    const hooks = this.webhooksOf(projectId).filter((w) => !w.statuses.length || w.statuses.includes(String(event.type)) || w.statuses.includes(status));
    if (!hooks.length) return;
    const req = JSON.parse(row.request) as { to: string[]; tags: string[] };
    const data = {
      email_id: emailId,
      status,
      from: row.from_addr,
      to: req.to,
      subject: row.subject,
      tags: req.tags,
      created_at: new Date(row.created_at).toISOString(),
      event: { ...event, at: new Date(Number(event.at)).toISOString() },
    };
    for (const w of hooks) {
      const id = `msg_${crypto.randomUUID().replace(/-/g, '')}`;
      const payload = JSON.stringify({ type: `email.${event.type === 'deferred' ? 'deferred' : status}`, timestamp: new Date(at).toISOString(), data });
      this.q.insertDelivery.run(id, w.id, projectId, payload, at, at);
    }
  }

  private webhooksOf(projectId: string): WebhookRow[] {
    let list = this.hooksCache.get(projectId);
    if (!list) {
      list = this.q.webhooks.all(projectId).map(toWebhook);
      this.hooksCache.set(projectId, list);
    }
    return list;
  }

  private forget(): void {
    this.hooksCache.clear();
    this.verifiedCache.clear();
  }

  async getEmail(projectId: string, id: string): Promise<{ email: EmailRow; recipients: RecipientRow[]; events: EventRow[] } | undefined> {
    const r = this.q.email.get(id, projectId);
    if (!r) return undefined;
    return {
      email: toEmail(r),
      recipients: this.q.recipients.all(id).map((x: any) => ({ address: x.address, kind: x.kind, status: x.status, updatedAt: x.updated_at })),
      events: this.q.events
        .all(id)
        .map((x: any) => ({ type: x.type, recipient: x.recipient, attempt: x.attempt, at: x.at, details: x.details ? JSON.parse(x.details) : null })),
    };
  }

  /** Accepted emails not yet handed to a gateway, oldest first; of one project when given. */
  async undispatched(limit: number, projectId?: string): Promise<Array<EmailRow & { recipients: RecipientRow[] }>> {
    const rows = projectId ? this.q.undispatchedOf.all(projectId, limit) : this.q.undispatched.all(limit);
    return rows.map((r: any) => ({
      ...toEmail(r),
      recipients: this.q.recipients.all(r.id).map((x: any) => ({ address: x.address, kind: x.kind, status: x.status, updatedAt: x.updated_at })),
    }));
  }

  markDispatched(ids: string[], at: number): Promise<void> {
    return this.writer.run(() => {
      for (const id of ids) {
        this.q.markDispatched.run(at, id);
        this.q.redactSystem.run(id);
      }
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
        const recipients = this.q.recipients.all(ev.emailId) as Array<{ address: string; status: string }>;
        if (ev.recipientIndex !== undefined && !ev.recipient) {
          if (ev.soleRecipient && recipients.length !== 1) continue;
          const named = recipients[ev.recipientIndex];
          if (!named) continue;
          ev.recipient = named.address;
        }
        const inserted = this.q.insertEventKeyed.run(ev.emailId, ev.type, ev.recipient, ev.attempt, ev.at, JSON.stringify(ev.details), ev.dedupe ?? '').changes;
        if (!inserted) continue;
        const bulk = !!this.q.emailBulk.get(ev.emailId);
        for (const r of recipients) {
          if (ev.recipient && r.address !== ev.recipient) continue;
          // Unsubscribes, and complaints about bulk mail, stop the project's bulk mail to the address.
          if (ev.type === 'unsubscribed') this.q.suppress.run(projectId, r.address, 'unsubscribed', 'bulk', ev.emailId, ev.at);
          if (ev.type === 'complained' && bulk) this.q.suppress.run(projectId, r.address, 'complained', 'bulk', ev.emailId, ev.at);
          const next = recipientStatusAfter(r.status, ev.type);
          if (!next) continue;
          r.status = next;
          this.q.setRecipientStatus.run(next, ev.at, ev.emailId, r.address);
          if (next === 'bounced') this.q.suppressAll.run(projectId, r.address, 'bounced', ev.emailId, ev.at);
        }
        const before = (this.q.emailById.get(ev.emailId) as { status: string }).status;
        const emailStatus = emailStatusOf(recipients.map((r) => r.status));
        this.q.setEmailStatus.run(emailStatus, ev.at, ev.emailId);
        if (emailStatus !== before || ev.type === 'deferred') {
          this.reach(ev.emailId, projectId, emailStatus, ev.at, {
            type: ev.type,
            at: ev.at,
            ...(ev.recipient ? { recipient: ev.recipient } : {}),
            attempt: ev.attempt,
            ...ev.details,
          });
        }
        applied.push({ ...ev, emailStatus, projectId });
      }
      if (last > cursor) this.q.setCursor.run(gateway, last);
      return applied;
    });
  }

  async suppressions(projectId: string): Promise<SuppressionRow[]> {
    return this.q.suppressions
      .all(projectId)
      .map((r: any) => ({ address: r.address, reason: r.reason, scope: r.scope, emailId: r.email_id, createdAt: r.created_at }));
  }

  async deleteSuppression(projectId: string, address: string): Promise<boolean> {
    return this.writer.run(() => this.q.deleteSuppression.run(projectId, address).changes > 0);
  }

  /** The scope of an address's suppression ('all' or 'bulk'), if it is suppressed. */
  async suppressionScope(projectId: string, address: string): Promise<string | undefined> {
    return this.q.isSuppressed.get(projectId, address) as string | undefined;
  }

  addSuppression(projectId: string, address: string, reason: string, scope: 'all' | 'bulk', emailId: string | null, at: number): Promise<void> {
    return this.writer.run(() => void this.q.suppress.run(projectId, address, reason, scope, emailId, at));
  }

  // Deliverability: unsubscribes, volume holds, throttles, warm-up

  /** The email an unsubscribe token names, with its project (for the confirmation page). */
  async emailOwner(emailId: string): Promise<{ id: string; projectId: string; projectName: string; bulk: boolean } | undefined> {
    const r = this.q.emailOwner.get(emailId) as any;
    return r ? { id: r.id, projectId: r.project_id, projectName: r.project_name, bulk: !!r.bulk } : undefined;
  }

  /** Recipient n of an email (0-based, in recipient order). */
  async recipientAt(emailId: string, index: number): Promise<string | undefined> {
    return (this.q.recipients.all(emailId) as Array<{ address: string }>)[index]?.address;
  }

  /**
   * A one-click unsubscribe: the address leaves the project's bulk mail (suppression
   * scope 'bulk', reason 'unsubscribed') and the email shows an `unsubscribed` event.
   * Repeats change nothing.
   */
  unsubscribe(projectId: string, emailId: string, address: string, source: string, at: number): Promise<void> {
    return this.writer.run(() => {
      this.q.suppress.run(projectId, address, 'unsubscribed', 'bulk', emailId, at);
      this.q.insertEventKeyed.run(emailId, 'unsubscribed', address, 0, at, JSON.stringify({ source }), '');
    });
  }

  /** Day 1 of a project's warm-up: the day of its first accepted email; null when it has none. */
  async firstSendAt(projectId: string): Promise<number | null> {
    return (this.q.firstSend.get(projectId) as number | null) ?? null;
  }

  /** Bulk recipients accepted today and the average of the previous `days` days. */
  async bulkVolume(projectId: string, at: number, days: number): Promise<{ today: number; average: number; allowed: number; held: number }> {
    const today = day(at);
    return {
      today: (this.q.bulkDay.get(projectId, today) as number | undefined) ?? 0,
      average: (this.q.bulkSince.get(projectId, day(at - days * DAY_MS), today) as number) / days,
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

  /** Lets a project's held bulk mail go (the operator approved it); returns how many emails. */
  releaseHeld(projectId: string): Promise<number> {
    return this.writer.run(() => this.q.releaseHeld.run(projectId).changes);
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

  // Usage and analytics

  async usage(projectId: string, at: number): Promise<{ day: number; month: number }> {
    return this.tallies.usageOf(projectId, day(at));
  }

  async analytics(projectId: string, fromDay: string, toDay: string): Promise<Array<{ day: string; status: string; count: number }>> {
    return this.q.analytics.all(projectId, fromDay, toDay) as Array<{ day: string; status: string; count: number }>;
  }

  // Domains

  insertDomain(d: Omit<DomainRow, 'verifiedAt' | 'checkedAt'>): Promise<void> {
    return this.writer.run(() => {
      this.verifiedCache.clear();
      this.q.insertDomain.run({ ...d, records: JSON.stringify(d.records) });
    });
  }

  async domains(projectId: string): Promise<DomainRow[]> {
    return this.q.domains.all(projectId).map(toDomain);
  }

  async domain(projectId: string, id: string): Promise<DomainRow | undefined> {
    const r = this.q.domain.get(id, projectId);
    return r ? toDomain(r) : undefined;
  }

  async domainByName(projectId: string, name: string): Promise<DomainRow | undefined> {
    const r = this.q.domainByName.get(projectId, name);
    return r ? toDomain(r) : undefined;
  }

  /** The hot path's question (every send): is this sender domain verified? */
  async domainVerified(projectId: string, name: string): Promise<boolean> {
    const key = `${projectId}|${name}`;
    let ok = this.verifiedCache.get(key);
    if (ok === undefined) {
      ok = this.q.domainStatus.get(projectId, name) === 'verified';
      this.verifiedCache.set(key, ok);
    }
    return ok;
  }

  deleteDomain(projectId: string, id: string): Promise<boolean> {
    return this.writer.run(() => {
      this.verifiedCache.clear();
      return this.q.deleteDomain.run(id, projectId).changes > 0;
    });
  }

  updateDomain(id: string, status: DomainRow['status'], records: DomainRow['records'], checkedAt: number, verifiedAt: number | null): Promise<void> {
    return this.writer.run(() => {
      this.verifiedCache.clear();
      this.q.updateDomain.run(status, JSON.stringify(records), checkedAt, verifiedAt, id);
    });
  }

  // Webhooks

  insertWebhook(w: WebhookRow): Promise<void> {
    return this.writer.run(() => {
      this.hooksCache.delete(w.projectId);
      this.q.insertWebhook.run({ ...w, statuses: JSON.stringify(w.statuses) });
    });
  }

  async webhooks(projectId: string): Promise<WebhookRow[]> {
    return this.q.webhooks.all(projectId).map(toWebhook);
  }

  async webhook(projectId: string, id: string): Promise<WebhookRow | undefined> {
    const r = this.q.webhook.get(id, projectId);
    return r ? toWebhook(r) : undefined;
  }

  async webhookById(id: string): Promise<WebhookRow | undefined> {
    const r = this.q.webhookById.get(id);
    return r ? toWebhook(r) : undefined;
  }

  deleteWebhook(projectId: string, id: string): Promise<boolean> {
    return this.writer.run(() => {
      this.hooksCache.delete(projectId);
      const gone = this.q.deleteWebhook.run(id, projectId).changes > 0;
      if (gone) this.q.dropDeliveries.run(id);
      return gone;
    });
  }

  async dueDeliveries(now: number, limit: number): Promise<WebhookDelivery[]> {
    return this.q.dueDeliveries.all(now, limit).map(toDelivery);
  }

  async nextDeliveryAt(): Promise<number | null> {
    return (this.q.nextDue.get() as number | null) ?? null;
  }

  updateDelivery(
    id: string,
    status: WebhookDelivery['status'],
    attempt: number,
    nextAttemptAt: number,
    lastError: string | null,
    deliveredAt: number | null,
  ): Promise<void> {
    return this.writer.run(() => void this.q.updateDelivery.run(status, attempt, nextAttemptAt, lastError, deliveredAt, id));
  }

  async deliveries(webhookId: string, limit = 50): Promise<WebhookDelivery[]> {
    return this.q.deliveries.all(webhookId, limit).map(toDelivery);
  }

  close(): void {
    this.writer.close();
    this.db.close();
  }
}
