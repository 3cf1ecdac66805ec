// Control's storage, the one module callers import (only the composition root imports
// open.ts, which opens a backend): a Store made of repositories whose methods are
// intents. Every change that touches several tables is one method and atomic by
// contract, so a backend can keep it in one transaction (SQLite's group commit, or one
// short PostgreSQL transaction); there is deliberately no generic transaction across
// this interface. Rules (quotas, bulk, the status machine,
// webhook payloads) are pure modules the backends call, and refusals come back as
// data for the pipeline to word.
import type { Config } from '../../core/config.js';
import type {
  Acceptance,
  AcceptGuards,
  AppliedEvent,
  EmailEventType,
  EmailStatus,
  GatewayEvent,
  NewEmail,
  RecipientKind,
  RecipientStatus,
  ScheduleChange,
  TrackingCount,
  TrackingHit,
} from '../mail/vocabulary.js';

// The email vocabulary (control/mail/vocabulary.ts), where callers of the store have always found it.
export type {
  Acceptance,
  AcceptGuards,
  AppliedEvent,
  BulkRules,
  DeliveryEventType,
  EmailEventType,
  EmailStatus,
  GatewayEvent,
  NewEmail,
  Quota,
  RecipientKind,
  RecipientStatus,
  Refusal,
  ScheduleChange,
  StoredRequest,
  SuppressionScope,
  TrackingHit,
} from '../mail/vocabulary.js';

// Projects and keys

export type KeyKind = 'live' | 'test';
/** all: every API; auth: the browser-safe sign-in routes; users: user management (auth/users), server-side only. */
export type KeyScope = 'all' | 'auth' | 'users';
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

export interface ApiKeyRow {
  id: string;
  projectId: string;
  kind: KeyKind;
  scope: KeyScope;
  hint: string;
  createdAt: number;
  revokedAt: number | null;
}

/** A key as it is created: only its hash is kept. */
export type NewApiKey = ApiKeyRow & { hash: string };

export interface PlanLimitsRow {
  dailyQuota: number | null;
  monthlyQuota: number | null;
  rateLimit: number | null;
}

// Emails

export interface EmailRow {
  id: string;
  projectId: string;
  status: EmailStatus;
  from: string;
  subject: string;
  bulk: boolean;
  request: string;
  error: string | null;
  errorCode: string | null;
  createdAt: number;
  updatedAt: number;
  dispatchedAt: number | null;
  /** When a scheduled email leaves (epoch ms); null for one sent at once. */
  scheduledAt: number | null;
}

export interface RecipientRow {
  address: string;
  kind: RecipientKind;
  status: RecipientStatus;
  updatedAt: number;
}

export interface EventRow {
  type: EmailEventType;
  recipient: string;
  attempt: number;
  at: number;
  details: Record<string, unknown> | null;
}

/** GET /v1/emails: a page and its filters (all optional but limit). */
export interface EmailQuery {
  limit: number;
  after?: string;
  before?: string;
  status?: EmailStatus;
  tag?: string;
  /** created_at bounds, epoch ms, inclusive. */
  since?: number;
  until?: number;
}

export interface StoredEmail {
  email: EmailRow;
  recipients: RecipientRow[];
  events: EventRow[];
}

export type PendingEmail = EmailRow & { recipients: RecipientRow[] };

/**
 * The operator's email search (GET /admin/v1/emails), over every project or one; all filters optional but
 * limit. Pages run newest first by id (time-ordered UUIDv7s, as the public list), `after` being an email id.
 * `to`: a recipient address, case-insensitive (by index); `from` and `subject`: case-insensitive substrings;
 * `tag`: `name:value` exactly, or `name` (the tag `name` or any `name:…`); since/until: created_at, epoch ms,
 * inclusive. Without `id`, a call examines at most EMAIL_SEARCH_SCAN emails (or a recipient's emails), fewer
 * with a tag filter (control/store/email-search.ts).
 */
export interface EmailSearch {
  projectId?: string;
  id?: string;
  to?: string;
  from?: string;
  subject?: string;
  status?: EmailStatus;
  tag?: string;
  since?: number;
  until?: number;
  limit: number;
  after?: string;
  /** How many rows a walk examines at most; EMAIL_SEARCH_SCAN when absent (fewer with a tag filter). */
  scan?: number;
}

/** An email as the operator's search lists it: `to` and `tags` as the send request gave them. */
export interface EmailSummary {
  id: string;
  projectId: string;
  status: EmailStatus;
  from: string;
  subject: string;
  createdAt: number;
  to: string[];
  tags: string[];
}

/**
 * A page of the search. `next`: where the next call goes on (`after`), null when the range is searched to its
 * end; a page cut short by the scan bound may hold fewer than `limit` emails and still have a `next`.
 * `scannedUntil`: the created_at of the oldest email the call examined when it stopped before the end, else null.
 */
export interface EmailSearchPage {
  emails: EmailSummary[];
  hasMore: boolean;
  next: string | null;
  scannedUntil: number | null;
}

/** How many emails (or a recipient's emails) one search call examines at most. */
export const EMAIL_SEARCH_SCAN = 5000;
/**
 * How long an idempotency claim owns its key before a retry may take it over (a crashed attempt); here
 * because the email search widens a time range by it (ids reserved by a claim may be that much older).
 */
export const IDEMPOTENCY_LEASE_MS = 60_000;

export interface EmailOwner {
  id: string;
  projectId: string;
  projectName: string;
  bulk: boolean;
}

export interface SuppressionRow {
  address: string;
  reason: string;
  scope: string;
  emailId: string | null;
  createdAt: number;
}

// Domains, webhooks, pacing

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
  /** Resend's `region`, kept and echoed (one self-hosted install has no regions). */
  region?: string | null;
  /** Resend's domain settings (PATCH /v1/domains/:id); DEFAULT_DOMAIN_SETTINGS until changed. */
  settings: DomainSettings;
}

/**
 * What a domain's owner turns on (Resend's `open_tracking`, `click_tracking`, `tls`, `tracking_subdomain`,
 * `capabilities.receiving`): tracking off, TLS opportunistic, no inbound mail, until asked for.
 */
export interface DomainSettings {
  openTracking: boolean;
  clickTracking: boolean;
  /** `enforced`: delivery only over STARTTLS with a certificate that verifies for the MX name. */
  tls: 'opportunistic' | 'enforced';
  /** The label of the tracking host (`<label>.<domain>`, a CNAME to the operator's tracking host). */
  trackingSubdomain: string;
  /** The domain receives mail: an MX to the inbound host, accepted for any address at the domain. */
  receiving: boolean;
}

export type NewDomain = Omit<DomainRow, 'verifiedAt' | 'checkedAt' | 'settings'> & { settings?: DomainSettings };

export const DEFAULT_DOMAIN_SETTINGS: Readonly<DomainSettings> = Object.freeze({
  openTracking: false,
  clickTracking: false,
  tls: 'opportunistic',
  trackingSubdomain: 'links',
  receiving: false,
});

export interface WebhookRow {
  id: string;
  projectId: string;
  url: string;
  /**
   * What the endpoint subscribed to: email statuses and event kinds (common/status.ts), auth event
   * types (AUTH_EVENT_TYPES), and Resend event names postgate accepts but never sends (email.opened…).
   * Empty: every email event and no auth event.
   */
  statuses: string[];
  secret: string;
  createdAt: number;
  /** A disabled endpoint gets no new messages (Resend's status 'disabled'). */
  enabled: boolean;
}

/** What PATCH /v1/webhooks/:id may change; absent fields are kept. */
export interface WebhookChange {
  url?: string;
  statuses?: string[];
  enabled?: boolean;
  /** Sealed, like WebhookRow.secret (rotation). */
  secret?: string;
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

export interface BulkVolume {
  today: number;
  average: number;
  allowed: number;
  held: number;
}

// Sign-in

export type Env = 'live' | 'test';

export interface AuthSettingsRow {
  sessionTtlSeconds: number | null;
  codeFrom: string | null;
  telegramWindowSeconds: number | null;
  /**
   * Every exchange-code must carry the verifier of a challenge given at the start; null: not set, the
   * default applies (auth/project-config.ts).
   */
  requireCodeVerifier: boolean | null;
  /** Two-factor (auth/two-factor): null is 'off'; 'optional' lets users enrol; 'required' asks it of every user. */
  twoFactor: 'optional' | 'required' | null;
  /** The `aud` of the project's JWTs (auth/jwt); null: the default. */
  jwtAudience: string | null;
  /** The lifetime of the project's JWTs (at most 600); null: the default. */
  jwtTtlSeconds: number | null;
}

export interface ProviderRow {
  provider: string;
  enabled: boolean;
  methods: string[];
  clientId: string | null;
  /** Encrypted (auth/crypto.ts). */
  clientSecret: string | null;
  /** Encrypted (auth/crypto.ts). */
  botToken: string | null;
  endpoints: Record<string, string>;
  region: Record<string, string[]>;
  updatedAt: number;
}

export interface UserRow {
  id: string;
  projectId: string;
  env: Env;
  email: string | null;
  emailVerified: boolean;
  name: string | null;
  avatarUrl: string | null;
  phone: string | null;
  username: string | null;
  provider: string;
  createdAt: number;
  lastSignIn: number | null;
}

export interface SessionRow {
  id: string;
  projectId: string;
  env: Env;
  userId: string;
  provider: string;
  ip: string | null;
  userAgent: string | null;
  createdAt: number;
  expiresAt: number;
}

export interface OAuthStateRow {
  projectId: string;
  env: Env;
  provider: string;
  callbackUrl: string;
  /** Encrypted (auth/crypto.ts). */
  codeVerifier: string;
  nonce: string | null;
  /** The S256 hash of a verifier the starting browser keeps (login CSRF binding); null when none was given. */
  clientChallenge: string | null;
  expiresAt: number;
}

/** What a sign-in knows about the person, from the provider or the code channel. */
export interface SignInProfile {
  provider: string;
  subject: string;
  email: string | null;
  /** True only when the source is authoritative for the address; only then may it link accounts. */
  emailVerified: boolean;
  name: string | null;
  avatarUrl: string | null;
  phone: string | null;
  /** The number was proven now (an SMS code): it becomes the user's verified number if the user has no other. */
  phoneVerified?: boolean;
  username: string | null;
}

/** A session with its user, as the store reads them together. */
export interface SessionInfoRow {
  user: UserRow;
  session: SessionRow;
}

export interface NewSession {
  id: string;
  tokenHash: string;
  createdAt: number;
  expiresAt: number;
}

/** Where a sign-in happened (recorded with its session). */
export interface Origin {
  ip: string | null;
  userAgent: string | null;
}

export interface NewOtp {
  projectId: string;
  env: Env;
  channel: string;
  target: string;
  codeHash: string;
  createdAt: number;
  expiresAt: number;
  testCode: string | null;
}

export type OtpCheck = 'ok' | 'missing' | 'expired' | 'locked' | 'wrong';
export type ExchangeResult =
  /** `secondFactor`: the code was earned with a second factor already (a user-verified passkey). */
  | { status: 'ok'; session: SessionRow; user: UserRow; secondFactor: boolean }
  | { status: 'missing' | 'expired' | 'unbound' }
  /** The code's session, revoked now (null when it was already gone), and its user (auth events). */
  | { status: 'reused'; revokedTokenHash: string | null; revokedSessionId: string | null; userId: string };

// The repositories

export interface Projects {
  /** A project with its first keys, together. */
  create(p: Pick<Project, 'id' | 'slug' | 'name' | 'plan' | 'createdAt'>, keys: NewApiKey[]): Promise<Project>;
  list(): Promise<Project[]>;
  bySlug(slug: string): Promise<Project | undefined>;
  byId(id: string): Promise<Project | undefined>;
  setStatus(id: string, status: ProjectStatus): Promise<void>;
  setPlan(id: string, plan: string, limits: PlanLimitsRow): Promise<void>;
}

export interface ApiKeys {
  create(k: NewApiKey): Promise<void>;
  byHash(hash: string): Promise<ApiKeyRow | undefined>;
  list(projectId: string): Promise<ApiKeyRow[]>;
  /** Returns the revoked key's hash (for cache invalidation), or undefined when there was none to revoke. */
  revoke(projectId: string, keyId: string, at: number): Promise<{ hash: string } | undefined>;
}

export interface Emails {
  /**
   * Records one email with its recipients, first event, analytics counts and webhook
   * messages, in one transaction. A queued email is judged there by the guards (so
   * concurrent sends never overshoot a quota) and may be refused (nothing recorded)
   * or held (a bulk volume spike: recorded, not dispatched).
   */
  accept(e: NewEmail, guards?: AcceptGuards): Promise<Acceptance>;
  /** Several emails (a batch), each judged and settled on its own, committed together where the backend can. */
  acceptMany(list: NewEmail[], guards?: AcceptGuards): Array<Promise<Acceptance>>;
  get(projectId: string, id: string): Promise<StoredEmail | undefined>;
  /** An email of any project (the operator's view); its project is email.projectId. */
  find(id: string): Promise<StoredEmail | undefined>;
  /** The operator's search across projects (EmailSearch): bounded cost, newest first. */
  search(q: EmailSearch): Promise<EmailSearchPage>;
  /**
   * Accepted emails not yet handed to a gateway (and not held), oldest first; of one project when given.
   * On a database several control nodes share (PostgreSQL) the call also claims what it returns for
   * this node, for a lease of about 30 s on the database's clock: another node's call skips them, so
   * two nodes never hand the same email on together. The node renews its own claims each time it
   * asks (a retry after a failed hand-over gets them back at once); a node that dies leaves them to
   * expire and another node takes them over; closing the store gives them up. A hand-over that
   * outlasts the lease may be repeated by another node, which the gateways' idempotent Enqueue
   * absorbs. SQLite serves one node and needs no claim.
   */
  undispatched(limit: number, projectId?: string): Promise<PendingEmail[]>;
  /**
   * A page of the project's emails, newest first (ids are time-ordered UUIDv7s). `after`
   * pages towards older emails, `before` towards newer ones; both are email ids.
   */
  list(projectId: string, q: EmailQuery): Promise<{ emails: EmailRow[]; hasMore: boolean }>;
  /** Scheduled emails whose time has come (scheduledAt <= now), oldest first. */
  due(now: number, limit: number): Promise<Array<{ id: string; projectId: string }>>;
  /** How many emails wait for their scheduled time, every project's (the partial index emails_scheduled). */
  countScheduled(): Promise<number>;
  /**
   * A due scheduled email leaves now: in one transaction the quota and bulk rules are
   * judged as at acceptance (today's counts), and it becomes 'queued' (maybe held), or
   * 'failed' with the refusal's code. 'gone': no longer scheduled (canceled meanwhile).
   */
  release(id: string, guards: AcceptGuards, now: number): Promise<Acceptance | { kind: 'gone' }>;
  /** Moves a scheduled email's time; anything but a scheduled email is left alone. */
  reschedule(projectId: string, id: string, at: number, now: number): Promise<ScheduleChange>;
  /** A scheduled email will not leave: 'canceled', with its recipients. */
  cancel(projectId: string, id: string, now: number): Promise<ScheduleChange>;
  /** A gateway holds these now; the platform's own mail drops its body. */
  markDispatched(ids: string[], at: number): Promise<void>;
  /** An email's attachment bytes, in order (what the dispatcher hands the gateway). */
  attachments(emailId: string): Promise<Buffer[]>;
  /** The email an unsubscribe token names, with its project (for the confirmation page). */
  owner(emailId: string): Promise<EmailOwner | undefined>;
  /** Recipient n of an email (0-based, in recipient order): what unsubscribe and VERP tokens name. */
  recipientAt(emailId: string, index: number): Promise<string | undefined>;
}

export interface DeliveryLog {
  /** Where this gateway's event stream resumes. */
  cursor(gateway: string): Promise<number>;
  /**
   * Records a run of events from one gateway and moves its cursor, in one transaction:
   * after a crash the stream resumes from the cursor, and an event seen twice (by seq,
   * or by email, type, recipient, attempt and dedupe key) is counted once. Returns the
   * events that changed something.
   */
  apply(gateway: string, events: GatewayEvent[]): Promise<AppliedEvent[]>;
  /**
   * Settles once every run recorded before the call would survive a power loss. apply() may
   * settle before its run is on disk (the gateway keeps its events until they are acknowledged,
   * and sends them again after a restart), so the acknowledgement waits for this.
   */
  durable(): Promise<void>;
}

/** Where a page of GET /admin/v1/suppressions resumes: the last row given (the order is created_at, project, address, all descending). */
export interface SuppressionCursor {
  createdAt: number;
  projectId: string;
  address: string;
}

/** The operator's search: one project or all, `q` a case-insensitive substring of the address; newest first. */
export interface SuppressionSearch {
  projectId?: string;
  q?: string;
  limit: number;
  after?: SuppressionCursor;
}

export type FoundSuppression = SuppressionRow & { projectId: string };

export interface Suppressions {
  list(projectId: string): Promise<SuppressionRow[]>;
  search(s: SuppressionSearch): Promise<{ rows: FoundSuppression[]; hasMore: boolean }>;
  /** False when the address was not suppressed. */
  remove(projectId: string, address: string): Promise<boolean>;
  /**
   * A one-click unsubscribe: the address leaves the project's bulk mail (scope 'bulk',
   * reason 'unsubscribed') and the email shows an `unsubscribed` event. Repeats change nothing.
   */
  unsubscribe(projectId: string, emailId: string, address: string, source: string, at: number): Promise<void>;
}

/**
 * A page of GET /v1/domains, in list order (oldest first: created_at, then name). Without `limit`, every domain
 * (as Resend, whose domain list pages only when asked to); `after` and `before` are domain ids, not both.
 */
export interface DomainQuery {
  limit?: number;
  after?: string;
  before?: string;
}

export interface Domains {
  /** `settings` absent: DEFAULT_DOMAIN_SETTINGS. */
  create(d: NewDomain): Promise<void>;
  /** Replaces the domain's settings and records together; false when the project has no such domain. */
  updateSettings(projectId: string, id: string, settings: DomainSettings, records: DomainRow['records']): Promise<boolean>;
  /** Undefined when the cursor names no domain of the project. */
  list(projectId: string, q?: DomainQuery): Promise<{ domains: DomainRow[]; hasMore: boolean } | undefined>;
  get(projectId: string, id: string): Promise<DomainRow | undefined>;
  byName(projectId: string, name: string): Promise<DomainRow | undefined>;
  /** The hot path's question (every send): is this sender domain verified? */
  isVerified(projectId: string, name: string): Promise<boolean>;
  update(id: string, status: DomainRow['status'], records: DomainRow['records'], checkedAt: number, verifiedAt: number | null): Promise<void>;
  remove(projectId: string, id: string): Promise<boolean>;
}

export interface Webhooks {
  /** `enabled` absent: enabled. */
  create(w: Omit<WebhookRow, 'enabled'> & { enabled?: boolean }): Promise<void>;
  /** The endpoint after the change, or undefined when the project has no such endpoint. Disabling gives up its pending messages. */
  update(projectId: string, id: string, change: WebhookChange): Promise<WebhookRow | undefined>;
  list(projectId: string): Promise<WebhookRow[]>;
  get(projectId: string, id: string): Promise<WebhookRow | undefined>;
  byId(id: string): Promise<WebhookRow | undefined>;
  /** Also gives up the endpoint's pending messages. */
  remove(projectId: string, id: string): Promise<boolean>;
  due(now: number, limit: number): Promise<WebhookDelivery[]>;
  nextDueAt(): Promise<number | null>;
  recordAttempt(
    id: string,
    status: WebhookDelivery['status'],
    attempt: number,
    nextAttemptAt: number,
    lastError: string | null,
    deliveredAt: number | null,
  ): Promise<void>;
  /**
   * The endpoint's latest messages, newest first; with `status`, those of that status among its latest
   * DELIVERY_SCAN messages (the cost stays bounded on an endpoint with millions).
   */
  deliveries(webhookId: string, limit?: number, status?: WebhookDelivery['status']): Promise<WebhookDelivery[]>;
  /** Every project's endpoints (the operator's console), oldest first. */
  all(): Promise<WebhookRow[]>;
  /** How the endpoint's latest `n` messages stand, by status. */
  recent(webhookId: string, n: number): Promise<Record<WebhookDelivery['status'], number>>;
  delivery(id: string): Promise<WebhookDelivery | undefined>;
  /**
   * The operator's retry: a pending or failed message becomes pending and due at `now` (the sender polls and
   * takes it); the row after the change, or undefined when there is no such message or it was delivered.
   */
  retryNow(id: string, now: number): Promise<WebhookDelivery | undefined>;
}

/** How far back Webhooks.deliveries looks for messages of one status. */
export const DELIVERY_SCAN = 5000;

export interface PacingData {
  throttles(): Promise<ThrottleRow[]>;
  setThrottle(t: ThrottleRow): Promise<void>;
  /** Day 1 of a project's warm-up: the day of its first accepted email; null when it has none. */
  firstSendAt(projectId: string): Promise<number | null>;
  /** Bulk recipients accepted today, the average of the previous `days` days, today's allowance and held emails. */
  bulkVolume(projectId: string, at: number, days: number): Promise<BulkVolume>;
  addAllowance(projectId: string, forDay: string, volume: number, source: AllowanceRow['source'], at: number): Promise<void>;
  allowances(projectId: string, fromDay: string): Promise<AllowanceRow[]>;
  /** Lets a project's held bulk mail go (the operator approved it); returns how many emails. */
  releaseHeld(projectId: string): Promise<number>;
  /** Held emails (a bulk volume spike) per project that has any, for the live delivery state (partial index emails_held). */
  heldByProject(): Promise<Array<{ projectId: string; held: number }>>;
}

export interface Analytics {
  /** Emails counted against the project's quotas on the UTC day of `at` and in its month. */
  usage(projectId: string, at: number): Promise<{ day: number; month: number }>;
  /** Emails that reached each status (and were first opened or clicked by a person: open and click tracking), per UTC day, from..to inclusive. */
  daily(projectId: string, fromDay: string, toDay: string): Promise<Array<{ day: string; status: EmailStatus | 'opened' | 'clicked'; count: number }>>;
}

/** The auth API's data. Secrets never reach it in the clear: provider secrets arrive encrypted, tokens and codes hashed. */
export interface SignInStore {
  settings(projectId: string): Promise<AuthSettingsRow>;
  putSettings(projectId: string, s: AuthSettingsRow, at: number): Promise<void>;
  providers(projectId: string): Promise<ProviderRow[]>;
  provider(projectId: string, provider: string): Promise<ProviderRow | undefined>;
  putProvider(projectId: string, row: ProviderRow): Promise<void>;
  origins(projectId: string): Promise<string[]>;
  hasOrigin(projectId: string, origin: string): Promise<boolean>;
  addOrigin(projectId: string, origin: string, at: number): Promise<void>;
  /** False when the origin was not on the list. */
  removeOrigin(projectId: string, origin: string): Promise<boolean>;
  callbackUrls(projectId: string): Promise<string[]>;
  addCallbackUrl(projectId: string, url: string, at: number): Promise<void>;
  /** False when the URL was not on the list. */
  removeCallbackUrl(projectId: string, url: string): Promise<boolean>;

  /**
   * Records an OAuth transaction unless its project already has `maxLive` that have not expired (at
   * `createdAt`), counted over both environments in the store itself, so every node sees one total; false
   * when refused. Concurrent inserts never pass the cap together.
   */
  insertState(s: OAuthStateRow & { stateHash: string; createdAt: number }, maxLive: number): Promise<boolean>;
  /** Removes and returns the state: a state is usable once, whoever comes first. */
  takeState(stateHash: string): Promise<OAuthStateRow | undefined>;

  /**
   * Finds the user of (provider, subject), or links by an authoritative verified email,
   * or creates one; then opens its session, or (OAuth) records the one-time exchange
   * code that will open it. Atomic.
   */
  signIn(
    projectId: string,
    env: Env,
    profile: SignInProfile,
    origin: Origin,
    at: number,
    then: { session: NewSession } | { exchange: { codeHash: string; expiresAt: number; clientChallenge: string | null } },
  ): Promise<{ user: UserRow; session?: SessionRow /** The user did not exist before this call. */; created: boolean }>;
  sessionByHash(tokenHash: string): Promise<SessionRow | undefined>;
  userById(id: string): Promise<UserRow | undefined>;
  /** False when there was no live session with that token. */
  revokeSession(tokenHash: string, at: number): Promise<boolean>;
  /**
   * Opens a session for a known user of the project and environment (a passkey, a second factor) and
   * records the sign-in time; undefined when there is no such user.
   */
  openSession(projectId: string, env: Env, userId: string, provider: string, origin: Origin, session: NewSession): Promise<SessionInfoRow | undefined>;
  /** Ends a session by id; its token hash (for cache invalidation) when it was live, else undefined. */
  revokeSessionById(sessionId: string, at: number): Promise<string | undefined>;
  /**
   * Uses a one-time exchange code: the first use by the same project and environment
   * opens its session; any later use revokes that session (the code leaked) and returns
   * the revoked token's hash for cache invalidation. Atomic.
   */
  useExchangeCode(
    codeHash: string,
    projectId: string,
    env: Env,
    session: NewSession,
    bound: (clientChallenge: string | null) => boolean,
  ): Promise<ExchangeResult>;

  /** When the current code of a target was issued, if it has one. */
  otpIssuedAt(projectId: string, env: Env, channel: string, target: string): Promise<number | undefined>;
  /** Replaces the target's code (a resend invalidates the previous one and resets its attempts). */
  putOtp(o: NewOtp): Promise<void>;
  /** Reads back the (encrypted) code of the test environment. */
  testOtp(projectId: string, channel: string, target: string): Promise<{ testCode: string; expiresAt: number } | undefined>;
  /**
   * Checks a code and consumes it on success, atomically: of two racers with the right
   * code only one gets 'ok'. `matches` compares in constant time.
   */
  checkOtp(
    projectId: string,
    env: Env,
    channel: string,
    target: string,
    now: number,
    maxAttempts: number,
    matches: (codeHash: string) => boolean,
  ): Promise<OtpCheck>;

  /** Records a one-shot payload; false when it was seen before. */
  markUsed(digest: string, expiresAt: number): Promise<boolean>;
  /** Drops expired transactions, codes, replay records and long-ended sessions. */
  prune(now: number): Promise<void>;
}

// The auth audit log (auth/events.ts writes it, the admin API reads it)

/** Sign-in events: each is appended to the audit log and sent to the webhooks that subscribed to its type. */
export const AUTH_EVENT_TYPES = [
  'user.created',
  'session.created',
  'session.revoked',
  'sign_in.failed',
  // User management (auth/users)
  'user.updated',
  'user.banned',
  'user.unbanned',
  'user.deleted',
  // Passkeys (auth/passkeys)
  'passkey.added',
  'passkey.removed',
  // Two-factor (auth/two-factor)
  'two_factor.enabled',
  'two_factor.disabled',
  'two_factor.used',
  // Magic links (auth/magic-links)
  'magic_link.sent',
] as const;
export type AuthEventType = (typeof AUTH_EVENT_TYPES)[number];

/** One audit entry. Never a secret, code or token; addresses masked (auth/events.ts). */
export interface AuditEntry {
  /** evt_…; also the `data.id` of its webhook message. */
  id: string;
  projectId: string;
  env: Env;
  type: AuthEventType;
  userId: string | null;
  sessionId: string | null;
  /** Masked: j***@example.com. */
  email: string | null;
  /** Masked: +79*******67. */
  phone: string | null;
  provider: string | null;
  ip: string | null;
  userAgent: string | null;
  /** Why a sign-in failed or a session was revoked. */
  reason: string | null;
  /** sign_in.failed: like events left out by the rate limit since the last one recorded. */
  suppressed: number;
  at: number;
}

/** A page of the audit log: newest first; `after` pages towards older entries, `before` towards newer (entry ids). */
export interface AuditQuery {
  limit: number;
  type?: AuthEventType;
  after?: string;
  before?: string;
}

export interface AuditLog {
  /**
   * Appends the entry and, in the same transaction, queues the webhook message `data` (the
   * envelope is control/webhooks/payload.ts's) for every enabled endpoint of the project that
   * lists the entry's type.
   */
  record(entry: AuditEntry, data: Record<string, unknown>): Promise<void>;
  /** Undefined when the cursor names no entry of the project. */
  list(projectId: string, q: AuditQuery): Promise<{ entries: AuditEntry[]; hasMore: boolean } | undefined>;
  /** Deletes entries older than `before` (retention); returns how many. */
  prune(before: number): Promise<number>;
  /**
   * Sign-ins (session.created) and failures (sign_in.failed, with the failures the rate limit left out)
   * of the project from `from` (inclusive) to `to` (exclusive), per bucket of `stepMs` from `from` and provider.
   */
  activity(projectId: string, from: number, to: number, stepMs: number): Promise<ActivityRow[]>;
}

export interface ActivityRow {
  /** 0-based: the bucket starting at from + bucket × stepMs. */
  bucket: number;
  provider: string | null;
  signedIn: number;
  /** Recorded failures plus those the rate limit left out. */
  failed: number;
}

// Idempotency keys (control/mail/idempotency.ts)

/** A request's claim on an idempotency key (POST /v1/emails, POST /v1/emails/batch, SMTP submission). */
export interface IdempotencyRequest {
  projectId: string;
  key: string;
  /** SHA-256 of what the request asks (its route and canonical body): the same key with another hash is a mismatch. */
  requestHash: string;
  /** The ids the request's emails will take, reserved before anything is recorded (one per email, in request order). */
  emailIds: string[];
  now: number;
  /** Until when the key answers the same (the window, 24 h from the first claim); a row past it counts as absent and is replaced. */
  expiresAt: number;
  /** Until when the claimant owns the attempt; past it (a crash), the next claim with the same request takes the attempt over. */
  leaseUntil: number;
}

export type IdempotencyClaim =
  /** The key was free (absent or expired): go on, with the ids given. */
  | { kind: 'new'; emailIds: string[] }
  /** An attempt that was abandoned or outlived its lease, taken over (with the lease given): its ids, some maybe already recorded. */
  | { kind: 'resumed'; emailIds: string[] }
  /** Answered already: the status and JSON body to answer again. */
  | { kind: 'replay'; status: number; body: string }
  /** The key was used with another request. */
  | { kind: 'mismatch' }
  /** Another request with this key is under way. */
  | { kind: 'in-progress' };

export interface IdempotencyKeys {
  /** Atomic: of concurrent claims of one key exactly one gets 'new' (or 'resumed'). */
  claim(r: IdempotencyRequest): Promise<IdempotencyClaim>;
  /** Records the answer to replay; the first answer recorded stays. */
  complete(projectId: string, key: string, status: number, body: string): Promise<void>;
  /** The attempt holding lease `leaseUntil` ended with no answer to keep (5xx, outage): the next claim takes it over at once. */
  abandon(projectId: string, key: string, leaseUntil: number): Promise<void>;
  /** Drops keys whose window ended at or before `now`; returns how many. */
  prune(now: number): Promise<number>;
}

// Queue control (control/operations): the operator's suspensions, cancel orders and audit log

/** One operator action, as the audit log keeps it. Never the admin token: `actor` is its fingerprint. */
export interface OperatorAuditEntry {
  /** op_…, time-ordered. */
  id: string;
  at: number;
  /** queue.suspend, queue.resume, queue.send_now, queue.cancel, throttle.set, project.pause, key.create… */
  action: string;
  /** The first 12 hex digits of the SHA-256 of the token used. */
  actor: string;
  /** What it was applied to: provider:gmail, project:acme, suspension:sus_…, key:… ('' when nothing in particular). */
  target: string;
  details: Record<string, unknown>;
  /** How many emails it concerned, when it is known (a cancel, a send-now); null otherwise. */
  emails: number | null;
}

/** A page of the operator audit log, newest first; `before` (an entry id) pages towards older entries. */
export interface OperatorAuditQuery {
  limit: number;
  before?: string;
}

/** An operator's suspension of delivery: to a provider ('' = every one), of a project ('' = every one), until a time (null = until resumed). */
export interface SuspensionRow {
  id: string;
  provider: string;
  projectId: string;
  until: number | null;
  reason: string;
  createdAt: number;
}

/** Mail of the project accepted at or before `acceptedBefore` is canceled: the gateways drop what they hold of it. */
export interface CancelOrderRow {
  projectId: string;
  acceptedBefore: number;
  orderedAt: number;
}

export interface Operations {
  /** Appends an entry to the operator audit log. */
  audit(e: OperatorAuditEntry): Promise<void>;
  /** Undefined when `before` names no entry. */
  auditLog(q: OperatorAuditQuery): Promise<{ entries: OperatorAuditEntry[]; hasMore: boolean } | undefined>;
  suspend(s: SuspensionRow): Promise<void>;
  /** Suspensions still in force at `now` (no end, or an end after it), oldest first. */
  suspensions(now: number): Promise<SuspensionRow[]>;
  /** Ends a suspension (deletes it); the row it was, or undefined when there was none. */
  resume(id: string): Promise<SuspensionRow | undefined>;
  /** Records a cancel order (kept 14 days, what gateways hold against mail they still have). */
  orderCancel(o: CancelOrderRow): Promise<void>;
  /** Cancel orders given at or after `since`, oldest first; older ones are deleted. */
  cancelOrders(since: number): Promise<CancelOrderRow[]>;
  /**
   * Cancels the project's mail accepted at or before `acceptedBefore` that is still queued, scheduled or
   * sending (control/mail/lifecycle.ts cancelOpen): each email 'canceled' with its unanswered recipients,
   * a 'canceled' event and its webhook messages. A chunk of emails per transaction; returns how many.
   */
  cancelProject(projectId: string, acceptedBefore: number, now: number): Promise<number>;
}

// Sign-in's account features (issue 41). Each feature's data interface lives in its own section
// below; its implementations in control/store/{postgres,sqlite}/<feature>.ts.

/** A WebAuthn credential (auth/passkeys) of a user, for one project and environment. */
export interface PasskeyRow {
  id: string;
  projectId: string;
  env: Env;
  userId: string;
  /** base64url, as the browser names it; unique per project and environment. */
  credentialId: string;
  /** The COSE public key. */
  publicKey: Uint8Array;
  counter: number;
  transports: string[];
  deviceType: 'singleDevice' | 'multiDevice';
  backedUp: boolean;
  backupEligible: boolean;
  aaguid: string;
  name: string;
  rpId: string;
  createdAt: number;
  lastUsedAt: number | null;
}

/** A ceremony's challenge: stored hashed, taken once. */
export interface PasskeyChallengeRow {
  challengeHash: string;
  projectId: string;
  env: Env;
  /** The signed-in user who registers; null for a sign-in. */
  userId: string | null;
  purpose: 'register' | 'authenticate';
  rpId: string;
  /** The origin the ceremony runs on (checked against the client data). */
  origin: string;
  expiresAt: number;
}

export interface Passkeys {
  /** False when the credential id is already registered in the project and environment. */
  add(p: PasskeyRow): Promise<boolean>;
  byCredentialId(projectId: string, env: Env, credentialId: string): Promise<PasskeyRow | undefined>;
  /** The user's passkeys, oldest first. */
  listForUser(projectId: string, env: Env, userId: string): Promise<PasskeyRow[]>;
  /** Removes one of the user's passkeys; the removed row, or undefined when it is not theirs (or not there). */
  remove(projectId: string, env: Env, userId: string, id: string): Promise<PasskeyRow | undefined>;
  /**
   * Records a use: the counter must grow (unless both are 0), atomically against racers on any node; false
   * when it did not (a cloned authenticator, or a replay) and nothing is changed.
   */
  use(id: string, counter: number, backedUp: boolean, at: number): Promise<boolean>;
  putChallenge(c: PasskeyChallengeRow): Promise<void>;
  /** Takes (deletes) a challenge: one taker on any node; expired ones are returned too (the caller refuses them). */
  takeChallenge(challengeHash: string): Promise<PasskeyChallengeRow | undefined>;
  /**
   * The single-use svc_code of a hosted passkey sign-in (auth_exchange_codes, as OAuth's): exchanged at
   * /exchange-code like any other. False when the user is not the project's and environment's.
   */
  insertExchange(
    x: { codeHash: string; expiresAt: number; clientChallenge: string | null; secondFactor: boolean },
    projectId: string,
    env: Env,
    userId: string,
    provider: string,
    origin: Origin,
  ): Promise<boolean>;
  /** Drops expired challenges. */
  prune(now: number): Promise<void>;
}

/** A user's authenticator-app secret (auth/two-factor). */
export interface TotpRow {
  userId: string;
  /** base32, encrypted (AuthCrypto.encrypt). */
  secret: string;
  createdAt: number;
  /** Null until a first code proved the app has it. */
  confirmedAt: number | null;
  /** The last time step whose code was accepted: that step and every earlier one are refused (no replay). */
  lastStep: number | null;
}

/** A sign-in held for its second factor: the ticket (hashed) and what the session will be once it is given. */
export interface PendingSignInRow {
  ticketHash: string;
  projectId: string;
  env: Env;
  userId: string;
  provider: string;
  ip: string | null;
  userAgent: string | null;
  sessionTtlMs: number;
  /** The project requires a second factor the user has not enrolled yet: enrolment with the ticket comes first. */
  enrol: boolean;
  /** Codes tried with this ticket. */
  attempts: number;
  expiresAt: number;
}

export type PendingAttempt = { status: 'ok'; pending: PendingSignInRow } | { status: 'missing' | 'expired' | 'locked' };

export interface TwoFactorStore {
  totp(userId: string): Promise<TotpRow | undefined>;
  /** Replaces any unconfirmed secret with this one; false (nothing changed) when the user has a confirmed one. */
  startTotp(userId: string, secret: string, at: number): Promise<boolean>;
  /**
   * Confirms the user's unconfirmed secret `secret` with the step of its first code and replaces the backup codes,
   * atomically; false when that secret is not waiting any more (confirmed by a racer, replaced, removed).
   */
  confirmTotp(userId: string, secret: string, step: number, at: number, backupCodeHashes: string[]): Promise<boolean>;
  /** Records `step` as used when the user's secret is confirmed and its last used step is earlier; false otherwise (a replay). Atomic. */
  useTotpStep(userId: string, step: number): Promise<boolean>;
  /** Removes the secret and the backup codes; false when there was no secret. */
  removeTotp(userId: string): Promise<boolean>;
  backupCodesLeft(userId: string): Promise<number>;
  /** The user's backup codes become these (the old ones are void). */
  replaceBackupCodes(userId: string, codeHashes: string[], at: number): Promise<void>;
  /** Spends an unused backup code; false when it is not one or was used. Atomic: of two racers one wins. */
  useBackupCode(userId: string, codeHash: string, at: number): Promise<boolean>;

  putPending(row: Omit<PendingSignInRow, 'attempts'>): Promise<void>;
  /** The ticket of this project and environment, as it stands (not counted as a try). */
  pending(ticketHash: string, projectId: string, env: Env, now: number): Promise<PendingAttempt>;
  /** Counts one try of a code against the ticket of this project and environment, atomically; 'locked' past `maxAttempts`. */
  attemptPending(ticketHash: string, projectId: string, env: Env, now: number, maxAttempts: number): Promise<PendingAttempt>;
  /** Removes the ticket; false when it was gone already (a racer finished the sign-in). */
  takePending(ticketHash: string): Promise<boolean>;
  /** Drops expired tickets. */
  prune(now: number): Promise<void>;
}

/** A magic link as sent: the token itself is never stored, only its SHA-256. */
export interface NewMagicLink {
  tokenHash: string;
  projectId: string;
  env: Env;
  /** Lower-cased address the link was sent to. */
  email: string;
  /** The checked callback URL the link returns to (with svc_code). */
  callbackUrl: string;
  /** The asking browser's S256 challenge (auth/browser-binding.ts), or null. */
  clientChallenge: string | null;
  createdAt: number;
  expiresAt: number;
  /** Test environment only: the token, encrypted, for the test-only read route (test links are never sent). */
  testToken: string | null;
}

export interface MagicLinkRow {
  projectId: string;
  env: Env;
  email: string;
  callbackUrl: string;
  clientChallenge: string | null;
  createdAt: number;
  expiresAt: number;
  usedAt: number | null;
}

/** A take: 'ok' for exactly one caller on any node; otherwise why the link cannot be used. */
export type MagicLinkTake = { status: 'ok'; link: MagicLinkRow } | { status: 'used' | 'expired' | 'unknown' };

/** Magic links (auth/magic-links): single use, enforced by the store's conditional update. */
export interface MagicLinks {
  put(link: NewMagicLink): Promise<void>;
  /** The link without spending it (the confirm page a mail scanner may fetch). */
  peek(tokenHash: string): Promise<MagicLinkRow | undefined>;
  /** Spends the link once: UPDATE … WHERE used_at IS NULL AND expires_at > now RETURNING. */
  take(tokenHash: string, now: number): Promise<MagicLinkTake>;
  /** When the newest link to this address was sent (the resend cooldown). */
  lastSentAt(projectId: string, env: Env, email: string): Promise<number | undefined>;
  /** Test environment only: the newest unexpired, unused link's encrypted token for an address. */
  testToken(projectId: string, email: string, now: number): Promise<{ testToken: string; expiresAt: number } | undefined>;
  /** Deletes links that expired before `now`; answers how many. */
  prune(now: number): Promise<number>;
}

// User management (auth/users): the operator's and the project backend's view of a project's users.

/** A ban: sign-in refused while it lasts (`expiresAt` null: until lifted). */
export interface BanRow {
  bannedAt: number;
  reason: string;
  expiresAt: number | null;
}

/** A user with what only user management reads or sets. */
export interface ManagedUser {
  user: UserRow;
  phoneVerified: boolean;
  /** The app's own data about the user (JSON object, at most 16 kB). */
  metadata: Record<string, unknown>;
  /** The last ban set (it may have ended: compare expiresAt with the clock); null: never banned or unbanned. */
  ban: BanRow | null;
}

export interface IdentityRow {
  provider: string;
  subject: string;
  createdAt: number;
}

/** A page of a project's users, newest first; every filter optional. */
export interface UserQuery {
  limit: number;
  /** A user id: the page starts after it (keyset). */
  after?: string;
  /** Case-insensitive: the whole address. */
  email?: string;
  /** Case-insensitive: addresses starting with it (taken literally: % and _ are no wildcards). */
  emailPrefix?: string;
  phone?: string;
  /** Users with an identity of this provider (and this subject, when given). */
  provider?: string;
  subject?: string;
  /** Epoch ms; after: at or after, before: strictly before. */
  createdAfter?: number;
  createdBefore?: number;
  lastSignInAfter?: number;
  lastSignInBefore?: number;
}

export interface UserChanges {
  emailVerified?: boolean;
  phoneVerified?: boolean;
  name?: string | null;
  metadata?: Record<string, unknown>;
}

export interface UserAdmin {
  /** Undefined when `after` names no user of the project and environment. */
  list(projectId: string, env: Env, q: UserQuery): Promise<{ users: ManagedUser[]; hasMore: boolean } | undefined>;
  get(projectId: string, env: Env, userId: string): Promise<ManagedUser | undefined>;
  identities(projectId: string, env: Env, userId: string): Promise<IdentityRow[]>;
  /** Sessions neither revoked nor expired at `now`, newest first. */
  liveSessions(projectId: string, env: Env, userId: string, now: number): Promise<SessionRow[]>;
  /** 'conflict': a verified email another user of the environment has verified too. */
  update(projectId: string, env: Env, userId: string, changes: UserChanges): Promise<ManagedUser | undefined | 'conflict'>;
  ban(projectId: string, env: Env, userId: string, ban: BanRow): Promise<ManagedUser | undefined>;
  unban(projectId: string, env: Env, userId: string): Promise<ManagedUser | undefined>;
  /** The ban of a user (the sign-in gate reads it), whatever its project. */
  banOf(userId: string): Promise<BanRow | null>;
  /**
   * Removes the user's personal data in one transaction: its sessions (revoked, then deleted), identities,
   * exchange codes, the sign-in codes and magic links of its address and number, the address, number, IP and agent of its
   * audit entries (ids and types stay), then the user (other features' rows go with it: ON DELETE CASCADE).
   * Returns the token hashes of sessions still live at that moment (for caches).
   */
  delete(projectId: string, env: Env, userId: string, now: number): Promise<{ user: UserRow; revokedTokenHashes: string[] } | undefined>;
}

/**
 * A key that signs the JWTs of every project (auth/jwt): one key set for the deployment, so every node signs
 * with the same keys. Published in the JWKS from creation until `dropAfter`; signs from `activeFrom` until
 * `retiredAt` (the newest active key signs).
 */
export interface SigningKeyRow {
  kid: string;
  alg: 'ES256';
  /** The public JWK, as JSON. */
  publicJwk: string;
  /** The private JWK, sealed with a key derived from the master secret (core/crypto.ts). */
  privateJwk: string;
  createdAt: number;
  activeFrom: number;
  /** Stops signing at this time; null while it is the current (or next) key. */
  retiredAt: number | null;
  /** No longer published after this time (every token it signed has expired); null while it signs. */
  dropAfter: number | null;
}

export interface SigningKeys {
  /** Every key not yet deleted, oldest first. */
  list(): Promise<SigningKeyRow[]>;
  /** Inserts `key` only when there is no key at all (nodes starting together: one wins); true when it did. */
  createFirst(key: SigningKeyRow): Promise<boolean>;
  /**
   * Adds `next` and retires every key still signing at `next.activeFrom` (retiredAt = that time, dropAfter = it +
   * `overlapMs`), in one step serialised against other rotations and createFirst. With `ifNewestBefore`, does
   * nothing (false) unless the newest key was created before it (automatic rotation on several nodes: one rotates).
   */
  rotate(next: SigningKeyRow, overlapMs: number, ifNewestBefore?: number): Promise<boolean>;
  /** Deletes the keys no longer published at `now`; how many. */
  prune(now: number): Promise<number>;
}

export interface Store {
  readonly projects: Projects;
  readonly apiKeys: ApiKeys;
  readonly emails: Emails;
  readonly deliveryLog: DeliveryLog;
  readonly suppressions: Suppressions;
  readonly domains: Domains;
  readonly webhooks: Webhooks;
  readonly pacing: PacingData;
  readonly analytics: Analytics;
  readonly signIn: SignInStore;
  readonly audit: AuditLog;
  readonly idempotency: IdempotencyKeys;
  readonly operations: Operations;
  /** Open and click tracking (control/tracking). */
  readonly tracking: Tracking;
  readonly templates: Templates;
  /** Mail received for receiving domains (control/inbound). */
  readonly inbound: InboundEmails;
  /** WebAuthn credentials and their ceremonies' challenges (auth/passkeys). */
  readonly passkeys: Passkeys;
  /** Second factors: TOTP secrets, backup codes, pending sign-ins (auth/two-factor). */
  readonly twoFactor: TwoFactorStore;
  readonly magicLinks: MagicLinks;
  /** User management (auth/users). */
  readonly users: UserAdmin;
  /** The JWT signing keys (auth/jwt). */
  readonly signingKeys: SigningKeys;
  /** Commits and writes since start (metrics). */
  stats(): { commits: number; writes: number };
  close(): Promise<void>;
}

export type StoreConfig = Pick<Config, 'dataDir' | 'storage'> & Partial<Pick<Config, 'databaseUrl'>>;

/** A template's declared variable (Resend's key, type, fallback_value); no fallback: every send must give it. */
export interface TemplateVariableRow {
  key: string;
  type: 'string' | 'number';
  fallback: string | number | null;
  createdAt: number;
  updatedAt: number;
}

/** One version of a template's content: its draft, or the version sends use (published). */
export interface TemplateContent {
  /** Changes with every edit of the draft; the published version keeps the id it was published with. */
  versionId: string;
  from: string | null;
  subject: string | null;
  replyTo: string[] | null;
  html: string;
  text: string | null;
  variables: TemplateVariableRow[];
}

/** A project's email template (control/templates): its name and alias, its draft and its published version. */
export interface TemplateRow {
  /** A UUID (time-ordered); never alias-shaped, so one string names a template by either. */
  id: string;
  projectId: string;
  name: string;
  /** Unique in the project; usable wherever the id is. */
  alias: string | null;
  draft: TemplateContent;
  /** Null until first published: such a template sends nothing. */
  published: TemplateContent | null;
  publishedAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export interface TemplateQuery {
  limit: number;
  /** A template id: the page of older templates. */
  after?: string;
  /** A template id: the page of newer templates. */
  before?: string;
}

export interface Templates {
  /** 'alias_taken': another template of the project has this alias; nothing was written. */
  create(t: TemplateRow): Promise<'created' | 'alias_taken'>;
  /** By id or alias, in the project only. Asked by every templated send: cached per project until one of its templates changes. */
  get(projectId: string, idOrAlias: string): Promise<TemplateRow | undefined>;
  /** Newest first (ids are time-ordered), a page at a time. */
  list(projectId: string, q: TemplateQuery): Promise<{ templates: TemplateRow[]; hasMore: boolean }>;
  /** Writes the row's name, alias, draft and updatedAt (found by id in its project). */
  update(t: TemplateRow): Promise<'updated' | 'not_found' | 'alias_taken'>;
  /** The draft becomes the published version, at `at`; the row after, or undefined when there is no such template. */
  publish(projectId: string, id: string, at: number): Promise<TemplateRow | undefined>;
  remove(projectId: string, id: string): Promise<boolean>;
}

/** An email's opens (link '') or clicks of one link, summed (email_tracking). */
export type TrackingCountRow = Omit<TrackingCount, 'emailId'>;

/** Open and click tracking's data (control/tracking). */
export interface Tracking {
  /**
   * Records a batch of hits in one transaction through the lifecycle (control/mail/lifecycle.ts track):
   * the counts, the `opened` and `clicked` events, their webhook messages and daily analytics. Hits of
   * emails that do not exist are dropped.
   */
  record(hits: TrackingHit[]): Promise<void>;
  /** The email's counts: opens, then each clicked link in the order first clicked. */
  counts(emailId: string): Promise<TrackingCountRow[]>;
}

// Received mail (control/inbound): what a receiving domain's inbound listener accepted.

/** The invalidation channels the store publishes its changes on (control/inbound/push.ts follows domains). */
export { STORE_CHANNELS } from './cache.js';

/** An attachment of a received email (its bytes: InboundEmails.attachment). */
export interface InboundAttachmentRow {
  id: string;
  filename: string | null;
  contentType: string;
  contentDisposition: 'inline' | 'attachment';
  contentId: string | null;
  size: number;
}

/** SPF, DKIM and DMARC as the gateway judged them (mailauth): pass, fail, softfail, neutral, none, temperror, permerror. */
export interface InboundAuth {
  spf: string;
  dkim: string;
  dmarc: string;
  /** The Authentication-Results header value the gateway wrote. */
  header: string;
  /** Domains, selectors and policy, as JSON. */
  details: string;
}

export interface InboundEmailRow {
  /** The id the gateway gave it (a UUID), also its webhook message's `email_id`. */
  id: string;
  projectId: string;
  createdAt: number;
  /** The envelope: MAIL FROM ('' for <>) and the recipients at the project's receiving domains. */
  mailFrom: string;
  rcptTo: string[];
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  replyTo: string[];
  subject: string;
  messageId: string;
  text: string | null;
  html: string | null;
  headers: Record<string, string>;
  auth: InboundAuth;
  remoteIp: string;
  helo: string;
  /** The raw message's size in bytes. */
  size: number;
  attachments: InboundAttachmentRow[];
}

export interface NewInboundEmail extends InboundEmailRow {
  raw: Uint8Array;
  /** Each attachment's bytes, in the order of `attachments`. */
  contents: Uint8Array[];
}

export interface InboundQuery {
  limit: number;
  after?: string;
  before?: string;
}

export interface InboundEmails {
  /**
   * Stores the email with its raw message and attachments and, in the same transaction, queues `payload`
   * (the email.received webhook message) for every enabled endpoint of the project that lists
   * email.received. False when the id is stored already (a redelivered event): nothing changes.
   */
  receive(e: NewInboundEmail, payload: string): Promise<boolean>;
  get(projectId: string, id: string): Promise<InboundEmailRow | undefined>;
  /** Newest first. Undefined when the cursor names no received email of the project. */
  list(projectId: string, q: InboundQuery): Promise<{ emails: InboundEmailRow[]; hasMore: boolean } | undefined>;
  attachment(projectId: string, emailId: string, attachmentId: string): Promise<{ row: InboundAttachmentRow; content: Uint8Array } | undefined>;
  raw(projectId: string, id: string): Promise<Uint8Array | undefined>;
  /**
   * The domains that receive: receiving on and verified (a domain proven by DNS, so a project cannot take
   * another's mail by adding its name). A name verified in two projects goes to the one verified first.
   */
  receivingDomains(): Promise<Array<{ domain: string; projectId: string }>>;
}
