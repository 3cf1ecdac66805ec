// PostgreSQL's own row helpers; the mappers both backends share are in ../rows.ts.
import type { LoadedEmail } from '../../mail/lifecycle.js';
import { toLoadedEmail } from '../rows.js';
import type { Tx } from './db.js';

export { INBOUND_COLUMNS, toDelivery, toDomain, toEmail, toInboundEmail, toKey, toLoadedEmail, toProject, toRecipient, toWebhook } from '../rows.js';

/** The columns of an email an intent locks (FOR UPDATE) for the lifecycle to judge. */
export const LOADED_COLUMNS = 'id, project_id, status, bulk, reached, from_addr, subject, created_at';

/**
 * Locked email rows (LOADED_COLUMNS) with their recipients, read in a statement of its own: under READ
 * COMMITTED a statement reads what was committed when it began, so recipients read by the statement
 * that waited for the lock would miss what the transaction holding it wrote. One round trip for them all.
 */
export async function withRecipients(tx: Tx, locked: ReadonlyArray<{ id: string }>): Promise<LoadedEmail[]> {
  if (!locked.length) return [];
  const recipients = new Map<string, unknown[]>(locked.map((row) => [row.id, []]));
  const r = await tx.query<{ email_id: string }>(
    'SELECT email_id, address, kind, status FROM email_recipients WHERE email_id = ANY($1::text[]) ORDER BY email_id, position',
    [[...recipients.keys()]],
  );
  for (const row of r.rows) recipients.get(row.email_id)?.push(row);
  return locked.map((row) => toLoadedEmail(row, recipients.get(row.id)!));
}

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
