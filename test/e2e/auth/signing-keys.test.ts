// JWTs a backend verifies offline, over HTTP against the real stack: a session exchanged for a token verified
// with jose against the published JWKS (the README's code, run as written), its claims, its lifetime (capped by
// the session's), audiences kept apart per project, revocation seen at the next exchange, forgeries refused,
// and key rotation with overlap (the control's clock moved through the test route instead of waiting).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import crypto from 'node:crypto';
import { createLocalJWKSet, createRemoteJWKSet, decodeProtectedHeader, errors, jwtVerify, SignJWT, UnsecuredJWT, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project, Stack } from '../../helpers/stack.js';
import { authStack, client, provider, setClock } from './setup.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
let stack: Stack;
let a: Project;
let b: Project;
let issuer: string;

const MINUTE = 60_000;

async function signIn(p: Project, email: string): Promise<{ token: string; userId: string }> {
  const api = client(stack, p.keys.test);
  await api.post('/sign-in/email-otp/send', { email });
  const code = (await api.get(`/test/code?email=${encodeURIComponent(email)}`)).body.code;
  const v = await api.post('/sign-in/email-otp/verify', { email, code });
  expect(v.status).toBe(200);
  return { token: v.body.token, userId: v.body.user.id };
}

const jwtOf = (p: Project, session: string) => client(stack, p.keys.test).post('/token', {}, { authorization: `Bearer ${session}` });
const jwks = async () => (await stack.api('GET', '/.well-known/jwks.json', undefined)).body.keys as JWK[];
const kidOf = (jwt: string) => decodeProtectedHeader(jwt).kid;
const audience = (p: Project) => `postgate:${p.slug}`;

beforeAll(async () => {
  stack = await authStack();
  issuer = stack.url.replace('127.0.0.1', 'localhost');
  [a, b] = await Promise.all([stack.createProject('jwt-a'), stack.createProject('jwt-b')]);
  await Promise.all([provider(stack, a, 'email', { methods: ['otp'] }), provider(stack, b, 'email', { methods: ['otp'] })]);
});
afterAll(async () => {
  await setClock(stack, 0).catch(() => undefined);
  await stack?.stop();
});

describe('a session exchanged for a JWT', () => {
  it('verifies offline with jose against the JWKS over HTTP, with the claims of the session', async () => {
    const { token: session, userId } = await signIn(a, 'jane@example.com');
    const sess = (await client(stack, a.keys.test).session(session)).body.session;
    const r = await jwtOf(a, session);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('no-store');
    const set = createRemoteJWKSet(new URL(`${stack.url}/api/v1/auth/jwks.json`));
    const { payload, protectedHeader } = await jwtVerify(r.body.token, set, { issuer, audience: audience(a), algorithms: ['ES256'] });
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'JWT', kid: expect.any(String) });
    expect(payload).toEqual({
      iss: issuer,
      sub: userId,
      aud: 'postgate:jwt-a',
      project: 'jwt-a',
      project_id: a.id,
      sid: sess.id,
      provider: 'email',
      env: 'test',
      iat: expect.any(Number),
      nbf: payload.iat,
      exp: payload.iat! + 300,
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
    });
    expect(new Date(r.body.expiresAt).getTime()).toBe(payload.exp! * 1000);
    // Each token its own id.
    expect((await jwtVerify((await jwtOf(a, session)).body.token, set, { issuer, audience: audience(a) })).payload.jti).not.toBe(payload.jti);
  });

  it("lives the project's lifetime, at most 10 minutes, and never past the session", async () => {
    const p = await stack.createProject('jwt-ttl');
    await provider(stack, p, 'email', { methods: ['otp'] });
    await stack.admin('PATCH', `/admin/v1/projects/${p.slug}/auth/settings`, { jwtTtlSeconds: 600, jwtAudience: 'https://api.example.com' });
    const long = (await jwtOf(p, (await signIn(p, 'ttl@example.com')).token)).body.token;
    const set = createRemoteJWKSet(new URL(`${stack.url}/.well-known/jwks.json`));
    const lp = (await jwtVerify(long, set, { issuer, audience: 'https://api.example.com' })).payload;
    expect(lp.exp! - lp.iat!).toBe(600);
    // A session of 60 s: the token ends with it.
    await stack.admin('PATCH', `/admin/v1/projects/${p.slug}/auth/settings`, { sessionTtlSeconds: 60 });
    const short = await signIn(p, 'short@example.com');
    const sessionEnds = new Date((await client(stack, p.keys.test).session(short.token)).body.session.expiresAt).getTime();
    const capped = (await jwtVerify((await jwtOf(p, short.token)).body.token, set, { issuer, audience: 'https://api.example.com' })).payload;
    expect(capped.exp! * 1000).toBeLessThanOrEqual(sessionEnds);
    expect(capped.exp! - capped.iat!).toBeLessThanOrEqual(60);
    expect(capped.exp! - capped.iat!).toBeGreaterThanOrEqual(55);
    // Past the session's end, no token at all.
    await setClock(stack, 61_000);
    try {
      expect((await jwtOf(p, short.token)).body.code).toBe('SESSION_INVALID');
    } finally {
      await setClock(stack, 0);
    }
  });

  it("a token of project A does not verify with project B's audience, and B's session gets no token with A's key", async () => {
    const sa = (await signIn(a, 'cross@example.com')).token;
    const sb = (await signIn(b, 'cross@example.com')).token;
    const set = createRemoteJWKSet(new URL(`${stack.url}/.well-known/jwks.json`));
    const ta = (await jwtOf(a, sa)).body.token;
    await expect(jwtVerify(ta, set, { issuer, audience: audience(b) })).rejects.toBeInstanceOf(errors.JWTClaimValidationFailed);
    expect((await jwtVerify((await jwtOf(b, sb)).body.token, set, { issuer, audience: audience(b) })).payload.project).toBe('jwt-b');
    // A session is the project's and environment's only.
    expect((await jwtOf(b, sa)).body.code).toBe('SESSION_INVALID');
    const live = await client(stack, a.keys.live).post('/token', {}, { authorization: `Bearer ${sa}` });
    expect(live.status).toBe(401);
    expect(live.body.code).toBe('SESSION_INVALID');
  });

  it('answers SESSION_INVALID after sign-out, without a session, and without a key', async () => {
    const { token } = await signIn(a, 'bye@example.com');
    expect((await jwtOf(a, token)).status).toBe(200);
    expect((await client(stack, a.keys.test).signOut(token)).status).toBe(200);
    const after = await jwtOf(a, token);
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('SESSION_INVALID');
    expect((await client(stack, a.keys.test).post('/token', {})).body.code).toBe('SESSION_INVALID');
    const noKey = await stack.api('POST', '/api/v1/auth/token', undefined, {}, { authorization: `Bearer ${token}` });
    expect(noKey.status).toBe(401);
    expect(noKey.body.code).not.toBe('SESSION_INVALID');
  });

  it('refuses a tampered token, alg none, and a token signed by a key not in the set', async () => {
    const { token: session, userId } = await signIn(a, 'forge@example.com');
    const good = (await jwtOf(a, session)).body.token as string;
    const set = createRemoteJWKSet(new URL(`${stack.url}/.well-known/jwks.json`));
    const opts = { issuer, audience: audience(a) };
    const [h, p, sig] = good.split('.');
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: crypto.randomUUID() })).toString('base64url')}.${sig}`;
    await expect(jwtVerify(tampered, set, opts)).rejects.toBeInstanceOf(errors.JWSSignatureVerificationFailed);
    const none = new UnsecuredJWT({ ...claims }).encode();
    await expect(jwtVerify(none, set, opts)).rejects.toThrow();
    // The same header (kid) and claims, signed by another P-256 key.
    const other = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const forged = await new SignJWT({ ...claims }).setProtectedHeader(JSON.parse(Buffer.from(h!, 'base64url').toString())).sign(other);
    await expect(jwtVerify(forged, set, opts)).rejects.toBeInstanceOf(errors.JWSSignatureVerificationFailed);
    // An HMAC token "signed" with the public key (algorithm confusion) fails too.
    const pub = (await jwks()).find((k) => k.kid === kidOf(good))!;
    const hs = await new SignJWT({ ...claims }).setProtectedHeader({ alg: 'HS256', kid: pub.kid! }).sign(new TextEncoder().encode(JSON.stringify(pub)));
    await expect(jwtVerify(hs, set, opts)).rejects.toThrow();
    expect((await jwtVerify(good, set, opts)).payload.sub).toBe(userId);
  });

  it('the JWKS holds public keys only, cacheable for about 5 minutes, at both addresses', async () => {
    const r = await stack.api('GET', '/.well-known/jwks.json', undefined);
    expect(r.status).toBe(200);
    expect(r.headers.get('cache-control')).toBe('public, max-age=300');
    expect(JSON.stringify(r.body)).not.toMatch(/"d"/);
    for (const k of r.body.keys) expect(Object.keys(k).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x', 'y']);
    expect((await stack.api('GET', '/api/v1/auth/jwks.json', undefined)).body).toEqual(r.body);
    // The operator's list: kids, states and dates, no key material.
    const listed = await stack.admin('GET', '/admin/v1/auth/signing-keys');
    expect(JSON.stringify(listed)).not.toMatch(/"d"|private|jwk/i);
    expect(listed.data.map((k: any) => k.kid)).toEqual(expect.arrayContaining(r.body.keys.map((k: JWK) => k.kid)));
  });
});

describe("the README's backend", () => {
  it('runs as written against the stack', async () => {
    const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
    const from = readme.indexOf('#### JWTs a backend verifies offline');
    expect(from).toBeGreaterThan(0);
    const section = readme.slice(from, readme.indexOf('\n#', from + 1));
    const code = /```js\n([\s\S]*?)```/.exec(section)![1]!;
    expect(code).toContain("createRemoteJWKSet(new URL('https://auth.example.com/.well-known/jwks.json'))");
    const runnable = code
      .replace('https://auth.example.com/.well-known/jwks.json', `${stack.url}/.well-known/jwks.json`)
      .replace("issuer: 'https://auth.example.com'", `issuer: '${issuer}'`)
      .replace("audience: 'postgate:acme'", `audience: '${audience(a)}'`);
    // Beside node_modules, so that `import ... from 'jose'` resolves as in an app.
    const dir = path.join(root, 'node_modules', '.cache', 'postgate-readme');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `verify-${crypto.randomBytes(4).toString('hex')}.mjs`);
    fs.writeFileSync(file, runnable);
    try {
      const mod = await import(file);
      const { token: session, userId } = await signIn(a, 'readme@example.com');
      const user = await mod.userOf(`Bearer ${(await jwtOf(a, session)).body.token}`);
      expect(user).toMatchObject({ id: userId, project: 'jwt-a', sessionId: expect.any(String) });
      await expect(mod.userOf(`Bearer ${(await jwtOf(b, (await signIn(b, 'readme@example.com')).token)).body.token}`)).rejects.toThrow();
    } finally {
      fs.rmSync(file, { force: true });
    }
  });
});

describe('rotation with overlap', () => {
  it('publishes the new key first, signs with it after the lead, keeps the old one until its tokens expired', async () => {
    const { token: session } = await signIn(a, 'rotate@example.com');
    const before = (await jwtOf(a, session)).body.token as string;
    const oldKid = kidOf(before);
    const cli = await stack.cli('auth', 'keys', 'rotate', '--json');
    const next = JSON.parse(cli);
    expect(next).toMatchObject({ kid: expect.any(String), state: 'next' });
    expect(new Date(next.activeFrom).getTime() - new Date(next.createdAt).getTime()).toBe(10 * MINUTE);
    // Published at once; tokens keep the old kid until it starts.
    expect((await jwks()).map((k) => k.kid)).toEqual(expect.arrayContaining([oldKid, next.kid]));
    expect(kidOf((await jwtOf(a, session)).body.token)).toBe(oldKid);
    const listed = await stack.cli('auth', 'keys', 'list');
    expect(listed).toContain(next.kid);
    expect(listed).toContain('signing');

    // Past the lead: new tokens carry the new kid; the old tokens still verify (the old key is still published).
    await setClock(stack, 10 * MINUTE + 1000);
    const after = (await jwtOf(a, session)).body.token as string;
    expect(kidOf(after)).toBe(next.kid);
    const set = createLocalJWKSet({ keys: await jwks() });
    const at = (offset: number) => ({ issuer, audience: audience(a), currentDate: new Date(Date.now() + offset) });
    expect((await jwtVerify(after, set, at(10 * MINUTE + 1000))).protectedHeader.kid).toBe(next.kid);
    expect((await jwtVerify(before, set, at(0))).protectedHeader.kid).toBe(oldKid);
    const states = (await stack.admin('GET', '/admin/v1/auth/signing-keys')).data;
    expect(states.find((k: any) => k.kid === oldKid).state).toBe('retired');
    expect(states.find((k: any) => k.kid === next.kid).state).toBe('signing');

    // Past the overlap (every token of the old key has expired): the old kid is gone from the JWKS.
    await setClock(stack, 10 * MINUTE + 12 * MINUTE + 2000);
    const kids = (await jwks()).map((k) => k.kid);
    expect(kids).toContain(next.kid);
    expect(kids).not.toContain(oldKid);
    await setClock(stack, 0);
  });

  it('rotates at once with --now, recorded in the operator audit log', async () => {
    const { token: session } = await signIn(a, 'now@example.com');
    const oldKid = kidOf((await jwtOf(a, session)).body.token);
    const key = await stack.admin('POST', '/admin/v1/auth/signing-keys/rotate', { now: true });
    expect(key.state).toBe('signing');
    expect(kidOf((await jwtOf(a, session)).body.token)).toBe(key.kid);
    expect((await jwks()).map((k) => k.kid)).toEqual(expect.arrayContaining([oldKid, key.kid]));
    const log = await stack.admin('GET', '/admin/v1/audit?limit=10');
    expect(JSON.stringify(log)).toContain(key.kid);
  });
});
