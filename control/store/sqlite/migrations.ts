// The SQLite schema, one versioned step at a time. Applied steps are recorded in
// schema_migrations; never edit an applied step, append a new one at the end of
// `migrations`, the order a new database applies them in, with the next number: ids sort
// in that order (`NNNN_name`). A step both backends need gets the same id in
// control/store/postgres/migrations.ts (test/control/store/renamed-migrations.test.ts checks that
// the lists agree). Ids the steps had before they were renumbered: ../renamed-migrations.ts.
import type { Migration } from '../../../core/sqlite/open.js';

const controlMigrations: Migration[] = [
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

// The auth API's tables (users, identities, sessions, codes, providers, origins).
const authMigrations: Migration[] = [
  {
    id: '0005_auth_schema',
    sql: `
      CREATE TABLE auth_settings (
        project_id TEXT PRIMARY KEY REFERENCES projects(id),
        session_ttl_seconds INTEGER,
        code_from TEXT,
        telegram_window_seconds INTEGER,
        updated_at INTEGER NOT NULL
      );
      CREATE TABLE auth_providers (
        project_id TEXT NOT NULL REFERENCES projects(id),
        provider TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        methods TEXT NOT NULL,
        client_id TEXT,
        client_secret TEXT,
        bot_token TEXT,
        endpoints TEXT NOT NULL DEFAULT '{}',
        region TEXT NOT NULL DEFAULT '{}',
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (project_id, provider)
      );
      CREATE TABLE auth_origins (
        project_id TEXT NOT NULL REFERENCES projects(id),
        origin TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (project_id, origin)
      );
      -- env: 'live' or 'test'; a test-kind key sees only the test environment.
      CREATE TABLE auth_users (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        env TEXT NOT NULL,
        email TEXT,
        email_verified INTEGER NOT NULL DEFAULT 0,
        name TEXT,
        avatar_url TEXT,
        phone TEXT,
        username TEXT,
        provider TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        last_sign_in INTEGER
      );
      -- Only authoritative (verified) emails link accounts, so only they must be unique.
      CREATE UNIQUE INDEX auth_users_verified_email ON auth_users(project_id, env, email) WHERE email_verified = 1;
      CREATE TABLE auth_identities (
        project_id TEXT NOT NULL,
        env TEXT NOT NULL,
        provider TEXT NOT NULL,
        subject TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES auth_users(id),
        created_at INTEGER NOT NULL,
        PRIMARY KEY (project_id, env, provider, subject)
      );
      CREATE INDEX auth_identities_user ON auth_identities(user_id);
      CREATE TABLE auth_sessions (
        id TEXT PRIMARY KEY,
        token_hash TEXT NOT NULL UNIQUE,
        project_id TEXT NOT NULL,
        env TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES auth_users(id),
        provider TEXT NOT NULL,
        ip TEXT,
        user_agent TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        revoked_at INTEGER
      );
      CREATE INDEX auth_sessions_user ON auth_sessions(user_id);
      CREATE INDEX auth_sessions_expiry ON auth_sessions(expires_at);
      -- An OAuth sign-in waiting for the app to exchange its svc_code; the session
      -- (and its token) is made at the exchange, so no token is ever kept, even encrypted.
      CREATE TABLE auth_exchange_codes (
        code_hash TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        env TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES auth_users(id),
        provider TEXT NOT NULL,
        ip TEXT,
        user_agent TEXT,
        expires_at INTEGER NOT NULL,
        used_at INTEGER,
        session_id TEXT
      );
      CREATE TABLE auth_oauth_states (
        state_hash TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        env TEXT NOT NULL,
        provider TEXT NOT NULL,
        callback_url TEXT NOT NULL,
        code_verifier TEXT NOT NULL,
        nonce TEXT,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      );
      CREATE TABLE auth_otp_codes (
        project_id TEXT NOT NULL,
        env TEXT NOT NULL,
        channel TEXT NOT NULL,
        target TEXT NOT NULL,
        code_hash TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL,
        test_code TEXT,
        PRIMARY KEY (project_id, env, channel, target)
      );
      -- Signed one-shot payloads already used (Telegram widget and Mini App data).
      CREATE TABLE auth_replays (
        digest TEXT PRIMARY KEY,
        expires_at INTEGER NOT NULL
      );
    `,
  },
  {
    // Login CSRF (RFC 9700 §4.7): a sign-in is bound to the browser that started it by the hash of a
    // verifier that browser keeps; exact callback URLs narrow the allowed origins when registered.
    id: '0006_auth_browser_binding',
    sql: `
      ALTER TABLE auth_oauth_states ADD COLUMN client_challenge TEXT;
      ALTER TABLE auth_exchange_codes ADD COLUMN client_challenge TEXT;
      ALTER TABLE auth_settings ADD COLUMN require_code_verifier INTEGER;
      CREATE TABLE auth_callback_urls (
        project_id TEXT NOT NULL REFERENCES projects(id),
        url TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (project_id, url)
      );
    `,
  },
];

/**
 * What `ORDER BY rowid` and `json_extract(request, '$.system')` used to carry, as
 * columns any engine can read: a recipient's position in its email (unsubscribe and
 * VERP tokens name recipients by it) and the platform's own mail. Existing rows are
 * backfilled from exactly what those expressions answered.
 */
const explicitColumns: Migration = {
  id: '0007_recipient_position_system_flag',
  sql: `
    ALTER TABLE email_recipients ADD COLUMN position INTEGER NOT NULL DEFAULT 0;
    UPDATE email_recipients SET position = ordered.n
      FROM (SELECT rowid AS rid, row_number() OVER (PARTITION BY email_id ORDER BY rowid) - 1 AS n FROM email_recipients) AS ordered
      WHERE email_recipients.rowid = ordered.rid;
    CREATE UNIQUE INDEX email_recipients_position ON email_recipients(email_id, position);
    ALTER TABLE emails ADD COLUMN system INTEGER NOT NULL DEFAULT 0;
    UPDATE emails SET system = 1 WHERE json_valid(request) AND json_extract(request, '$.system') = 1;
  `,
};

/** Scheduled sends: the email waits as 'scheduled' until scheduled_at, then is released. */
const scheduledSends: Migration = {
  id: '0008_scheduled_sends_domain_region',
  sql: `
    ALTER TABLE emails ADD COLUMN scheduled_at INTEGER;
    CREATE INDEX emails_scheduled ON emails(scheduled_at) WHERE status = 'scheduled';
    CREATE INDEX emails_project_id ON emails(project_id, id);
    ALTER TABLE domains ADD COLUMN region TEXT;
  `,
};

/** Webhook endpoints can be disabled (PATCH /v1/webhooks/:id {status}) without being deleted. */
const webhookEnabled: Migration = {
  id: '0009_webhook_enabled',
  sql: 'ALTER TABLE webhooks ADD COLUMN enabled INTEGER NOT NULL DEFAULT 1;',
};

/**
 * The auth audit log (auth/events.ts): sign-in events, kept auth.auditRetentionDays. `seq` orders
 * the pages; `id` is the cursor callers see.
 */
const authAudit: Migration = {
  id: '0010_auth_audit_log',
  sql: `
    CREATE TABLE auth_audit (
      seq INTEGER PRIMARY KEY,
      id TEXT NOT NULL UNIQUE,
      project_id TEXT NOT NULL,
      env TEXT NOT NULL,
      type TEXT NOT NULL,
      user_id TEXT,
      session_id TEXT,
      email TEXT,
      phone TEXT,
      provider TEXT,
      ip TEXT,
      user_agent TEXT,
      reason TEXT,
      suppressed INTEGER NOT NULL DEFAULT 0,
      at INTEGER NOT NULL
    );
    CREATE INDEX auth_audit_project ON auth_audit(project_id, seq);
    CREATE INDEX auth_audit_project_type ON auth_audit(project_id, type, seq);
    CREATE INDEX auth_audit_at ON auth_audit(at);
  `,
};

/**
 * Idempotency keys (control/mail/idempotency.ts): per project, the request's hash, the email ids it
 * reserved, its answer once given, the end of its 24 h window and the lease of the attempt under way.
 */
const idempotencyKeys: Migration = {
  id: '0011_idempotency_keys',
  sql: `
    CREATE TABLE idempotency_keys (
      project_id TEXT NOT NULL,
      key TEXT NOT NULL,
      request_hash TEXT NOT NULL,
      email_ids TEXT NOT NULL,
      status INTEGER,
      body TEXT,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      lease_until INTEGER NOT NULL,
      PRIMARY KEY (project_id, key)
    ) WITHOUT ROWID;
    CREATE INDEX idempotency_keys_expiry ON idempotency_keys(expires_at);
  `,
};

/**
 * Attachment bytes, once per email (not per recipient copy, not in the request JSON, which keeps only
 * what describes them), written in the email's own transaction.
 */
const attachments: Migration = {
  id: '0012_attachments',
  sql: `
    CREATE TABLE email_attachments (
      email_id TEXT NOT NULL REFERENCES emails(id),
      position INTEGER NOT NULL,
      size INTEGER NOT NULL,
      content BLOB NOT NULL,
      PRIMARY KEY (email_id, position)
    );
  `,
};

/**
 * The send request (bodies included) in a table of its own. SQLite rewrites a whole row on every
 * UPDATE, overflow pages and all, so with the request in `emails` each status change (dispatched,
 * sending, sent…) rewrote the bodies: 150–450 µs and 30–100 kB of WAL per change for a 30–100 kB
 * email (bench/email-lifecycle.ts), against about 10 µs without them. SQLite only: PostgreSQL keeps
 * a large value out of line (TOAST) and an UPDATE that leaves it alone does not copy it.
 */
const emailRequests: Migration = {
  id: '0013_email_requests',
  sql: `
    CREATE TABLE email_requests (
      email_id TEXT PRIMARY KEY REFERENCES emails(id),
      request TEXT NOT NULL
    );
    INSERT INTO email_requests (email_id, request) SELECT id, request FROM emails;
    ALTER TABLE emails DROP COLUMN request;
  `,
};

/** OAuth states are counted per project before each new one (SignInStore.insertState's cap). */
const authStatesByProject: Migration = {
  id: '0014_auth_states_by_project',
  sql: 'CREATE INDEX auth_oauth_states_project ON auth_oauth_states(project_id, expires_at);',
};

/**
 * The browser binding becomes required unless a project says otherwise (auth/project-config.ts): the
 * projects that exist now keep what they had, off, written down, so only new projects get the default.
 */
const codeVerifierDefault: Migration = {
  id: '0015_auth_code_verifier_default',
  sql: `
    UPDATE auth_settings SET require_code_verifier = 0 WHERE require_code_verifier IS NULL;
    INSERT INTO auth_settings (project_id, require_code_verifier, updated_at)
      SELECT id, 0, created_at FROM projects WHERE id NOT IN (SELECT project_id FROM auth_settings);
  `,
};

/**
 * Queue control (control/operations): the operator audit log (who by token fingerprint, what, on what,
 * how many emails), suspensions of delivery (deleted on resume), cancel orders (kept 14 days for the
 * gateways). A project's cancel reads its mail by emails_project_id: an index of open mail only would tax every
 * email's status changes for a rare operator action (bench/email-lifecycle.ts: about +0.3 kB written per email).
 */
const queueControl: Migration = {
  id: '0016_queue_control',
  sql: `
    CREATE TABLE operator_audit (
      seq INTEGER PRIMARY KEY,
      id TEXT NOT NULL UNIQUE,
      at INTEGER NOT NULL,
      action TEXT NOT NULL,
      actor TEXT NOT NULL,
      target TEXT NOT NULL,
      details TEXT NOT NULL,
      emails INTEGER
    );
    CREATE TABLE queue_suspensions (
      id TEXT PRIMARY KEY,
      provider TEXT NOT NULL,
      project_id TEXT NOT NULL,
      until_at INTEGER,
      reason TEXT NOT NULL,
      created_at INTEGER NOT NULL
    );
    CREATE TABLE cancel_orders (
      project_id TEXT NOT NULL,
      accepted_before INTEGER NOT NULL,
      ordered_at INTEGER NOT NULL
    );
    CREATE INDEX cancel_orders_ordered ON cancel_orders(ordered_at);
  `,
};

/**
 * The operator console's reads (control/admin): suppressions newest first, across projects or in one,
 * and a project's sign-in activity over a period. Suppressions and sign-in events are written rarely;
 * nothing on the mail path gains an index.
 */
const consoleReads: Migration = {
  id: '0017_console_reads',
  sql: `
    -- GET /admin/v1/suppressions: newest first over every project, or over one.
    CREATE INDEX suppressions_created ON suppressions(created_at, project_id, address);
    CREATE INDEX suppressions_project_created ON suppressions(project_id, created_at, address);
    -- GET /admin/v1/projects/:slug/auth/activity: a project's entries of a day or a week.
    CREATE INDEX auth_audit_project_at ON auth_audit(project_id, at);
  `,
};

/**
 * The operator's email search by recipient (GET /admin/v1/emails?to=): a recipient's emails newest first,
 * case-insensitive. The one index the search adds to the mail path (one entry per recipient); the other
 * filters walk the emails by id (time-ordered), which the primary key already orders.
 */
const emailSearch: Migration = {
  id: '0018_email_search_recipient',
  sql: 'CREATE INDEX email_recipients_address ON email_recipients(lower(address), email_id);',
};

/**
 * A domain's settings (Resend's open_tracking, click_tracking, tls, tracking_subdomain and
 * capabilities.receiving): off, opportunistic, `links`, not receiving until its owner asks.
 */
const domainSettings: Migration = {
  id: '0019_domain_settings',
  sql: `
    ALTER TABLE domains ADD COLUMN open_tracking INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE domains ADD COLUMN click_tracking INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE domains ADD COLUMN tls TEXT NOT NULL DEFAULT 'opportunistic';
    ALTER TABLE domains ADD COLUMN tracking_subdomain TEXT NOT NULL DEFAULT 'links';
    ALTER TABLE domains ADD COLUMN receiving INTEGER NOT NULL DEFAULT 0;
  `,
};

/**
 * A project's email templates (control/templates): the draft and the published version as JSON, the
 * alias unique per project (NULLs apart). Lists read newest first by id (time-ordered).
 */
const templates: Migration = {
  id: '0020_templates',
  sql: `
    CREATE TABLE templates (
      id TEXT PRIMARY KEY,
      project_id TEXT NOT NULL REFERENCES projects(id),
      name TEXT NOT NULL,
      alias TEXT,
      draft TEXT NOT NULL,
      published TEXT,
      published_at INTEGER,
      created_at INTEGER NOT NULL,
      updated_at INTEGER NOT NULL
    );
    CREATE INDEX templates_project ON templates(project_id, id);
    CREATE UNIQUE INDEX templates_project_alias ON templates(project_id, alias);
  `,
};

/** Open and click tracking (control/tracking): an email's counts per kind and link. */
const tracking: Migration = {
  id: '0021_tracking',
  sql: `
    CREATE TABLE email_tracking (
      email_id TEXT NOT NULL,
      kind TEXT NOT NULL,
      link_hash TEXT NOT NULL,
      link TEXT NOT NULL,
      count INTEGER NOT NULL,
      bots INTEGER NOT NULL,
      first_at INTEGER NOT NULL,
      last_at INTEGER NOT NULL,
      PRIMARY KEY (email_id, kind, link_hash)
    ) WITHOUT ROWID;
  `,
};

/** Received mail (control/inbound): the parsed message and the raw one, its attachments' bytes apart. */
const inbound: Migration = {
  id: '0022_inbound',
  sql: `
    CREATE TABLE inbound_emails (
      id TEXT PRIMARY KEY,
      project_id TEXT NOT NULL REFERENCES projects(id),
      created_at INTEGER NOT NULL,
      mail_from TEXT NOT NULL,
      rcpt_to TEXT NOT NULL,
      from_addr TEXT NOT NULL,
      to_addrs TEXT NOT NULL,
      cc TEXT NOT NULL,
      bcc TEXT NOT NULL,
      reply_to TEXT NOT NULL,
      subject TEXT NOT NULL,
      message_id TEXT NOT NULL,
      text TEXT,
      html TEXT,
      headers TEXT NOT NULL,
      auth TEXT NOT NULL,
      remote_ip TEXT NOT NULL,
      helo TEXT NOT NULL,
      size INTEGER NOT NULL,
      attachments TEXT NOT NULL,
      raw BLOB NOT NULL
    );
    CREATE INDEX inbound_emails_project ON inbound_emails (project_id, created_at, id);
    CREATE TABLE inbound_attachments (
      email_id TEXT NOT NULL,
      id TEXT NOT NULL,
      content BLOB NOT NULL,
      PRIMARY KEY (email_id, id)
    ) WITHOUT ROWID;
  `,
};

/**
 * Sign-in settings of issue 41: two-factor ('optional' or 'required'; NULL is off) and the JWTs' audience
 * and lifetime (NULL: the defaults, auth/project-config.ts).
 */
const authSettingsMore: Migration = {
  id: '0023_auth_settings_more',
  sql: `
    ALTER TABLE auth_settings ADD COLUMN two_factor TEXT;
    ALTER TABLE auth_settings ADD COLUMN jwt_audience TEXT;
    ALTER TABLE auth_settings ADD COLUMN jwt_ttl_seconds INTEGER;
  `,
};

/**
 * Passkeys (auth/passkeys): WebAuthn credentials of users (gone with their user) and the single-use
 * challenges of registrations and sign-ins (hashed; taken with DELETE … RETURNING).
 */
const passkeys: Migration = {
  id: '0024_passkeys',
  sql: `
    CREATE TABLE auth_passkeys (
      id TEXT PRIMARY KEY,
      project_id TEXT NOT NULL,
      env TEXT NOT NULL,
      user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
      credential_id TEXT NOT NULL,
      public_key BLOB NOT NULL,
      counter INTEGER NOT NULL,
      transports TEXT NOT NULL,
      device_type TEXT NOT NULL,
      backed_up INTEGER NOT NULL,
      backup_eligible INTEGER NOT NULL,
      aaguid TEXT NOT NULL,
      name TEXT NOT NULL,
      rp_id TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      last_used_at INTEGER
    );
    CREATE UNIQUE INDEX auth_passkeys_credential ON auth_passkeys(project_id, env, credential_id);
    CREATE INDEX auth_passkeys_user ON auth_passkeys(user_id);
    CREATE TABLE auth_passkey_challenges (
      challenge_hash TEXT PRIMARY KEY,
      project_id TEXT NOT NULL,
      env TEXT NOT NULL,
      user_id TEXT,
      purpose TEXT NOT NULL,
      rp_id TEXT NOT NULL,
      origin TEXT NOT NULL,
      expires_at INTEGER NOT NULL
    );
    CREATE INDEX auth_passkey_challenges_expiry ON auth_passkey_challenges(expires_at);
  `,
};

/**
 * Second factors (auth/two-factor): a user's TOTP secret (encrypted; the last step used, so no code counts
 * twice), backup codes (keyed hashes, single use) and sign-ins held for their second factor (the ticket's
 * hash). Each goes with its user (ON DELETE CASCADE).
 */
const twoFactor: Migration = {
  id: '0025_two_factor',
  sql: `
    CREATE TABLE auth_totp (
      user_id TEXT PRIMARY KEY REFERENCES auth_users(id) ON DELETE CASCADE,
      secret TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      confirmed_at INTEGER,
      last_step INTEGER
    ) WITHOUT ROWID;
    CREATE TABLE auth_backup_codes (
      user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
      code_hash TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      used_at INTEGER,
      PRIMARY KEY (user_id, code_hash)
    ) WITHOUT ROWID;
    CREATE TABLE auth_pending_sign_ins (
      ticket_hash TEXT PRIMARY KEY,
      project_id TEXT NOT NULL,
      env TEXT NOT NULL,
      user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
      provider TEXT NOT NULL,
      ip TEXT,
      user_agent TEXT,
      session_ttl_ms INTEGER NOT NULL,
      enrol INTEGER NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      expires_at INTEGER NOT NULL
    );
    CREATE INDEX auth_pending_sign_ins_user ON auth_pending_sign_ins(user_id);
    CREATE INDEX auth_pending_sign_ins_expiry ON auth_pending_sign_ins(expires_at);
  `,
};

/**
 * Magic links (auth/magic-links): the token's SHA-256 only, the address, the checked callback URL and
 * the asking browser's challenge; used_at set once by a conditional UPDATE (single use). test_token:
 * the test environment's encrypted token (never sent), for the test-only read route.
 */
const magicLinks: Migration = {
  id: '0026_magic_links',
  sql: `
    CREATE TABLE auth_magic_links (
      token_hash TEXT PRIMARY KEY,
      project_id TEXT NOT NULL,
      env TEXT NOT NULL,
      email TEXT NOT NULL,
      callback_url TEXT NOT NULL,
      client_challenge TEXT,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      used_at INTEGER,
      test_token TEXT
    ) WITHOUT ROWID;
    CREATE INDEX auth_magic_links_address ON auth_magic_links (project_id, env, email, created_at);
    CREATE INDEX auth_magic_links_expiry ON auth_magic_links (expires_at);
  `,
};

/**
 * User management (auth/users): a user's phone-verified flag, the app's metadata (a JSON object), its ban
 * (when, why, until when: NULL is until lifted), and indexes for listing (newest first) and searching users
 * by address, number and last sign-in; the audit log and exchange codes by user (deletion scrubs them).
 */
const users: Migration = {
  id: '0027_users',
  sql: `
    ALTER TABLE auth_users ADD COLUMN phone_verified INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE auth_users ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE auth_users ADD COLUMN banned_at INTEGER;
    ALTER TABLE auth_users ADD COLUMN ban_reason TEXT;
    ALTER TABLE auth_users ADD COLUMN ban_expires_at INTEGER;
    CREATE INDEX auth_users_listing ON auth_users(project_id, env, created_at, id);
    CREATE INDEX auth_users_email_lower ON auth_users(project_id, env, lower(email));
    CREATE INDEX auth_users_phone ON auth_users(project_id, env, phone);
    CREATE INDEX auth_users_last_sign_in ON auth_users(project_id, env, last_sign_in);
    CREATE INDEX auth_audit_user ON auth_audit(user_id);
    CREATE INDEX auth_exchange_codes_user ON auth_exchange_codes(user_id);
  `,
};

/** The JWT signing keys (auth/jwt): one set for the deployment; the private half sealed. */
const signingKeys: Migration = {
  id: '0028_signing_keys',
  sql: `
    CREATE TABLE signing_keys (
      kid TEXT PRIMARY KEY,
      alg TEXT NOT NULL,
      public_jwk TEXT NOT NULL,
      private_jwk TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      active_from INTEGER NOT NULL,
      retired_at INTEGER,
      drop_after INTEGER
    );
  `,
};

/**
 * An svc_code that a second factor already earned (a user-verified passkey in the hosted widget): the
 * two-factor gate lets its exchange through, as it does the same passkey's direct sign-in.
 */
const exchangeSecondFactor: Migration = {
  id: '0029_exchange_second_factor',
  sql: `ALTER TABLE auth_exchange_codes ADD COLUMN second_factor INTEGER NOT NULL DEFAULT 0;`,
};

export const migrations: readonly Migration[] = [
  ...controlMigrations,
  ...authMigrations,
  explicitColumns,
  scheduledSends,
  webhookEnabled,
  authAudit,
  idempotencyKeys,
  attachments,
  emailRequests,
  authStatesByProject,
  codeVerifierDefault,
  queueControl,
  consoleReads,
  emailSearch,
  domainSettings,
  templates,
  tracking,
  inbound,
  authSettingsMore,
  passkeys,
  twoFactor,
  magicLinks,
  users,
  signingKeys,
  exchangeSecondFactor,
];
