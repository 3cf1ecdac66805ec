// Data at rest: the data dir is 0700 and every file in it 0600 (the store, its WAL, the
// gateway's outbox, Haraka's queue, secrets), for a new dir and for an existing one
// that an older version (or an operator) left readable by others.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack } from '../../helpers/stack.js';

let stack: Stack;
let dataDir: string;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-modes-'));
  fs.chmodSync(dataDir, 0o755);
  fs.mkdirSync(path.join(dataDir, 'old'), { mode: 0o755 });
  fs.writeFileSync(path.join(dataDir, 'old', 'leftover.db'), 'x', { mode: 0o644 });
  fs.chmodSync(path.join(dataDir, 'old', 'leftover.db'), 0o644);
  stack = await Stack.start({ dataDir });
  const p = await stack.createProject('modes');
  await stack.verifyDomain('modes', 'modes.test');
  const r = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'a@modes.test', to: 'x@nowhere.invalid', subject: 's', text: 't' });
  expect(r.status).toBe(202);
  await stack.waitEmail(p.keys.live, r.body.id, (e) => e.status !== 'queued');
});
afterAll(async () => {
  await stack?.stop();
});

function walk(p: string, out: Array<{ path: string; mode: number; dir: boolean }> = []) {
  const st = fs.lstatSync(p);
  if (st.isSymbolicLink()) return out;
  out.push({ path: path.relative(dataDir, p) || '.', mode: st.mode & 0o777, dir: st.isDirectory() });
  if (st.isDirectory()) for (const n of fs.readdirSync(p)) walk(path.join(p, n), out);
  return out;
}

describe('data at rest', () => {
  it('keeps the data dir and everything in it to the service user (0700 / 0600)', () => {
    const all = walk(dataDir).filter((e) => e.path !== 'stack.log'); // written by the test harness, not the service
    const names = all.map((e) => e.path);
    for (const expected of ['postgate.db', 'postgate.db-wal', 'gateway/outbox.db']) expect(names).toContain(expected);
    expect(names.some((n) => n.includes('queue'))).toBe(true);
    const open = all.filter((e) => e.mode & 0o077).map((e) => `${e.path} ${e.mode.toString(8)}`);
    expect(open).toEqual([]);
    expect(all.find((e) => e.path === '.')!.mode).toBe(0o700);
    expect(all.find((e) => e.path === 'old/leftover.db')!.mode).toBe(0o600);
  });
});
