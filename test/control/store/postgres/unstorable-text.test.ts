// The PostgreSQL store's last line against a NUL that got past the doors: the driver's 22021
// (text) and 22P05 (jsonb) become 400 INVALID_REQUEST, never a 500 with the driver's message.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgDb } from '../../../../control/store/postgres/db.js';
import { UnstorableTextError } from '../../../../core/errors.js';
import { createTestDatabase, type TestDatabase } from '../../../helpers/cluster.js';

let db: TestDatabase;
let pg: PgDb;

beforeAll(async () => {
  db = await createTestDatabase('pg_nul');
  pg = new PgDb(db.url);
});
afterAll(async () => {
  await pg?.close();
  await db?.drop();
});

describe('text PostgreSQL cannot store', () => {
  it.each([
    ['a NUL in text, one statement', () => pg.query('SELECT $1::text AS v', ['a\u0000b'])],
    ['a \\u0000 in jsonb, one statement', () => pg.query('SELECT $1::jsonb AS v', ['{"a":"\\u0000"}'])],
    ['a NUL in text, in a transaction', () => pg.tx((t) => t.query('SELECT $1::text AS v', ['\u0000']))],
  ])('%s is a 400 INVALID_REQUEST', async (_name, run) => {
    const err = await run().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UnstorableTextError);
    expect(err).toMatchObject({ status: 400, code: 'INVALID_REQUEST', message: 'Text must not contain the NUL character (U+0000)' });
  });

  it('the connection is still good afterwards', async () => {
    expect((await pg.query('SELECT $1::text AS v', ['ok'])).rows).toEqual([{ v: 'ok' }]);
  });
});
