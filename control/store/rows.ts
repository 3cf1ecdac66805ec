// Rows as both backends read them (snake_case columns) to the store's types. SQLite hands
// JSON as text and booleans as 0/1; PostgreSQL hands JSONB parsed and BOOLEAN as booleans.
import type {
  ApiKeyRow,
  AuditEntry,
  DomainRow,
  InboundEmailRow,
  EmailRow,
  Project,
  ProviderRow,
  RecipientRow,
  SessionRow,
  TemplateRow,
  UserRow,
  WebhookDelivery,
  WebhookRow,
} from './index.js';
import { DEFAULT_DOMAIN_SETTINGS } from './index.js';
import type { LoadedEmail } from '../mail/lifecycle.js';

/** A JSON column: text from SQLite, already parsed from PostgreSQL's JSONB. */
const json = (v: unknown): any => (typeof v === 'string' ? JSON.parse(v) : v);

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
  bulk: !!r.bulk,
  request: r.request,
  error: r.error,
  errorCode: r.error_code,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  dispatchedAt: r.dispatched_at,
  scheduledAt: r.scheduled_at ?? null,
});

export const toRecipient = (r: any): RecipientRow => ({ address: r.address, kind: r.kind, status: r.status, updatedAt: r.updated_at });

export const toDomain = (r: any): DomainRow => ({
  id: r.id,
  projectId: r.project_id,
  name: r.name,
  status: r.status,
  selector: r.selector,
  dkimPrivate: r.dkim_private,
  dkimPublic: r.dkim_public,
  records: json(r.records),
  createdAt: r.created_at,
  verifiedAt: r.verified_at,
  checkedAt: r.checked_at,
  region: r.region ?? null,
  settings: {
    openTracking: Boolean(r.open_tracking),
    clickTracking: Boolean(r.click_tracking),
    tls: r.tls === 'enforced' ? 'enforced' : 'opportunistic',
    trackingSubdomain: r.tracking_subdomain ?? DEFAULT_DOMAIN_SETTINGS.trackingSubdomain,
    receiving: Boolean(r.receiving),
  },
});

export const toWebhook = (r: any): WebhookRow => ({
  id: r.id,
  projectId: r.project_id,
  url: r.url,
  statuses: json(r.statuses),
  secret: r.secret,
  createdAt: r.created_at,
  enabled: Boolean(r.enabled ?? true),
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

export const toUser = (r: any): UserRow => ({
  id: r.id,
  projectId: r.project_id,
  env: r.env,
  email: r.email,
  emailVerified: !!r.email_verified,
  name: r.name,
  avatarUrl: r.avatar_url,
  phone: r.phone,
  username: r.username,
  provider: r.provider,
  createdAt: r.created_at,
  lastSignIn: r.last_sign_in,
});
export const toSession = (r: any): SessionRow => ({
  id: r.id,
  projectId: r.project_id,
  env: r.env,
  userId: r.user_id,
  provider: r.provider,
  ip: r.ip,
  userAgent: r.user_agent,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});
export const toProvider = (r: any): ProviderRow => ({
  provider: r.provider,
  enabled: !!r.enabled,
  methods: json(r.methods),
  clientId: r.client_id,
  clientSecret: r.client_secret,
  botToken: r.bot_token,
  endpoints: json(r.endpoints),
  region: json(r.region),
  updatedAt: r.updated_at,
});

export const toAudit = (r: any): AuditEntry => ({
  id: r.id,
  projectId: r.project_id,
  env: r.env,
  type: r.type,
  userId: r.user_id,
  sessionId: r.session_id,
  email: r.email,
  phone: r.phone,
  provider: r.provider,
  ip: r.ip,
  userAgent: r.user_agent,
  reason: r.reason,
  suppressed: r.suppressed,
  at: r.at,
});

/** An email as an intent loads it for the lifecycle (`r`: a row with reached; its request when selected), with its recipients in order. */
export const toLoadedEmail = (r: any, recipients: any[]): LoadedEmail => ({
  id: r.id,
  projectId: r.project_id,
  status: r.status,
  bulk: !!r.bulk,
  reached: r.reached,
  from: r.from_addr,
  subject: r.subject,
  createdAt: Number(r.created_at),
  ...(typeof r.request === 'string' ? { request: r.request } : {}),
  recipients: recipients.map((x) => ({ address: x.address, kind: x.kind, status: x.status })),
});

/** A LIKE pattern matching `text` anywhere, its own %, _ and \ taken literally (both backends write `ESCAPE '\'`). */
export const likePattern = (text: string): string => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

export const toTemplate = (r: any): TemplateRow => ({
  id: r.id,
  projectId: r.project_id,
  name: r.name,
  alias: r.alias,
  draft: json(r.draft),
  published: r.published === null ? null : json(r.published),
  publishedAt: r.published_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
});

/** A template's columns as named parameters (contents as JSON text: SQLite keeps it as such, PostgreSQL casts it to JSONB). */
export const templateColumns = (t: TemplateRow) => ({
  id: t.id,
  projectId: t.projectId,
  name: t.name,
  alias: t.alias,
  draft: JSON.stringify(t.draft),
  published: t.published === null ? null : JSON.stringify(t.published),
  publishedAt: t.publishedAt,
  createdAt: t.createdAt,
  updatedAt: t.updatedAt,
});

/** The columns of a received email both backends read (all but its raw message). */
export const INBOUND_COLUMNS =
  'id, project_id, created_at, mail_from, rcpt_to, from_addr, to_addrs, cc, bcc, reply_to, subject, message_id, text, html, headers, auth, remote_ip, helo, size, attachments';

export const toInboundEmail = (r: any): InboundEmailRow => ({
  id: r.id,
  projectId: r.project_id,
  createdAt: Number(r.created_at),
  mailFrom: r.mail_from,
  rcptTo: json(r.rcpt_to),
  from: r.from_addr,
  to: json(r.to_addrs),
  cc: json(r.cc),
  bcc: json(r.bcc),
  replyTo: json(r.reply_to),
  subject: r.subject,
  messageId: r.message_id,
  text: r.text,
  html: r.html,
  headers: json(r.headers),
  auth: json(r.auth),
  remoteIp: r.remote_ip,
  helo: r.helo,
  size: Number(r.size),
  attachments: json(r.attachments),
});
