// The SQLite backend: one database file in the data dir, one group-commit writer
// (core/sqlite/group-writer.ts) shared by every repository, so a promise that
// resolves means the data is committed (and, with synchronous FULL, on disk).
import type { Invalidator } from '../../../core/invalidation.js';
import { openDatabase, type Db } from '../../../core/sqlite/open.js';
import { GroupWriter } from '../../../core/sqlite/group-writer.js';
import { ProjectCache, STORE_CHANNELS } from '../cache.js';
import type { Store, StoreConfig, TemplateRow, WebhookRow } from '../index.js';
import { migrations } from './migrations.js';
import { RENAMED_MIGRATIONS } from '../renamed-migrations.js';
import { controlDbFile } from '../../../core/data-files.js';
import { DayTallies } from './tallies.js';
import { SqliteChanges } from './changes.js';
import { SqliteProjects } from './projects.js';
import { SqliteApiKeys } from './api-keys.js';
import { SqliteEmails } from './emails.js';
import { SqliteDeliveryLog } from './delivery-log.js';
import { SqliteSuppressions } from './suppressions.js';
import { SqliteDomains } from './domains.js';
import { SqliteWebhooks } from './webhooks.js';
import { SqlitePacing } from './pacing.js';
import { SqliteAnalytics } from './analytics.js';
import { SqliteSignIn } from './sign-in.js';
import { SqliteAudit } from './audit.js';
import { SqliteIdempotency } from './idempotency.js';
import { SqliteOperations } from './operations.js';
import { SqliteTracking } from './tracking.js';
import { SqliteTemplates } from './templates.js';
import { SqliteInbound } from './inbound.js';
import { SqlitePasskeys } from './passkeys.js';
import { SqliteTwoFactor } from './two-factor.js';
import { SqliteMagicLinks } from './magic-links.js';
import { SqliteUsers } from './users.js';
import { SqliteSigningKeys } from './signing-keys.js';

export async function openSqliteStore(config: StoreConfig, invalidator: Invalidator): Promise<Store> {
  const db = openDatabase(controlDbFile(config.dataDir), migrations, {
    externalCheckpoints: config.storage.externalCheckpoints,
    renamedMigrations: RENAMED_MIGRATIONS,
  });
  return new SqliteStore(db, config.storage, invalidator);
}

class SqliteStore implements Store {
  private readonly writer: GroupWriter;
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

  constructor(
    private readonly db: Db,
    settings: StoreConfig['storage'],
    invalidator: Invalidator,
  ) {
    const writer = new GroupWriter(db, settings.maxBatch, settings.synchronous === 'FULL');
    this.writer = writer;
    const tallies = new DayTallies(db);
    writer.addHooks(tallies);
    const hooks = new ProjectCache<WebhookRow[]>(invalidator, STORE_CHANNELS.webhooks);
    const verified = new ProjectCache<Map<string, boolean>>(invalidator, STORE_CHANNELS.domains);
    const templates = new ProjectCache<Map<string, TemplateRow>>(invalidator, STORE_CHANNELS.templates);
    // A write may have filled a cache from rows it then lost: read them back after a rollback.
    const forget = () => {
      hooks.clear();
      verified.clear();
      templates.clear();
    };
    writer.addHooks({ writeFailed: forget, afterRollback: forget });
    const changes = new SqliteChanges(db, tallies, hooks);

    this.projects = new SqliteProjects(db, writer);
    this.apiKeys = new SqliteApiKeys(db, writer);
    this.emails = new SqliteEmails(db, writer, tallies, changes);
    this.deliveryLog = new SqliteDeliveryLog(db, writer, changes);
    this.suppressions = new SqliteSuppressions(db, writer, changes);
    this.domains = new SqliteDomains(db, writer, verified, invalidator);
    this.webhooks = new SqliteWebhooks(db, writer, invalidator);
    this.pacing = new SqlitePacing(db, writer);
    this.analytics = new SqliteAnalytics(db, tallies);
    this.signIn = new SqliteSignIn(db, writer);
    this.audit = new SqliteAudit(db, writer);
    this.idempotency = new SqliteIdempotency(db, writer);
    this.operations = new SqliteOperations(db, writer, changes);
    this.tracking = new SqliteTracking(db, writer, changes);
    this.templates = new SqliteTemplates(db, writer, templates, invalidator);
    this.inbound = new SqliteInbound(db, writer);
    this.passkeys = new SqlitePasskeys(db, writer);
    this.twoFactor = new SqliteTwoFactor(db, writer);
    this.magicLinks = new SqliteMagicLinks(db, writer);
    this.users = new SqliteUsers(db, writer);
    this.signingKeys = new SqliteSigningKeys(db, writer);
  }

  stats(): { commits: number; writes: number } {
    return { commits: this.writer.commits, writes: this.writer.writes };
  }

  async close(): Promise<void> {
    this.writer.close();
    this.db.close();
  }
}
