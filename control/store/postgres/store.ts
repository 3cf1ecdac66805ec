// The PostgreSQL backend (POSTGATE_DATABASE_URL): one database several control nodes
// share. Opening it checks the server and applies the schema (migrations.ts); a server
// that cannot be reached, a wrong password or a missing database fail here with one
// line that says which. Each node's claims (emails to dispatch, webhook messages to post)
// carry its id: the same across restarts of one node (its host and data dir), so a control
// restarted after a crash takes its own claims back at once instead of waiting out their lease.
import crypto from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Invalidator } from '../../../core/invalidation.js';
import { ProjectCache, STORE_CHANNELS } from '../cache.js';
import type { Store, StoreConfig, TemplateRow, WebhookRow } from '../index.js';
import { Acceptor } from './accept.js';
import { PgDb, safeUrl } from './db.js';
import { migrate } from './migrations.js';
import { PgProjects } from './projects.js';
import { PgApiKeys } from './api-keys.js';
import { PgEmails } from './emails.js';
import { PgDeliveryLog } from './delivery-log.js';
import { PgSuppressions } from './suppressions.js';
import { PgDomains } from './domains.js';
import { PgWebhooks } from './webhooks.js';
import { PgPacing } from './pacing.js';
import { PgAnalytics } from './analytics.js';
import { PgSignIn } from './sign-in.js';
import { PgAudit } from './audit.js';
import { PgIdempotency } from './idempotency.js';
import { PgOperations } from './operations.js';
import { PgTracking } from './tracking.js';
import { PgTemplates } from './templates.js';
import { PgInbound } from './inbound.js';
import { PgPasskeys } from './passkeys.js';
import { PgTwoFactor } from './two-factor.js';
import { PgMagicLinks } from './magic-links.js';
import { PgUsers } from './users.js';
import { PgSigningKeys } from './signing-keys.js';

export async function openPostgresStore(config: StoreConfig & { databaseUrl: string }, invalidator: Invalidator): Promise<Store> {
  const db = new PgDb(config.databaseUrl);
  try {
    await db.tx((tx) => migrate(tx));
  } catch (err) {
    await db.close().catch(() => {});
    throw new Error(`cannot open the PostgreSQL database ${safeUrl(config.databaseUrl)}: ${reason(err)}`);
  }
  const node = config.dataDir
    ? crypto
        .createHash('sha256')
        .update(`${os.hostname()}\0${path.resolve(config.dataDir)}`)
        .digest('hex')
        .slice(0, 32)
    : crypto.randomUUID();
  return new PgStore(db, node, config.storage.maxBatch, invalidator);
}

/** The driver's own words, on one line (a refused connection to a name with several addresses has them in `errors`). */
function reason(err: unknown): string {
  let e = err as { message?: string; code?: string; cause?: unknown; errors?: unknown[] };
  if (e?.cause) e = e.cause as typeof e;
  const text = e?.message || (e?.errors?.[0] as { message?: string } | undefined)?.message || e?.code || String(err);
  return text.split('\n')[0]!;
}

class PgStore implements Store {
  readonly projects;
  readonly apiKeys;
  readonly emails;
  readonly deliveryLog;
  readonly suppressions;
  readonly domains;
  readonly webhooks;
  readonly pacing;
  readonly analytics;
  readonly signIn;
  readonly audit;
  readonly idempotency;
  readonly operations;
  readonly tracking;
  readonly templates;
  readonly inbound;
  readonly passkeys;
  readonly twoFactor;
  readonly magicLinks;
  readonly users;
  readonly signingKeys;
  private readonly acceptor;

  constructor(
    private readonly db: PgDb,
    node: string,
    maxBatch: number,
    invalidator: Invalidator,
  ) {
    const hooks = new ProjectCache<Promise<WebhookRow[]>>(invalidator, STORE_CHANNELS.webhooks);
    const verified = new ProjectCache<Map<string, Promise<boolean>>>(invalidator, STORE_CHANNELS.domains);
    this.acceptor = new Acceptor(db, hooks, maxBatch);
    this.projects = new PgProjects(db);
    this.apiKeys = new PgApiKeys(db);
    this.emails = new PgEmails(db, this.acceptor, node);
    this.deliveryLog = new PgDeliveryLog(db, hooks);
    this.suppressions = new PgSuppressions(db);
    this.domains = new PgDomains(db, verified, invalidator);
    this.webhooks = new PgWebhooks(db, invalidator, node);
    this.pacing = new PgPacing(db);
    this.analytics = new PgAnalytics(db);
    this.signIn = new PgSignIn(db);
    this.audit = new PgAudit(db);
    this.idempotency = new PgIdempotency(db);
    this.operations = new PgOperations(db, hooks);
    this.tracking = new PgTracking(db, hooks);
    this.templates = new PgTemplates(db, new ProjectCache<Map<string, Promise<TemplateRow | undefined>>>(invalidator, STORE_CHANNELS.templates), invalidator);
    this.inbound = new PgInbound(db);
    this.passkeys = new PgPasskeys(db);
    this.twoFactor = new PgTwoFactor(db);
    this.magicLinks = new PgMagicLinks(db);
    this.users = new PgUsers(db);
    this.signingKeys = new PgSigningKeys(db);
  }

  stats(): { commits: number; writes: number } {
    return { commits: this.db.commits, writes: this.db.writes };
  }

  async close(): Promise<void> {
    await this.acceptor.drained();
    // What this node claimed but did not hand on goes back at once (a crash leaves it to the lease).
    await Promise.all([this.emails.releaseClaims(), this.webhooks.releaseClaims()]).catch(() => {});
    await this.db.close();
  }
}
