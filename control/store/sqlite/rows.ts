// SQLite's own row helpers; the mappers both backends share are in ../rows.ts.
export { INBOUND_COLUMNS, toDelivery, toDomain, toEmail, toInboundEmail, toKey, toLoadedEmail, toProject, toRecipient, toWebhook } from '../rows.js';

/** A recipient list in recipient order (what tokens name by index). */
export const RECIPIENTS_SQL = 'SELECT address, kind, status, updated_at FROM email_recipients WHERE email_id = ? ORDER BY position';

/** An email row's columns with its request (kept in email_requests), for `SELECT ${EMAIL_COLUMNS} FROM emails …`. */
export const EMAIL_COLUMNS = 'emails.*, (SELECT request FROM email_requests WHERE email_id = emails.id) AS request';
