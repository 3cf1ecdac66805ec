// The ids schema steps were first recorded under, and the ids they carry now. The steps were
// renumbered so that ids sort in the order they apply, in one style (`NNNN_name`); before
// that, areas appended their own series (`auth_0003_…`) and `0009_…` applied before `0008_…`.
// Both backends rename these rows of schema_migrations at start, in the transaction that
// migrates, before deciding what to apply: a database migrated under the old ids applies
// nothing twice. A row a backend never had (PostgreSQL's steps before its base schema) is
// simply not there to rename.

/** Old id → new id. Never remove an entry: a database may still carry the old id. */
export const RENAMED_MIGRATIONS: Readonly<Record<string, string>> = {
  auth_0001_schema: '0005_auth_schema',
  auth_0002_browser_binding: '0006_auth_browser_binding',
  '0005_recipient_position_system_flag': '0007_recipient_position_system_flag',
  '0009_scheduled_sends_domain_region': '0008_scheduled_sends_domain_region',
  '0008_webhook_enabled': '0009_webhook_enabled',
  auth_0003_audit_log: '0010_auth_audit_log',
  '0007_idempotency_keys': '0011_idempotency_keys',
  '0006_attachments': '0012_attachments',
  '0010_email_requests': '0013_email_requests',
};
