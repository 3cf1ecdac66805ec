// Passkeys over HTTP against the real stack, with a software authenticator written here (an ES256 key, a
// hand-built attestation 'none' and assertions; the CBOR is encoded by this test only): off by default,
// register / list / remove, sign in (key routes and the hosted widget's), and the attacks: a challenge used
// twice or late, another project's credential (substitution), another user's passkey, a foreign origin or RP
// ID, a clone whose counter does not advance.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Project, Stack } from '../../helpers/stack.js';
import { authStack, client, provider, setClock, signedWidget, unixNow } from './setup.js';
import { stepAt, totpAt } from '../../../auth/two-factor/totp.js';

// ---------------------------------------------------------------- a software authenticator

function cbor(v: unknown): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.from([(major << 5) | n]);
    if (n < 256) return Buffer.from([(major << 5) | 24, n]);
    if (n < 65536) return Buffer.from([(major << 5) | 25, n >> 8, n & 255]);
    const b = Buffer.alloc(5);
    b[0] = (major << 5) | 26;
    b.writeUInt32BE(n, 1);
    return b;
  };
  if (typeof v === 'number') return v >= 0 ? head(0, v) : head(1, -1 - v);
  if (typeof v === 'string') return Buffer.concat([head(3, Buffer.byteLength(v)), Buffer.from(v)]);
  if (v instanceof Uint8Array) return Buffer.concat([head(2, v.length), Buffer.from(v)]);
  if (v instanceof Map) return Buffer.concat([head(5, v.size), ...[...v].flatMap(([k, x]) => [cbor(k), cbor(x)])]);
  throw new Error('cbor: unsupported');
}

const b64u = (b: Uint8Array | string) => Buffer.from(b).toString('base64url');
const sha = (b: Uint8Array | string) => crypto.createHash('sha256').update(b).digest();
const UP = 0x01;
const UV = 0x04;
const BE = 0x08;
const BS = 0x10;
const AT = 0x40;

/** One credential on one authenticator; clone() copies its key and counter (a cloned authenticator). */
class SoftKey {
  readonly credentialId = crypto.randomBytes(16);
  private readonly key = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  userHandle: string | null = null;
  rpId = '';
  constructor(public counter = 0) {}

  clone(): SoftKey {
    return Object.assign(Object.create(SoftKey.prototype), { ...this, credentialId: this.credentialId, key: this.key }) as SoftKey;
  }

  private authData(rpId: string, flags: number, attested: boolean): Buffer {
    const count = Buffer.alloc(4);
    count.writeUInt32BE(this.counter);
    const parts: Buffer[] = [sha(rpId), Buffer.from([flags | (attested ? AT : 0)]), count];
    if (attested) {
      const jwk = this.key.publicKey.export({ format: 'jwk' });
      const cose = cbor(
        new Map<number, unknown>([
          [1, 2],
          [3, -7],
          [-1, 1],
          [-2, Buffer.from(jwk.x!, 'base64url')],
          [-3, Buffer.from(jwk.y!, 'base64url')],
        ]),
      );
      const len = Buffer.alloc(2);
      len.writeUInt16BE(this.credentialId.length);
      parts.push(Buffer.alloc(16), len, this.credentialId, cose);
    }
    return Buffer.concat(parts);
  }

  /** navigator.credentials.create as the browser answers it, in JSON. `origin`/`rpId` may lie (attacks). */
  create(options: any, origin: string, o: { rpId?: string; flags?: number } = {}) {
    this.rpId = o.rpId ?? options.rp.id;
    this.userHandle = options.user.id;
    const clientData = JSON.stringify({ type: 'webauthn.create', challenge: options.challenge, origin, crossOrigin: false });
    const attestation = cbor(
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', this.authData(this.rpId, o.flags ?? UP | UV | BE | BS, true)],
      ]),
    );
    const id = b64u(this.credentialId);
    return {
      id,
      rawId: id,
      type: 'public-key',
      response: { clientDataJSON: b64u(clientData), attestationObject: b64u(attestation), transports: ['internal', 'hybrid'] },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /** navigator.credentials.get: the counter moves on by `step` (0: a clone replaying its count). */
  get(options: any, origin: string, o: { rpId?: string; step?: number; flags?: number; userHandle?: string | null; topOrigin?: string } = {}) {
    this.counter += o.step ?? 1;
    const framed = o.topOrigin ? { crossOrigin: true, topOrigin: o.topOrigin } : { crossOrigin: false };
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge: options.challenge, origin, ...framed }));
    const authData = this.authData(o.rpId ?? options.rpId, o.flags ?? UP | UV | BE | BS, false);
    const signature = crypto.sign('sha256', Buffer.concat([authData, sha(clientData)]), this.key.privateKey);
    const id = b64u(this.credentialId);
    return {
      id,
      rawId: id,
      type: 'public-key',
      response: {
        clientDataJSON: b64u(clientData),
        authenticatorData: b64u(authData),
        signature: b64u(signature),
        userHandle: o.userHandle === undefined ? this.userHandle : o.userHandle,
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}

// ---------------------------------------------------------------- the stack

const APP = 'https://app.example.com';
const OTHER = 'https://other.example.net';
const LOCAL_APP = 'http://localhost:5173';
let stack: Stack;
let a: Project;
let b: Project;
let off: Project;
let ipSeq = 0;
const freshIp = () => `198.51.100.${++ipSeq}`;

beforeAll(async () => {
  stack = await authStack();
  [a, b, off] = await Promise.all([stack.createProject('pk-a'), stack.createProject('pk-b'), stack.createProject('pk-off')]);
  for (const p of [a, b, off]) {
    for (const origin of [APP, OTHER, LOCAL_APP]) await stack.admin('POST', `/admin/v1/projects/${p.slug}/auth/origins`, { origin });
    await provider(stack, p, 'telegram', { botToken: '123456789:AAEtestbottokenXXXXXXXXXXXXXXXXXXXXX' });
  }
  // Turned on the way the README says (postgate provider set --provider passkey).
  await stack.cli('provider', 'set', '--project', a.slug, '--provider', 'passkey');
  await provider(stack, b, 'passkey', {});
});
afterAll(async () => {
  await stack?.stop();
});

let tgId = 1000;
/** A signed-in user of project `p` (live), through a Telegram widget sign-in. */
async function user(p: Project, ip = freshIp()) {
  const api = client(stack, p.keys.live, { 'x-service-client-ip': ip });
  const r = await api.post('/sign-in/telegram/widget', signedWidget({ id: ++tgId, first_name: `User ${tgId}`, auth_date: unixNow() }));
  expect(r.status).toBe(200);
  const token = r.body.token as string;
  const auth = { authorization: `Bearer ${token}` };
  return {
    id: r.body.user.id as string,
    token,
    api,
    registerOptions: (body: Record<string, unknown> = {}, origin = APP) => api.post('/passkey/register/options', body, { ...auth, origin }),
    registerVerify: (body: Record<string, unknown>, origin = APP) => api.post('/passkey/register/verify', body, { ...auth, origin }),
    list: () => api.get('/passkeys', auth),
    remove: (id: string) => stack.api('DELETE', `/api/v1/auth/passkeys/${id}`, undefined, undefined, { 'x-service-key': p.keys.live, ...auth }),
  };
}
type User = Awaited<ReturnType<typeof user>>;

/** Registers a new software passkey for `u` from `origin`. */
async function register(u: User, origin = APP, body: Record<string, unknown> = {}, key = new SoftKey()) {
  const o = await u.registerOptions(body, origin);
  expect(o.status).toBe(200);
  const v = await u.registerVerify({ response: key.create(o.body, origin), name: 'Laptop' }, origin);
  expect(v.status).toBe(200);
  return { key, view: v.body };
}

const signInApi = (p: Project, ip = freshIp()) => {
  const api = client(stack, p.keys.live, { 'x-service-client-ip': ip });
  return {
    options: (body: Record<string, unknown> = {}, origin = APP) => api.post('/sign-in/passkey/options', body, { origin }),
    verify: (response: unknown, origin = APP) => api.post('/sign-in/passkey/verify', { response }, { origin }),
    api,
  };
};

describe('passkeys over HTTP', () => {
  it('are off until the project enables them', async () => {
    const u = await user(off);
    const r = await u.registerOptions();
    expect([r.status, r.body.code]).toEqual([400, 'PROVIDER_NOT_ENABLED']);
    const s = await signInApi(off).options();
    expect([s.status, s.body.code]).toEqual([400, 'PROVIDER_NOT_ENABLED']);
    const listed = (await u.api.get('/providers')).body.providers.map((x: { id: string }) => x.id);
    expect(listed).not.toContain('passkey');
    expect((await client(stack, a.keys.live).get('/providers')).body.providers).toContainEqual({ id: 'passkey', name: 'Passkey', methods: ['webauthn'] });
  });

  it('registers (attestation none, discoverable), lists without keys, signs in, and removes', async () => {
    const u = await user(a);
    const o = await u.registerOptions();
    expect(o.body).toMatchObject({
      rp: { id: 'app.example.com' },
      user: { id: Buffer.from(u.id).toString('base64url') },
      attestation: 'none',
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    });
    const key = new SoftKey();
    const v = await u.registerVerify({ response: key.create(o.body, APP), name: 'Work laptop' });
    expect(v.status).toBe(200);
    expect(v.body).toEqual({
      id: expect.any(String),
      name: 'Work laptop',
      createdAt: expect.any(String),
      lastUsedAt: null,
      deviceType: 'multiDevice',
      backedUp: true,
      transports: ['internal', 'hybrid'],
    });
    const list = await u.list();
    expect(list.body).toEqual({ passkeys: [v.body] });
    expect(JSON.stringify(list.body)).not.toMatch(/publicKey|credential/i);
    // The same authenticator again: its credential is excluded next time, and refused when sent anyway.
    const again = await u.registerOptions();
    expect(again.body.excludeCredentials).toEqual([{ id: b64u(key.credentialId), type: 'public-key', transports: ['internal', 'hybrid'] }]);
    const dup = await u.registerVerify({ response: key.create(again.body, APP) });
    expect([dup.status, dup.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);

    const s = signInApi(a);
    const so = await s.options();
    expect(so.status).toBe(200);
    expect(so.body).toMatchObject({ rpId: 'app.example.com', userVerification: 'preferred', allowCredentials: [] });
    const signed = await s.verify(key.get(so.body, APP));
    expect(signed.status).toBe(200);
    expect(signed.body.user).toMatchObject({ id: u.id, provider: 'passkey' });
    const sess = await s.api.session(signed.body.token);
    expect(sess.body.user).toMatchObject({ id: u.id, provider: 'passkey' });
    expect((await u.list()).body.passkeys[0].lastUsedAt).toEqual(expect.any(String));

    const added = (await stack.admin('GET', `/admin/v1/projects/${a.slug}/audit?type=passkey.added&limit=100`)).data.filter(
      (e: { user_id: string }) => e.user_id === u.id,
    );
    expect(added).toHaveLength(1);

    expect((await u.remove(v.body.id)).status).toBe(200);
    expect((await u.list()).body).toEqual({ passkeys: [] });
    expect((await u.remove(v.body.id)).status).toBe(404);
    const removed = (await stack.admin('GET', `/admin/v1/projects/${a.slug}/audit?type=passkey.removed&limit=100`)).data;
    expect(removed.filter((e: { user_id: string }) => e.user_id === u.id)).toHaveLength(1);
    const gone = await s.verify(key.get((await s.options()).body, APP));
    expect([gone.status, gone.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);
  });

  it('refuses a challenge used twice, one of another ceremony, and one past its 5 minutes', async () => {
    const u = await user(a);
    const { key } = await register(u);
    const s = signInApi(a);
    const o = await s.options();
    const first = key.get(o.body, APP);
    expect((await s.verify(first)).status).toBe(200);
    // The same response again, and a fresh assertion over the spent challenge.
    for (const r of [first, key.get(o.body, APP)]) {
      const again = await s.verify(r);
      expect([again.status, again.body.code, again.body.error]).toEqual([401, 'INVALID_CREDENTIAL', expect.stringMatching(/unknown or was already used/)]);
    }
    // Two racers with the same challenge: one signs in.
    const race = await s.options();
    const racers = await Promise.all([s.verify(key.get(race.body, APP)), s.verify(key.get(race.body, APP))]);
    expect(racers.map((r) => r.status).sort()).toEqual([200, 401]);
    // A registration's challenge is not a sign-in's.
    const reg = await u.registerOptions();
    const cross = await s.verify(key.get({ challenge: reg.body.challenge, rpId: 'app.example.com' }, APP));
    expect(cross.status).toBe(401);

    const late = await s.options();
    await setClock(stack, 5 * 60_000 + 1000);
    try {
      const r = await s.verify(key.get(late.body, APP));
      expect([r.status, r.body.code, r.body.error]).toEqual([401, 'INVALID_CREDENTIAL', expect.stringMatching(/expired/)]);
    } finally {
      await setClock(stack, 0);
    }
  });

  it("refuses another project's credential (substitution), and another user's registration challenge", async () => {
    const u = await user(a);
    const { key } = await register(u);
    const sb = signInApi(b);
    const r = await sb.verify(key.get((await sb.options()).body, APP));
    expect([r.status, r.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);
    // Project B's challenge answered to project A: unknown there.
    const sa = signInApi(a);
    const r2 = await sa.verify(key.get((await sb.options()).body, APP));
    expect([r2.status, r2.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);
    // The same credential id registered in B by someone else stays B's own: A's user is not signed in there.
    const other = await user(b);
    const clone = key.clone();
    const inB = await other.registerOptions();
    expect((await other.registerVerify({ response: clone.create(inB.body, APP) })).status).toBe(200);
    const r3 = await sa.verify(key.get((await sa.options()).body, APP));
    expect(r3.body.user.id).toBe(u.id);

    // Y answers X's registration challenge: refused, nothing registered for either.
    const y = await user(a);
    const xo = await u.registerOptions();
    const stolen = await y.registerVerify({ response: new SoftKey().create(xo.body, APP) });
    expect([stolen.status, stolen.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);
    expect((await y.list()).body.passkeys).toEqual([]);
  });

  it("does not let a user remove (or see) another user's or project's passkey", async () => {
    const x = await user(a);
    const y = await user(a);
    const z = await user(b);
    const { view } = await register(x);
    for (const other of [y, z]) {
      const r = await other.remove(view.id);
      expect([r.status, r.body.code]).toEqual([404, 'NOT_FOUND']);
      expect((await other.list()).body.passkeys).toEqual([]);
    }
    expect((await x.list()).body.passkeys.map((k: { id: string }) => k.id)).toEqual([view.id]);
    const noSession = await stack.api('DELETE', `/api/v1/auth/passkeys/${view.id}`, undefined, undefined, { 'x-service-key': a.keys.live });
    expect([noSession.status, noSession.body.code]).toEqual([401, 'SESSION_INVALID']);
  });

  it('keeps the relying party: allowed origins only, its host or a parent domain as RP ID, checked again at the assertion', async () => {
    const u = await user(a);
    const evil = await u.registerOptions({}, 'https://evil.example');
    expect([evil.status, evil.body.code]).toEqual([400, 'REDIRECT_NOT_ALLOWED']);
    const mismatch = await u.api.post('/passkey/register/options', { origin: OTHER }, { authorization: `Bearer ${u.token}`, origin: APP });
    expect([mismatch.status, mismatch.body.code]).toEqual([400, 'INVALID_REQUEST']);
    for (const rpId of ['example.org', 'com', 'pp.example.com', 'evil.app.example.com']) {
      const r = await u.registerOptions({ rpId });
      expect([rpId, r.status, r.body.code]).toEqual([rpId, 400, 'INVALID_REQUEST']);
    }
    // A server may call for the browser, naming the page's origin.
    const byServer = await u.api.post('/passkey/register/options', { origin: APP }, { authorization: `Bearer ${u.token}` });
    expect(byServer.body.rp.id).toBe('app.example.com');

    // A parent domain: the passkey is for example.com, and signs in only with that RP ID.
    const { key } = await register(u, APP, { rpId: 'example.com' });
    const s = signInApi(a);
    const parent = await s.options({ rpId: 'example.com' });
    expect(parent.body.rpId).toBe('example.com');
    expect((await s.verify(key.get(parent.body, APP))).status).toBe(200);
    const wrongRp = await s.verify(key.get((await s.options()).body, APP));
    expect([wrongRp.status, wrongRp.body.error]).toEqual([401, expect.stringMatching(/belongs to example.com/)]);

    // The assertion names another origin than the ceremony's, or hashes another RP ID: refused.
    const o1 = await s.options({ rpId: 'example.com' });
    const r1 = await s.verify(key.get(o1.body, 'https://evil.example'));
    expect([r1.status, r1.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);
    const o2 = await s.options({ rpId: 'example.com' });
    const r2 = await s.verify(key.get(o2.body, APP, { rpId: 'evil.example' }));
    expect([r2.status, r2.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);
    // Started on one allowed origin, finished from another: refused.
    const o3 = await s.options({ rpId: 'example.com' });
    const r3 = await s.verify(key.get(o3.body, OTHER), OTHER);
    expect(r3.status).toBe(401);
    // A user handle that is not the credential's user.
    const o4 = await s.options({ rpId: 'example.com' });
    const r4 = await s.verify(key.get(o4.body, APP, { userHandle: b64u('someone-else') }));
    expect(r4.status).toBe(401);
    // A registration whose client data names another origin.
    const ro = await u.registerOptions();
    const rr = await u.registerVerify({ response: new SoftKey().create(ro.body, 'https://evil.example') });
    expect([rr.status, rr.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);
  });

  it('refuses a cloned authenticator: a counter that does not advance', async () => {
    const u = await user(a);
    const { key } = await register(u, APP, {}, new SoftKey(1));
    const clone = key.clone();
    const s = signInApi(a);
    expect((await s.verify(key.get((await s.options()).body, APP, { step: 4 }))).status).toBe(200); // 5
    // The clone still counts from 1: 2 is behind the original's 5.
    const behind = await s.verify(clone.get((await s.options()).body, APP));
    expect([behind.status, behind.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);
    // Equal is refused as well.
    clone.counter = 4;
    const equal = await s.verify(clone.get((await s.options()).body, APP));
    expect([equal.status, equal.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);
    expect((await s.verify(key.get((await s.options()).body, APP))).status).toBe(200);

    const failed = (await stack.admin('GET', `/admin/v1/projects/${a.slug}/audit?type=sign_in.failed&limit=100`)).data;
    expect(failed.some((e: { reason: string; provider: string }) => e.reason === 'invalid_credential' && e.provider === 'passkey')).toBe(true);
  });

  it('signs in through the hosted widget: options and assertion on postgate’s origin, a svc_code the app exchanges', async () => {
    const widget = `http://localhost:${new URL(stack.url).port}`;
    const u = await user(a);
    // A passkey for localhost (registered from the app on another localhost port): it serves the widget's origin too.
    const { key } = await register(u, LOCAL_APP);
    const hosted = (p: string, body: Record<string, unknown>, origin = widget) =>
      stack.api('POST', `/api/v1/auth/hosted/passkey/${p}`, undefined, body, { origin });
    const verifier = crypto.randomBytes(32).toString('base64url');
    const codeChallenge = b64u(sha(verifier));
    const o = await hosted('options', { slug: a.slug });
    expect(o.status).toBe(200);
    expect(o.body.rpId).toBe('localhost');
    const redirectUri = `${APP}/callback`;
    const v = await hosted('verify', { slug: a.slug, response: key.get(o.body, widget), redirectUri, codeChallenge });
    expect(v.status).toBe(200);
    const url = new URL(v.body.redirectUrl);
    expect(url.origin + url.pathname).toBe(redirectUri);
    const code = url.searchParams.get('svc_code')!;
    const ex = await client(stack, a.keys.live).post('/exchange-code', { code, codeVerifier: verifier });
    expect(ex.status).toBe(200);
    expect(ex.body.user.id).toBe(u.id);
    expect((await client(stack, a.keys.live).session(ex.body.token)).body.user).toMatchObject({ id: u.id, provider: 'passkey' });
    // Once only, as any svc_code.
    expect((await client(stack, a.keys.live).post('/exchange-code', { code, codeVerifier: verifier })).status).toBe(400);

    // Without an Origin (a script), from a foreign origin, a disabled project, a foreign redirect: refused.
    expect((await stack.api('POST', '/api/v1/auth/hosted/passkey/options', undefined, { slug: a.slug })).status).toBe(400);
    expect((await hosted('options', { slug: a.slug }, 'https://evil.example')).body.code).toBe('REDIRECT_NOT_ALLOWED');
    expect((await hosted('options', { slug: off.slug })).body.code).toBe('PROVIDER_NOT_ENABLED');
    const o2 = await hosted('options', { slug: a.slug });
    const bad = await hosted('verify', { slug: a.slug, response: key.get(o2.body, widget), redirectUri: 'https://evil.example/cb', codeChallenge });
    expect(bad.body.code).toBe('REDIRECT_NOT_ALLOWED');
    // In a frame (the widget in the app's page): the top page must be one of the project's allowed origins.
    const framedIn = async (top: string) => {
      const o3 = await hosted('options', { slug: a.slug });
      return hosted('verify', { slug: a.slug, response: key.get(o3.body, widget, { topOrigin: top }), redirectUri, codeChallenge });
    };
    const evilTop = await framedIn('https://evil.example');
    expect([evilTop.status, evilTop.body.code, evilTop.body.error]).toEqual([401, 'INVALID_CREDENTIAL', expect.stringMatching(/framed this sign-in/)]);
    expect((await framedIn(APP)).status).toBe(200);
    // A's passkey at B's widget: unknown there.
    const ob = await hosted('options', { slug: b.slug });
    const sub = await hosted('verify', { slug: b.slug, response: key.get(ob.body, widget), redirectUri, codeChallenge });
    expect([sub.status, sub.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);
  });

  it("runs the sign-in gates: a banned user's passkey opens no session; the user's deletion takes the passkeys", async () => {
    const u = await user(a);
    const { key } = await register(u);
    await stack.admin('POST', `/admin/v1/projects/${a.slug}/auth/users/${u.id}/ban?env=live`, { reason: 'abuse' });
    const s = signInApi(a);
    const r = await s.verify(key.get((await s.options()).body, APP));
    expect([r.status, r.body.code]).toEqual([403, 'USER_BANNED']);
    expect(r.body.token).toBeUndefined();
    await stack.admin('DELETE', `/admin/v1/projects/${a.slug}/auth/users/${u.id}?env=live`);
    const gone = await s.verify(key.get((await s.options()).body, APP));
    expect([gone.status, gone.body.code, gone.body.error]).toEqual([401, 'INVALID_CREDENTIAL', expect.stringMatching(/not registered/)]);
  });

  it("counts a user-verified passkey as the second factor; one without user verification is held for the user's code", async () => {
    await stack.admin('PATCH', `/admin/v1/projects/${b.slug}/auth/settings`, { twoFactor: 'optional' });
    try {
      const u = await user(b);
      const { key } = await register(u);
      const auth = { authorization: `Bearer ${u.token}` };
      const setup = await u.api.post('/two-factor/totp/setup', {}, auth);
      expect(setup.status).toBe(200);
      const confirmed = await u.api.post('/two-factor/totp/confirm', { code: totpAt(setup.body.secret, stepAt(Date.now())) }, auth);
      expect(confirmed.status).toBe(200);
      const s = signInApi(b);
      const verified = await s.verify(key.get((await s.options()).body, APP));
      expect([verified.status, verified.body.user?.id]).toEqual([200, u.id]);
      const presenceOnly = await s.verify(key.get((await s.options()).body, APP, { flags: UP | BE | BS }));
      expect([presenceOnly.status, presenceOnly.body.code, presenceOnly.body.pendingToken]).toEqual([401, 'TWO_FACTOR_REQUIRED', expect.any(String)]);
      // The same through the hosted widget (a passkey for localhost, the widget's host): its svc_code carries the
      // verification to the exchange.
      const local = (await register(u, LOCAL_APP)).key;
      const widget = `http://localhost:${new URL(stack.url).port}`;
      const hosted = (p: string, body: Record<string, unknown>) => stack.api('POST', `/api/v1/auth/hosted/passkey/${p}`, undefined, body, { origin: widget });
      const exchanged = async (flags?: number) => {
        const verifier = crypto.randomBytes(32).toString('base64url');
        const o = await hosted('options', { slug: b.slug });
        const assertion = local.get(o.body, widget, flags === undefined ? {} : { flags });
        const v = await hosted('verify', { slug: b.slug, response: assertion, redirectUri: `${APP}/callback`, codeChallenge: b64u(sha(verifier)) });
        const code = new URL(v.body.redirectUrl).searchParams.get('svc_code');
        return client(stack, b.keys.live).post('/exchange-code', { code, codeVerifier: verifier });
      };
      expect((await exchanged()).body.user?.id).toBe(u.id);
      expect((await exchanged(UP | BE | BS)).body.code).toBe('TWO_FACTOR_REQUIRED');
    } finally {
      await stack.admin('PATCH', `/admin/v1/projects/${b.slug}/auth/settings`, { twoFactor: 'off' });
    }
  });

  it('answers bad input with 400, never a 500', async () => {
    const u = await user(a);
    const s = signInApi(a);
    for (const response of [{}, { id: 'x', rawId: 'x', type: 'public-key', response: { clientDataJSON: '!!', authenticatorData: 'AA', signature: 'AA' } }]) {
      const r = await s.verify(response);
      expect(r.status).toBe(400);
    }
    const garbage = await s.verify({
      id: 'x',
      rawId: 'x',
      type: 'public-key',
      response: { clientDataJSON: b64u('not json'), authenticatorData: 'AA', signature: 'AA' },
    });
    expect([garbage.status, garbage.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);
    const reg = await u.registerVerify({
      response: { id: 'x', rawId: 'x', type: 'public-key', response: { clientDataJSON: b64u('{}'), attestationObject: 'AA' } },
    });
    expect([reg.status, reg.body.code]).toEqual([401, 'INVALID_CREDENTIAL']);
  });
});
