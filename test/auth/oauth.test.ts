// auth/oauth.ts on a real store, up to the provider: where a sign-in may return (exact allowed
// origin, and the exact callback URLs once a project registers any), the browser binding a project
// may require, the authorization request (state, PKCE S256, nonce kept server side, the state usable
// once) and every callback that ends before the provider's token endpoint is called.
import * as oauth from 'oauth4webapi';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuthCrypto, sha256 } from '../../auth/crypto.js';
import { AuthEvents } from '../../auth/events.js';
import { OAuthFlows } from '../../auth/oauth.js';
import { ProjectAuthConfig } from '../../auth/project-config.js';
import { providers } from '../../auth/providers/index.js';
import { Sessions } from '../../auth/sessions.js';
import { settings } from '../../auth/settings.js';
import { RateLimiter } from '../../control/limits/rate-limit.js';
import { clock } from '../../core/clock.js';
import { loadConfig } from '../../core/config.js';
import type { ApiError } from '../../core/errors.js';
import { localInvalidator } from '../../core/invalidation.js';
import { createLogger } from '../../core/log.js';
import { unitStore, type UnitStore } from '../helpers/unit-store.js';

const APP = 'https://app.example.com';
const origin = { ip: '203.0.113.1', userAgent: 'ua' };
let u: UnitStore;
let flows: OAuthFlows;
let projects: ProjectAuthConfig;
const crypto = new AuthCrypto('o'.repeat(64));
const code = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (e: ApiError) => e.code,
  );

beforeEach(async () => {
  u = await unitStore();
  const log = createLogger('test', 'silent');
  const events = new AuthEvents({ audit: u.store.audit, limiter: new RateLimiter(), log });
  projects = new ProjectAuthConfig(u.store.signIn, crypto);
  flows = new OAuthFlows({
    config: loadConfig({ POSTGATE_BASE_URL: 'https://id.postgate.test/' }),
    log,
    store: u.store.signIn,
    crypto,
    sessions: new Sessions(u.store.signIn, localInvalidator(), events),
    projects,
    events,
  });
  await u.store.signIn.addOrigin(u.project.id, APP, 1);
  await projects.set(u.project.id, 'google', { clientId: 'google-client', clientSecret: 'google-secret' });
});

afterEach(async () => {
  clock.setOffset(0);
  await u.close();
});

describe('where a sign-in may return', () => {
  it('to any URL on an allowed origin while the project registers no exact URL', async () => {
    expect((await flows.checkCallbackUrl(u.project.id, `${APP}/any/path?x=1`)).toString()).toBe(`${APP}/any/path?x=1`);
  });

  it('never to another origin, a look-alike, another scheme or port, or with credentials', async () => {
    for (const bad of [
      'https://evil.example',
      'https://app.example.com.evil.example/cb',
      'http://app.example.com/cb',
      'https://app.example.com:8443/cb',
      'https://user@app.example.com/cb',
      'javascript:alert(1)',
      '//app.example.com/cb',
      'not a url',
    ])
      expect(await code(flows.checkCallbackUrl(u.project.id, bad)), bad).toBe('REDIRECT_NOT_ALLOWED');
  });

  it('only to a registered URL, exactly, once the project registers any', async () => {
    await u.store.signIn.addCallbackUrl(u.project.id, `${APP}/auth/done`, 1);
    expect(await code(flows.checkCallbackUrl(u.project.id, `${APP}/auth/done`))).toBe('accepted');
    for (const bad of [`${APP}/auth/done?next=//evil.example`, `${APP}/auth/done/`, `${APP}/auth/other`, `${APP}/auth/done#`])
      expect(await code(flows.checkCallbackUrl(u.project.id, bad)), bad).toBe('REDIRECT_NOT_ALLOWED');
  });
});

describe('the browser binding of a start', () => {
  it('is taken when given, required by default, and optional where the project says so', async () => {
    expect(await code(flows.checkChallenge(u.project.id, undefined))).toBe('INVALID_REQUEST');
    await projects.putSettings(u.project.id, { requireCodeVerifier: false });
    expect(await flows.checkChallenge(u.project.id, 'abc')).toBe('abc');
    expect(await flows.checkChallenge(u.project.id, undefined)).toBeNull();
    await projects.putSettings(u.project.id, { requireCodeVerifier: true });
    expect(await code(flows.checkChallenge(u.project.id, undefined))).toBe('INVALID_REQUEST');
    expect(await flows.checkChallenge(u.project.id, 'abc')).toBe('abc');
  });
});

describe('start', () => {
  it('sends the browser to the provider with state, PKCE S256 and a nonce, all kept server side', async () => {
    const cfg = (await projects.provider(u.project.id, 'google'))!;
    const to = new URL(await flows.start(u.caller(), providers.get('google')!, cfg, `${APP}/cb`, 'browser-challenge'));
    expect(to.origin + to.pathname).toBe('https://accounts.google.com/o/oauth2/v2/auth');
    const q = to.searchParams;
    expect(Object.fromEntries(q)).toMatchObject({
      response_type: 'code',
      client_id: 'google-client',
      redirect_uri: 'https://id.postgate.test/callback/google',
      scope: 'openid email profile',
      code_challenge_method: 'S256',
    });
    expect(q.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('nonce')).toBeTruthy();
    // The state is stored as its hash, and taken once.
    expect(await u.store.signIn.takeState(q.get('state')!)).toBeUndefined();
    const st = (await u.store.signIn.takeState(sha256(q.get('state')!)))!;
    expect(st).toMatchObject({ provider: 'google', callbackUrl: `${APP}/cb`, nonce: q.get('nonce'), clientChallenge: 'browser-challenge', env: 'live' });
    expect(st.expiresAt - clock.now()).toBeLessThanOrEqual(settings.oauthStateTtlMs);
    // The PKCE verifier is sealed at rest, and the challenge sent is its S256.
    expect(st.codeVerifier).toMatch(/^v1\./);
    expect(await oauth.calculatePKCECodeChallenge(crypto.decrypt(st.codeVerifier))).toBe(q.get('code_challenge'));
    expect(await u.store.signIn.takeState(sha256(q.get('state')!))).toBeUndefined();
  });

  it('a plain OAuth provider gets no nonce', async () => {
    await projects.set(u.project.id, 'github', { clientId: 'gh', clientSecret: 's' });
    const cfg = (await projects.provider(u.project.id, 'github'))!;
    const to = new URL(await flows.start(u.caller(), providers.get('github')!, cfg, `${APP}/cb`, 'browser-challenge'));
    expect(to.searchParams.get('nonce')).toBeNull();
    expect(to.searchParams.get('code_challenge_method')).toBe('S256');
  });

  it('refuses a callback that is not allowed before storing anything', async () => {
    const cfg = (await projects.provider(u.project.id, 'google'))!;
    expect(await code(flows.start(u.caller(), providers.get('google')!, cfg, 'https://evil.example/cb', undefined))).toBe('REDIRECT_NOT_ALLOWED');
  });
});

describe('callback', () => {
  async function started(callback = `${APP}/cb?svc_code=stale&keep=1`) {
    const cfg = (await projects.provider(u.project.id, 'google'))!;
    return new URL(await flows.start(u.caller(), providers.get('google')!, cfg, callback, 'browser-challenge')).searchParams.get('state')!;
  }
  const failures = async () => (await u.store.audit.list(u.project.id, { limit: 10 }))!.entries.map((e) => e.reason);

  it('an unknown, missing, used, expired or other provider’s state is refused without a redirect', async () => {
    expect(await code(flows.callback('google', new URLSearchParams({ state: 'made-up', code: 'c' }), origin))).toBe('INVALID_REQUEST');
    expect(await code(flows.callback('google', new URLSearchParams({ code: 'c' }), origin))).toBe('INVALID_REQUEST');
    const state = await started();
    expect(await code(flows.callback('github', new URLSearchParams({ state, code: 'c' }), origin))).toBe('INVALID_REQUEST');
    // Taken by the refused attempt: a state is usable once, whoever comes first.
    expect(await code(flows.callback('google', new URLSearchParams({ state, error: 'access_denied' }), origin))).toBe('INVALID_REQUEST');
    const old = await started();
    clock.setOffset(settings.oauthStateTtlMs + 1);
    expect(await code(flows.callback('google', new URLSearchParams({ state: old, error: 'access_denied' }), origin))).toBe('INVALID_REQUEST');
  });

  it('the provider’s refusal goes back to the app as ?error=, its own code only when it looks like one', async () => {
    const back = new URL(await flows.callback('google', new URLSearchParams({ state: await started(), error: 'access_denied' }), origin));
    expect(back.origin + back.pathname).toBe(`${APP}/cb`);
    expect(back.searchParams.get('error')).toBe('access_denied');
    // The stale svc_code is dropped; the app's own parameters stay.
    expect(back.searchParams.get('svc_code')).toBeNull();
    expect(back.searchParams.get('keep')).toBe('1');
    const odd = new URL(await flows.callback('google', new URLSearchParams({ state: await started(), error: '<script>' }), origin));
    expect(odd.searchParams.get('error')).toBe('server_error');
    expect(await failures()).toEqual(['provider_refused', 'provider_refused']);
  });

  it('a provider disabled since the start: ?error=provider_not_enabled', async () => {
    const state = await started();
    await projects.disable(u.project.id, 'google');
    const back = new URL(await flows.callback('google', new URLSearchParams({ state, code: 'c' }), origin));
    expect(back.searchParams.get('error')).toBe('provider_not_enabled');
    expect(await failures()).toEqual(['provider_not_enabled']);
  });
});
