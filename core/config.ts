// The one config loader: every setting of the operator contract (README, "Operating it"; deploy/config-reference.md),
// read from the environment, plus POSTGATE_CONFIG (a JSON file) for numbers.
import fs from 'node:fs';
import path from 'node:path';
import { isIP } from 'node:net';
import { AddressGuard } from './net/address-guard.js';

export interface HostPort {
  host: string;
  port: number;
}

export interface Limits {
  /** Recipients in to+cc+bcc of one email. */
  maxRecipients: number;
  /** Largest accepted html/text body, in bytes. */
  maxBodyBytes: number;
  maxSubjectLength: number;
  maxHeaders: number;
  maxTags: number;
  /** Attachments of one email (docs/mail-api.md, Attachments). */
  maxAttachments: number;
  /** Attachment bytes of one email, counted after decoding; also of one batch request in total. */
  maxAttachmentBytes: number;
}

export interface DeliverySettings {
  /** Delay in seconds before retry n (1-based) after a temporary failure; the last value repeats. */
  retryDelays: number[];
  /** Temporary failures before the message is given up. */
  maxTempFailures: number;
  /** Seconds to wait for a connection to the recipient's MX. */
  connectTimeout: number;
  /** Outbound concurrency cap of the gateway. */
  concurrency: number;
  /**
   * Seconds a connection to an MX stays open after a delivery for the next message to the same
   * MX (gateway/hooks/connection-reuse.ts, as Postfix's connection cache); 0 closes every connection.
   */
  connectionIdleSeconds: number;
  /**
   * Seconds before automatic retry n of a `rejected` recipient (a policy 5xx, or a 4xx
   * that outlasted maxTempFailures); its length is the number of such retries.
   */
  rejectRetryDelays: number[];
  /**
   * Emails per second control hands the gateways while mail keeps arriving (an accept
   * in the last 100 ms) and its event loop is saturated: accepting a burst keeps the CPU,
   * delivery catches up at full speed once arrivals pause or the loop has room (steady
   * traffic is handed over as it comes). The platform's own mail is never held back.
   */
  busyDispatchRate: number;
  /**
   * The longest busyDispatchRate holds mail back: once the oldest email waiting for dispatch has
   * waited this many seconds, dispatch goes at full speed until the backlog is younger again, so
   * a burst that lasts minutes delays delivery by this much, not by minutes. 0: never held.
   */
  busyHoldSeconds: number;
}

/** One receiving provider's warm-up and limits (README, "Operating it": set live with `postgate throttle set`). */
export interface ProviderThrottle {
  /** A project's daily norm at this provider on its first sending day; 0 = no norm. */
  dailyNorm: number;
  /** The norm is multiplied by this for each further day. */
  growth: number;
  /** The norm stops growing here; 0 = no cap. */
  maxDailyNorm: number;
  /** Messages per minute from this gateway; 0 = unlimited. For `other`, per recipient domain. */
  ratePerMinute: number;
  /** Concurrent deliveries from this gateway; 0 = unlimited. For `other`, per recipient domain. */
  connections: number;
}

export interface PacingSettings {
  /** Default throttles per receiving provider; `other` covers every domain no rule names. */
  providers: Record<string, ProviderThrottle>;
  /** Bulk emails (recipients) with one subject per project per UTC day. */
  sameSubjectDailyLimit: number;
  /**
   * Bulk above max(floor, factor × the average of the previous `days` days) is held until
   * it is announced (POST /v1/pacing/announcements) or approved (`postgate pacing approve`).
   */
  volumeSpike: { factor: number; floor: number; days: number };
}

/** What a shaping rule does while in force (common/shaping.ts; deploy/config-reference.md, "Shaping"). */
export type ShapingAction =
  | { kind: 'suspend'; scope: 'provider' | 'project' }
  /** Lower to `value` (per minute / connections), or to the limit in force × `factor` (0 < factor < 1). */
  | { kind: 'rate'; value?: number; factor?: number }
  | { kind: 'connections'; value?: number; factor?: number };

export interface ShapingMatch {
  /** Enhanced status codes, matched as prefixes ("4.7.28", "4.7.65"). */
  enhancedCodes?: string[];
  /** SMTP basic codes (421, 451...). */
  codes?: number[];
  /** A regular expression on the answer's text, case-insensitive. */
  pattern?: string;
}

/** A rule matching a receiving provider's SMTP answers, with the action it takes for a while. */
export interface ShapingRule {
  name: string;
  /** Provider names (pacing.providers); absent or empty: any provider. */
  providers?: string[];
  /** Every field given must match; at least one is given. */
  match: ShapingMatch;
  action: ShapingAction;
  durationSeconds: number;
  /** Where the provider documents this answer (default rules). */
  source?: string;
  /** An answer this rule is for, as the provider sends it. */
  example?: string;
  /** Why this action, and how sure the text is. */
  note?: string;
}

export interface ShapingSettings {
  /** The operator's rules: added to the default ones (common/shaping.ts); one with a default's name replaces it. */
  rules: ShapingRule[];
  /** Only the operator's rules apply. */
  replaceDefaults: boolean;
}

export interface StorageSettings {
  /** FULL: each grouped commit is fdatasynced (off the event loop) before its writes are answered; NORMAL: only at WAL checkpoints. */
  synchronous: 'FULL' | 'NORMAL';
  /** Most writes grouped into one transaction. */
  maxBatch: number;
  /** The supervisor copies committed pages from the WALs into the SQLite files, off the children's event loops (core/sqlite/checkpointer.ts). */
  walCheckpointer?: boolean;
  /** Set by the supervisor in its children (POSTGATE_WAL_CHECKPOINTER=1) while it checkpoints for them; not a file setting. */
  externalCheckpoints?: boolean;
}

export interface PlanLimits {
  dailyQuota: number;
  monthlyQuota: number;
  /** API requests per second per project. */
  rateLimit: number;
}

export interface WebhookSettings {
  /** Seconds before retry n (1-based); the last value repeats until maxAgeSeconds. */
  retryDelays: number[];
  maxAgeSeconds: number;
  timeoutMs: number;
  /**
   * CIDRs webhooks may reach although they are loopback, private or link-local (refused by
   * default: core/net/address-guard.ts), e.g. ["10.1.0.0/16"] for an internal receiver.
   */
  allowCidrs: string[];
}

export interface HttpSettings {
  /** A whole request (headers and body) must arrive within this; a slow or unfinished one gets 408 and is closed. */
  requestTimeoutMs: number;
  /** The request headers must arrive within this. */
  headersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Largest body of every route but the two send routes (which take limits.maxBodyBytes); a larger Content-Length is refused (413) before reading. */
  bodyLimitBytes: number;
  /**
   * Request bodies control may hold at once, over every connection (each counted at its
   * Content-Length, or its route's limit when chunked). A request past it gets 503 SERVER_BUSY
   * with Retry-After before its body is read, so slow uploads cannot pile up memory.
   */
  inFlightBodyBytes: number;
  /**
   * Of those, the bodies over 64 kB read and worked on at once; the next such requests wait their
   * turn with their bodies unread (at most 1 s each, then they are read anyway), so a burst of large
   * batches does not hold all of its bodies in memory at once. Smaller bodies never wait.
   */
  activeBodyBytes: number;
}

export interface AuthSettings {
  /**
   * Sign-in code emails (and SMS) one project may send per hour, over every address and client:
   * a cap on what a script driving the public sign-in form can make us mail. Reaching it answers
   * 429 and counts postgate_auth_code_sends_capped_total (alert on it).
   */
  codeSendsPerProjectHour: number;
  /** Days the auth audit log keeps an entry (sign-ins, sessions, failures); older ones are deleted by control. */
  auditRetentionDays: number;
  /**
   * Requests a minute one client address may make to each keyless auth route (the hosted widget's calls and
   * files, the embed script, the OAuth callback): anyone can call them, and any client can send an allowed Origin.
   */
  keylessPerIpMinute: number;
  /** Requests a minute to each keyless auth route that names a project, per project, over every client. */
  keylessPerProjectMinute: number;
  /**
   * OAuth sign-ins a project may have started and not finished (each a stored state, kept 10 minutes):
   * past it a start answers 429 TOO_MANY_PENDING_SIGN_INS.
   */
  pendingSignInsPerProject: number;
  /** Days between automatic rotations of the JWT signing key (auth/jwt); 0: only `postgate auth keys rotate`. */
  signingKeyRotationDays: number;
}

/** The overview's alerts (GET /admin/v1/overview; deploy/config-reference.md, "Alerts"). */
export interface AlertSettings {
  /** Bounced share of a project's or provider's outcomes over the last hour that warns (0-1). */
  bounceRate: number;
  /** ... and that is critical. */
  bounceRateCritical: number;
  /** Complained share of the outcomes over the last hour that warns (0-1). */
  complaintRate: number;
  complaintRateCritical: number;
  /** The oldest message still queued at a provider, in minutes, past which it warns (critical past 4 times it). */
  queueAgeMinutes: number;
  /** Outcomes over the last hour below which a rate is not judged (too few to mean anything). */
  minOutcomes: number;
}

/** Mail received for receiving domains (gateway/inbound/receive.ts; deploy/config-reference.md, "Receiving mail"). */
export interface InboundSettings {
  /** A received message's size limit in bytes (550 5.3.4 past it; POSTGATE_INBOUND_MAX_BYTES, 10 MiB). */
  maxMessageBytes: number;
  /** Recipients at receiving domains per message (452 past it; POSTGATE_INBOUND_MAX_RECIPIENTS, 50). */
  maxRecipients: number;
  /** Messages one receiving domain takes per minute on each gateway (451 past it; POSTGATE_INBOUND_RATE_PER_MINUTE, 600). */
  ratePerMinute: number;
}

export interface SmtpTrusted {
  key: string;
  /** CIDRs (a bare address is one host). */
  networks: string[];
}

export type Role = 'both' | 'control' | 'gateway';
const ROLES: readonly Role[] = ['both', 'control', 'gateway'];

export interface Config {
  dataDir: string;
  host: string;
  httpPort: number;
  /** The admin API's listener (the CLI's), loopback unless the operator opens it. */
  adminHost: string;
  adminPort: number;
  smtpPort: number;
  grpcPort: number;
  gatewayPort: number;
  /** Where this node's gateway listens for control (loopback unless the gateway serves controls on other machines). */
  gatewayHost: string;
  gateways: HostPort[];
  /** What this node runs (POSTGATE_ROLE): control, gateway, or both (one machine). */
  role: Role;
  inboundPort: number;
  inbound: InboundSettings;
  baseUrl: string;
  idUrl: string;
  mxHost: string;
  dnsServers: string[];
  deliveryPort: number;
  sendingIps: string[];
  systemFrom: string;
  secret: string | undefined;
  /** POSTGATE_DATABASE_URL: the PostgreSQL database several control nodes share; undefined = SQLite in the data dir. */
  databaseUrl: string | undefined;
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  adminToken: string | undefined;
  logLevel: string;
  limits: Limits;
  delivery: DeliverySettings;
  storage: StorageSettings;
  plans: Record<'free' | 'pro' | 'scale', PlanLimits>;
  defaultPlan: 'free' | 'pro' | 'scale';
  /** Emails per second per project on SMTP submission. */
  smtpRate: number;
  /** SMTP submission sessions one client address may hold at once (421 past it). */
  smtpConnectionsPerIp: number;
  /**
   * Submission without AUTH from trusted networks, as Postfix's mynetworks (POSTGATE_CONFIG
   * `smtpTrusted: {"key": "pg_live_…", "networks": ["127.0.0.0/8"]}`): a session from one of the
   * networks sends as the project of `key`, a live key checked at each MAIL as an AUTH's is (revoking
   * it ends this). Off unless set; `networks` defaults to loopback.
   */
  smtpTrusted: SmtpTrusted | undefined;
  webhooks: WebhookSettings;
  auth: AuthSettings;
  http: HttpSettings;
  pacing: PacingSettings;
  shaping: ShapingSettings;
  alerts: AlertSettings;
  /** The console's sessions (control/console/sessions.ts): idle lifetime in minutes (POSTGATE_CONSOLE_IDLE_MINUTES, 30). */
  consoleIdleMinutes: number;
  /** ... and absolute lifetime in hours (POSTGATE_CONSOLE_MAX_HOURS, 12). */
  consoleMaxHours: number;
  /** POSTGATE_TEST_CLOCK=1: the admin API (and the gateways) let tests move the clock. */
  testClock: boolean;
  /** POSTGATE_REDIS_URL: shared limit and pacing counters and cross-node cache invalidation; unset = this process's memory. */
  redisUrl: string | undefined;
  /** POSTGATE_REDIS_PREFIX: put before every key and channel, so several deployments (or test stacks) can share one server. */
  redisPrefix: string;
  /** POSTGATE_REDIS_NODES: nodes of a kind assumed while Redis is down and no heartbeat has told how many there are. */
  redisNodes: number;
  /** Enforced TLS and MTA-STS on delivery (gateway/tls; deploy/config-reference.md, "Enforced TLS and MTA-STS"). */
  tls: TlsSettings;
  /** Open and click tracking (control/tracking): where the domains' tracking CNAMEs point, and the links' scheme. */
  tracking: TrackingSettings;
}

export interface TrackingSettings {
  /** POSTGATE_TRACKING_HOST (tracking.host): the operator's host that `<sub>.<domain>` is a CNAME to; default the public base URL's host. */
  host: string;
  /** POSTGATE_TRACKING_HTTPS (tracking.https): tracked links are https (a certificate for each `<sub>.<domain>` in front of control); default: the base URL's scheme. */
  https: boolean;
}

/** The tracking settings: env over the config file's `tracking`, each checked (one clear line at start). */
function trackingSettings(file: unknown, env: NodeJS.ProcessEnv, baseUrl: string): TrackingSettings {
  const f = (file ?? {}) as Record<string, unknown>;
  if (typeof f !== 'object' || Array.isArray(f)) throw new Error('POSTGATE_CONFIG: tracking must be an object {host, https}');
  for (const k of Object.keys(f)) if (k !== 'host' && k !== 'https') throw new Error(`POSTGATE_CONFIG: tracking.${k} is not a setting (host, https)`);
  const host = (env.POSTGATE_TRACKING_HOST ?? (typeof f.host === 'string' ? f.host : '')).trim().toLowerCase().replace(/\.$/, '') || new URL(baseUrl).hostname;
  if (!/^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/.test(host))
    throw new Error(`POSTGATE_TRACKING_HOST must be a host name (the target of the domains' tracking CNAME), got ${JSON.stringify(host)}`);
  const raw = env.POSTGATE_TRACKING_HTTPS ?? (f.https === undefined ? undefined : String(f.https));
  if (raw !== undefined && !/^(true|false|1|0)$/i.test(raw)) throw new Error(`POSTGATE_TRACKING_HTTPS must be true or false, got ${JSON.stringify(raw)}`);
  const https = raw === undefined ? baseUrl.startsWith('https:') : /^(true|1)$/i.test(raw);
  return { host, https };
}

// A new sender's first days, per provider (a day's norm × growth each further day: ~×57 in 10 days).
const warmup = (dailyNorm: number, ratePerMinute: number, connections: number): ProviderThrottle => ({
  dailyNorm,
  growth: 1.5,
  maxDailyNorm: 0,
  ratePerMinute,
  connections,
});

const defaults = {
  limits: {
    maxRecipients: 50,
    maxBodyBytes: 5 * 1024 * 1024,
    maxSubjectLength: 998,
    maxHeaders: 50,
    maxTags: 20,
    maxAttachments: 50,
    maxAttachmentBytes: 40 * 1024 * 1024,
  },
  delivery: {
    retryDelays: [60, 300, 900, 3600, 7200, 14400],
    maxTempFailures: 13,
    connectTimeout: 30,
    concurrency: 1000,
    connectionIdleSeconds: 5,
    rejectRetryDelays: [900, 3600, 14400, 43200],
    busyDispatchRate: 50,
    busyHoldSeconds: 10,
  },
  storage: { synchronous: 'FULL', maxBatch: 1000, walCheckpointer: true },
  plans: {
    free: { dailyQuota: 1_000, monthlyQuota: 10_000, rateLimit: 60 },
    pro: { dailyQuota: 100_000, monthlyQuota: 1_000_000, rateLimit: 300 },
    scale: { dailyQuota: 1_000_000, monthlyQuota: 20_000_000, rateLimit: 1_000 },
  },
  webhooks: { retryDelays: [5, 300, 1800, 7200, 18000, 36000], maxAgeSeconds: 86400, timeoutMs: 10_000, allowCidrs: [] as string[] },
  auth: {
    codeSendsPerProjectHour: 1000,
    auditRetentionDays: 90,
    keylessPerIpMinute: 60,
    keylessPerProjectMinute: 1200,
    pendingSignInsPerProject: 10_000,
    signingKeyRotationDays: 0,
  },
  http: {
    requestTimeoutMs: 30_000,
    headersTimeoutMs: 10_000,
    keepAliveTimeoutMs: 72_000,
    bodyLimitBytes: 256 * 1024,
    inFlightBodyBytes: 128 * 1024 * 1024,
    activeBodyBytes: 4 * 1024 * 1024,
  },
  pacing: {
    providers: {
      google: warmup(500, 600, 10),
      microsoft: warmup(500, 300, 10),
      yahoo: warmup(500, 300, 5),
      mailru: warmup(300, 300, 5),
      yandex: warmup(300, 300, 5),
      apple: warmup(300, 300, 5),
      gmx: warmup(300, 300, 5),
      proton: warmup(200, 120, 3),
      zoho: warmup(200, 120, 3),
      comcast: warmup(200, 120, 5),
      other: warmup(1000, 600, 10),
    },
    sameSubjectDailyLimit: 10_000,
    volumeSpike: { factor: 4, floor: 1000, days: 7 },
  },
} satisfies Pick<Config, 'limits' | 'delivery' | 'storage' | 'plans' | 'webhooks' | 'auth' | 'http' | 'pacing'>;

function pacingSettings(over: unknown): PacingSettings {
  const p = merge(defaults.pacing, over, 'pacing');
  const providers: Record<string, ProviderThrottle> = { ...defaults.pacing.providers };
  for (const [name, t] of Object.entries((over as { providers?: Record<string, unknown> } | undefined)?.providers ?? {})) {
    if (!/^[a-z0-9-]{1,40}$/.test(name)) throw new Error(`POSTGATE_CONFIG: bad provider name pacing.providers.${name}`);
    providers[name] = merge(providers[name] ?? warmup(1000, 600, 10), t, `pacing.providers.${name}`);
  }
  return { ...p, providers, volumeSpike: merge(defaults.pacing.volumeSpike, (over as any)?.volumeSpike, 'pacing.volumeSpike') };
}

function authSettings(over: unknown): AuthSettings {
  const a = merge(defaults.auth, over, 'auth');
  if (!Number.isInteger(a.auditRetentionDays) || a.auditRetentionDays < 1 || a.auditRetentionDays > 3650)
    throw new Error(`POSTGATE_CONFIG: auth.auditRetentionDays must be a whole number of days from 1 to 3650, got ${JSON.stringify(a.auditRetentionDays)}`);
  for (const k of ['keylessPerIpMinute', 'keylessPerProjectMinute', 'pendingSignInsPerProject'] as const)
    if (!Number.isInteger(a[k]) || a[k] < 1) throw new Error(`POSTGATE_CONFIG: auth.${k} must be a whole number of at least 1, got ${JSON.stringify(a[k])}`);
  if (!Number.isInteger(a.signingKeyRotationDays) || a.signingKeyRotationDays < 0 || a.signingKeyRotationDays > 3650)
    throw new Error(
      `POSTGATE_CONFIG: auth.signingKeyRotationDays must be a whole number of days from 0 (off) to 3650, got ${JSON.stringify(a.signingKeyRotationDays)}`,
    );
  return a;
}

function webhookSettings(over: unknown): WebhookSettings {
  const w = merge(defaults.webhooks, over, 'webhooks');
  if (!Array.isArray(w.allowCidrs)) throw new Error('POSTGATE_CONFIG: webhooks.allowCidrs must be a list of CIDRs');
  try {
    new AddressGuard(w.allowCidrs);
  } catch (err) {
    throw new Error(`POSTGATE_CONFIG: webhooks.allowCidrs: ${(err as Error).message}`);
  }
  return w;
}

function smtpTrusted(over: unknown): SmtpTrusted | undefined {
  if (over === undefined || over === null) return undefined;
  const t = over as { key?: unknown; networks?: unknown };
  if (typeof t !== 'object' || typeof t.key !== 'string' || !t.key)
    throw new Error('POSTGATE_CONFIG: smtpTrusted.key must be the live API key that trusted sessions send as');
  const networks = t.networks ?? ['127.0.0.0/8', '::1/128'];
  if (!Array.isArray(networks) || !networks.length) throw new Error('POSTGATE_CONFIG: smtpTrusted.networks must be a non-empty list of CIDRs');
  for (const n of networks) {
    const [addr = '', bits, extra] = String(n).split('/');
    const family = isIP(addr);
    const max = family === 6 ? 128 : 32;
    if (!family || extra !== undefined || (bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= max)))
      throw new Error(`POSTGATE_CONFIG: smtpTrusted.networks: ${JSON.stringify(n)} is not a CIDR`);
  }
  return { key: t.key, networks: networks.map(String) };
}

/**
 * The sender of sign-in codes. Derived from the base URL's host unless set; a host that is an
 * IP address gives no valid sender, so that is a start-up error rather than a refused code later.
 */
function systemFrom(env: NodeJS.ProcessEnv, baseHost: string): string {
  const set = env.POSTGATE_SYSTEM_FROM;
  if (set) {
    if (!/^[^\s@<>"]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*$/.test(set))
      throw new Error(`POSTGATE_SYSTEM_FROM must be a plain address such as no-reply@example.com, got ${JSON.stringify(set)}`);
    return set;
  }
  if (isIP(baseHost.replace(/^\[|\]$/g, ''))) {
    throw new Error(
      `POSTGATE_BASE_URL's host ${baseHost} is an IP address, which gives no sender for sign-in codes: set POSTGATE_SYSTEM_FROM (e.g. no-reply@mail.example.com)`,
    );
  }
  return `no-reply@${baseHost}`;
}

/**
 * The shared database, when one is named. Several nodes on it must derive the same keys (code
 * hashes, sealed DKIM keys, webhook secrets, return-path MACs), so a secret generated into one
 * node's data dir would not do: POSTGATE_SECRET is required with it.
 */
function databaseUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = env.POSTGATE_DATABASE_URL;
  if (!raw) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    /* reported below */
  }
  if (!url || (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:')) {
    throw new Error('POSTGATE_DATABASE_URL must be a postgres://user:password@host:port/database URL');
  }
  if (!env.POSTGATE_SECRET) {
    throw new Error('POSTGATE_DATABASE_URL is set but POSTGATE_SECRET is not: every node on a shared database needs the same secret');
  }
  return raw;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`${name} must be a port number, got ${JSON.stringify(raw)}`);
  return n;
}

/** A redis:// or rediss:// URL; the password never goes into the message. */
function redisUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  let u: URL | undefined;
  try {
    u = new URL(raw);
  } catch {}
  if (!u || (u.protocol !== 'redis:' && u.protocol !== 'rediss:') || !u.hostname)
    throw new Error(
      `POSTGATE_REDIS_URL must be a URL such as redis://127.0.0.1:6379 or rediss://:password@host:6380/0, got ${JSON.stringify(raw.replace(/\/\/[^@/]*@/, '//…@'))}`,
    );
  if (u.pathname.length > 1 && !/^\/\d+$/.test(u.pathname))
    throw new Error(`POSTGATE_REDIS_URL: the path must be a database number (/0), got ${JSON.stringify(u.pathname)}`);
  return raw;
}

function redisPrefix(raw: string | undefined): string {
  if (raw === undefined || raw === '') return 'postgate:';
  if (!/^[\x21-\x7e]{1,64}$/.test(raw))
    throw new Error(`POSTGATE_REDIS_PREFIX must be 1 to 64 printable characters without spaces, got ${JSON.stringify(raw)}`);
  return raw;
}

function redisNodes(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 2;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1000)
    throw new Error(`POSTGATE_REDIS_NODES must be a whole number of nodes (1 or more), got ${JSON.stringify(raw)}`);
  return n;
}

/**
 * The file's `alerts`, then POSTGATE_ALERT_BOUNCE_RATE, POSTGATE_ALERT_COMPLAINT_RATE and
 * POSTGATE_ALERT_QUEUE_AGE_MINUTES over it. A critical rate below its warning rate becomes twice the
 * warning rate (at most 1) unless it was set (then it is an error), so raising only the warning works.
 */
function alertSettings(over: unknown, env: NodeJS.ProcessEnv): AlertSettings {
  const base: AlertSettings = {
    bounceRate: 0.05,
    bounceRateCritical: 0.1,
    complaintRate: 0.001,
    complaintRateCritical: 0.003,
    queueAgeMinutes: 60,
    minOutcomes: 50,
  };
  const a = merge(base, over, 'alerts');
  const file = (over ?? {}) as Partial<AlertSettings>;
  const rate = (name: string, raw: string | undefined, fallback: number): number => {
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0 || n > 1) throw new Error(`${name} must be a share above 0 and at most 1 (0.05 = 5 %), got ${JSON.stringify(raw)}`);
    return n;
  };
  a.bounceRate = rate('POSTGATE_ALERT_BOUNCE_RATE', env.POSTGATE_ALERT_BOUNCE_RATE, a.bounceRate);
  a.complaintRate = rate('POSTGATE_ALERT_COMPLAINT_RATE', env.POSTGATE_ALERT_COMPLAINT_RATE, a.complaintRate);
  const age = env.POSTGATE_ALERT_QUEUE_AGE_MINUTES;
  if (age !== undefined && age !== '') {
    const n = Number(age);
    if (!Number.isInteger(n) || n < 1 || n > 100_000)
      throw new Error(`POSTGATE_ALERT_QUEUE_AGE_MINUTES must be a whole number of minutes (1 or more), got ${JSON.stringify(age)}`);
    a.queueAgeMinutes = n;
  }
  for (const k of ['bounceRate', 'bounceRateCritical', 'complaintRate', 'complaintRateCritical'] as const)
    if (!(a[k] > 0 && a[k] <= 1)) throw new Error(`POSTGATE_CONFIG: alerts.${k} must be a share above 0 and at most 1, got ${JSON.stringify(a[k])}`);
  if (!Number.isInteger(a.queueAgeMinutes) || a.queueAgeMinutes < 1)
    throw new Error(`POSTGATE_CONFIG: alerts.queueAgeMinutes must be a whole number of at least 1, got ${JSON.stringify(a.queueAgeMinutes)}`);
  if (!Number.isInteger(a.minOutcomes) || a.minOutcomes < 1)
    throw new Error(`POSTGATE_CONFIG: alerts.minOutcomes must be a whole number of at least 1, got ${JSON.stringify(a.minOutcomes)}`);
  for (const [warn, crit] of [
    ['bounceRate', 'bounceRateCritical'],
    ['complaintRate', 'complaintRateCritical'],
  ] as const) {
    if (a[crit] >= a[warn]) continue;
    if (file[crit] !== undefined) throw new Error(`POSTGATE_CONFIG: alerts.${crit} (${a[crit]}) must not be below the warning rate ${warn} (${a[warn]})`);
    a[crit] = Math.min(1, 2 * a[warn]);
  }
  return a;
}

/** A whole number from 1 to max read from env (the console's lifetimes), or the default when unset. */
function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number, max: number, unit: string): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isInteger(n) || n < 1 || n > max)
    throw new Error(`${name} must be a whole number of ${unit} from 1 to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

function list(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

export function parseHostPort(s: string, defaultPort: number): HostPort {
  const m = /^\[?([^\]]+?)\]?(?::(\d+))?$/.exec(s);
  if (!m) throw new Error(`bad host:port ${JSON.stringify(s)}`);
  return { host: m[1]!, port: m[2] ? Number(m[2]) : defaultPort };
}

/** What a setting whose default is `like` must be, when `value` is not that; undefined when it is. */
function kindProblem(like: unknown, value: unknown): string | undefined {
  const number = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
  if (typeof like === 'number') return number(value) ? undefined : 'a number, 0 or more';
  if (typeof like === 'boolean') return typeof value === 'boolean' ? undefined : 'true or false';
  if (typeof like === 'string') return typeof value === 'string' ? undefined : 'a string';
  if (Array.isArray(like)) {
    if (!Array.isArray(value)) return 'a list';
    // A list of numbers (delays) holds numbers only; an empty default says nothing of its items.
    if (typeof like[0] === 'number' && !value.every(number)) return 'a list of numbers, each 0 or more';
    return undefined;
  }
  if (typeof like === 'object' && like !== null) return typeof value === 'object' && value !== null && !Array.isArray(value) ? undefined : 'an object';
  return undefined;
}

/**
 * The defaults with the config file's settings over them. An unknown setting, or a value of another
 * kind than its default's (a string for a number, a negative count), is one clear error at start
 * rather than a surprise under load.
 */
function merge<T extends object>(base: T, over: unknown, name: string): T {
  if (over === undefined) return base;
  if (typeof over !== 'object' || over === null || Array.isArray(over)) throw new Error(`POSTGATE_CONFIG: ${name} must be an object`);
  const out = { ...base } as Record<string, unknown>;
  for (const [k, v] of Object.entries(over)) {
    if (!(k in base)) throw new Error(`POSTGATE_CONFIG: unknown setting ${name}.${k}`);
    const problem = kindProblem(out[k], v);
    if (problem) throw new Error(`POSTGATE_CONFIG: ${name}.${k} must be ${problem}, got ${JSON.stringify(v)}`);
    out[k] = v;
  }
  return out as T;
}

const RULE_FIELDS = ['name', 'providers', 'match', 'action', 'durationSeconds', 'source', 'example', 'note'];

/** What is wrong with one shaping rule, a line each (none: it is fine). */
function ruleProblems(rule: unknown, where: string, providers: ReadonlySet<string>): string[] {
  if (!rule || typeof rule !== 'object' || Array.isArray(rule)) return [`${where} must be an object`];
  const out: string[] = [];
  const r = rule as Record<string, any>;
  const at = typeof r.name === 'string' && r.name ? `${where} (${r.name})` : where;
  for (const k of Object.keys(r)) if (!RULE_FIELDS.includes(k)) out.push(`${at}: unknown field ${k}`);
  if (typeof r.name !== 'string' || !/^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/.test(r.name))
    out.push(`${where}.name: a name of 1-64 letters, digits, '.', '_', ':' or '-' is required, got ${JSON.stringify(r.name)}`);
  if (r.providers !== undefined) {
    if (!Array.isArray(r.providers) || r.providers.some((p: unknown) => typeof p !== 'string')) out.push(`${at}.providers must be a list of provider names`);
    else
      for (const p of r.providers as string[])
        if (!providers.has(p)) out.push(`${at}.providers: unknown provider ${JSON.stringify(p)} (known: ${[...providers].join(', ')})`);
  }
  const m = r.match;
  if (!m || typeof m !== 'object' || Array.isArray(m)) out.push(`${at}.match: no match field: give enhancedCodes, codes or pattern`);
  else {
    for (const k of Object.keys(m))
      if (!['enhancedCodes', 'codes', 'pattern'].includes(k)) out.push(`${at}.match: unknown field ${k} (enhancedCodes, codes, pattern)`);
    if (!(m.enhancedCodes?.length > 0 || m.codes?.length > 0 || (typeof m.pattern === 'string' && m.pattern !== '')))
      out.push(`${at}.match: no match field: give enhancedCodes, codes or pattern`);
    if (
      m.enhancedCodes !== undefined &&
      (!Array.isArray(m.enhancedCodes) || m.enhancedCodes.some((c: unknown) => typeof c !== 'string' || !/^[245](\.\d{1,3}){0,2}\.?$/.test(c)))
    )
      out.push(`${at}.match.enhancedCodes must be a list of enhanced codes or their beginnings, like "4.7.28", got ${JSON.stringify(m.enhancedCodes)}`);
    if (m.codes !== undefined && (!Array.isArray(m.codes) || m.codes.some((c: unknown) => !Number.isInteger(c) || (c as number) < 200 || (c as number) > 599)))
      out.push(`${at}.match.codes must be a list of SMTP codes like 421, got ${JSON.stringify(m.codes)}`);
    if (m.pattern !== undefined) {
      if (typeof m.pattern !== 'string') out.push(`${at}.match.pattern must be a string`);
      else
        try {
          new RegExp(m.pattern, 'i');
        } catch (err) {
          out.push(`${at}.match.pattern: bad regular expression: ${(err as Error).message}`);
        }
    }
  }
  const a = r.action;
  if (!a || typeof a !== 'object' || !['suspend', 'rate', 'connections'].includes(a.kind))
    out.push(`${at}.action.kind: unknown action ${JSON.stringify(a?.kind)} (suspend, rate or connections)`);
  else if (a.kind === 'suspend') {
    if (a.scope !== 'provider' && a.scope !== 'project') out.push(`${at}.action.scope must be provider or project, got ${JSON.stringify(a.scope)}`);
  } else {
    const hasValue = a.value !== undefined;
    const hasFactor = a.factor !== undefined;
    if (hasValue === hasFactor) out.push(`${at}.action: give either value or factor`);
    if (hasValue && (!Number.isInteger(a.value) || a.value < 1))
      out.push(`${at}.action.value must be a whole number of at least 1, got ${JSON.stringify(a.value)}`);
    if (hasFactor && (typeof a.factor !== 'number' || !(a.factor > 0 && a.factor < 1)))
      out.push(`${at}.action.factor must be between 0 and 1 (both excluded), got ${JSON.stringify(a.factor)}`);
  }
  if (typeof r.durationSeconds !== 'number' || !Number.isFinite(r.durationSeconds) || r.durationSeconds <= 0)
    out.push(`${at}.durationSeconds must be a number of seconds above 0, got ${JSON.stringify(r.durationSeconds)}`);
  return out;
}

/**
 * The operator's shaping rules, checked in full: every mistake is one line of the error. The
 * gateway merges them with the default rules (common/shaping.ts mergeRules).
 */
function shapingSettings(over: unknown, providers: Iterable<string>): ShapingSettings {
  const s = merge({ rules: [] as ShapingRule[], replaceDefaults: false }, over, 'shaping');
  const known = new Set(providers);
  const problems = s.rules.flatMap((r, i) => ruleProblems(r, `shaping.rules[${i}]`, known));
  const seen = new Set<string>();
  for (const r of s.rules) {
    if (typeof r?.name !== 'string') continue;
    if (seen.has(r.name)) problems.push(`shaping.rules: the name ${r.name} is given twice`);
    seen.add(r.name);
  }
  if (problems.length) throw new Error(problems.map((p) => `POSTGATE_CONFIG: ${p}`).join('\n'));
  return s;
}

function storageSettings(over: unknown, env: NodeJS.ProcessEnv): StorageSettings {
  const st = { ...merge(defaults.storage as StorageSettings, over, 'storage'), externalCheckpoints: env.POSTGATE_WAL_CHECKPOINTER === '1' };
  if (st.synchronous !== 'FULL' && st.synchronous !== 'NORMAL')
    throw new Error(`POSTGATE_CONFIG: storage.synchronous must be FULL or NORMAL, got ${JSON.stringify(st.synchronous)}`);
  return st;
}

function defaultPlan(v: unknown): Config['defaultPlan'] {
  if (v === undefined) return 'free';
  const plans = Object.keys(defaults.plans);
  if (typeof v === 'string' && plans.includes(v)) return v as Config['defaultPlan'];
  throw new Error(`POSTGATE_CONFIG: defaultPlan must be ${plans.slice(0, -1).join(', ')} or ${plans.at(-1)}, got ${JSON.stringify(v)}`);
}

/** A top-level setting of the config file that is a whole number of at least `min`. */
/** The env variable wins over POSTGATE_CONFIG's `inbound` block; each checked at start. */
function inboundSettings(env: NodeJS.ProcessEnv, over: unknown): InboundSettings {
  const file = merge({ maxMessageBytes: 10 * 1024 * 1024, maxRecipients: 50, ratePerMinute: 600 }, over, 'inbound');
  for (const k of ['maxMessageBytes', 'maxRecipients', 'ratePerMinute'] as const)
    if (!Number.isInteger(file[k]) || file[k] < 1)
      throw new Error(`POSTGATE_CONFIG: inbound.${k} must be a whole number of at least 1, got ${JSON.stringify(file[k])}`);
  return {
    maxMessageBytes: positiveInt(env, 'POSTGATE_INBOUND_MAX_BYTES', file.maxMessageBytes, 256 * 1024 * 1024, 'bytes'),
    maxRecipients: positiveInt(env, 'POSTGATE_INBOUND_MAX_RECIPIENTS', file.maxRecipients, 1000, 'recipients'),
    ratePerMinute: positiveInt(env, 'POSTGATE_INBOUND_RATE_PER_MINUTE', file.ratePerMinute, 1_000_000, 'messages'),
  };
}

function wholeNumber(file: Record<string, unknown>, key: string, fallback: number, min: number): number {
  const v = file[key];
  if (v === undefined) return fallback;
  if (!Number.isInteger(v) || (v as number) < min)
    throw new Error(`POSTGATE_CONFIG: ${key} must be a whole number of at least ${min}, got ${JSON.stringify(v)}`);
  return v as number;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const dataDir = path.resolve(env.POSTGATE_DATA_DIR || './data');
  const host = env.POSTGATE_HOST || '127.0.0.1';
  const httpPort = int(env, 'POSTGATE_HTTP_PORT', 8080);
  const gatewayPort = int(env, 'POSTGATE_GATEWAY_PORT', 50052);
  const adminPort = int(env, 'POSTGATE_ADMIN_PORT', 8081);
  if (adminPort === httpPort && adminPort !== 0)
    throw new Error(`POSTGATE_ADMIN_PORT must differ from POSTGATE_HTTP_PORT (both ${httpPort}): the admin API has its own listener`);
  const baseUrl = (env.POSTGATE_BASE_URL || `http://localhost:${httpPort}`).replace(/\/+$/, '');
  const baseHost = new URL(baseUrl).hostname;
  let file: Record<string, unknown> = {};
  if (env.POSTGATE_CONFIG) {
    try {
      file = JSON.parse(fs.readFileSync(env.POSTGATE_CONFIG, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new Error(`POSTGATE_CONFIG: cannot read ${env.POSTGATE_CONFIG} as JSON: ${(err as Error).message}`);
    }
    if (typeof file !== 'object' || file === null || Array.isArray(file)) throw new Error(`POSTGATE_CONFIG: ${env.POSTGATE_CONFIG} must hold a JSON object`);
  }
  const gateways = list(env.POSTGATE_GATEWAYS).map((g) => parseHostPort(g, gatewayPort));
  const role = (env.POSTGATE_ROLE || 'both') as Role;
  if (!ROLES.includes(role)) throw new Error(`POSTGATE_ROLE must be one of ${ROLES.join(', ')} (got ${JSON.stringify(env.POSTGATE_ROLE)})`);
  if (role === 'control' && !gateways.length)
    throw new Error('POSTGATE_ROLE=control runs no gateway here: set POSTGATE_GATEWAYS to the gateways it sends through (host:port list)');
  const pacing = pacingSettings(file.pacing);
  return {
    role,
    dataDir,
    host,
    httpPort,
    adminHost: env.POSTGATE_ADMIN_HOST || '127.0.0.1',
    adminPort,
    smtpPort: int(env, 'POSTGATE_SMTP_PORT', 2587),
    grpcPort: int(env, 'POSTGATE_GRPC_PORT', 50051),
    gatewayPort,
    gatewayHost: env.POSTGATE_GATEWAY_HOST || '127.0.0.1',
    gateways: gateways.length ? gateways : [{ host: '127.0.0.1', port: gatewayPort }],
    inboundPort: int(env, 'POSTGATE_INBOUND_PORT', 2525),
    inbound: inboundSettings(env, file.inbound),
    baseUrl,
    idUrl: (env.POSTGATE_ID_URL || baseUrl).replace(/\/+$/, ''),
    mxHost: env.POSTGATE_MX_HOST || baseHost,
    dnsServers: list(env.POSTGATE_DNS_SERVERS),
    deliveryPort: int(env, 'POSTGATE_DELIVERY_PORT', 25),
    sendingIps: list(env.POSTGATE_SENDING_IPS),
    systemFrom: systemFrom(env, baseHost),
    secret: env.POSTGATE_SECRET || undefined,
    databaseUrl: databaseUrl(env),
    tlsCert: env.POSTGATE_TLS_CERT || undefined,
    tlsKey: env.POSTGATE_TLS_KEY || undefined,
    adminToken: env.POSTGATE_ADMIN_TOKEN || undefined,
    logLevel: env.POSTGATE_LOG_LEVEL || 'info',
    limits: merge(defaults.limits, file.limits, 'limits'),
    delivery: merge(defaults.delivery, file.delivery, 'delivery'),
    storage: storageSettings(file.storage, env),
    plans: {
      free: merge(defaults.plans.free, (file.plans as any)?.free, 'plans.free'),
      pro: merge(defaults.plans.pro, (file.plans as any)?.pro, 'plans.pro'),
      scale: merge(defaults.plans.scale, (file.plans as any)?.scale, 'plans.scale'),
    },
    defaultPlan: defaultPlan(file.defaultPlan),
    smtpRate: wholeNumber(file, 'smtpRate', 300, 1),
    smtpConnectionsPerIp: wholeNumber(file, 'smtpConnectionsPerIp', 100, 1),
    smtpTrusted: smtpTrusted(file.smtpTrusted),
    webhooks: webhookSettings(file.webhooks),
    auth: authSettings(file.auth),
    http: merge(defaults.http, file.http, 'http'),
    pacing,
    shaping: shapingSettings(file.shaping, Object.keys(pacing.providers)),
    alerts: alertSettings(file.alerts, env),
    consoleIdleMinutes: positiveInt(env, 'POSTGATE_CONSOLE_IDLE_MINUTES', 30, 7 * 24 * 60, 'minutes'),
    consoleMaxHours: positiveInt(env, 'POSTGATE_CONSOLE_MAX_HOURS', 12, 30 * 24, 'hours'),
    testClock: env.POSTGATE_TEST_CLOCK === '1',
    redisUrl: redisUrl(env.POSTGATE_REDIS_URL),
    redisPrefix: redisPrefix(env.POSTGATE_REDIS_PREFIX),
    redisNodes: redisNodes(env.POSTGATE_REDIS_NODES),
    tls: tlsSettings(file.tls, env, Object.keys(pacing.providers)),
    tracking: trackingSettings(file.tracking, env, baseUrl),
  };
}

/** Delivery's TLS (gateway/tls): what requires verified TLS besides a domain's `tls: "enforced"`, and MTA-STS (RFC 8461). */
export interface TlsSettings {
  /**
   * POSTGATE_TLS_CA_FILE (tls.caFile): PEM certificates trusted besides the system's roots when an MX's
   * certificate (or an MTA-STS policy host's) is verified, e.g. an internal CA; read at start.
   */
  caFile: string | undefined;
  /** The certificates of caFile (PEM blocks), read at start. */
  extraCa: string[];
  /**
   * POSTGATE_TLS_REQUIRE_PROVIDERS (tls.requireProviders): receiving providers (pacing.providers names)
   * whose mail goes only over STARTTLS with a certificate that verifies, as KumoMTA does for Google. Default none.
   */
  requireProviders: string[];
  mtaSts: MtaStsSettings;
}

export interface MtaStsSettings {
  /** POSTGATE_TLS_MTA_STS (tls.mtaSts.enabled): recipients' MTA-STS policies are looked up and followed; default true. */
  enabled: boolean;
  /** CIDRs a policy host may resolve to although loopback or private (refused by default, as for webhooks). */
  allowCidrs: string[];
  /** The port policies are fetched from over HTTPS: 443 (RFC 8461); a lab may serve them elsewhere. */
  port: number;
  /** A policy fetch (connect, TLS, answer) must end within this. */
  timeoutMs: number;
  /** A policy is kept at most this long whatever its max_age says (RFC 8461 caps max_age at 31557600, a year). */
  maxAgeSeconds: number;
}

function tlsSettings(over: unknown, env: NodeJS.ProcessEnv, providers: readonly string[]): TlsSettings {
  const f = merge({ caFile: '', requireProviders: [] as string[], mtaSts: {} as Record<string, unknown> }, over, 'tls');
  const sts = merge({ enabled: true, allowCidrs: [] as string[], port: 443, timeoutMs: 10_000, maxAgeSeconds: 31_557_600 }, f.mtaSts, 'tls.mtaSts');
  const caFile = env.POSTGATE_TLS_CA_FILE || (typeof f.caFile === 'string' && f.caFile) || undefined;
  let extraCa: string[] = [];
  if (caFile) {
    let pem: string;
    try {
      pem = fs.readFileSync(caFile, 'utf8');
    } catch (err) {
      throw new Error(`POSTGATE_TLS_CA_FILE: cannot read ${caFile}: ${(err as Error).message}`);
    }
    extraCa = pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
    if (!extraCa.length) throw new Error(`POSTGATE_TLS_CA_FILE: ${caFile} holds no PEM certificate`);
  }
  const requireProviders = env.POSTGATE_TLS_REQUIRE_PROVIDERS !== undefined ? list(env.POSTGATE_TLS_REQUIRE_PROVIDERS) : f.requireProviders;
  if (!Array.isArray(requireProviders) || requireProviders.some((p) => typeof p !== 'string' || !providers.includes(p)))
    throw new Error(
      `POSTGATE_TLS_REQUIRE_PROVIDERS (tls.requireProviders) must name known providers (${providers.join(', ')}), got ${JSON.stringify(requireProviders)}`,
    );
  const raw = env.POSTGATE_TLS_MTA_STS;
  if (raw !== undefined && raw !== '' && !/^(true|false|1|0)$/i.test(raw))
    throw new Error(`POSTGATE_TLS_MTA_STS must be true or false, got ${JSON.stringify(raw)}`);
  const enabled = raw === undefined || raw === '' ? sts.enabled : /^(true|1)$/i.test(raw);
  if (!Array.isArray(sts.allowCidrs)) throw new Error('POSTGATE_CONFIG: tls.mtaSts.allowCidrs must be a list of CIDRs');
  try {
    new AddressGuard(sts.allowCidrs);
  } catch (err) {
    throw new Error(`POSTGATE_CONFIG: tls.mtaSts.allowCidrs: ${(err as Error).message}`);
  }
  if (!Number.isInteger(sts.port) || sts.port < 1 || sts.port > 65535)
    throw new Error(`POSTGATE_CONFIG: tls.mtaSts.port must be a port number, got ${JSON.stringify(sts.port)}`);
  if (!Number.isInteger(sts.timeoutMs) || sts.timeoutMs < 100 || sts.timeoutMs > 120_000)
    throw new Error(`POSTGATE_CONFIG: tls.mtaSts.timeoutMs must be a whole number of milliseconds from 100 to 120000, got ${JSON.stringify(sts.timeoutMs)}`);
  if (!Number.isInteger(sts.maxAgeSeconds) || sts.maxAgeSeconds < 0 || sts.maxAgeSeconds > 31_557_600)
    throw new Error(`POSTGATE_CONFIG: tls.mtaSts.maxAgeSeconds must be a whole number of seconds from 0 to 31557600, got ${JSON.stringify(sts.maxAgeSeconds)}`);
  return { caFile, extraCa, requireProviders: [...requireProviders], mtaSts: { ...sts, enabled } };
}
