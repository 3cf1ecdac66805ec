// The operator's email search on SQLite (Emails.search; the shared rules are ../email-search.ts). An id
// is one primary-key read; a recipient walks email_recipients_address (lower(address), email_id); every
// other search walks the emails newest first by id (the primary key, or emails_project_id for one
// project). Both walks stop after EMAIL_SEARCH_SCAN rows: a first, index-only query finds the row the
// walk would stop at, and the second reads the emails between the cursor and it, filtering, and stops
// at limit + 1 matches. A tag is read from the send request, which holds the bodies: a walk with a tag
// filter also stops once it has read REQUEST_BYTES of requests.
import type Database from 'better-sqlite3';
import type { Db } from '../../../core/sqlite/open.js';
import type { EmailSearch, EmailSearchPage, EmailSummary, EmailStatus } from '../index.js';
import { idRange, scanOf, searchPage, stringList, tagFilter } from '../email-search.js';

const SUMMARY = `e.id, e.project_id, e.status, e.from_addr, e.subject, e.created_at,
  (SELECT json_extract(request, '$.to', '$.tags') FROM email_requests WHERE email_id = e.id) AS extra`;

const toSummary = (r: any): EmailSummary => {
  const [to, tags] = r.extra ? (JSON.parse(r.extra) as unknown[]) : [];
  return {
    id: r.id,
    projectId: r.project_id,
    status: r.status as EmailStatus,
    from: r.from_addr,
    subject: r.subject,
    createdAt: r.created_at,
    to: stringList(to),
    tags: stringList(tags),
  };
};

/** SQL conditions with their arguments, in placeholder order. */
interface Condition {
  sql: string;
  args: unknown[];
}

/**
 * How many bytes of send requests (bodies included) a walk with a tag filter reads at most a call: reading
 * and testing them costs about 1 ms of CPU per MiB (bench: 30 kB emails).
 */
const REQUEST_BYTES = 8 * 1024 * 1024;

export class SqliteEmailSearch {
  /** Prepared once per shape of query (which filters are given): a few dozen at most. */
  private readonly statements = new Map<string, Database.Statement<unknown[]>>();

  constructor(private readonly db: Db) {}

  private prepare(sql: string): Database.Statement<unknown[]> {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  search(q: EmailSearch): EmailSearchPage {
    // The conditions on the email row (alias e), besides the range and the walk's own index.
    const where: string[] = [];
    const args: unknown[] = [];
    const add = (sql: string, ...v: unknown[]) => {
      where.push(sql);
      args.push(...v);
    };
    if (q.status !== undefined) add('e.status = ?', q.status);
    if (q.since !== undefined) add('e.created_at >= ?', q.since);
    if (q.until !== undefined) add('e.created_at <= ?', q.until);
    // instr, not LIKE: what the operator types is text, never a pattern. lower() folds ASCII.
    if (q.from !== undefined) add('instr(lower(e.from_addr), lower(?)) > 0', q.from);
    if (q.subject !== undefined) add('instr(lower(e.subject), lower(?)) > 0', q.subject);
    // Tags are read from the request, bodies and all: that walk is also bounded by the bytes it reads.
    let tag: Condition | undefined;
    if (q.tag !== undefined) {
      const t = tagFilter(q.tag);
      // The tag's text in the request is a cheap test before its JSON is read.
      const match = t.prefix === null ? 'value = ?' : "(value = ? OR (value >= ? AND value < ? || ';'))";
      // On the walk's row of email_requests (q), joined once: the request is read once for its size and its tags.
      tag = {
        sql: `(instr(q.request, ?) > 0 AND EXISTS (SELECT 1 FROM json_each(q.request, '$.tags') WHERE ${match}))`,
        args: [t.needle, t.exact, ...(t.prefix === null ? [] : [t.prefix, t.exact])],
      };
    }

    // The project is part of the walk when it is a walk of every email; else a condition like the others.
    const ofProject = () => (q.projectId === undefined ? { sql: [], args: [] } : { sql: ['e.project_id = ?'], args: [q.projectId] });

    if (q.id !== undefined) {
      const p = ofProject();
      where.push(...p.sql);
      args.push(...p.args);
      if (q.to !== undefined) add('EXISTS (SELECT 1 FROM email_recipients WHERE email_id = e.id AND lower(address) = lower(?))', q.to);
      if (tag) add(`EXISTS (SELECT 1 FROM email_requests q WHERE q.email_id = e.id AND ${tag.sql})`, ...tag.args);
      const rows = this.prepare(`SELECT ${SUMMARY} FROM emails e WHERE ${['e.id = ?', ...where].join(' AND ')}`).all(q.id, ...args);
      return searchPage(rows.map(toSummary), q.limit, undefined);
    }

    const range = idRange(q);
    // An integer in the SQL text: the statement is prepared once per value, which is one in production.
    const skip = scanOf(q) - 1;
    if (q.to !== undefined) {
      // A recipient's emails, newest first, by the recipient index; the other filters on the joined row.
      const walk = ['lower(r.address) = lower(?)'];
      const walkArgs: unknown[] = [q.to];
      const on = (sql: string, v: unknown) => {
        walk.push(sql);
        walkArgs.push(v);
      };
      if (range.below !== undefined) on('r.email_id < ?', range.below);
      if (range.from !== undefined) on('r.email_id >= ?', range.from);
      const last = this.prepare(
        `SELECT DISTINCT r.email_id AS id FROM email_recipients r WHERE ${walk.join(' AND ')} ORDER BY r.email_id DESC LIMIT 1 OFFSET ${skip}`,
      ).get(...walkArgs) as { id: string } | undefined;
      if (last) on('r.email_id >= ?', last.id);
      const p = ofProject();
      return this.read(
        'email_recipients r JOIN emails e ON e.id = r.email_id',
        'r.email_id',
        { sql: [...walk, ...p.sql, ...where].join(' AND '), args: [...walkArgs, ...p.args, ...args] },
        tag,
        q.limit,
        last,
      );
    }

    // Every email (or a project's), newest first by id: the primary key, or emails_project_id.
    const walk: string[] = [];
    const walkArgs: unknown[] = [];
    const on = (sql: string, v: unknown) => {
      walk.push(sql);
      walkArgs.push(v);
    };
    if (q.projectId !== undefined) on('project_id = ?', q.projectId);
    if (range.below !== undefined) on('id < ?', range.below);
    if (range.from !== undefined) on('id >= ?', range.from);
    const whereWalk = walk.length ? `WHERE ${walk.join(' AND ')}` : '';
    const last = this.prepare(`SELECT id FROM emails ${whereWalk} ORDER BY id DESC LIMIT 1 OFFSET ${skip}`).get(...walkArgs) as { id: string } | undefined;
    if (last) on('id >= ?', last.id);
    const conditions = [...walk.map((w) => `e.${w}`), ...where];
    return this.read('emails e', 'e.id', { sql: conditions.length ? conditions.join(' AND ') : '1', args: [...walkArgs, ...args] }, tag, q.limit, last);
  }

  /**
   * The matches of a walk (`from`, keyed by the email id `key`, newest first) up to limit + 1. With a tag
   * filter, the rows are read one by one and the walk also stops once it has read REQUEST_BYTES of requests:
   * a request holds the bodies, and reading them is what such a walk costs.
   */
  private read(from: string, key: string, where: Condition, tag: Condition | undefined, limit: number, last: { id: string } | undefined): EmailSearchPage {
    const group = key === 'e.id' ? '' : `GROUP BY ${key}`;
    if (!tag) {
      const rows = this.prepare(`SELECT ${SUMMARY} FROM ${from} WHERE ${where.sql} ${group} ORDER BY ${key} DESC LIMIT ?`).all(...where.args, limit + 1);
      return searchPage(rows.map(toSummary), limit, last && this.boundary(last.id));
    }
    // The running total of the bytes read is summed in SQL; only the matches and the row that passes the
    // budget come back. The window streams (its frame ends at the current row): rows past it are never read.
    const walk = this.prepare(
      `SELECT id, created_at, hit, upto FROM (
         SELECT e.id, e.created_at, ${tag.sql} AS hit, sum(octet_length(q.request)) OVER (ORDER BY ${key} DESC ROWS UNBOUNDED PRECEDING) AS upto
         FROM ${from} JOIN email_requests q ON q.email_id = e.id WHERE ${where.sql} ${group} ORDER BY ${key} DESC)
       WHERE hit OR upto >= ?`,
    ).raw(true);
    const hits: string[] = [];
    let cut: { id: string; createdAt: number } | undefined;
    for (const [id, createdAt, hit, upto] of walk.iterate(...tag.args, ...where.args, REQUEST_BYTES) as Iterable<[string, number, number, number]>) {
      if (hit) hits.push(id);
      if (hits.length > limit) break;
      if (upto >= REQUEST_BYTES) {
        cut = { id, createdAt };
        break;
      }
    }
    const rows = hits.length
      ? this.prepare(`SELECT ${SUMMARY} FROM emails e WHERE e.id IN (SELECT value FROM json_each(?)) ORDER BY e.id DESC`).all(JSON.stringify(hits))
      : [];
    return searchPage(rows.map(toSummary), limit, cut ?? (last && this.boundary(last.id)));
  }

  /** The scan's last row, with its creation time (scanned_until). */
  private boundary(id: string): { id: string; createdAt: number } {
    const createdAt = this.prepare('SELECT created_at FROM emails WHERE id = ?').pluck().get(id) as number;
    return { id, createdAt };
  }
}
