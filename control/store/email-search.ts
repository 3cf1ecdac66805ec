// The operator's email search (Emails.search) as both backends run it, minus the SQL: the id range a
// time range maps to, how a tag filter reads, and how a page is cut. Emails are read newest first by
// id, which is time-ordered (UUIDv7, core/ids.ts): the primary key (or emails_project_id, or the
// recipient index) gives that order, so no index on created_at is written on the mail path for it.
import { EMAIL_SEARCH_SCAN, IDEMPOTENCY_LEASE_MS, type EmailSearch, type EmailSearchPage, type EmailSummary } from './index.js';

/** The 48-bit millisecond field of a UUIDv7 (dates past it, or before 1970, are clamped). */
const MAX_MS = 2 ** 48 - 1;

/** The smallest UUIDv7 made at `ms` or later (every id of an earlier ms sorts below it). */
export function idFloor(ms: number): string {
  const h = Math.min(MAX_MS, Math.max(0, Math.floor(ms)))
    .toString(16)
    .padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-0000-0000-000000000000`;
}

/**
 * The id range of the emails created in [since, until] (created_at itself is filtered exactly). An id is
 * minted at or before its email's creation: by the time the request is handled, which is seconds before, or,
 * for a request with an Idempotency-Key, when its first attempt reserved it, which holds a lease of a minute.
 * The range starts that much earlier. A request retried after its first attempt failed (a 5xx or a 429) keeps
 * its ids for up to a day: a window starting in between misses that email (it is found by id or recipient,
 * or without `since`); a day of slack would make every windowed search walk a day more of mail.
 */
export function idRange(q: Pick<EmailSearch, 'since' | 'until' | 'after'>): { below?: string; from?: string } {
  const range: { below?: string; from?: string } = {};
  if (q.until !== undefined) range.below = idFloor(q.until + 1);
  if (q.after !== undefined && (range.below === undefined || q.after < range.below)) range.below = q.after;
  if (q.since !== undefined) range.from = idFloor(q.since - IDEMPOTENCY_LEASE_MS);
  return range;
}

/** A walk with a tag filter reads each email's send request, bodies and all: it examines fewer rows. */
export const TAG_SEARCH_SCAN = 2000;

/** How many rows the walk of `q` examines at most. */
export const scanOf = (q: Pick<EmailSearch, 'scan' | 'tag'>): number =>
  Math.max(1, Math.floor(q.scan ?? (q.tag === undefined ? EMAIL_SEARCH_SCAN : TAG_SEARCH_SCAN)));

/**
 * A tag filter: `name:value` matches that tag exactly; `name` the tag `name` or any `name:…`. `needle` is
 * what the stored request's JSON text must contain for a match (the tag as JSON.stringify writes it, or
 * its opening for a name), a cheap test before the JSON is read.
 */
export function tagFilter(tag: string): { exact: string; prefix: string | null; needle: string } {
  const json = JSON.stringify(tag);
  if (tag.includes(':')) return { exact: tag, prefix: null, needle: json };
  return { exact: tag, prefix: `${tag}:`, needle: json.slice(0, -1) };
}

/**
 * The page from what a backend read: up to limit + 1 matches newest first, and the scan's last row when the
 * scan stopped at EMAIL_SEARCH_SCAN rows (undefined when it reached the end of the range).
 */
export function searchPage(matches: EmailSummary[], limit: number, boundary: { id: string; createdAt: number } | undefined): EmailSearchPage {
  if (matches.length > limit) {
    const emails = matches.slice(0, limit);
    const last = emails[emails.length - 1]!;
    return { emails, hasMore: true, next: last.id, scannedUntil: last.createdAt };
  }
  if (boundary) return { emails: matches, hasMore: true, next: boundary.id, scannedUntil: boundary.createdAt };
  return { emails: matches, hasMore: false, next: null, scannedUntil: null };
}

/** A JSON array of strings read back from the store (a request's `to` or `tags`); anything else is empty. */
export function stringList(v: unknown): string[] {
  const list = typeof v === 'string' ? (JSON.parse(v) as unknown) : v;
  return Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string') : [];
}
