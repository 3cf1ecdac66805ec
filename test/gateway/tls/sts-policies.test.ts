// MTA-STS policies as the gateway gets them: the TXT from a real DNS server on loopback, the policy
// from a real HTTPS server whose certificate a test CA signed, kept for max_age and on disk.
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { makeResolver } from '../../../core/dns.js';
import { MAX_POLICY_BYTES, StsPolicies } from '../../../gateway/tls/sts-policies.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { makeTestCa, type TestCa } from './test-ca.js';

let dns: DnsServer;
let ca: TestCa;
let server: https.Server;
let port: number;
/** Policy bodies by Host header, and what was asked. */
const bodies = new Map<string, { status?: number; type?: string; body: string; delayMs?: number }>();
const asked: string[] = [];
let dir: string;

const ENFORCE = 'version: STSv1\r\nmode: enforce\r\nmx: mx.enforced.test\r\nmax_age: 86400\r\n';

beforeAll(async () => {
  ca = await makeTestCa();
  dns = await startDnsServer();
  // One certificate for every policy host of these tests, but mta-sts.wrongname.test.
  const names = ['enforced', 'bad', 'big', 'slow', 'redirect', 'html', 'changing', 'kept'].map((d) => `mta-sts.${d}.test`);
  const leaf = await ca.issue(...names);
  const other = await ca.issue('someone.else.test');
  server = https.createServer(
    {
      key: leaf.key,
      cert: leaf.cert,
      SNICallback: (name, cb) => cb(null, tls.createSecureContext(name === 'mta-sts.wrongname.test' ? other : leaf)),
    },
    (req, res) => {
      const host = String(req.headers.host).replace(/:\d+$/, '');
      asked.push(`${host}${req.url}`);
      const b = bodies.get(host);
      if (!b || req.url !== '/.well-known/mta-sts.txt') return res.writeHead(404).end('not found');
      setTimeout(() => {
        res.writeHead(b.status ?? 200, { 'content-type': b.type ?? 'text/plain', ...(b.status === 302 ? { location: 'https://elsewhere.test/' } : {}) });
        res.end(b.body);
      }, b.delayMs ?? 0);
    },
  );
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
  for (const d of [...names, 'mta-sts.wrongname.test']) dns.add({ type: 'A', name: d, address: '127.0.0.1' });
  for (const d of ['enforced', 'bad', 'big', 'slow', 'redirect', 'html', 'changing', 'kept', 'wrongname', 'private'])
    dns.add({ type: 'TXT', name: `_mta-sts.${d}.test`, value: 'v=STSv1; id=1;' });
  dns.add({ type: 'A', name: 'mta-sts.private.test', address: '127.0.0.1' });
}, 60_000);
afterAll(async () => {
  server?.close();
  await dns?.close();
});
beforeEach(() => {
  asked.length = 0;
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-sts-'));
});

function policies(over: { allowCidrs?: string[]; caTrusted?: boolean; now?: () => number; timeoutMs?: number } = {}) {
  return new StsPolicies({
    resolver: makeResolver([dns.address]),
    settings: { enabled: true, allowCidrs: over.allowCidrs ?? ['127.0.0.0/8'], port, timeoutMs: over.timeoutMs ?? 3000, maxAgeSeconds: 3600 },
    ca: over.caTrusted === false ? undefined : [...tls.rootCertificates, ca.cert],
    file: path.join(dir, 'mta-sts.json'),
    now: over.now,
  });
}

describe('fetching and keeping a policy', () => {
  it('fetches once, then serves it from memory; max_age is capped by the operator', async () => {
    bodies.set('mta-sts.enforced.test', { body: ENFORCE });
    const p = policies();
    expect(await p.policyFor('enforced.test')).toEqual({ mode: 'enforce', mx: ['mx.enforced.test'], maxAge: 86400 });
    expect(await p.policyFor('Enforced.Test.')).toEqual({ mode: 'enforce', mx: ['mx.enforced.test'], maxAge: 86400 });
    expect(p.fetches).toBe(1);
    expect(asked).toEqual(['mta-sts.enforced.test/.well-known/mta-sts.txt']);
    const e = p.entry('enforced.test')!;
    expect(e.expiresMs - e.fetchedMs).toBe(3600 * 1000);
  });

  it('is kept across restarts in the data dir, and fetched again when the TXT id changes', async () => {
    bodies.set('mta-sts.changing.test', { body: ENFORCE });
    await policies().policyFor('changing.test');
    const again = policies();
    expect(await again.policyFor('changing.test')).toMatchObject({ mode: 'enforce' });
    expect(again.fetches).toBe(0);
    dns.remove('_mta-sts.changing.test', 'TXT');
    dns.add({ type: 'TXT', name: '_mta-sts.changing.test', value: 'v=STSv1; id=2;' });
    bodies.set('mta-sts.changing.test', { body: ENFORCE.replace('enforce', 'testing') });
    const third = policies();
    expect(await third.policyFor('changing.test')).toMatchObject({ mode: 'testing' });
    expect(third.fetches).toBe(1);
  });

  it('a policy past its max_age is dropped; the TXT record going away keeps one still valid (RFC 8461 §5.1)', async () => {
    let now = Date.now();
    bodies.set('mta-sts.kept.test', { body: ENFORCE });
    const p = policies({ now: () => now });
    await p.policyFor('kept.test');
    dns.remove('_mta-sts.kept.test', 'TXT');
    now += 61_000; // past the TXT answer's minute
    expect(await p.policyFor('kept.test')).toMatchObject({ mode: 'enforce' });
    now += 3600 * 1000;
    expect(await p.policyFor('kept.test')).toBeUndefined();
    dns.add({ type: 'TXT', name: '_mta-sts.kept.test', value: 'v=STSv1; id=1;' });
  });

  it('no record: no policy, nothing fetched', async () => {
    const p = policies();
    expect(await p.policyFor('nothing.test')).toBeUndefined();
    expect(p.fetches).toBe(0);
  });
});

describe('a policy that cannot be used is no policy', () => {
  const none = async (domain: string, over: Parameters<typeof policies>[0] = {}) => {
    const p = policies(over);
    expect(await p.policyFor(domain)).toBeUndefined();
    // Not asked again at once for the same id.
    expect(await p.policyFor(domain)).toBeUndefined();
    expect(p.fetches).toBe(1);
  };
  it('malformed', () => {
    bodies.set('mta-sts.bad.test', { body: 'version: STSv1\nmode: enforce\nmax_age: 60\n' });
    return none('bad.test');
  });
  it('not text/plain (an HTML error page)', () => {
    bodies.set('mta-sts.html.test', { type: 'text/html', body: ENFORCE });
    return none('html.test');
  });
  it('a redirect is not followed', async () => {
    bodies.set('mta-sts.redirect.test', { status: 302, body: '' });
    await none('redirect.test');
    expect(asked).toEqual(['mta-sts.redirect.test/.well-known/mta-sts.txt']);
  });
  it('larger than 64 KiB', () => {
    bodies.set('mta-sts.big.test', { body: `${ENFORCE}${'x: y\n'.repeat(MAX_POLICY_BYTES / 5 + 10)}` });
    return none('big.test');
  });
  it('too slow', () => {
    bodies.set('mta-sts.slow.test', { body: ENFORCE, delayMs: 1500 });
    return none('slow.test', { timeoutMs: 300 });
  });
  it('a certificate for another name', () => {
    bodies.set('mta-sts.wrongname.test', { body: ENFORCE });
    return none('wrongname.test');
  });
  it('a certificate from an authority not trusted', () => {
    bodies.set('mta-sts.enforced.test', { body: ENFORCE });
    return none('enforced.test', { caTrusted: false });
  });
  it('a policy host on a loopback address, unless the operator allows it', async () => {
    bodies.set('mta-sts.private.test', { body: ENFORCE });
    await none('private.test', { allowCidrs: [] });
    expect(asked).toEqual([]);
  });
});

describe('DNS trouble', () => {
  it('a TXT lookup that fails is not asked again for a while, and a kept policy still holds', async () => {
    let asks = 0;
    let now = Date.now();
    const failing = {
      resolveTxt: async () => {
        asks++;
        throw Object.assign(new Error('queryTxt ETIMEOUT'), { code: 'ETIMEOUT' });
      },
    } as unknown as ReturnType<typeof makeResolver>;
    const p = new StsPolicies({
      resolver: failing,
      settings: { enabled: true, allowCidrs: [], port, timeoutMs: 1000, maxAgeSeconds: 3600 },
      ca: undefined,
      now: () => now,
    });
    expect(await p.policyFor('down.test')).toBeUndefined();
    expect(await p.policyFor('down.test')).toBeUndefined();
    expect(asks).toBe(1);
    now += 31_000;
    await p.policyFor('down.test');
    expect(asks).toBe(2);
    expect(p.fetches).toBe(0);
  });
  it('MTA-STS off: nothing is looked up', async () => {
    const p = new StsPolicies({
      resolver: makeResolver([dns.address]),
      settings: { enabled: false, allowCidrs: ['127.0.0.0/8'], port, timeoutMs: 1000, maxAgeSeconds: 3600 },
      ca: undefined,
    });
    bodies.set('mta-sts.enforced.test', { body: ENFORCE });
    expect(await p.policyFor('enforced.test')).toBeUndefined();
    expect(asked).toEqual([]);
  });
});
