// PostgreSQL's own row helpers; the mappers both backends share are in ../rows.ts.
export { releasedEmail, toDelivery, toDomain, toEmail, toKey, toProject, toRecipient, toWebhook } from '../rows.js';

/** The columns toEmail reads (not the claim). */
export const EMAIL_COLUMNS =
  'id, project_id, status, from_addr, subject, bulk, request, error, error_code, created_at, updated_at, dispatched_at, scheduled_at';

/** A recipient list in recipient order (what tokens name by index). */
export const RECIPIENTS_SQL = 'SELECT address, kind, status, updated_at FROM email_recipients WHERE email_id = $1 ORDER BY position';

/** The database's clock in epoch ms: one clock for every node's claims. */
export const DB_NOW = '(extract(epoch from clock_timestamp()) * 1000)::bigint';
