// PostgreSQL's own row helpers; the mappers both backends share are in ../rows.ts.
export { toDelivery, toDomain, toEmail, toKey, toLoadedEmail, toProject, toRecipient, toWebhook } from '../rows.js';

/** The columns toEmail reads (not the claim). */
export const EMAIL_COLUMNS =
  'id, project_id, status, from_addr, subject, bulk, request, error, error_code, created_at, updated_at, dispatched_at, scheduled_at';

/** A recipient list in recipient order (what tokens name by index). */
export const RECIPIENTS_SQL = 'SELECT address, kind, status, updated_at FROM email_recipients WHERE email_id = $1 ORDER BY position';

/** The database's clock in epoch ms: one clock for every node's claims. */
export const DB_NOW = '(extract(epoch from clock_timestamp()) * 1000)::bigint';

/** Rows as the arrays `unnest($1::…[], $2::…[], …)` reads: one array per column, of `n` columns. */
export function columnsOf(rows: Iterable<readonly unknown[]>, n: number): unknown[][] {
  const out: unknown[][] = Array.from({ length: n }, () => []);
  for (const row of rows) for (let i = 0; i < n; i++) out[i]!.push(row[i]);
  return out;
}
