// Control's schema, one versioned step at a time. Applied steps are recorded in
// schema_migrations; never edit an applied step, append a new one.
import type { Migration } from '../../core/sqlite/open.js';

export const controlMigrations: Migration[] = [
  {
    id: '0001_projects_keys',
    sql: `
      CREATE TABLE projects (
        id TEXT PRIMARY KEY,
        slug TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'active',
        plan TEXT NOT NULL DEFAULT 'free',
        created_at INTEGER NOT NULL
      );
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        kind TEXT NOT NULL,
        scope TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        hint TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        revoked_at INTEGER
      );
      CREATE INDEX api_keys_project ON api_keys(project_id);
    `,
  },
  {
    id: '0002_emails',
    sql: `
      CREATE TABLE emails (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        status TEXT NOT NULL,
        from_addr TEXT NOT NULL,
        subject TEXT NOT NULL,
        bulk INTEGER NOT NULL DEFAULT 0,
        request TEXT NOT NULL,
        error TEXT,
        error_code TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        dispatched_at INTEGER
      );
      CREATE INDEX emails_project_created ON emails(project_id, created_at);
      CREATE INDEX emails_undispatched ON emails(created_at) WHERE dispatched_at IS NULL AND status = 'queued';
      CREATE TABLE email_recipients (
        email_id TEXT NOT NULL REFERENCES emails(id),
        address TEXT NOT NULL,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (email_id, address)
      );
      CREATE TABLE email_events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        email_id TEXT NOT NULL REFERENCES emails(id),
        type TEXT NOT NULL,
        recipient TEXT NOT NULL DEFAULT '',
        attempt INTEGER NOT NULL DEFAULT 0,
        at INTEGER NOT NULL,
        details TEXT
      );
      -- The same outcome reported twice (a redelivery after a gateway crash) is recorded once.
      CREATE UNIQUE INDEX email_events_once ON email_events(email_id, type, recipient, attempt);
      CREATE TABLE gateway_cursors (
        gateway TEXT PRIMARY KEY,
        seq INTEGER NOT NULL
      );
      CREATE TABLE suppressions (
        project_id TEXT NOT NULL REFERENCES projects(id),
        address TEXT NOT NULL,
        reason TEXT NOT NULL,
        scope TEXT NOT NULL DEFAULT 'all',
        email_id TEXT,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (project_id, address)
      );
    `,
  },
];

controlMigrations.push({
  id: '0003_plans_domains_analytics_webhooks',
  sql: `
      ALTER TABLE projects ADD COLUMN daily_quota INTEGER;
      ALTER TABLE projects ADD COLUMN monthly_quota INTEGER;
      ALTER TABLE projects ADD COLUMN rate_limit INTEGER;
      CREATE TABLE usage_daily (
        project_id TEXT NOT NULL,
        day TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (project_id, day)
      );
      CREATE TABLE domains (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        selector TEXT NOT NULL,
        dkim_private TEXT NOT NULL,
        dkim_public TEXT NOT NULL,
        records TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        verified_at INTEGER,
        checked_at INTEGER,
        UNIQUE (project_id, name)
      );
      ALTER TABLE emails ADD COLUMN reached TEXT NOT NULL DEFAULT '';
      CREATE TABLE analytics_daily (
        project_id TEXT NOT NULL,
        day TEXT NOT NULL,
        status TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (project_id, day, status)
      );
      CREATE TABLE webhooks (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        url TEXT NOT NULL,
        statuses TEXT NOT NULL,
        secret TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX webhooks_project ON webhooks(project_id);
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        webhook_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        payload TEXT NOT NULL,
        attempt INTEGER NOT NULL DEFAULT 0,
        next_attempt_at INTEGER NOT NULL,
        status TEXT NOT NULL,
        last_error TEXT,
        created_at INTEGER NOT NULL,
        delivered_at INTEGER
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries(webhook_id, created_at);
    `,
});

controlMigrations.push({
  id: '0004_deliverability',
  sql: `
    -- Why control holds an accepted email back from the gateways (a bulk volume spike); NULL = it may go.
    ALTER TABLE emails ADD COLUMN held TEXT;
    CREATE INDEX emails_held ON emails(project_id) WHERE held IS NOT NULL;
    -- Pacing deferrals of one attempt to different days are different events: the key tells them apart.
    ALTER TABLE email_events ADD COLUMN dedupe TEXT NOT NULL DEFAULT '';
    DROP INDEX email_events_once;
    CREATE UNIQUE INDEX email_events_once_v2 ON email_events(email_id, type, recipient, attempt, dedupe);
    -- Bulk recipients accepted per project and UTC day (volume spikes), and per subject (same-subject limit).
    CREATE TABLE bulk_daily (
      project_id TEXT NOT NULL,
      day TEXT NOT NULL,
      count INTEGER NOT NULL,
      PRIMARY KEY (project_id, day)
    );
    CREATE TABLE bulk_subject_daily (
      project_id TEXT NOT NULL,
      day TEXT NOT NULL,
      subject_hash TEXT NOT NULL,
      count INTEGER NOT NULL,
      PRIMARY KEY (project_id, day, subject_hash)
    );
    -- Bulk volume announced by a project, or approved by the operator, for a day.
    CREATE TABLE volume_allowances (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      project_id TEXT NOT NULL REFERENCES projects(id),
      day TEXT NOT NULL,
      volume INTEGER NOT NULL,
      source TEXT NOT NULL,
      created_at INTEGER NOT NULL
    );
    CREATE INDEX volume_allowances_day ON volume_allowances(project_id, day);
    -- Per receiving provider throttles set by the operator (defaults come from POSTGATE_CONFIG).
    CREATE TABLE throttles (
      provider TEXT PRIMARY KEY,
      daily_norm INTEGER NOT NULL,
      growth REAL NOT NULL,
      max_daily_norm INTEGER NOT NULL,
      rate_per_minute INTEGER NOT NULL,
      connections INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    );
  `,
});
