// The TLS settings' mistakes are one clear line at start and exit 1, not mail that fails later.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dist } from '../../../deploy/build.js';

const supervisor = path.join(dist, 'control/supervisor.js');

function start(env: Record<string, string>, config?: unknown) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-tls-misconfig-'));
  const extra: Record<string, string> = {};
  if (config) {
    extra.POSTGATE_CONFIG = path.join(dataDir, 'config.json');
    fs.writeFileSync(extra.POSTGATE_CONFIG, JSON.stringify(config));
  }
  const r = spawnSync(process.execPath, [supervisor], {
    env: { ...process.env, POSTGATE_DATA_DIR: dataDir, POSTGATE_HTTP_PORT: '0', ...extra, ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { status: r.status, lines: `${r.stdout}${r.stderr}`.trim().split('\n').filter(Boolean) };
}

describe('TLS misconfiguration at start', () => {
  it.each([
    [{ POSTGATE_TLS_CA_FILE: '/nonexistent/ca.pem' }, undefined, /^postgate: POSTGATE_TLS_CA_FILE: cannot read \/nonexistent\/ca\.pem/],
    [{ POSTGATE_TLS_REQUIRE_PROVIDERS: 'gmail' }, undefined, /POSTGATE_TLS_REQUIRE_PROVIDERS \(tls\.requireProviders\) must name known providers/],
    [{ POSTGATE_TLS_MTA_STS: 'yes' }, undefined, /POSTGATE_TLS_MTA_STS must be true or false/],
    [{}, { tls: { mtaSts: { allowCidrs: ['everything'] } } }, /tls\.mtaSts\.allowCidrs: not a CIDR: everything/],
  ])('%j %j: one line, exit 1', (env, config, line) => {
    const r = start(env, config);
    expect(r.status).toBe(1);
    expect(r.lines).toHaveLength(1);
    expect(r.lines[0]).toMatch(line);
  });
  it('a CA file without a certificate', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-tls-ca-'));
    fs.writeFileSync(path.join(dir, 'not-a-ca.pem'), 'hello');
    const again = start({ POSTGATE_TLS_CA_FILE: path.join(dir, 'not-a-ca.pem') });
    expect(again.status).toBe(1);
    expect(again.lines).toHaveLength(1);
    expect(again.lines[0]).toMatch(/^postgate: POSTGATE_TLS_CA_FILE: .*not-a-ca\.pem holds no PEM certificate$/);
  });
});
