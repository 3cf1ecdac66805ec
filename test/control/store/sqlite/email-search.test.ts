// The SQLite email search's own bound: a walk with a tag filter reads the send requests, bodies and all,
// so it also stops after 8 MiB of them and gives `next` to go on (PostgreSQL reads them on its own CPU).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { NewEmail, Store } from '../../../../control/store/index.js';
import { openStore } from '../../../../control/store/open.js';
import { localInvalidator } from '../../../../core/invalidation.js';
import { uuidv7 } from '../../../../core/ids.js';

let dir: string;
let store: Store;
const projectId = 'prj_search';
const now = Date.now();

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-search-'));
  store = await openStore({ dataDir: dir, storage: { synchronous: 'NORMAL', maxBatch: 1000 } }, localInvalidator());
  await store.projects.create({ id: projectId, slug: 'search', name: 'Search', plan: 'free', createdAt: now }, []);
});

afterEach(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const email = (i: number, text: string, tags: string[]): NewEmail => {
  const request = { from: 'a@acme.test', to: ['r@inbox.test'], cc: [], bcc: [], reply_to: [], subject: 'Big', text, tags, headers: {}, bulk: false };
  return {
    id: uuidv7(now + i),
    projectId,
    status: 'queued',
    from: 'a@acme.test',
    subject: 'Big',
    bulk: false,
    createdAt: now + i,
    request: JSON.stringify(request),
    recipients: [{ address: 'r@inbox.test', kind: 'to' }],
  };
};

it('a tag walk stops after 8 MiB of requests read, and goes on from there', async () => {
  const body = 'x'.repeat(1024 * 1024);
  // Twelve 1 MiB emails; the two oldest carry the tag.
  const list = Array.from({ length: 12 }, (_, i) => email(i, body, i < 2 ? ['kind:big'] : []));
  for (const e of list) expect(await store.emails.accept(e)).toEqual({ kind: 'accepted' });
  const first = await store.emails.search({ limit: 10, tag: 'kind:big' });
  // Newest first: 11 down to 4 is 8 MiB and a little.
  expect(first).toMatchObject({ emails: [], hasMore: true, next: list[4]!.id, scannedUntil: now + 4 });
  const second = await store.emails.search({ limit: 10, tag: 'kind:big', after: first.next! });
  expect(second.emails.map((e) => e.id)).toEqual([list[1]!.id, list[0]!.id]);
  expect(second).toMatchObject({ hasMore: false, next: null });
  // Without a tag nothing reads the requests: one call walks them all.
  expect((await store.emails.search({ limit: 20, subject: 'big' })).emails).toHaveLength(12);
});
