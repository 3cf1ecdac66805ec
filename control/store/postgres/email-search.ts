// The operator's email search on PostgreSQL (Emails.search; the shared rules are ../email-search.ts), as
// on SQLite: an id is one primary-key read; a recipient walks email_recipients_address (lower(address),
// email_id); every other search walks the emails newest first by id (the primary key, or
// emails_project_id). Both walks stop after EMAIL_SEARCH_SCAN rows: a first query finds the row the walk
// would stop at, the second reads the emails between the cursor and it, filtering, up to limit + 1.
import type { EmailSearch, EmailSearchPage, EmailStatus, EmailSummary } from '../index.js';
import { idRange, scanOf, searchPage, stringList, tagFilter } from '../email-search.js';
import type { PgDb } from './db.js';

// `to` and `tags` read from the request's text only for the rows returned.
const SUMMARY = `e.id, e.project_id, e.status, e.from_addr, e.subject, e.created_at,
  (e.request::jsonb -> 'to') AS to_list, (e.request::jsonb -> 'tags') AS tag_list`;

const toSummary = (r: any): EmailSummary => ({
  id: r.id,
  projectId: r.project_id,
  status: r.status as EmailStatus,
  from: r.from_addr,
  subject: r.subject,
  createdAt: Number(r.created_at),
  to: stringList(r.to_list),
  tags: stringList(r.tag_list),
});

export async function searchPg(db: PgDb, q: EmailSearch): Promise<EmailSearchPage> {
  const args: unknown[] = [];
  const arg = (v: unknown) => `$${args.push(v)}`;
  // The conditions on the email row (alias e), besides the walk's own; built after the walk's, whose
  // placeholders come first.
  const filters = () => {
    const where: string[] = [];
    if (q.status !== undefined) where.push(`e.status = ${arg(q.status)}`);
    if (q.since !== undefined) where.push(`e.created_at >= ${arg(q.since)}`);
    if (q.until !== undefined) where.push(`e.created_at <= ${arg(q.until)}`);
    // strpos, not LIKE: what the operator types is text, never a pattern.
    if (q.from !== undefined) where.push(`strpos(lower(e.from_addr), lower(${arg(q.from)})) > 0`);
    if (q.subject !== undefined) where.push(`strpos(lower(e.subject), lower(${arg(q.subject)})) > 0`);
    if (q.tag !== undefined) {
      const t = tagFilter(q.tag);
      // The tag's text in the request is a cheap test before its JSON is read.
      const match = t.prefix === null ? `t = ${arg(t.exact)}` : `(t = ${arg(t.exact)} OR starts_with(t, ${arg(t.prefix)}))`;
      where.push(`(strpos(e.request, ${arg(t.needle)}) > 0 AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(e.request::jsonb -> 'tags') t WHERE ${match}))`);
    }
    return where;
  };
  const project = () => (q.projectId === undefined ? [] : [`e.project_id = ${arg(q.projectId)}`]);

  if (q.id !== undefined) {
    const where = [`e.id = ${arg(q.id)}`, ...project(), ...filters()];
    if (q.to !== undefined) where.push(`EXISTS (SELECT 1 FROM email_recipients WHERE email_id = e.id AND lower(address) = lower(${arg(q.to)}))`);
    const r = await db.query(`SELECT ${SUMMARY} FROM emails e WHERE ${where.join(' AND ')}`, args);
    return searchPage(r.rows.map(toSummary), q.limit, undefined);
  }

  const range = idRange(q);
  const skip = scanOf(q) - 1;
  if (q.to !== undefined) {
    const walk = (col: string) => {
      const w = [`lower(r.address) = lower(${arg(q.to)})`];
      if (range.below !== undefined) w.push(`${col} < ${arg(range.below)}`);
      if (range.from !== undefined) w.push(`${col} >= ${arg(range.from)}`);
      return w;
    };
    const lastSql = `SELECT r.email_id AS id FROM email_recipients r WHERE ${walk('r.email_id').join(' AND ')}
      GROUP BY r.email_id ORDER BY r.email_id DESC LIMIT 1 OFFSET ${skip}`;
    const last = (await db.query<{ id: string }>(lastSql, args)).rows[0];
    args.length = 0;
    const where = walk('r.email_id');
    if (last) where.push(`r.email_id >= ${arg(last.id)}`);
    where.push(...project(), ...filters());
    const r = await db.query(
      `SELECT ${SUMMARY} FROM email_recipients r JOIN emails e ON e.id = r.email_id WHERE ${where.join(' AND ')}
       GROUP BY e.id ORDER BY e.id DESC LIMIT ${arg(q.limit + 1)}`,
      args,
    );
    return searchPage(r.rows.map(toSummary), q.limit, last && (await boundary(db, last.id)));
  }

  const walk = () => {
    const w = project();
    if (range.below !== undefined) w.push(`e.id < ${arg(range.below)}`);
    if (range.from !== undefined) w.push(`e.id >= ${arg(range.from)}`);
    return w;
  };
  const first = walk();
  const lastSql = `SELECT e.id FROM emails e ${first.length ? `WHERE ${first.join(' AND ')}` : ''} ORDER BY e.id DESC LIMIT 1 OFFSET ${skip}`;
  const last = (await db.query<{ id: string }>(lastSql, args)).rows[0];
  args.length = 0;
  const where = walk();
  if (last) where.push(`e.id >= ${arg(last.id)}`);
  where.push(...filters());
  const r = await db.query(
    `SELECT ${SUMMARY} FROM emails e ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY e.id DESC LIMIT ${arg(q.limit + 1)}`,
    args,
  );
  return searchPage(r.rows.map(toSummary), q.limit, last && (await boundary(db, last.id)));
}

/** The scan's last row, with its creation time (scanned_until). */
async function boundary(db: PgDb, id: string): Promise<{ id: string; createdAt: number }> {
  const r = await db.query<{ created_at: string }>('SELECT created_at FROM emails WHERE id = $1', [id]);
  return { id, createdAt: Number(r.rows[0]?.created_at ?? 0) };
}
