// The console's sign-in, session and static files over real HTTP on a running stack (the admin
// listener; the public port has none of it): the cookie's flags, the CSRF token on every change, a
// cross-origin request refused, sign-out ending the session on the server, the idle timeout on the
// test clock, wrong tokens throttled on the admin guard's counter, the audit log's actor and `via`,
// the security and caching headers, compression, and no file outside the build ever served.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root } from '../../../deploy/build.js';
import { Stack } from '../../helpers/stack.js';

let stack: Stack;
let token: string;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  body: any;
}

/** A raw HTTP call: the path goes out exactly as written (fetch would resolve `..`), from any loopback address. */
function call(base: string, method: string, p: string, o: { headers?: Record<string, string>; body?: unknown; from?: string } = {}): Promise<Answer> {
  const u = new URL(base);
  const data = o.body === undefined ? undefined : JSON.stringify(o.body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path: p,
        localAddress: o.from,
        headers: { ...(data !== undefined ? { 'content-type': 'application/json' } : {}), ...o.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          let body: unknown = raw.toString('utf8');
          try {
            body = JSON.parse(body as string);
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, raw, body });
        });
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}
const admin = (method: string, p: string, o: Parameters<typeof call>[3] = {}) => call(stack.adminUrl, method, p, o);
const bearer = { authorization: '' };

interface Session {
  cookie: string;
  csrf: string;
  setCookie: string;
}
async function signIn(from?: string): Promise<Session> {
  const r = await admin('POST', '/console/api/session', { body: { token }, from });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const setCookie = String(r.headers['set-cookie']?.[0]);
  return { cookie: setCookie.split(';')[0]!, csrf: r.body.csrf_token, setCookie };
}
const fingerprint = () => crypto.createHash('sha256').update(token).digest('hex').slice(0, 12);
const setClock = (offsetMs: number) => stack.admin('POST', '/admin/v1/test/clock', { offset_ms: offsetMs });
const lastAudit = async (action: string) => {
  const log = await stack.admin('GET', '/admin/v1/audit?limit=50');
  return (log.data as Array<Record<string, any>>).find((e) => e.action === action);
};

beforeAll(async () => {
  stack = await Stack.start({ env: { POSTGATE_TEST_CLOCK: '1' } });
  token = fs.readFileSync(path.join(stack.dataDir, 'admin-token'), 'utf8').trim();
  bearer.authorization = `Bearer ${token}`;
}, 90_000);
afterAll(async () => {
  await stack?.stop();
});

describe('console session', () => {
  it('signs in with the admin token: an HttpOnly SameSite=Strict browser-session cookie (not Secure over http) and a CSRF token', async () => {
    const t0 = Date.now();
    const r = await admin('POST', '/console/api/session', { body: { token } });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ csrf_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expires_at: expect.any(String), idle_timeout_s: 1800 });
    expect(Math.abs(Date.parse(r.body.expires_at) - (t0 + 12 * 3_600_000))).toBeLessThan(60_000);
    const set = r.headers['set-cookie'] ?? [];
    expect(set).toHaveLength(1);
    const attrs = set[0]!.split(';').map((s) => s.trim());
    expect(attrs[0]).toMatch(/^postgate_console=[A-Za-z0-9_-]{43}$/);
    expect(attrs.slice(1).sort()).toEqual(['HttpOnly', 'Path=/', 'SameSite=Strict']);
    expect(r.headers['cache-control']).toBe('no-store');
    // The cookie is not the token, nor the CSRF token.
    expect(set[0]).not.toContain(token);
    expect(attrs[0]!.split('=')[1]).not.toBe(r.body.csrf_token);

    const entry = await lastAudit('console.sign_in');
    expect(entry).toMatchObject({ actor: fingerprint(), target: 'console', details: { via: 'console' } });
    // Neither the token nor the cookie is in the log.
    const log = fs.readFileSync(stack.logFile, 'utf8');
    expect(log).not.toContain(token);
    expect(log).not.toContain(attrs[0]!.split('=')[1]);
  });

  it('refuses a wrong token with 401, and a missing body with 400', async () => {
    const r = await admin('POST', '/console/api/session', { body: { token: `${token}x` } });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('UNAUTHORIZED');
    expect(r.headers['set-cookie']).toBeUndefined();
    expect((await admin('POST', '/console/api/session', { body: {} })).status).toBe(400);
  });

  it('gives the CSRF token back to a live cookie (GET session), and 401 without one', async () => {
    const s = await signIn();
    const r = await admin('GET', '/console/api/session', { headers: { cookie: s.cookie } });
    expect(r.status).toBe(200);
    expect(r.body.csrf_token).toBe(s.csrf);
    expect(r.body.idle_timeout_s).toBe(1800);
    expect((await admin('GET', '/console/api/session')).body.code).toBe('UNAUTHORIZED');
    expect((await admin('GET', '/console/api/session', { headers: { cookie: 'postgate_console=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' } })).status).toBe(
      401,
    );
  });

  it('lets the cookie read the admin API, and change it only with the CSRF token (audited as the console)', async () => {
    const p = await stack.createProject();
    const s = await signIn();
    const read = await admin('GET', `/admin/v1/projects/${p.slug}`, { headers: { cookie: s.cookie } });
    expect(read.status).toBe(200);
    expect(read.body.status).toBe('active');

    const altered = `${s.csrf.slice(0, -1)}${s.csrf.endsWith('A') ? 'B' : 'A'}`;
    const attempts: Array<Record<string, string>> = [
      { cookie: s.cookie },
      { cookie: s.cookie, 'x-csrf-token': altered },
      { cookie: s.cookie, 'x-csrf-token': '' },
    ];
    for (const headers of attempts) {
      const r = await admin('POST', `/admin/v1/projects/${p.slug}/pause`, { headers, body: {} });
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('CSRF_TOKEN_INVALID');
    }
    // Another session's CSRF token does not do either.
    const other = await signIn();
    const cross = await admin('POST', `/admin/v1/projects/${p.slug}/pause`, { headers: { cookie: s.cookie, 'x-csrf-token': other.csrf }, body: {} });
    expect(cross.status).toBe(403);
    expect((await stack.admin('GET', `/admin/v1/projects/${p.slug}`)).status).toBe('active');
    expect((await stack.admin('GET', '/admin/v1/audit?limit=50')).data.some((e: any) => e.action === 'project.pause' && e.target === `project:${p.slug}`)).toBe(
      false,
    );

    const ok = await admin('POST', `/admin/v1/projects/${p.slug}/pause`, { headers: { cookie: s.cookie, 'x-csrf-token': s.csrf }, body: {} });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((await stack.admin('GET', `/admin/v1/projects/${p.slug}`)).status).toBe('paused');
    const entry = await lastAudit('project.pause');
    expect(entry).toMatchObject({ actor: fingerprint(), target: `project:${p.slug}`, details: { via: 'console' } });

    // The same change with the bearer token (the CLI) is not marked as the console's.
    await stack.admin('POST', `/admin/v1/projects/${p.slug}/resume`, {});
    const cli = await lastAudit('project.resume');
    expect(cli).toMatchObject({ actor: fingerprint(), target: `project:${p.slug}` });
    expect(cli?.details.via).toBeUndefined();
  });

  it('refuses a cookie request from another origin, read or change, and takes its own', async () => {
    const s = await signIn();
    const evil = { cookie: s.cookie, origin: 'http://evil.test', 'x-csrf-token': s.csrf };
    for (const [method, p] of [
      ['GET', '/admin/v1/projects'],
      ['POST', '/admin/v1/queue/suspensions'],
      ['DELETE', '/console/api/session'],
    ] as const) {
      const r = await admin(method, p, { headers: evil, body: method === 'POST' ? { provider: 'google' } : undefined });
      expect(r.status, `${method} ${p}`).toBe(403);
      expect(r.body.code).toBe('CSRF_TOKEN_INVALID');
    }
    expect((await stack.admin('GET', '/admin/v1/queue/suspensions')).data ?? []).toEqual([]);
    // A sign-in posted from another site is refused too.
    expect((await admin('POST', '/console/api/session', { headers: { origin: 'http://evil.test' }, body: { token } })).status).toBe(403);
    const own = await admin('GET', '/admin/v1/projects', { headers: { cookie: s.cookie, origin: stack.adminUrl } });
    expect(own.status).toBe(200);
  });

  it('signs out on the server (CSRF token needed): the cookie is refused afterwards', async () => {
    const s = await signIn();
    const noCsrf = await admin('DELETE', '/console/api/session', { headers: { cookie: s.cookie } });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body.code).toBe('CSRF_TOKEN_INVALID');
    expect((await admin('GET', '/admin/v1/projects', { headers: { cookie: s.cookie } })).status).toBe(200);

    const out = await admin('DELETE', '/console/api/session', { headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } });
    expect(out.status).toBe(204);
    expect(out.headers['set-cookie']?.[0]).toMatch(/^postgate_console=; .*Max-Age=0/);
    const after = await admin('GET', '/admin/v1/projects', { headers: { cookie: s.cookie } });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('UNAUTHORIZED');
    expect((await admin('GET', '/console/api/session', { headers: { cookie: s.cookie } })).status).toBe(401);
    expect((await admin('DELETE', '/console/api/session', { headers: { cookie: s.cookie, 'x-csrf-token': s.csrf } })).status).toBe(401);
    expect(await lastAudit('console.sign_out')).toMatchObject({ actor: fingerprint(), details: { via: 'console' } });
  });

  it('ends a session left idle for 30 minutes; each request restarts the idle time', async () => {
    const s = await signIn();
    const get = () => admin('GET', '/admin/v1/projects', { headers: { cookie: s.cookie } });
    try {
      await setClock(29 * 60_000);
      expect((await get()).status).toBe(200);
      await setClock(58 * 60_000);
      expect((await get()).status).toBe(200);
      await setClock(88 * 60_000 + 1000);
      expect((await get()).status).toBe(401);
      expect((await admin('GET', '/console/api/session', { headers: { cookie: s.cookie } })).status).toBe(401);
    } finally {
      await setClock(0);
    }
  });

  it('counts wrong sign-in tokens with wrong bearer tokens per address: 429 past the limit, for both doors', async () => {
    // From other loopback addresses, so this test's own address is not throttled.
    const a = '127.0.0.2';
    for (let i = 0; i < 10; i++) expect((await admin('POST', '/console/api/session', { body: { token: `wrong-${i}` }, from: a })).status).toBe(401);
    const throttled = await admin('POST', '/console/api/session', { body: { token }, from: a });
    expect(throttled.status).toBe(429);
    expect(throttled.body.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThan(0);
    expect((await admin('GET', '/admin/v1/projects', { headers: bearer, from: a })).status).toBe(429);

    const b = '127.0.0.3';
    for (let i = 0; i < 10; i++)
      expect((await admin('GET', '/admin/v1/projects', { headers: { authorization: `Bearer wrong-${i}` }, from: b })).status).toBe(401);
    expect((await admin('POST', '/console/api/session', { body: { token }, from: b })).status).toBe(429);
    // This address is not affected.
    expect((await admin('POST', '/console/api/session', { body: { token } })).status).toBe(201);
  });
});

describe('admin OpenAPI document', () => {
  it('describes the admin routes (hidden from the public document) behind the guard', async () => {
    expect((await admin('GET', '/admin/v1/openapi.json')).status).toBe(401);
    const r = await admin('GET', '/admin/v1/openapi.json', { headers: bearer });
    expect(r.status).toBe(200);
    for (const p of ['/admin/v1/projects', '/admin/v1/projects/{slug}', '/admin/v1/queue/suspensions', '/console/api/session'])
      expect(Object.keys(r.body.paths)).toContain(p);
    expect(r.body.paths['/admin/v1/projects'].get.security).toEqual([{ adminToken: [] }, { consoleSession: [] }]);
    // The public document still has none of them.
    const pub = await call(stack.url, 'GET', '/openapi.json');
    expect(Object.keys(pub.body.paths).filter((p) => p.startsWith('/admin') || p.startsWith('/console'))).toEqual([]);
  });
});

describe('console files', () => {
  const CSP =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
  const secured = (r: Answer) => {
    expect(r.headers['content-security-policy']).toBe(CSP);
    expect(r.headers['x-frame-options']).toBe('DENY');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['referrer-policy']).toBe('no-referrer');
  };
  let index: Answer;
  let asset: string;

  beforeAll(async () => {
    expect(fs.existsSync(path.join(root, 'console', 'vite.config.ts'))).toBe(true);
    index = await admin('GET', '/console/');
    asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(index.raw.toString())?.[1] ?? '';
  });

  it('redirects /console to /console/ and answers the page with no-cache and the security headers', async () => {
    const r = await admin('GET', '/console');
    expect(r.status).toBe(302);
    expect(r.headers.location).toBe('/console/');
    secured(r);
    expect(index.status).toBe(200);
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(index.headers['cache-control']).toBe('no-cache');
    secured(index);
    // No inline script in the page (the CSP would block it).
    expect(index.raw.toString()).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const again = await admin('GET', '/console/', { headers: { 'if-none-match': String(index.headers.etag) } });
    expect(again.status).toBe(304);
  });

  it('answers the page for the app routes (history API), with the same headers', async () => {
    for (const p of ['/console/emails', '/console/projects/acme?tab=keys', '/console/api/nothing']) {
      const r = await admin('GET', p);
      expect(r.status, p).toBe(200);
      expect(r.raw.equals(index.raw)).toBe(true);
      expect(r.headers['cache-control']).toBe('no-cache');
      secured(r);
    }
  });

  it('serves hashed assets for a year, compressed when accepted (brotli, gzip), with the security headers', async () => {
    expect(asset).not.toBe('');
    const plain = await admin('GET', asset);
    expect(plain.status).toBe(200);
    expect(plain.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(plain.headers['content-encoding']).toBeUndefined();
    secured(plain);
    const gz = await admin('GET', asset, { headers: { 'accept-encoding': 'gzip' } });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(gz.raw).equals(plain.raw)).toBe(true);
    expect(gz.raw.length).toBeLessThan(plain.raw.length);
    // Brotli is made in the background at start: there within moments.
    let br = await admin('GET', asset, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
    for (let i = 0; i < 100 && br.headers['content-encoding'] !== 'br'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      br = await admin('GET', asset, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
    }
    expect(br.headers['content-encoding']).toBe('br');
    expect(zlib.brotliDecompressSync(br.raw).equals(plain.raw)).toBe(true);
    expect(br.headers.vary).toBe('Accept-Encoding');
    expect((await admin('GET', asset, { headers: { 'accept-encoding': 'br;q=0, gzip' } })).headers['content-encoding']).toBe('gzip');
    const missing = await admin('GET', '/console/assets/nothing-here.js');
    expect(missing.status).toBe(404);
    secured(missing);
  });

  it('never serves a file outside the build, whatever the path', async () => {
    const pkg = fs.readFileSync(path.join(root, 'package.json'), 'utf8');
    for (const p of [
      '/console/..%2f..%2fetc/passwd',
      '/console/assets/../../package.json',
      '/console/../package.json',
      '/console/%2e%2e/%2e%2e/package.json',
      '/console/assets/..%2f..%2f..%2fpackage.json',
      '/console/..%5c..%5cpackage.json',
      '/console//etc/passwd',
      '/console/%2fetc%2fpasswd',
      '/console/%E0%A4%A',
    ]) {
      const r = await admin('GET', p);
      const text = r.raw.toString();
      expect(text, p).not.toContain('root:x:0');
      expect(text, p).not.toContain('"devDependencies"');
      expect(text.includes(pkg.slice(0, 40)), p).toBe(false);
      expect([200, 302, 400, 404], p).toContain(r.status);
      if (r.status === 200) expect(r.raw.equals(index.raw), p).toBe(true);
    }
  });

  it('is not on the public listener', async () => {
    for (const [method, p] of [
      ['GET', '/console'],
      ['GET', '/console/'],
      ['GET', asset],
      ['GET', '/console/api/session'],
      ['POST', '/console/api/session'],
    ] as const) {
      const r = await call(stack.url, method, p, { body: method === 'POST' ? { token } : undefined });
      expect(r.status, `${method} ${p}`).toBe(404);
      expect(r.headers['set-cookie']).toBeUndefined();
    }
  });
});
