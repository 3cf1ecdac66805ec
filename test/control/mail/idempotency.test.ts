// The idempotency wrapper (control/mail/idempotency.ts) on the SQLite store: what is kept
// and replayed, what lets a retry run again, and the crash window: an attempt that recorded
// its emails but died before recording its answer is answered from those emails once its
// lease ends, and only what it did not record is sent again, under the ids it reserved.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError, StoreUnavailableError } from '../../../core/errors.js';
import { clock } from '../../../core/clock.js';
import { localInvalidator } from '../../../core/invalidation.js';
import type { NewEmail, Store } from '../../../control/store/index.js';
import { openStore } from '../../../control/store/open.js';
import {
  canonicalJson,
  checkKey,
  Idempotency,
  IDEMPOTENCY_LEASE_MS,
  IDEMPOTENCY_WINDOW_MS,
  requestHash,
  resumeMany,
  resumeOne,
} from '../../../control/mail/idempotency.js';
import type { Accepted } from '../../../control/mail/pipeline.js';

let dir: string;
let store: Store;
let idem: Idempotency;
const projectId = 'prj_idem';

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-idem-'));
  store = await openStore({ dataDir: dir, storage: { synchronous: 'NORMAL', maxBatch: 1000 } }, localInvalidator());
  await store.projects.create({ id: projectId, slug: 'idem', name: 'Idem', plan: 'free', createdAt: clock.now() }, []);
  idem = new Idempotency(store);
});
afterEach(async () => {
  clock.setOffset(0);
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const record = (id: string, o: Partial<NewEmail> = {}) =>
  store.emails.accept({
    id,
    projectId,
    status: 'queued',
    from: 'a@acme.test',
    subject: 'Hi',
    bulk: false,
    request: '{}',
    createdAt: clock.now(),
    recipients: [{ address: 'r@inbox.test', kind: 'to' }],
    ...o,
  });

describe('keys and hashes', () => {
  it('checks the key: 1 to 256 printable ASCII characters', () => {
    expect(checkKey(undefined)).toBeUndefined();
    expect(checkKey('a'.repeat(256))).toBe('a'.repeat(256));
    for (const bad of ['', 'a'.repeat(257), 'a\tb', 'clé', 'a\u0000b']) expect(() => checkKey(bad), JSON.stringify(bad)).toThrow(ApiError);
  });

  it('hashes a request whatever its key order', () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: undefined }] })).toBe('{"a":[{"d":2}],"b":1}');
    expect(requestHash('POST /v1/emails', [{ to: 'x', from: 'y' }])).toBe(requestHash('POST /v1/emails', [{ from: 'y', to: 'x' }]));
    expect(requestHash('POST /v1/emails', [{ to: 'x' }])).not.toBe(requestHash('SMTP', [{ to: 'x' }]));
  });
});

describe('Idempotency.run', () => {
  const sent = (a: { ids: string[] }): Accepted => ({ id: a.ids[0]!, status: 'queued' });

  it('replays an answer, refusals included; a 429 or 5xx is not kept and the retry runs again with the same ids', async () => {
    const first = await idem.run(projectId, 'k', 'h', 1, async (a) => ({ status: 202, body: sent(a) }));
    const again = await idem.run(projectId, 'k', 'h', 1, async () => ({ status: 500, body: 'never' }));
    expect(again).toEqual({ status: 202, body: first.body, replayed: true });
    await expect(idem.run(projectId, 'k', 'other', 1, async () => ({ status: 202, body: {} }))).rejects.toMatchObject({
      code: 'IDEMPOTENCY_CONFLICT',
      status: 409,
    });

    const refusal = new ApiError('DOMAIN_NOT_VERIFIED', 'not verified', { id: 'e1' });
    await expect(idem.run(projectId, 'r', 'h', 1, () => Promise.reject(refusal))).rejects.toBe(refusal);
    expect(await idem.run(projectId, 'r', 'h', 1, async () => ({ status: 202, body: {} }))).toEqual({ status: 403, body: refusal.toJSON(), replayed: true });

    const ids: string[][] = [];
    const failing = [new ApiError('QUOTA_EXCEEDED', 'quota'), new StoreUnavailableError(), new Error('bug')];
    for (const err of failing) {
      const run = idem.run(projectId, 'f', 'h', 1, async (a) => {
        ids.push(a.ids);
        throw err;
      });
      await expect(run).rejects.toBe(err);
    }
    const last = await idem.run(projectId, 'f', 'h', 1, async (a) => {
      ids.push(a.ids);
      return { status: 202, body: sent(a) };
    });
    expect(last.replayed).toBe(false);
    expect(new Set(ids.map((x) => x[0])).size).toBe(1);
  });

  it('a crash after recording the email: 409 in progress during the lease, then answered from the email without sending again', async () => {
    const now = clock.now();
    const claim = await store.idempotency.claim({
      projectId,
      key: 'crash',
      requestHash: 'h',
      emailIds: ['0190a0a0-0000-7000-8000-000000000001'],
      now,
      expiresAt: now + IDEMPOTENCY_WINDOW_MS,
      leaseUntil: now + IDEMPOTENCY_LEASE_MS,
    });
    expect(claim.kind).toBe('new');
    await record('0190a0a0-0000-7000-8000-000000000001');
    // ...and control died here: no answer recorded.
    let sends = 0;
    const retry = () =>
      idem.run(projectId, 'crash', 'h', 1, async (a) => {
        const body = await resumeOne(a, async (id) => {
          sends++;
          return { id: id!, status: 'queued' };
        });
        return { status: 202, body };
      });
    await expect(retry()).rejects.toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS', headers: { 'Retry-After': '1' } });
    clock.setOffset(IDEMPOTENCY_LEASE_MS + 1);
    expect(await retry()).toEqual({ status: 202, body: { id: '0190a0a0-0000-7000-8000-000000000001', status: 'queued' }, replayed: false });
    expect(sends).toBe(0);
    expect((await retry()).replayed).toBe(true);
  });

  it('a crash in a batch: what was recorded answers as it was, the rest is sent now under its reserved ids', async () => {
    const now = clock.now();
    const ids = ['0190a0a0-0000-7000-8000-00000000000a', '0190a0a0-0000-7000-8000-00000000000b', '0190a0a0-0000-7000-8000-00000000000c'];
    await store.idempotency.claim({
      projectId,
      key: 'batch',
      requestHash: 'h',
      emailIds: ids,
      now,
      expiresAt: now + IDEMPOTENCY_WINDOW_MS,
      leaseUntil: now + 1,
    });
    await record(ids[0]!);
    await record(ids[1]!, { status: 'failed', error: 'Every recipient is in the suppression list', errorCode: 'RECIPIENT_IN_SUPPRESSION_LIST' });
    clock.setOffset(2);
    const calls: Array<{ reqs: unknown[]; ids: string[] | undefined }> = [];
    const answer = await idem.run(projectId, 'batch', 'h', 3, async (a) => {
      const results = await resumeMany(a, ['r0', 'r1', 'r2'], async (reqs, sendIds) => {
        calls.push({ reqs, ids: sendIds });
        return sendIds!.map((id) => ({ id, status: 'queued' as const }));
      });
      return { status: 202, body: results.map((r) => (r instanceof ApiError ? r.toJSON() : r)) };
    });
    expect(calls).toEqual([{ reqs: ['r2'], ids: [ids[2]] }]);
    expect(answer.body).toEqual([
      { id: ids[0], status: 'queued' },
      expect.objectContaining({ code: 'RECIPIENT_IN_SUPPRESSION_LIST', id: ids[1] }),
      { id: ids[2], status: 'queued' },
    ]);
  });
});
