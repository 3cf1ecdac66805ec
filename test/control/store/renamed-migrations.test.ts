// The two backends' schema steps (control/store/{sqlite,postgres}/migrations.ts) and the ids they
// had before they were renumbered (control/store/renamed-migrations.ts): ids sort in the order the
// steps apply, in one style, and after PostgreSQL's base schema both lists name the same steps in
// the same order. What differs by design is listed here with its reason.
import { describe, expect, it } from 'vitest';
import { migrations as postgres } from '../../../control/store/postgres/migrations.js';
import { RENAMED_MIGRATIONS } from '../../../control/store/renamed-migrations.js';
import { migrations as sqlite } from '../../../control/store/sqlite/migrations.js';

const ids = (list: ReadonlyArray<{ id: string }>) => list.map((m) => m.id);
const number = (id: string) => Number(id.slice(0, 4));

/** PostgreSQL came after SQLite's first steps: its one base schema is what they built. */
const POSTGRES_BASE = '0001_schema';
const SQLITE_BEFORE_POSTGRES = [
  '0001_projects_keys',
  '0002_emails',
  '0003_plans_domains_analytics_webhooks',
  '0004_deliverability',
  '0005_auth_schema',
  '0006_auth_browser_binding',
  '0007_recipient_position_system_flag',
];
/** Steps one backend needs and the other does not, each with the reason. */
const SQLITE_ONLY: Record<string, string> = {
  // SQLite rewrites a whole row on UPDATE; PostgreSQL keeps a large request out of line (TOAST).
  '0013_email_requests': 'the request in a table of its own',
};
const POSTGRES_ONLY: Record<string, string> = {};

describe.each([
  ['sqlite', ids(sqlite)],
  ['postgres', ids(postgres)],
])('%s migrations', (_backend, list) => {
  it('have ids in one style, NNNN_name', () => {
    for (const id of list) expect(id).toMatch(/^\d{4}_[a-z0-9]+(_[a-z0-9]+)*$/);
  });

  it('sort in the order they apply, numbers strictly increasing', () => {
    expect([...list].sort()).toEqual(list);
    const numbers = list.map(number);
    for (let i = 1; i < numbers.length; i++) expect(numbers[i]).toBeGreaterThan(numbers[i - 1]!);
  });
});

describe('the two backends agree', () => {
  it('SQLite begins with the steps PostgreSQL has as one base schema', () => {
    expect(ids(postgres)[0]).toBe(POSTGRES_BASE);
    expect(ids(sqlite).slice(0, SQLITE_BEFORE_POSTGRES.length)).toEqual(SQLITE_BEFORE_POSTGRES);
  });

  it('after that, the same steps in the same order, apart from those one backend needs alone', () => {
    const sqliteAfter = ids(sqlite)
      .slice(SQLITE_BEFORE_POSTGRES.length)
      .filter((id) => !(id in SQLITE_ONLY));
    const postgresAfter = ids(postgres)
      .slice(1)
      .filter((id) => !(id in POSTGRES_ONLY));
    expect(postgresAfter).toEqual(sqliteAfter);
    expect(postgresAfter.length).toBeGreaterThanOrEqual(5);
  });

  it('a step one backend has alone is still in its list (the exceptions are not stale)', () => {
    for (const id of Object.keys(SQLITE_ONLY)) {
      expect(ids(sqlite)).toContain(id);
      expect(ids(postgres)).not.toContain(id);
    }
    for (const id of Object.keys(POSTGRES_ONLY)) {
      expect(ids(postgres)).toContain(id);
      expect(ids(sqlite)).not.toContain(id);
    }
  });

  it('no two steps share a number, across both lists (a shared number is the same step)', () => {
    const byNumber = new Map<number, string>();
    for (const id of [...ids(sqlite), ...ids(postgres).slice(1)]) {
      const seen = byNumber.get(number(id));
      expect(seen === undefined || seen === id, `${id} and ${seen} share a number`).toBe(true);
      byNumber.set(number(id), id);
    }
  });
});

describe('the ids from before the renumbering', () => {
  const renamed = Object.entries(RENAMED_MIGRATIONS);

  it('each old id names a step that exists now, in one backend at least', () => {
    const current = new Set([...ids(sqlite), ...ids(postgres)]);
    for (const [, now] of renamed) expect(current.has(now), now).toBe(true);
  });

  it('no old id is a current id, and no two old ids become one (a rename never merges or shadows a step)', () => {
    const current = new Set([...ids(sqlite), ...ids(postgres)]);
    for (const [old] of renamed) expect(current.has(old), old).toBe(false);
    expect(new Set(renamed.map(([, now]) => now)).size).toBe(renamed.length);
  });
});
