// control/smtp/tls.ts: the operator's pair (PEM text or file paths, both or neither), else a self-signed
// pair generated once into <dataDir>/tls/ (key readable by the owner alone, names of the MX host,
// localhost and 127.0.0.1) and read back on the next start.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadTls } from '../../../control/smtp/tls.js';
import { type Config, loadConfig } from '../../../core/config.js';

let dir: string;
const config = (o: Partial<Config>): Config => ({ ...loadConfig({}), dataDir: dir, ...o }) as Config;

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pg-tls-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('loadTls', () => {
  it("takes the operator's pair as PEM text or as file paths", async () => {
    const cert = '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n';
    const key = '  -----BEGIN PRIVATE KEY-----\nBBBB\n-----END PRIVATE KEY-----\n';
    expect(await loadTls(config({ tlsCert: cert, tlsKey: key }))).toEqual({ cert, key, selfSigned: false });
    fs.writeFileSync(path.join(dir, 'c.pem'), cert);
    fs.writeFileSync(path.join(dir, 'k.pem'), key);
    expect(await loadTls(config({ tlsCert: path.join(dir, 'c.pem'), tlsKey: path.join(dir, 'k.pem') }))).toEqual({ cert, key, selfSigned: false });
    expect(fs.existsSync(path.join(dir, 'tls'))).toBe(false);
  });

  it('refuses one half of a pair', async () => {
    await expect(loadTls(config({ tlsCert: '-----BEGIN CERTIFICATE-----' }))).rejects.toThrow('POSTGATE_TLS_CERT and POSTGATE_TLS_KEY must be set together');
    await expect(loadTls(config({ tlsKey: '-----BEGIN PRIVATE KEY-----' }))).rejects.toThrow('must be set together');
  });

  it('fails clearly on a path that does not exist', async () => {
    await expect(loadTls(config({ tlsCert: path.join(dir, 'none.pem'), tlsKey: path.join(dir, 'none.pem') }))).rejects.toThrow(/ENOENT/);
  });

  it('generates a self-signed pair once, owner-only, and reads it back', async () => {
    const c = config({ mxHost: 'mx.example.test' } as Partial<Config>);
    const first = await loadTls(c);
    expect(first.selfSigned).toBe(true);
    const x = new crypto.X509Certificate(first.cert);
    expect(x.subject).toContain('CN=mx.example.test');
    expect(x.subjectAltName).toContain('DNS:mx.example.test');
    expect(x.subjectAltName).toContain('DNS:localhost');
    expect(x.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(x.checkPrivateKey(crypto.createPrivateKey(first.key))).toBe(true);
    expect(new Date(x.validTo).getTime()).toBeGreaterThan(Date.now() + 9 * 365 * 24 * 3600_000);
    expect(fs.statSync(path.join(dir, 'tls', 'key.pem')).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.join(dir, 'tls')).mode & 0o777).toBe(0o700);
    expect(fs.readdirSync(path.join(dir, 'tls')).sort()).toEqual(['cert.pem', 'key.pem']);
    // The next start reads the same pair instead of generating another.
    expect(await loadTls(c)).toEqual(first);
  }, 20_000);
});
