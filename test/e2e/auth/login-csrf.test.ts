// Login CSRF (RFC 9700 §4.7) at the API: a sign-in started with a codeChallenge is
// exchanged only with its codeVerifier (and an unbound code is refused to a caller
// that brings one); a project can require the binding; exact callback URLs narrow
// the allowed origins. The browser halves (SDK, embed script) are in test/e2e/browser.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack, Project } from '../../helpers/stack.js';
import { APP, allowOrigin, authStack, client, provider, viaLoopback } from './setup.js';
import { browse, startOpenIdProvider, type OpenIdProvider } from './peers.js';

let stack: Stack;
let idp: OpenIdProvider;
let p: Project;
let base: string;

const verifier = () => crypto.randomBytes(32).toString('base64url');
const challenge = (v: string) => crypto.createHash('sha256').update(v).digest('base64url');

beforeAll(async () => {
  stack = await authStack();
  base = `http://localhost:${new URL(stack.url).port}`;
  idp = await startOpenIdProvider([{ client_id: 'oidc-client', client_secret: 'oidc-secret', redirect_uris: [`${base}/callback/oidc`] }]);
  p = await stack.createProject('csrf');
  await allowOrigin(stack, p);
  await provider(stack, p, 'oidc', { clientId: 'oidc-client', clientSecret: 'oidc-secret', issuer: idp.issuer });
  // Most tests here are of a project that does not require the binding (as one made before it became the default).
  await stack.cli('auth', 'set', '--project', p.slug, '--require-code-verifier', 'off');
});
afterAll(async () => {
  await idp?.close();
  await stack?.stop();
});

/** Signs in at the provider as `sub` and answers the app callback URL postgate sends the browser to. */
async function svcCode(body: Record<string, unknown>, sub: string, project = p): Promise<{ status: number; code: string | null; body: any }> {
  idp.loginAs({ sub, email: `${sub}@corp.test`, email_verified: true, name: sub });
  const start = await client(stack, project.keys.live).post('/sign-in/social', { provider: 'oidc', method: 'oauth', callbackURL: `${APP}/auth/done`, ...body });
  if (start.status !== 200) return { status: start.status, code: null, body: start.body };
  const back = await browse(start.body.url, (u) => u.startsWith(`${base}/callback/`), viaLoopback);
  const res = await fetch(viaLoopback(back), { redirect: 'manual' });
  return { status: 200, code: new URL(res.headers.get('location')!).searchParams.get('svc_code'), body: start.body };
}
const exchange = (code: string, codeVerifier?: string, project = p) =>
  client(stack, project.keys.live).post('/exchange-code', { code, ...(codeVerifier ? { codeVerifier } : {}) });

describe('browser binding of svc_code', () => {
  it("refuses the attacker's bound code to the victim (no verifier, or another), and keeps it for its owner", async () => {
    const attackerVerifier = verifier();
    const { code } = await svcCode({ codeChallenge: challenge(attackerVerifier) }, 'mallory');
    const bare = await exchange(code!);
    expect([bare.status, bare.body.code]).toEqual([400, 'INVALID_CODE']);
    expect(bare.body.error).toMatch(/codeVerifier/);
    const victims = await exchange(code!, verifier());
    expect([victims.status, victims.body.code]).toEqual([400, 'INVALID_CODE']);
    expect(victims.body.error).toMatch(/another browser/);
    const owner = await exchange(code!, attackerVerifier);
    expect(owner.status).toBe(200);
    expect(owner.body.user.email).toBe('mallory@corp.test');
  });

  it('refuses an unbound code to a caller that brings a verifier (an attacker who skipped the challenge)', async () => {
    const { code } = await svcCode({}, 'mallory2');
    expect((await exchange(code!, verifier())).body.code).toBe('INVALID_CODE');
    expect((await exchange(code!)).status).toBe(200); // the spec's plain flow still works
  });

  it('validates the challenge and the verifier as RFC 7636 strings', async () => {
    const start = await client(stack, p.keys.live).post('/sign-in/social', { provider: 'oidc', callbackURL: `${APP}/x`, codeChallenge: 'short' });
    expect([start.status, start.body.code]).toEqual([400, 'INVALID_REQUEST']);
    expect((await client(stack, p.keys.live).post('/exchange-code', { code: 'x', codeVerifier: 'bad verifier!' })).body.code).toBe('INVALID_REQUEST');
  });

  it('a project can require the binding: no start without a challenge, no exchange without a verifier', async () => {
    const earlier = await svcCode({}, 'early');
    await stack.cli('auth', 'set', '--project', p.slug, '--require-code-verifier', 'on');
    try {
      const show = JSON.parse(await stack.cli('auth', 'show', '--project', p.slug, '--json'));
      expect(show.requireCodeVerifier).toBe(true);
      const refused = await svcCode({}, 'late');
      expect([refused.status, refused.body.code]).toEqual([400, 'INVALID_REQUEST']);
      expect(refused.body.error).toMatch(/requires codeChallenge/);
      expect((await exchange(earlier.code!)).body.code).toBe('INVALID_CODE');
      const v = verifier();
      const bound = await svcCode({ codeChallenge: challenge(v) }, 'late');
      expect((await exchange(bound.code!, v)).status).toBe(200);
    } finally {
      await stack.cli('auth', 'set', '--project', p.slug, '--require-code-verifier', 'off');
    }
  });
});

describe('the binding by default', () => {
  it('a new project requires it: no start without a challenge (keyed or hosted), no exchange without the verifier; the switch turns it off', async () => {
    const fresh = await stack.createProject('bound-by-default');
    await allowOrigin(stack, fresh);
    await provider(stack, fresh, 'oidc', { clientId: 'oidc-client', clientSecret: 'oidc-secret', issuer: idp.issuer });
    expect(JSON.parse(await stack.cli('auth', 'show', '--project', fresh.slug, '--json')).requireCodeVerifier).toBe(true);

    const bare = await svcCode({}, 'unbound', fresh);
    expect([bare.status, bare.body.code]).toEqual([400, 'INVALID_REQUEST']);
    expect(bare.body.error).toMatch(/requires codeChallenge/);
    const hostedStart = await stack.api(
      'POST',
      '/api/v1/auth/hosted-start',
      undefined,
      { slug: fresh.slug, provider: 'oidc', redirectUri: `${APP}/auth/done` },
      { origin: APP },
    );
    expect([hostedStart.status, hostedStart.body.code]).toEqual([400, 'INVALID_REQUEST']);
    const hostedVerify = await stack.api(
      'POST',
      '/api/v1/auth/hosted/email-otp/verify',
      undefined,
      { slug: fresh.slug, email: 'x@corp.test', code: '123456', redirectUri: `${APP}/auth/done` },
      { origin: APP },
    );
    expect(hostedVerify.body.error).toMatch(/requires codeChallenge/);

    const v = verifier();
    const bound = await svcCode({ codeChallenge: challenge(v) }, 'bound', fresh);
    expect((await exchange(bound.code!, undefined, fresh)).body.code).toBe('INVALID_CODE');
    expect((await exchange(bound.code!, v, fresh)).status).toBe(200);

    // The switch stays: a project whose callback can only exchange on the server may turn it off.
    await stack.cli('auth', 'set', '--project', fresh.slug, '--require-code-verifier', 'off');
    const plain = await svcCode({}, 'plain', fresh);
    expect((await exchange(plain.code!, undefined, fresh)).status).toBe(200);
    // "default" is on again.
    await stack.cli('auth', 'set', '--project', fresh.slug, '--require-code-verifier', 'default');
    expect((await svcCode({}, 'again', fresh)).status).toBe(400);
  });
});

describe('exact callback URLs', () => {
  const start = (callbackURL: string) => client(stack, p.keys.live).post('/sign-in/social', { provider: 'oidc', callbackURL });

  it('any path on an allowed origin until one is registered; then only registered URLs, compared exactly', async () => {
    expect((await start(`${APP}/any/path?next=https://evil.test`)).status).toBe(200);
    const out = JSON.parse(await stack.cli('callback', 'allow', `${APP}/auth/done`, '--project', p.slug, '--json'));
    expect(out).toEqual({ url: `${APP}/auth/done` });
    try {
      expect(JSON.parse(await stack.cli('callback', 'list', '--project', p.slug, '--json'))).toEqual([`${APP}/auth/done`]);
      for (const bad of [
        `${APP}/any/path?next=https://evil.test`,
        `${APP}/auth/done?next=https://evil.test`,
        `${APP}/auth/done/`,
        `${APP}/auth/done#x`,
        `${APP}/auth`,
      ]) {
        const r = await start(bad);
        expect([r.status, r.body.code], bad).toEqual([400, 'REDIRECT_NOT_ALLOWED']);
      }
      expect((await start(`${APP}/auth/done`)).status).toBe(200);
      expect((await start('https://APP.example.com:443/auth/done')).status).toBe(200); // the same URL, normalised
      // Hosted flows obey the same list.
      const hosted = await stack.api(
        'POST',
        '/api/v1/auth/hosted/email-otp/send',
        undefined,
        { slug: p.slug, email: 'x@corp.test', redirectUri: `${APP}/elsewhere` },
        { origin: APP },
      );
      expect(hosted.body.code).toBe('REDIRECT_NOT_ALLOWED');
    } finally {
      await stack.cli('callback', 'remove', `${APP}/auth/done`, '--project', p.slug);
    }
    expect((await start(`${APP}/any/path`)).status).toBe(200);
  });

  it('refuses to register a URL with a fragment, credentials, another scheme, or an origin not allowed', async () => {
    const admin = (url: string) =>
      stack.admin('POST', `/admin/v1/projects/${p.slug}/auth/callbacks`, { url }).then(
        () => 'accepted',
        (e: Error) => e.message,
      );
    expect(await admin(`${APP}/cb#frag`)).toMatch(/without credentials or fragment/);
    expect(await admin('https://user:pw@app.example.com/cb')).toMatch(/without credentials/);
    expect(await admin('javascript:alert(1)')).toMatch(/http/);
    expect(await admin('https://other.example.com/cb')).toMatch(/Allow its origin first/);
  });
});
