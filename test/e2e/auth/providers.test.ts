// Sign-in through providers against real peers on loopback: oidc-provider
// (Google-like and generic OpenID: real code + PKCE flow, id_tokens, JWKS),
// VK ID, Yandex ID and GitHub look-alikes, Telegram payloads signed with a
// test bot token. OAuth redirects (exact-origin callbacks, single-use state and
// svc_code, project and key-kind isolation) and POST /verify-token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import crypto from 'node:crypto';
import type { Stack, Project } from '../../helpers/stack.js';
import {
  APP,
  TEST_BOT as BOT,
  allowOrigin,
  authStack,
  checkString,
  client,
  hmacHex as hmac,
  provider,
  setClock,
  signedWidget as widget,
  unixNow as now,
  viaLoopback,
} from './setup.js';
import { browse, startGitHub, startOpenIdProvider, startVk, startYandex, type GitHubPeer, type OpenIdProvider, type VkPeer, type YandexPeer } from './peers.js';

let stack: Stack;
let idp: OpenIdProvider;
let vk: VkPeer;
let yandex: YandexPeer;
let github: GitHubPeer;
/** The OAuth project. */
let p: Project;
/** The verify-token project and its client. */
let tp: Project;
let api: ReturnType<typeof client>;
let base: string;

beforeAll(async () => {
  stack = await authStack();
  base = `http://localhost:${new URL(stack.url).port}`;
  [idp, vk, yandex, github] = await Promise.all([
    startOpenIdProvider([
      {
        client_id: 'google-client',
        client_secret: 'google-secret',
        redirect_uris: [`${base}/callback/google`],
        token_endpoint_auth_method: 'client_secret_post',
      },
      { client_id: 'oidc-client', client_secret: 'oidc-secret', redirect_uris: [`${base}/callback/oidc`] },
      ...['other-client', 'tg-client'].map((id) => ({ client_id: id, client_secret: `${id}-secret`, redirect_uris: [] })),
    ]),
    startVk('vk-app'),
    startYandex('ya-app', 'ya-secret'),
    startGitHub('gh-app', 'gh-secret'),
  ]);
  [p, tp] = await Promise.all([stack.createProject('oauth'), stack.createProject('tokens')]);
  // The providers' flows are under test here, not the browser binding (login-csrf.test.ts): the app exchanges svc_code bare.
  await stack.admin('PATCH', `/admin/v1/projects/${p.slug}/auth/settings`, { requireCodeVerifier: false });
  api = client(stack, tp.keys.live);
  const jwks = { issuer: idp.issuer, jwksUrl: `${idp.issuer}/jwks` };
  await Promise.all([
    allowOrigin(stack, p),
    provider(stack, p, 'google', {
      clientId: 'google-client',
      clientSecret: 'google-secret',
      issuer: idp.issuer,
      authorizationUrl: `${idp.issuer}/auth`,
      tokenUrl: `${idp.issuer}/token`,
      jwksUrl: `${idp.issuer}/jwks`,
    }),
    provider(stack, p, 'oidc', { clientId: 'oidc-client', clientSecret: 'oidc-secret', issuer: idp.issuer }), // endpoints by discovery
    provider(stack, p, 'vk', {
      clientId: 'vk-app',
      clientSecret: vk.serviceToken,
      authorizationUrl: `${vk.url}/authorize`,
      tokenUrl: `${vk.url}/oauth2/auth`,
      userinfoUrl: `${vk.url}/oauth2/user_info`,
      apiUrl: `${vk.url}/method`,
    }),
    provider(stack, p, 'yandex', {
      clientId: 'ya-app',
      clientSecret: 'ya-secret',
      authorizationUrl: `${yandex.url}/authorize`,
      tokenUrl: `${yandex.url}/token`,
      userinfoUrl: `${yandex.url}/info`,
    }),
    provider(stack, p, 'github', {
      clientId: 'gh-app',
      clientSecret: 'gh-secret',
      authorizationUrl: `${github.url}/login/oauth/authorize`,
      tokenUrl: `${github.url}/login/oauth/access_token`,
      userinfoUrl: `${github.url}/user`,
      apiUrl: github.url,
    }),
    provider(stack, tp, 'google', { clientId: 'google-client', methods: ['id_token'], ...jwks }),
    provider(stack, tp, 'oidc', { clientId: 'oidc-client', methods: ['oidc'], ...jwks }),
    provider(stack, tp, 'telegram', { clientId: 'tg-client', botToken: BOT, methods: ['widget', 'miniapp', 'oidc'], ...jwks }),
    provider(stack, tp, 'vk', { clientId: 'vk-app', clientSecret: vk.serviceToken, methods: ['silent_token'], apiUrl: `${vk.url}/method` }),
    provider(stack, tp, 'yandex', { clientId: 'ya-app', methods: ['instant_token'], userinfoUrl: `${yandex.url}/info` }),
  ]);
});

afterAll(async () => {
  await Promise.all([idp?.close(), vk?.close(), yandex?.close(), github?.close()]);
  await stack?.stop();
});

/** Starts a sign-in and plays the browser until the provider sends it back to postgate's callback. */
async function toCallback(key: string, prov: string, callbackURL = `${APP}/auth/done?from=test`, tweak: (u: URL) => void = () => {}): Promise<string> {
  const start = await client(stack, key).post('/sign-in/social', { provider: prov, method: 'oauth', callbackURL });
  expect(start.status, JSON.stringify(start.body)).toBe(200);
  const url = new URL(start.body.url);
  expect(url.searchParams.get('code_challenge_method')).toBe('S256');
  expect(url.searchParams.get('redirect_uri')).toBe(`${base}/callback/${prov}`);
  tweak(url);
  return browse(url.toString(), (u) => u.startsWith(`${base}/callback/`), viaLoopback);
}

/** postgate's answer to the provider's redirect: the Location it sends the browser to. */
async function land(callbackUrl: string): Promise<{ status: number; location: string | null; body: string }> {
  const res = await fetch(viaLoopback(callbackUrl), { redirect: 'manual', headers: { 'user-agent': 'TestBrowser/1.0' } });
  return { status: res.status, location: res.headers.get('location'), body: await res.text() };
}

async function signIn(key: string, prov: string): Promise<{ token: string; user: any; svcCode: string }> {
  const back = await land(await toCallback(key, prov));
  expect(back.status, back.body).toBe(302);
  const svcCode = new URL(back.location!).searchParams.get('svc_code');
  expect(svcCode, back.location!).toBeTruthy();
  const ex = await client(stack, key).post('/exchange-code', { code: svcCode });
  expect(ex.status, JSON.stringify(ex.body)).toBe(200);
  return { ...ex.body, svcCode };
}

describe('OAuth with an OpenID provider (Google)', () => {
  it('runs the code + PKCE + nonce flow and hands the app a one-time svc_code for {token, user}', async () => {
    idp.loginAs({ sub: 'g-100', email: 'Alice@gmail.com', email_verified: true, name: 'Alice', picture: 'https://img.test/a.png' });
    const back = await land(await toCallback(p.keys.live, 'google'));
    expect(back.status).toBe(302);
    const loc = new URL(back.location!);
    expect(loc.origin + loc.pathname).toBe(`${APP}/auth/done`);
    expect(loc.searchParams.get('from')).toBe('test');
    const code = loc.searchParams.get('svc_code')!;
    const ex = await client(stack, p.keys.live).post('/exchange-code', { code });
    expect(ex.status).toBe(200);
    expect(ex.body.token).toMatch(/^pgs_[A-Za-z0-9_-]{43}$/);
    expect(ex.body.user).toMatchObject({
      email: 'alice@gmail.com',
      emailVerified: true,
      name: 'Alice',
      avatarUrl: 'https://img.test/a.png',
      provider: 'google',
      phone: null,
    });
    expect(ex.body.user.id).toMatch(/^[0-9a-f-]{36}$/);
    const s = await client(stack, p.keys.live).session(ex.body.token);
    expect(s.status).toBe(200);
    expect(s.body.user).toMatchObject({ id: ex.body.user.id, email: 'alice@gmail.com', provider: 'google' });

    // The same Google account signs in again: the same user, found by (provider, subject).
    const again = await signIn(p.keys.live, 'google');
    expect(again.user.id).toBe(ex.body.user.id);
    expect(again.user.lastSignIn).toBeTruthy();
  });

  it('a svc_code works once: the second use fails and revokes the session it opened', async () => {
    idp.loginAs({ sub: 'g-200', email: 'bob@gmail.com', email_verified: true, name: 'Bob' });
    const first = await signIn(p.keys.live, 'google');
    expect((await client(stack, p.keys.live).session(first.token)).status).toBe(200);
    const second = await client(stack, p.keys.live).post('/exchange-code', { code: first.svcCode });
    expect(second.status).toBe(400);
    expect(second.body).toMatchObject({ code: 'INVALID_CODE', error: expect.any(String) });
    const after = await client(stack, p.keys.live).session(first.token);
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('SESSION_INVALID');
  });

  it('a svc_code lives one minute', async () => {
    idp.loginAs({ sub: 'g-250', email: 'slow@gmail.com', email_verified: true });
    const back = await land(await toCallback(p.keys.live, 'google'));
    const code = new URL(back.location!).searchParams.get('svc_code');
    try {
      await setClock(stack, 61_000);
      const late = await client(stack, p.keys.live).post('/exchange-code', { code });
      expect(late.status).toBe(400);
      expect(late.body.code).toBe('CODE_EXPIRED');
    } finally {
      await setClock(stack, 0);
    }
  });

  it('a state is usable once: replaying the provider redirect is refused without a redirect', async () => {
    idp.loginAs({ sub: 'g-300', email: 'carol@gmail.com', email_verified: true });
    const cb = await toCallback(p.keys.live, 'google');
    expect((await land(cb)).status).toBe(302);
    const replay = await land(cb);
    expect(replay.status).toBe(400);
    expect(JSON.parse(replay.body)).toMatchObject({ code: 'INVALID_REQUEST' });
    // A made-up state and a state of another provider are refused the same way.
    expect((await land(`${base}/callback/google?code=x&state=forged`)).status).toBe(400);
    const other = await toCallback(p.keys.live, 'google');
    expect((await land(other.replace('/callback/google', '/callback/github'))).status).toBe(400);
  });

  it('the long callback path /api/v1/auth/callback/:provider works too', async () => {
    idp.loginAs({ sub: 'g-400', email: 'dan@gmail.com', email_verified: true });
    const cb = await toCallback(p.keys.live, 'google');
    const back = await land(cb.replace('/callback/google', '/api/v1/auth/callback/google'));
    expect(back.status).toBe(302);
    expect(new URL(back.location!).searchParams.get('svc_code')).toBeTruthy();
  });

  it('a Google address outside Gmail/Workspace is kept but not trusted for linking', async () => {
    idp.loginAs({ sub: 'g-500', email: 'eve@example.org', email_verified: true });
    const r = await signIn(p.keys.live, 'google');
    expect(r.user).toMatchObject({ email: 'eve@example.org', emailVerified: false });
  });
});

describe('callbackURL: exact origin match, no open redirect', () => {
  const attempts = [
    'https://evil.example.com/cb',
    'https://app.example.com.evil.com/cb',
    'https://app.example.com@evil.com/cb',
    'https://evil.com\\@app.example.com/',
    'http://app.example.com/cb',
    'https://app.example.com:8443/cb',
    'javascript:alert(1)',
    '//evil.com/cb',
    '/relative/path',
    'data:text/html,hi',
  ];
  for (const callbackURL of attempts) {
    it(`refuses ${callbackURL}`, async () => {
      const r = await client(stack, p.keys.live).post('/sign-in/social', { provider: 'google', method: 'oauth', callbackURL });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: 'REDIRECT_NOT_ALLOWED', error: expect.any(String) });
    });
  }

  it('refuses a provider that is not enabled', async () => {
    const r = await client(stack, p.keys.live).post('/sign-in/social', { provider: 'telegram', method: 'oauth', callbackURL: `${APP}/cb` });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('PROVIDER_NOT_ENABLED');
  });
});

describe('generic OpenID issuer (discovery)', () => {
  it('signs in through the discovered endpoints; its email never links accounts', async () => {
    idp.loginAs({ sub: 'o-1', email: 'alice@gmail.com', email_verified: true, name: 'Alice O' });
    const r = await signIn(p.keys.live, 'oidc');
    expect(r.user).toMatchObject({ provider: 'oidc', email: 'alice@gmail.com', emailVerified: false, name: 'Alice O' });
    expect(r.user.id).not.toBe((await signInGoogleAlice()).user.id);
  });
});

describe('VK ID', () => {
  it('exchanges the code with device_id and PKCE; the VK email is not trusted', async () => {
    vk.users.set('1234567', {
      user_id: '1234567',
      first_name: 'Ivan',
      last_name: 'Petrov',
      email: 'alice@gmail.com',
      phone: '79991234567',
      avatar: 'https://vk.test/a.jpg',
    });
    vk.current = '1234567';
    const r = await signIn(p.keys.live, 'vk');
    expect(r.user).toMatchObject({
      provider: 'vk',
      name: 'Ivan Petrov',
      email: 'alice@gmail.com',
      emailVerified: false,
      phone: '+79991234567',
      avatarUrl: 'https://vk.test/a.jpg',
    });
    // Not linked to the Google user with the same (verified) address.
    const g = await client(stack, p.keys.live).session((await signInGoogleAlice()).token);
    expect(g.body.user.id).not.toBe(r.user.id);
  });

  it('VK users without an email are first-class', async () => {
    vk.users.set('7654321', { user_id: '7654321', first_name: 'Olga', last_name: 'S' });
    vk.current = '7654321';
    const r = await signIn(p.keys.live, 'vk');
    expect(r.user).toMatchObject({ provider: 'vk', email: null, emailVerified: false, name: 'Olga S' });
  });
});

async function signInGoogleAlice() {
  idp.loginAs({ sub: 'g-100', email: 'alice@gmail.com', email_verified: true, name: 'Alice' });
  return signIn(p.keys.live, 'google');
}

describe('Yandex ID', () => {
  it('signs in with the token in Authorization: OAuth, never in the URL', async () => {
    yandex.users.set('1000034426', {
      id: '1000034426',
      login: 'ivan',
      real_name: 'Ivan Ivanov',
      default_email: 'ivan@yandex.ru',
      default_phone: '+79037659418',
    });
    yandex.current = '1000034426';
    const r = await signIn(p.keys.live, 'yandex');
    expect(r.user).toMatchObject({
      provider: 'yandex',
      name: 'Ivan Ivanov',
      email: 'ivan@yandex.ru',
      emailVerified: false,
      phone: '+79037659418',
      username: 'ivan',
    });
    expect(yandex.tokenInUrl).toBe(0);
  });
});

describe('GitHub', () => {
  it('takes the verified primary email from /user/emails and links an email-code sign-in to it', async () => {
    github.users.set('42', {
      id: 42,
      login: 'octo',
      name: 'Octo Cat',
      emails: [
        { email: 'octo@unverified.test', primary: false, verified: false, visibility: null },
        { email: 'octo@example.com', primary: true, verified: true, visibility: 'public' },
      ],
    });
    github.current = '42';
    const r = await signIn(p.keys.test, 'github');
    expect(r.user).toMatchObject({ provider: 'github', email: 'octo@example.com', emailVerified: true, username: 'octo', name: 'Octo Cat' });
    // An email code proves the same address: the same user (test environment: the code is read, not sent).
    const c = client(stack, p.keys.test, { 'x-service-client-ip': '203.0.113.50' });
    expect((await c.post('/sign-in/email-otp/send', { email: 'Octo@Example.com' })).status).toBe(200);
    const code = (await c.get('/test/code?email=octo@example.com')).body.code;
    const v = await c.post('/sign-in/email-otp/verify', { email: 'octo@example.com', code });
    expect(v.status).toBe(200);
    expect(v.body.user.id).toBe(r.user.id);
  });

  it('without a verified email the user has none verified', async () => {
    github.users.set('43', {
      id: 43,
      login: 'nomail',
      name: 'No Mail',
      emails: [{ email: 'x@unverified.test', primary: true, verified: false, visibility: null }],
    });
    github.current = '43';
    const r = await signIn(p.keys.live, 'github');
    expect(r.user).toMatchObject({ email: null, emailVerified: false, username: 'nomail' });
  });

  it("sends the provider's error back to the app as ?error=", async () => {
    github.current = '42';
    const cb = await toCallback(p.keys.live, 'github', `${APP}/cb`, (u) => u.searchParams.set('deny', '1'));
    const back = await land(cb);
    expect(back.status).toBe(302);
    const loc = new URL(back.location!);
    expect(loc.origin).toBe(APP);
    expect(loc.searchParams.get('error')).toBe('access_denied');
    expect(loc.searchParams.has('svc_code')).toBe(false);
  });

  it('a failed code exchange goes back as ?error= too', async () => {
    github.current = '42';
    const cb = new URL(await toCallback(p.keys.live, 'github'));
    cb.searchParams.set('code', 'not-a-real-code');
    const back = await land(cb.toString());
    expect(new URL(back.location!).searchParams.get('error')).toBe('invalid_grant');
  });
});

describe('isolation of svc_codes', () => {
  it('another project cannot exchange the code, nor the other key kind; the owner still can', async () => {
    const other = await stack.createProject('oauth-other');
    github.current = '42';
    const back = await land(await toCallback(p.keys.live, 'github'));
    const code = new URL(back.location!).searchParams.get('svc_code');
    const foreign = await client(stack, other.keys.live).post('/exchange-code', { code });
    expect(foreign.status).toBe(400);
    expect(foreign.body.code).toBe('INVALID_CODE');
    const otherKind = await client(stack, p.keys.test).post('/exchange-code', { code });
    expect(otherKind.body.code).toBe('INVALID_CODE');
    const mine = await client(stack, p.keys.live).post('/exchange-code', { code });
    expect(mine.status).toBe(200);
    // The live token is not a test-environment session, nor another project's.
    expect((await client(stack, p.keys.test).session(mine.body.token)).status).toBe(401);
    expect((await client(stack, other.keys.live).session(mine.body.token)).status).toBe(401);
  });

  it('needs a key', async () => {
    const r = await stack.api('POST', '/api/v1/auth/exchange-code', undefined, { code: 'x' });
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('INVALID_API_KEY');
  });
});

// ---------------------------------------------------------------- POST /verify-token

const verify = (provider: string, method: string, credential: string, extra: Record<string, unknown> = {}) =>
  api.post('/verify-token', { provider, method, credential, ...extra });

describe('Google id_token (One Tap)', () => {
  it('accepts a real id_token: JWKS signature, iss, aud = project client id, nonce', async () => {
    const jwt = await idp.idToken(
      'google-client',
      { sub: 'g-1', email: 'ann@gmail.com', email_verified: true, name: 'Ann', picture: 'https://img.test/ann.png' },
      'n-123',
    );
    const r = await verify('google', 'id_token', jwt, { nonce: 'n-123' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.token).toMatch(/^pgs_/);
    expect(r.body.user).toEqual({ id: expect.any(String), email: 'ann@gmail.com', name: 'Ann', avatarUrl: 'https://img.test/ann.png' });
    const s = await api.session(r.body.token);
    expect(s.body.user).toMatchObject({ id: r.body.user.id, emailVerified: true, provider: 'google' });
  });

  it('refuses a token minted for another client (wrong audience)', async () => {
    const jwt = await idp.idToken('other-client', { sub: 'g-2', email: 'x@gmail.com', email_verified: true });
    const r = await verify('google', 'id_token', jwt);
    expect(r.status).toBe(401);
    expect(r.body).toMatchObject({ code: 'INVALID_CREDENTIAL', error: expect.stringContaining('aud') });
  });

  it('refuses a nonce that does not match, a forged signature and garbage', async () => {
    const jwt = await idp.idToken('google-client', { sub: 'g-3', email: 'y@gmail.com', email_verified: true }, 'right');
    expect((await verify('google', 'id_token', jwt, { nonce: 'wrong' })).body.code).toBe('INVALID_CREDENTIAL');
    const [h, body] = jwt.split('.');
    const claims = JSON.parse(Buffer.from(body!, 'base64url').toString());
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url')}.${jwt.split('.')[2]}`;
    expect((await verify('google', 'id_token', forged)).body.code).toBe('INVALID_CREDENTIAL');
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${body}.`;
    expect((await verify('google', 'id_token', none)).body.code).toBe('INVALID_CREDENTIAL');
    expect((await verify('google', 'id_token', 'not-a-jwt')).status).toBe(401);
  });

  it('refuses an expired token (clock moved past exp)', async () => {
    const jwt = await idp.idToken('google-client', { sub: 'g-4', email: 'z@gmail.com', email_verified: true });
    expect((await verify('google', 'id_token', jwt)).status).toBe(200);
    try {
      await setClock(stack, 2 * 3600_000);
      const r = await verify('google', 'id_token', jwt);
      expect(r.status).toBe(401);
      expect(r.body).toMatchObject({ code: 'INVALID_CREDENTIAL', error: expect.stringContaining('expired') });
    } finally {
      await setClock(stack, 0);
    }
  });

  it('refuses a token of another issuer', async () => {
    const q = await stack.createProject('tokens-iss');
    await provider(stack, q, 'google', { clientId: 'google-client', methods: ['id_token'], jwksUrl: `${idp.issuer}/jwks` }); // Google's issuer
    const jwt = await idp.idToken('google-client', { sub: 'g-5' });
    const r = await client(stack, q.keys.live).post('/verify-token', { provider: 'google', method: 'id_token', credential: jwt });
    expect(r.body).toMatchObject({ code: 'INVALID_CREDENTIAL', error: expect.stringContaining('iss') });
  });

  it('refuses a method the project did not enable', async () => {
    const r = await verify('google', 'oidc', 'x');
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('PROVIDER_NOT_ENABLED');
    expect((await verify('github', 'id_token', 'x')).body.code).toBe('PROVIDER_NOT_ENABLED');
  });
});

describe('OpenID issuers: oidc method', () => {
  it('accepts an id_token of the configured issuer (generic and Telegram Login)', async () => {
    const a = await verify('oidc', 'oidc', await idp.idToken('oidc-client', { sub: 'o-1', email: 'o@corp.test', email_verified: true, name: 'O' }));
    expect(a.status).toBe(200);
    expect(a.body.user).toMatchObject({ email: 'o@corp.test', name: 'O' });
    const t = await verify('telegram', 'oidc', await idp.idToken('tg-client', { sub: 't-1', name: 'Tg User' }));
    expect(t.status).toBe(200);
    expect(t.body.user).toMatchObject({ email: null, name: 'Tg User' });
    expect((await verify('telegram', 'oidc', await idp.idToken('oidc-client', { sub: 't-2' }))).body.code).toBe('INVALID_CREDENTIAL');
  });
});

describe('VK silent token', () => {
  it('exchanges it with the service token (exchangeSilentAuthToken) and reads the profile', async () => {
    vk.users.set('555', { user_id: '555', first_name: 'Pavel', last_name: 'D', phone: '79990001122', avatar: 'https://vk.test/p.jpg' });
    vk.silent.set('silent-1', { uuid: 'uuid-1', user: '555' });
    const r = await verify('vk', 'silent_token', JSON.stringify({ token: 'silent-1', uuid: 'uuid-1' }));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.user).toMatchObject({ email: null, name: 'Pavel D' });
    // VK makes a silent token single-use; a replay fails there and here.
    expect((await verify('vk', 'silent_token', JSON.stringify({ token: 'silent-1', uuid: 'uuid-1' }))).body.code).toBe('INVALID_CREDENTIAL');
    vk.silent.set('silent-2', { uuid: 'uuid-2', user: '555' });
    expect((await verify('vk', 'silent_token', JSON.stringify({ token: 'silent-2', uuid: 'other' }))).body.code).toBe('INVALID_CREDENTIAL');
    expect((await verify('vk', 'silent_token', 'silent-2')).body.code).toBe('INVALID_CREDENTIAL');
  });
});

describe('Yandex instant token', () => {
  it("accepts a token issued to the project's app and refuses one issued to another app", async () => {
    yandex.users.set('77', { id: '77', login: 'ya77', real_name: 'Ya User', default_email: 'ya77@yandex.ru' });
    const ok = await verify('yandex', 'instant_token', yandex.instantToken('ya-app', '77'));
    expect(ok.status).toBe(200);
    expect(ok.body.user).toMatchObject({ email: 'ya77@yandex.ru', name: 'Ya User' });
    const foreign = await verify('yandex', 'instant_token', yandex.instantToken('someone-elses-app', '77'));
    expect(foreign.status).toBe(401);
    expect(foreign.body).toMatchObject({ code: 'INVALID_CREDENTIAL', error: expect.stringContaining('another application') });
    expect(yandex.tokenInUrl).toBe(0);
  });
});

// ---------------------------------------------------------------- Telegram

function initData(user: Record<string, unknown>, authDate = now(), bot = BOT): string {
  const params = new URLSearchParams({
    query_id: 'AAHdF6IQAAAAAN0XohDhrOrc',
    user: JSON.stringify(user),
    auth_date: String(authDate),
    signature: 'sig-ed25519-not-checked',
  });
  params.set('hash', hmac(crypto.createHmac('sha256', 'WebAppData').update(bot).digest(), checkString([...params.entries()])));
  return params.toString();
}

describe('Telegram Login Widget', () => {
  const tg = (body: unknown) => api.post('/sign-in/telegram/widget', body);

  it('accepts signed data including fields beyond the five the spec names, once', async () => {
    const data = widget({
      id: 99001,
      first_name: 'Tom',
      last_name: 'Riddle',
      username: 'tom',
      photo_url: 'https://t.me/i/userpic/320/tom.jpg',
      auth_date: now(),
    });
    const r = await tg(data);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.user).toEqual({ id: expect.any(String), name: 'Tom Riddle', phone: null });
    const replay = await tg(data);
    expect(replay.status).toBe(401);
    expect(replay.body.code).toBe('INVALID_CREDENTIAL');
    // The same Telegram account signs in again with fresh data: the same user.
    const again = await tg(widget({ id: 99001, first_name: 'Tom', username: 'tom', auth_date: now() }));
    expect(again.body.user.id).toBe(r.body.user.id);
  });

  it('refuses forged data: a changed field, a dropped field, another bot, a bad hash', async () => {
    const data = widget({ id: 99002, first_name: 'Ann', last_name: 'Lee', auth_date: now() });
    expect((await tg({ ...data, first_name: 'Eve' })).body.code).toBe('INVALID_CREDENTIAL');
    const { last_name: _dropped, ...withoutLast } = data;
    expect((await tg(withoutLast)).body.code).toBe('INVALID_CREDENTIAL');
    expect((await tg({ ...data, id: 99003 })).body.code).toBe('INVALID_CREDENTIAL');
    expect((await tg(widget({ id: 99002, first_name: 'Ann', auth_date: now() }, '987:otherbot'))).body.code).toBe('INVALID_CREDENTIAL');
    expect((await tg({ ...data, hash: 'zz' })).status).toBe(401);
  });

  it('refuses old and future auth_date; the window is a project setting', async () => {
    const old = widget({ id: 99004, first_name: 'Old', auth_date: now() - 11 * 60 });
    expect((await tg(old)).body).toMatchObject({ code: 'INVALID_CREDENTIAL', error: expect.stringContaining('old') });
    expect((await tg(widget({ id: 99004, first_name: 'F', auth_date: now() + 3600 }))).body.code).toBe('INVALID_CREDENTIAL');
    await stack.admin('PATCH', `/admin/v1/projects/${tp.slug}/auth/settings`, { telegramWindowSeconds: 3600 });
    try {
      expect((await tg(old)).status).toBe(200);
    } finally {
      await stack.admin('PATCH', `/admin/v1/projects/${tp.slug}/auth/settings`, { telegramWindowSeconds: null });
    }
  });

  it('is refused when the project has no bot token configured', async () => {
    const q = await stack.createProject('tokens-nobot');
    const r = await client(stack, q.keys.live).post('/sign-in/telegram/widget', widget({ id: 1, first_name: 'A', auth_date: now() }));
    expect(r.body.code).toBe('PROVIDER_NOT_ENABLED');
  });
});

describe('Telegram Mini App initData', () => {
  it('accepts initData signed with the WebAppData key, once; refuses tampering and age', async () => {
    const data = initData({ id: 424242, first_name: 'Mini', last_name: 'App', username: 'mini', language_code: 'en' });
    const r = await verify('telegram', 'miniapp', data);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.user).toMatchObject({ email: null, name: 'Mini App' });
    expect((await verify('telegram', 'miniapp', data)).body.code).toBe('INVALID_CREDENTIAL');
    const tampered = initData({ id: 424243, first_name: 'X' }).replace('424243', '424244');
    expect((await verify('telegram', 'miniapp', tampered)).body.code).toBe('INVALID_CREDENTIAL');
    expect((await verify('telegram', 'miniapp', initData({ id: 424245 }, now() - 3600))).body.code).toBe('INVALID_CREDENTIAL');
    // The widget's key is not the Mini App's.
    const widgetSigned = new URLSearchParams(Object.entries(widget({ id: 1, auth_date: now() })).map(([k, v]) => [k, String(v)])).toString();
    expect((await verify('telegram', 'miniapp', widgetSigned)).body.code).toBe('INVALID_CREDENTIAL');
  });
});
