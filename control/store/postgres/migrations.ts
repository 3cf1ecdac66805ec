// The PostgreSQL schema, one versioned step at a time, recorded in schema_migrations.
// Steps run at start inside one transaction holding a transaction-level advisory lock,
// so nodes starting together apply each step once: the others wait, then find it done.
// Never edit an applied step; append a new one at the end, with the next number: ids sort in
// the order they apply (`NNNN_name`), and a step both backends need has the same id in
// control/store/sqlite/migrations.ts (test/control/store/renamed-migrations.test.ts checks that the
// lists agree). `0001_schema` is SQLite's steps 0001-0007 in one (this backend came after
// them), so the next step here is 0008; SQLite's 0013 (the request in a table of its own) has
// no counterpart here. Ids the steps had before they were renumbered: ../renamed-migrations.ts.
//
// Against the SQLite schema: epoch-ms columns are BIGINT, flags BOOLEAN, structured
// values JSONB (nothing compares their text); `request` and webhook payloads stay TEXT,
// kept byte for byte (a payload is signed). Monthly usage has its own counter row (the
// lock that keeps a month's quota exact across nodes), and emails and webhook messages
// carry a claim (who hands them on, until when) so several nodes never take the same one.
import { RENAMED_MIGRATIONS } from '../renamed-migrations.js';
import type { Tx } from './db.js';

export interface PgMigration {
  id: string;
  sql: string;
}

export const migrations: readonly PgMigration[] = [
  {
    id: '0001_schema',
    sql: `
      CREATE TABLE projects (
        id TEXT PRIMARY KEY,
        slug TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'active',
        plan TEXT NOT NULL DEFAULT 'free',
        daily_quota INTEGER,
        monthly_quota INTEGER,
        rate_limit INTEGER,
        created_at BIGINT NOT NULL
      );
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        kind TEXT NOT NULL,
        scope TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        hint TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        revoked_at BIGINT
      );
      CREATE INDEX api_keys_project ON api_keys(project_id);

      CREATE TABLE emails (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        status TEXT NOT NULL,
        from_addr TEXT NOT NULL,
        subject TEXT NOT NULL,
        bulk BOOLEAN NOT NULL DEFAULT false,
        system BOOLEAN NOT NULL DEFAULT false,
        request TEXT NOT NULL,
        error TEXT,
        error_code TEXT,
        reached TEXT NOT NULL DEFAULT '',
        held TEXT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        dispatched_at BIGINT,
        -- A node hands the email to a gateway until then; past it (the node died) another may.
        dispatch_claimed_until BIGINT,
        dispatch_claimed_by TEXT
      );
      CREATE INDEX emails_project_created ON emails(project_id, created_at);
      CREATE INDEX emails_undispatched ON emails(created_at) WHERE dispatched_at IS NULL AND status = 'queued' AND held IS NULL;
      CREATE INDEX emails_held ON emails(project_id) WHERE held IS NOT NULL;
      CREATE TABLE email_recipients (
        email_id TEXT NOT NULL REFERENCES emails(id),
        address TEXT NOT NULL,
        kind TEXT NOT NULL,
        status TEXT NOT NULL,
        updated_at BIGINT NOT NULL,
        -- Unsubscribe and VERP tokens name a recipient by its place in the email.
        position INTEGER NOT NULL,
        PRIMARY KEY (email_id, address),
        UNIQUE (email_id, position)
      );
      CREATE TABLE email_events (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        email_id TEXT NOT NULL REFERENCES emails(id),
        type TEXT NOT NULL,
        recipient TEXT NOT NULL DEFAULT '',
        attempt INTEGER NOT NULL DEFAULT 0,
        at BIGINT NOT NULL,
        details JSONB,
        dedupe TEXT NOT NULL DEFAULT '',
        -- The same outcome reported twice, by one node or several, is recorded once.
        UNIQUE (email_id, type, recipient, attempt, dedupe)
      );
      CREATE TABLE gateway_cursors (
        gateway TEXT PRIMARY KEY,
        seq BIGINT NOT NULL
      );
      CREATE TABLE suppressions (
        project_id TEXT NOT NULL REFERENCES projects(id),
        address TEXT NOT NULL,
        reason TEXT NOT NULL,
        scope TEXT NOT NULL DEFAULT 'all',
        email_id TEXT,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (project_id, address)
      );

      CREATE TABLE usage_daily (
        project_id TEXT NOT NULL,
        day TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (project_id, day)
      );
      CREATE TABLE usage_monthly (
        project_id TEXT NOT NULL,
        month TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (project_id, month)
      );
      CREATE TABLE analytics_daily (
        project_id TEXT NOT NULL,
        day TEXT NOT NULL,
        status TEXT NOT NULL,
        count INTEGER NOT NULL,
        PRIMARY KEY (project_id, day, status)
      );
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
      CREATE TABLE volume_allowances (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        day TEXT NOT NULL,
        volume INTEGER NOT NULL,
        source TEXT NOT NULL,
        created_at BIGINT NOT NULL
      );
      CREATE INDEX volume_allowances_day ON volume_allowances(project_id, day);
      CREATE TABLE throttles (
        provider TEXT PRIMARY KEY,
        daily_norm INTEGER NOT NULL,
        growth DOUBLE PRECISION NOT NULL,
        max_daily_norm INTEGER NOT NULL,
        rate_per_minute INTEGER NOT NULL,
        connections INTEGER NOT NULL,
        updated_at BIGINT NOT NULL
      );

      CREATE TABLE domains (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        selector TEXT NOT NULL,
        dkim_private TEXT NOT NULL,
        dkim_public TEXT NOT NULL,
        records JSONB NOT NULL,
        created_at BIGINT NOT NULL,
        verified_at BIGINT,
        checked_at BIGINT,
        UNIQUE (project_id, name)
      );
      CREATE TABLE webhooks (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        url TEXT NOT NULL,
        statuses JSONB NOT NULL,
        secret TEXT NOT NULL,
        created_at BIGINT NOT NULL
      );
      CREATE INDEX webhooks_project ON webhooks(project_id);
      CREATE TABLE webhook_deliveries (
        id TEXT PRIMARY KEY,
        webhook_id TEXT NOT NULL,
        project_id TEXT NOT NULL,
        payload TEXT NOT NULL,
        attempt INTEGER NOT NULL DEFAULT 0,
        next_attempt_at BIGINT NOT NULL,
        status TEXT NOT NULL,
        last_error TEXT,
        created_at BIGINT NOT NULL,
        delivered_at BIGINT,
        -- Like emails: one node posts a message at a time.
        claimed_until BIGINT,
        claimed_by TEXT
      );
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at) WHERE status = 'pending';
      CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries(webhook_id, created_at);

      CREATE TABLE auth_settings (
        project_id TEXT PRIMARY KEY REFERENCES projects(id),
        session_ttl_seconds INTEGER,
        code_from TEXT,
        telegram_window_seconds INTEGER,
        require_code_verifier BOOLEAN NOT NULL DEFAULT false,
        updated_at BIGINT NOT NULL
      );
      CREATE TABLE auth_providers (
        project_id TEXT NOT NULL REFERENCES projects(id),
        provider TEXT NOT NULL,
        enabled BOOLEAN NOT NULL,
        methods JSONB NOT NULL,
        client_id TEXT,
        client_secret TEXT,
        bot_token TEXT,
        endpoints JSONB NOT NULL DEFAULT '{}',
        region JSONB NOT NULL DEFAULT '{}',
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (project_id, provider)
      );
      CREATE TABLE auth_origins (
        project_id TEXT NOT NULL REFERENCES projects(id),
        origin TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (project_id, origin)
      );
      CREATE TABLE auth_callback_urls (
        project_id TEXT NOT NULL REFERENCES projects(id),
        url TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        PRIMARY KEY (project_id, url)
      );
      CREATE TABLE auth_users (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        env TEXT NOT NULL,
        email TEXT,
        email_verified BOOLEAN NOT NULL DEFAULT false,
        name TEXT,
        avatar_url TEXT,
        phone TEXT,
        username TEXT,
        provider TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        last_sign_in BIGINT
      );
      -- Only authoritative (verified) emails link accounts, so only they must be unique.
      CREATE UNIQUE INDEX auth_users_verified_email ON auth_users(project_id, env, email) WHERE email_verified;
      CREATE TABLE auth_identities (
        project_id TEXT NOT NULL,
        env TEXT NOT NULL,
        provider TEXT NOT NULL,
        subject TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES auth_users(id),
        created_at BIGINT NOT NULL,
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
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        revoked_at BIGINT
      );
      CREATE INDEX auth_sessions_user ON auth_sessions(user_id);
      CREATE INDEX auth_sessions_expiry ON auth_sessions(expires_at);
      CREATE TABLE auth_exchange_codes (
        code_hash TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        env TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES auth_users(id),
        provider TEXT NOT NULL,
        ip TEXT,
        user_agent TEXT,
        client_challenge TEXT,
        expires_at BIGINT NOT NULL,
        used_at BIGINT,
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
        client_challenge TEXT,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL
      );
      CREATE TABLE auth_otp_codes (
        project_id TEXT NOT NULL,
        env TEXT NOT NULL,
        channel TEXT NOT NULL,
        target TEXT NOT NULL,
        code_hash TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        test_code TEXT,
        PRIMARY KEY (project_id, env, channel, target)
      );
      CREATE TABLE auth_replays (
        digest TEXT PRIMARY KEY,
        expires_at BIGINT NOT NULL
      );
    `,
  },
  {
    // Scheduled sends: the email waits as 'scheduled' until scheduled_at, then is released.
    id: '0008_scheduled_sends_domain_region',
    sql: `
      ALTER TABLE emails ADD COLUMN scheduled_at BIGINT;
      CREATE INDEX emails_scheduled ON emails(scheduled_at) WHERE status = 'scheduled';
      CREATE INDEX emails_project_id ON emails(project_id, id);
      ALTER TABLE domains ADD COLUMN region TEXT;
    `,
  },
  {
    // Webhook endpoints can be disabled (PATCH /v1/webhooks/:id {status}) without being deleted.
    id: '0009_webhook_enabled',
    sql: 'ALTER TABLE webhooks ADD COLUMN enabled BOOLEAN NOT NULL DEFAULT true;',
  },
  {
    // The auth audit log (auth/events.ts): sign-in events, kept auth.auditRetentionDays.
    // `seq` orders the pages; `id` is the cursor callers see.
    id: '0010_auth_audit_log',
    sql: `
      CREATE TABLE auth_audit (
        seq BIGSERIAL PRIMARY KEY,
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
        at BIGINT NOT NULL
      );
      CREATE INDEX auth_audit_project ON auth_audit(project_id, seq);
      CREATE INDEX auth_audit_project_type ON auth_audit(project_id, type, seq);
      CREATE INDEX auth_audit_at ON auth_audit(at);
    `,
  },
  {
    // Idempotency keys (control/mail/idempotency.ts): per project, the request's hash, the email ids it
    // reserved, its answer once given, the end of its 24 h window and the lease of the attempt under way.
    id: '0011_idempotency_keys',
    sql: `
      CREATE TABLE idempotency_keys (
        project_id TEXT NOT NULL,
        key TEXT NOT NULL,
        request_hash TEXT NOT NULL,
        email_ids JSONB NOT NULL,
        status INTEGER,
        body TEXT,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        lease_until BIGINT NOT NULL,
        PRIMARY KEY (project_id, key)
      );
      CREATE INDEX idempotency_keys_expiry ON idempotency_keys(expires_at);
    `,
  },
  {
    // Attachment bytes, once per email (not per recipient copy, not in the request JSON, which keeps
    // only what describes them), written in the email's own transaction.
    id: '0012_attachments',
    sql: `
      CREATE TABLE email_attachments (
        email_id TEXT NOT NULL REFERENCES emails(id),
        position INTEGER NOT NULL,
        size INTEGER NOT NULL,
        content BYTEA NOT NULL,
        PRIMARY KEY (email_id, position)
      );
    `,
  },
  {
    // OAuth states are counted per project before each new one (SignInStore.insertState's cap).
    id: '0014_auth_states_by_project',
    sql: 'CREATE INDEX auth_oauth_states_project ON auth_oauth_states(project_id, expires_at);',
  },
  {
    // The browser binding becomes required unless a project says otherwise (auth/project-config.ts): NULL
    // is "not set"; the projects that exist now keep what they had, off, written down.
    id: '0015_auth_code_verifier_default',
    sql: `
      ALTER TABLE auth_settings ALTER COLUMN require_code_verifier DROP NOT NULL, ALTER COLUMN require_code_verifier DROP DEFAULT;
      INSERT INTO auth_settings (project_id, require_code_verifier, updated_at)
        SELECT id, false, created_at FROM projects WHERE id NOT IN (SELECT project_id FROM auth_settings);
    `,
  },
  {
    // Queue control (control/operations): the operator audit log (who by token fingerprint, what, on what,
    // how many emails), suspensions of delivery (deleted on resume), cancel orders (kept 14 days for the
    // gateways). A project's cancel reads its mail by emails_project_id: an index of open mail only would tax every
    // email's status changes for a rare operator action.
    id: '0016_queue_control',
    sql: `
      CREATE TABLE operator_audit (
        seq BIGSERIAL PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        at BIGINT NOT NULL,
        action TEXT NOT NULL,
        actor TEXT NOT NULL,
        target TEXT NOT NULL,
        details JSONB NOT NULL,
        emails INTEGER
      );
      CREATE TABLE queue_suspensions (
        id TEXT PRIMARY KEY,
        provider TEXT NOT NULL,
        project_id TEXT NOT NULL,
        until_at BIGINT,
        reason TEXT NOT NULL,
        created_at BIGINT NOT NULL
      );
      CREATE TABLE cancel_orders (
        project_id TEXT NOT NULL,
        accepted_before BIGINT NOT NULL,
        ordered_at BIGINT NOT NULL
      );
      CREATE INDEX cancel_orders_ordered ON cancel_orders(ordered_at);
    `,
  },
  {
    // The operator console's reads (control/admin); see the SQLite step of the same id.
    id: '0017_console_reads',
    sql: `
      -- GET /admin/v1/suppressions: newest first over every project, or over one.
      CREATE INDEX suppressions_created ON suppressions(created_at, project_id, address);
      CREATE INDEX suppressions_project_created ON suppressions(project_id, created_at, address);
      -- GET /admin/v1/projects/:slug/auth/activity: a project's entries of a day or a week.
      CREATE INDEX auth_audit_project_at ON auth_audit(project_id, at);
    `,
  },
  {
    // The operator's email search by recipient; see the SQLite step of the same id.
    id: '0018_email_search_recipient',
    sql: 'CREATE INDEX email_recipients_address ON email_recipients (lower(address), email_id);',
  },
  {
    // A domain's settings; see the SQLite step of the same id.
    id: '0019_domain_settings',
    sql: `
      ALTER TABLE domains ADD COLUMN open_tracking BOOLEAN NOT NULL DEFAULT false;
      ALTER TABLE domains ADD COLUMN click_tracking BOOLEAN NOT NULL DEFAULT false;
      ALTER TABLE domains ADD COLUMN tls TEXT NOT NULL DEFAULT 'opportunistic';
      ALTER TABLE domains ADD COLUMN tracking_subdomain TEXT NOT NULL DEFAULT 'links';
      ALTER TABLE domains ADD COLUMN receiving BOOLEAN NOT NULL DEFAULT false;
    `,
  },
  {
    // A project's email templates (control/templates): the draft and the published version, the alias
    // unique per project (NULLs apart). Lists read newest first by id (time-ordered).
    id: '0020_templates',
    sql: `
      CREATE TABLE templates (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        name TEXT NOT NULL,
        alias TEXT,
        draft JSONB NOT NULL,
        published JSONB,
        published_at BIGINT,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
      );
      CREATE INDEX templates_project ON templates(project_id, id);
      CREATE UNIQUE INDEX templates_project_alias ON templates(project_id, alias);
    `,
  },
  {
    // Open and click tracking (control/tracking): an email's counts per kind and link (the link's
    // SHA-256 in the key: a URL may be longer than an index entry may be).
    id: '0021_tracking',
    sql: `
      CREATE TABLE email_tracking (
        email_id TEXT NOT NULL,
        kind TEXT NOT NULL,
        link_hash TEXT NOT NULL,
        link TEXT NOT NULL,
        count INTEGER NOT NULL,
        bots INTEGER NOT NULL,
        first_at BIGINT NOT NULL,
        last_at BIGINT NOT NULL,
        PRIMARY KEY (email_id, kind, link_hash)
      );
    `,
  },
  {
    // Received mail (control/inbound); see the SQLite step of the same id.
    id: '0022_inbound',
    sql: `
      CREATE TABLE inbound_emails (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL REFERENCES projects(id),
        created_at BIGINT NOT NULL,
        mail_from TEXT NOT NULL,
        rcpt_to JSONB NOT NULL,
        from_addr TEXT NOT NULL,
        to_addrs JSONB NOT NULL,
        cc JSONB NOT NULL,
        bcc JSONB NOT NULL,
        reply_to JSONB NOT NULL,
        subject TEXT NOT NULL,
        message_id TEXT NOT NULL,
        text TEXT,
        html TEXT,
        headers JSONB NOT NULL,
        auth JSONB NOT NULL,
        remote_ip TEXT NOT NULL,
        helo TEXT NOT NULL,
        size BIGINT NOT NULL,
        attachments JSONB NOT NULL,
        raw BYTEA NOT NULL
      );
      CREATE INDEX inbound_emails_project ON inbound_emails (project_id, created_at, id);
      CREATE TABLE inbound_attachments (
        email_id TEXT NOT NULL,
        id TEXT NOT NULL,
        content BYTEA NOT NULL,
        PRIMARY KEY (email_id, id)
      );
    `,
  },
  {
    // Sign-in settings of issue 41; see the SQLite step of the same id.
    id: '0023_auth_settings_more',
    sql: `
      ALTER TABLE auth_settings ADD COLUMN two_factor TEXT;
      ALTER TABLE auth_settings ADD COLUMN jwt_audience TEXT;
      ALTER TABLE auth_settings ADD COLUMN jwt_ttl_seconds INTEGER;
    `,
  },
  {
    // Passkeys; see the SQLite step of the same id.
    id: '0024_passkeys',
    sql: `
      CREATE TABLE auth_passkeys (
        id TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        env TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
        credential_id TEXT NOT NULL,
        public_key BYTEA NOT NULL,
        counter BIGINT NOT NULL,
        transports JSONB NOT NULL,
        device_type TEXT NOT NULL,
        backed_up BOOLEAN NOT NULL,
        backup_eligible BOOLEAN NOT NULL,
        aaguid TEXT NOT NULL,
        name TEXT NOT NULL,
        rp_id TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        last_used_at BIGINT
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
        expires_at BIGINT NOT NULL
      );
      CREATE INDEX auth_passkey_challenges_expiry ON auth_passkey_challenges(expires_at);
    `,
  },
  {
    // Second factors (auth/two-factor); see the SQLite step of the same id.
    id: '0025_two_factor',
    sql: `
      CREATE TABLE auth_totp (
        user_id TEXT PRIMARY KEY REFERENCES auth_users(id) ON DELETE CASCADE,
        secret TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        confirmed_at BIGINT,
        last_step BIGINT
      );
      CREATE TABLE auth_backup_codes (
        user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
        code_hash TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        used_at BIGINT,
        PRIMARY KEY (user_id, code_hash)
      );
      CREATE TABLE auth_pending_sign_ins (
        ticket_hash TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        env TEXT NOT NULL,
        user_id TEXT NOT NULL REFERENCES auth_users(id) ON DELETE CASCADE,
        provider TEXT NOT NULL,
        ip TEXT,
        user_agent TEXT,
        session_ttl_ms BIGINT NOT NULL,
        enrol BOOLEAN NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        expires_at BIGINT NOT NULL
      );
      CREATE INDEX auth_pending_sign_ins_user ON auth_pending_sign_ins(user_id);
      CREATE INDEX auth_pending_sign_ins_expiry ON auth_pending_sign_ins(expires_at);
    `,
  },
  {
    // Magic links; see the SQLite step of the same id.
    id: '0026_magic_links',
    sql: `
      CREATE TABLE auth_magic_links (
        token_hash TEXT PRIMARY KEY,
        project_id TEXT NOT NULL,
        env TEXT NOT NULL,
        email TEXT NOT NULL,
        callback_url TEXT NOT NULL,
        client_challenge TEXT,
        created_at BIGINT NOT NULL,
        expires_at BIGINT NOT NULL,
        used_at BIGINT,
        test_token TEXT
      );
      CREATE INDEX auth_magic_links_address ON auth_magic_links (project_id, env, email, created_at);
      CREATE INDEX auth_magic_links_expiry ON auth_magic_links (expires_at);
    `,
  },
  {
    // User management; see the SQLite step of the same id. The address index serves exact and prefix searches.
    id: '0027_users',
    sql: `
      ALTER TABLE auth_users ADD COLUMN phone_verified BOOLEAN NOT NULL DEFAULT false;
      ALTER TABLE auth_users ADD COLUMN metadata JSONB NOT NULL DEFAULT '{}';
      ALTER TABLE auth_users ADD COLUMN banned_at BIGINT;
      ALTER TABLE auth_users ADD COLUMN ban_reason TEXT;
      ALTER TABLE auth_users ADD COLUMN ban_expires_at BIGINT;
      CREATE INDEX auth_users_listing ON auth_users(project_id, env, created_at, id);
      CREATE INDEX auth_users_email_lower ON auth_users(project_id, env, lower(email) text_pattern_ops);
      CREATE INDEX auth_users_phone ON auth_users(project_id, env, phone);
      CREATE INDEX auth_users_last_sign_in ON auth_users(project_id, env, last_sign_in);
      CREATE INDEX auth_audit_user ON auth_audit(user_id);
      CREATE INDEX auth_exchange_codes_user ON auth_exchange_codes(user_id);
    `,
  },
  {
    // The JWT signing keys (auth/jwt); see the SQLite step of the same id.
    id: '0028_signing_keys',
    sql: `
      CREATE TABLE signing_keys (
        kid TEXT PRIMARY KEY,
        alg TEXT NOT NULL,
        public_jwk TEXT NOT NULL,
        private_jwk TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        active_from BIGINT NOT NULL,
        retired_at BIGINT,
        drop_after BIGINT
      );
    `,
  },
  {
    // An svc_code a second factor already earned; see the SQLite step of the same id.
    id: '0029_exchange_second_factor',
    sql: 'ALTER TABLE auth_exchange_codes ADD COLUMN second_factor BOOLEAN NOT NULL DEFAULT false;',
  },
];

/** Any constant both nodes agree on: the key of the advisory lock that serialises migrations. */
const MIGRATION_LOCK = 0x706f737467617465n; // "postgate"

/**
 * Applies the steps not yet recorded; returns their ids. Runs inside `tx`. Rows recorded under
 * an id a step had before (`renamed`: old → new) are renamed first, so no step runs twice.
 */
export async function migrate(
  tx: Tx,
  steps: readonly PgMigration[] = migrations,
  renamed: Readonly<Record<string, string>> = RENAMED_MIGRATIONS,
): Promise<string[]> {
  // Without the statement timeout: another node may hold the lock through a long step.
  await tx.exec(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
  await tx.exec('CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)');
  const pairs = Object.entries(renamed);
  if (pairs.length)
    await tx.query('UPDATE schema_migrations AS m SET id = r.new_id FROM unnest($1::text[], $2::text[]) AS r(old_id, new_id) WHERE m.id = r.old_id', [
      pairs.map(([from]) => from),
      pairs.map(([, to]) => to),
    ]);
  const applied = new Set((await tx.query<{ id: string }>('SELECT id FROM schema_migrations')).rows.map((r) => r.id));
  const done: string[] = [];
  for (const m of steps) {
    if (applied.has(m.id)) continue;
    await tx.exec(m.sql);
    await tx.query('INSERT INTO schema_migrations (id, applied_at) VALUES ($1, $2)', [m.id, Date.now()]);
    done.push(m.id);
  }
  return done;
}
