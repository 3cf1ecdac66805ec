// core/data-dir.ts: the data directory readable by the service's user only: 0700 and 0600 from a
// umask of 077, and an existing directory tightened once, symbolic links left alone.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { securedDataDir } from '../../core/data-dir.js';

const before = process.umask();
let dir: string;
afterEach(() => {
  process.umask(before);
  fs.rmSync(dir, { recursive: true, force: true });
});

const mode = (p: string) => fs.statSync(p).mode & 0o777;

it('creates the directory 0700 and leaves the umask at 077 for what comes later', () => {
  dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pg-dd-')), 'data');
  expect(securedDataDir(dir)).toBe(0);
  expect(mode(dir)).toBe(0o700);
  fs.writeFileSync(path.join(dir, 'f'), 'x');
  expect(mode(path.join(dir, 'f'))).toBe(0o600);
});

it('tightens an existing tree and says how many paths it changed; a link’s target is not touched', () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-dd-'));
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-dd-outside-'));
  fs.chmodSync(dir, 0o755);
  fs.mkdirSync(path.join(dir, 'sub'), { mode: 0o755 });
  fs.chmodSync(path.join(dir, 'sub'), 0o755);
  fs.writeFileSync(path.join(dir, 'sub', 'db'), 'x');
  fs.chmodSync(path.join(dir, 'sub', 'db'), 0o644);
  fs.writeFileSync(path.join(dir, 'ok'), 'x');
  fs.chmodSync(path.join(dir, 'ok'), 0o600);
  fs.chmodSync(outside, 0o755);
  fs.symlinkSync(outside, path.join(dir, 'link'));
  try {
    expect(securedDataDir(dir)).toBe(3);
    expect([mode(dir), mode(path.join(dir, 'sub')), mode(path.join(dir, 'sub', 'db')), mode(path.join(dir, 'ok'))]).toEqual([0o700, 0o700, 0o600, 0o600]);
    expect(mode(outside)).toBe(0o755);
    expect(securedDataDir(dir)).toBe(0);
  } finally {
    fs.rmSync(outside, { recursive: true, force: true });
  }
});
