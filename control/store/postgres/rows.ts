// PostgreSQL rows (snake_case; BOOLEAN, JSONB and BIGINT already typed by the driver) to the store's types.
import type { ApiKeyRow, DomainRow, EmailRow, Project, RecipientRow, WebhookDelivery, WebhookRow } from '../index.js';

export const toProject = (r: any): Project => ({
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

export const toKey = (r: any): ApiKeyRow => ({
  id: r.id,
  projectId: r.project_id,
  kind: r.kind,
  scope: r.scope,
  hint: r.hint,
  createdAt: r.created_at,
  revokedAt: r.revoked_at,
});

export const toEmail = (r: any): EmailRow => ({
  id: r.id,
  projectId: r.project_id,
  status: r.status,
  from: r.from_addr,
  subject: r.subject,
  bulk: r.bulk,
  request: r.request,
  error: r.error,
  errorCode: r.error_code,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  dispatchedAt: r.dispatched_at,
});

/** The columns toEmail reads (not the claim). */
export const EMAIL_COLUMNS = 'id, project_id, status, from_addr, subject, bulk, request, error, error_code, created_at, updated_at, dispatched_at';

export const toRecipient = (r: any): RecipientRow => ({ address: r.address, kind: r.kind, status: r.status, updatedAt: r.updated_at });

export const toDomain = (r: any): DomainRow => ({
  id: r.id,
  projectId: r.project_id,
  name: r.name,
  status: r.status,
  selector: r.selector,
  dkimPrivate: r.dkim_private,
  dkimPublic: r.dkim_public,
  records: r.records,
  createdAt: r.created_at,
  verifiedAt: r.verified_at,
  checkedAt: r.checked_at,
});

export const toWebhook = (r: any): WebhookRow => ({
  id: r.id,
  projectId: r.project_id,
  url: r.url,
  statuses: r.statuses,
  secret: r.secret,
  createdAt: r.created_at,
});

export const toDelivery = (r: any): WebhookDelivery => ({
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

/** A recipient list in recipient order (what tokens name by index). */
export const RECIPIENTS_SQL = 'SELECT address, kind, status, updated_at FROM email_recipients WHERE email_id = $1 ORDER BY position';

/** The database's clock in epoch ms: one clock for every node's claims. */
export const DB_NOW = '(extract(epoch from clock_timestamp()) * 1000)::bigint';
