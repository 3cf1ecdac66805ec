// A misconfiguration is one clear line at start and a non-zero exit, not an error a client
// meets later (a base URL on an IP address used to make every sign-in code a 400).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dist } from '../../../deploy/build.js';

const supervisor = path.join(dist, 'control/supervisor.js');

function start(env: Record<string, string>) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-misconfig-'));
  const r = spawnSync(process.execPath, [supervisor], {
    env: { ...process.env, POSTGATE_DATA_DIR: dataDir, POSTGATE_HTTP_PORT: '0', ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { status: r.status, lines: `${r.stdout}${r.stderr}`.trim().split('\n').filter(Boolean) };
}

describe('misconfiguration at start', () => {
  it.each([
    [{ POSTGATE_BASE_URL: 'http://127.0.0.1:8080' }, /POSTGATE_BASE_URL's host 127\.0\.0\.1 is an IP address.*POSTGATE_SYSTEM_FROM/],
    [{ POSTGATE_BASE_URL: 'http://[::1]:8080' }, /is an IP address/],
    [{ POSTGATE_SYSTEM_FROM: 'not an address' }, /POSTGATE_SYSTEM_FROM must be a plain address/],
    [{ POSTGATE_HTTP_PORT: 'eighty' }, /POSTGATE_HTTP_PORT must be a port number/],
    [{ POSTGATE_HTTP_PORT: '18099', POSTGATE_ADMIN_PORT: '18099' }, /POSTGATE_ADMIN_PORT must differ from POSTGATE_HTTP_PORT/],
  ])('%j: one line, exit 1', (env, line) => {
    const r = start(env);
    expect(r.status).toBe(1);
    expect(r.lines).toHaveLength(1);
    expect(r.lines[0]).toMatch(line);
  });
});
