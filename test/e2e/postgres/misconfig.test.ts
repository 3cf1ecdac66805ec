// A PostgreSQL database that cannot be used at start is one clear line and a non-zero exit of the
// whole node (npm start's supervisor), never a stack trace or a restart loop: a malformed URL or a
// missing secret is refused by the config loader; an unreachable server, an unknown user or a missing
// database by control, whose exit code 78 (EX_CONFIG) tells the supervisor to stop everything.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dist } from '../../../deploy/build.js';
import { freePort } from '../../helpers/ports.js';
import { testDatabaseUrl } from '../../helpers/cluster.js';

const supervisor = path.join(dist, 'control/supervisor.js');
const server = testDatabaseUrl();

async function start(env: Record<string, string>) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-pg-misconfig-'));
  const [http, admin, smtp, grpc, gateway, inbound] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort(), freePort()]);
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [supervisor], {
    env: {
      ...process.env,
      POSTGATE_DATA_DIR: dataDir,
      POSTGATE_HTTP_PORT: String(http),
      POSTGATE_ADMIN_PORT: String(admin),
      POSTGATE_SMTP_PORT: String(smtp),
      POSTGATE_GRPC_PORT: String(grpc),
      POSTGATE_GATEWAY_PORT: String(gateway),
      POSTGATE_INBOUND_PORT: String(inbound),
      POSTGATE_SECRET: 'a-shared-secret-of-the-nodes',
      POSTGATE_LOG_LEVEL: 'error',
      ...env,
    },
    encoding: 'utf8',
    timeout: 40_000,
  });
  fs.rmSync(dataDir, { recursive: true, force: true });
  return { status: r.status, ms: Date.now() - t0, lines: `${r.stdout}${r.stderr}`.trim().split('\n').filter(Boolean) };
}

describe('PostgreSQL misconfiguration at start', () => {
  it.each([
    [{ POSTGATE_DATABASE_URL: 'mysql://db.example/postgate' }, /POSTGATE_DATABASE_URL must be a postgres:\/\/user:password@host:port\/database URL/],
    [{ POSTGATE_DATABASE_URL: 'not a url' }, /POSTGATE_DATABASE_URL must be a postgres:\/\//],
    [{ POSTGATE_DATABASE_URL: 'postgres://postgres@127.0.0.1/postgate', POSTGATE_SECRET: '' }, /POSTGATE_DATABASE_URL is set but POSTGATE_SECRET is not/],
  ])('%j: one line, exit 1', async (env, line) => {
    const r = await start(env);
    expect(r.status).toBe(1);
    expect(r.lines).toEqual([expect.stringMatching(line)]);
  });

  const database = (change: (u: URL) => void) => {
    const u = new URL(server);
    change(u);
    return u.toString();
  };

  it.each([
    ['an unreachable server', () => database((u) => void (u.port = '1')), /ECONNREFUSED/],
    ['a missing database', () => database((u) => void (u.pathname = '/pg_test_no_such_database')), /database "pg_test_no_such_database" does not exist/],
    [
      'an unknown user with a password',
      () =>
        database((u) => {
          u.username = 'pg_test_nobody';
          u.password = 'hunter2';
        }),
      /pg_test_nobody/,
    ],
  ])('%s: one line saying why, the whole node stops with exit 1, no restart', async (_what, url, reason) => {
    const r = await start({ POSTGATE_DATABASE_URL: url() });
    expect(r.status).toBe(1);
    const why = r.lines.filter((l) => l.includes('cannot open the PostgreSQL database'));
    expect(why).toHaveLength(1);
    expect(why[0]).toMatch(reason);
    expect(why[0]).not.toContain('hunter2');
    // The supervisor says it stops; nothing is restarted and no stack trace is printed.
    expect(r.lines.some((l) => /cannot start with this configuration/.test(l))).toBe(true);
    expect(r.lines.filter((l) => /restarting/.test(l))).toEqual([]);
    expect(r.lines.filter((l) => /^\s+at /.test(l))).toEqual([]);
    expect(r.ms).toBeLessThan(30_000);
  });
});
