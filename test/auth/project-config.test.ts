// auth/project-config.ts on a real store: allowed origins and callback URLs in their one exact
// form, provider settings validated once (unknown settings, methods and what each needs, region
// rules), secrets encrypted at rest and never shown, the per-project settings and their defaults.
import { beforeEach, afterEach, describe, expect, it } from 'vitest';
import { AuthCrypto } from '../../auth/crypto.js';
import { defOf, normalizeCallbackUrl, normalizeOrigin, ProjectAuthConfig } from '../../auth/project-config.js';
import { settings } from '../../auth/settings.js';
import type { ApiError } from '../../core/errors.js';
import { unitStore, type UnitStore } from '../helpers/unit-store.js';

let u: UnitStore;
let config: ProjectAuthConfig;
const crypto = new AuthCrypto('m'.repeat(64));
const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as ApiError).code;
  }
  return 'accepted';
};
const refused = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (e: ApiError) => `${e.code}: ${e.message}`,
  );

beforeEach(async () => {
  u = await unitStore();
  config = new ProjectAuthConfig(u.store.signIn, crypto);
});

afterEach(() => u.close());

describe('normalizeOrigin', () => {
  it('keeps scheme, host and a non-default port, lower-cased', () => {
    expect(normalizeOrigin('https://App.Example.com')).toBe('https://app.example.com');
    expect(normalizeOrigin(' https://app.example.com/ ')).toBe('https://app.example.com');
    expect(normalizeOrigin('http://localhost:3000')).toBe('http://localhost:3000');
    expect(normalizeOrigin('https://app.example.com:443')).toBe('https://app.example.com');
  });

  it('refuses anything that is more or other than an origin', () => {
    for (const bad of [
      'app.example.com',
      'https://app.example.com/login',
      'https://app.example.com?x=1',
      'https://app.example.com#x',
      'https://user:pw@app.example.com',
      'javascript:alert(1)',
      'ftp://example.com',
      'data:text/html,x',
    ])
      expect(
        refusal(() => normalizeOrigin(bad)),
        bad,
      ).toBe('INVALID_REQUEST');
  });
});

describe('normalizeCallbackUrl', () => {
  it('keeps path and query, in the form new URL() writes', () => {
    expect(normalizeCallbackUrl('https://App.example.com/auth/done?next=%2Fhome')).toBe('https://app.example.com/auth/done?next=%2Fhome');
    expect(normalizeCallbackUrl('https://app.example.com')).toBe('https://app.example.com/');
  });

  it('refuses credentials, a fragment (even empty), other schemes and relative URLs', () => {
    for (const bad of [
      'https://u:p@app.example.com/cb',
      'https://app.example.com/cb#x',
      'https://app.example.com/cb#',
      'javascript:alert(1)//',
      '/cb',
      'custom-scheme://cb',
    ])
      expect(
        refusal(() => normalizeCallbackUrl(bad)),
        bad,
      ).toBe('INVALID_REQUEST');
  });
});

it('defOf names the known providers when refusing an unknown one', () => {
  expect(defOf('google').name).toBe('Google');
  expect(refusal(() => defOf('myspace'))).toBe('INVALID_REQUEST');
});

describe('providers', () => {
  it('only email is on by default', async () => {
    expect((await config.enabled(u.project.id)).map((p) => p.id)).toEqual(['email']);
    expect((await config.list(u.project.id)).map((p) => p.provider)).toEqual(['email']);
    expect(await config.provider(u.project.id, 'google')).toBeUndefined();
    expect(await config.provider(u.project.id, 'nope')).toBeUndefined();
  });

  it('secrets are encrypted at rest and never shown; the decrypted settings reach only the flows', async () => {
    const view = await config.set(u.project.id, 'google', { clientId: 'cid', clientSecret: 'shh-secret' });
    expect(view).toMatchObject({
      provider: 'google',
      enabled: true,
      clientId: 'cid',
      hasClientSecret: true,
      hasBotToken: false,
      methods: ['oauth', 'id_token'],
    });
    expect(JSON.stringify(view)).not.toContain('shh-secret');
    expect(JSON.stringify(await config.list(u.project.id))).not.toContain('shh-secret');
    const row = await u.store.signIn.provider(u.project.id, 'google');
    expect(row!.clientSecret).toMatch(/^v1\./);
    expect(row!.clientSecret).not.toContain('shh-secret');
    expect((await config.provider(u.project.id, 'google'))!.clientSecret).toBe('shh-secret');
    // Another master secret cannot read it.
    await expect(new ProjectAuthConfig(u.store.signIn, new AuthCrypto('x'.repeat(64))).provider(u.project.id, 'google')).rejects.toThrow();
  });

  it('a later change keeps what it does not name; an empty string clears a setting', async () => {
    await config.set(u.project.id, 'google', { clientId: 'cid', clientSecret: 's' });
    await config.set(u.project.id, 'google', { allowCountries: ['de', ' fr '] });
    expect(await config.provider(u.project.id, 'google')).toMatchObject({ clientId: 'cid', clientSecret: 's', region: { allowCountries: ['DE', 'FR'] } });
    // Without its secret, oauth cannot stay on; id_token can.
    const view = await config.set(u.project.id, 'google', { clientSecret: '' });
    expect(view).toMatchObject({ hasClientSecret: false, methods: ['id_token'] });
    await config.set(u.project.id, 'google', { allowCountries: [] });
    expect((await config.provider(u.project.id, 'google'))!.region).toEqual({});
  });

  it('refuses settings a provider does not use, methods it does not have, and methods missing what they need', async () => {
    expect(await refused(config.set(u.project.id, 'github', { botToken: 'x' }))).toMatch(/INVALID_REQUEST: GitHub does not use botToken/);
    expect(await refused(config.set(u.project.id, 'email', { clientId: 'x' }))).toMatch(/methods and region rules only/);
    expect(await refused(config.set(u.project.id, 'google', { clientId: 'c', methods: ['widget'] }))).toMatch(
      /supports the methods oauth, id_token; not widget/,
    );
    expect(await refused(config.set(u.project.id, 'google', { clientId: 'c', methods: ['oauth'] }))).toMatch(/Method oauth of google needs clientSecret/);
    expect(await refused(config.set(u.project.id, 'google', {}))).toMatch(/Nothing to enable for google/);
    expect(await refused(config.set(u.project.id, 'oidc', { clientId: 'c', methods: ['oidc'] }))).toMatch(/needs issuer/);
    expect(await refused(config.set(u.project.id, 'nope', {}))).toMatch(/Unknown provider/);
    // Nothing was stored by a refused change.
    expect(await u.store.signIn.providers(u.project.id)).toEqual([]);
  });

  it('endpoint overrides must be http(s) URLs; a trailing slash is dropped', async () => {
    expect(await refused(config.set(u.project.id, 'oidc', { clientId: 'c', issuer: 'javascript:alert(1)' }))).toMatch(/issuer must be http\(s\)/);
    expect(await refused(config.set(u.project.id, 'oidc', { clientId: 'c', issuer: 'not a url' }))).toMatch(/issuer is not a URL/);
    await config.set(u.project.id, 'oidc', { clientId: 'c', issuer: 'https://id.example.com/', methods: ['oidc'] });
    expect((await config.provider(u.project.id, 'oidc'))!.endpoints.issuer).toBe('https://id.example.com');
  });

  it('region rules: ISO country codes and CIDR blocks only', async () => {
    expect(await refused(config.set(u.project.id, 'email', { denyCountries: ['Russia'] }))).toMatch(/not an ISO 3166-1 alpha-2 code/);
    expect(await refused(config.set(u.project.id, 'email', { allowCidrs: ['10.0.0.0/33'] }))).toMatch(/not a CIDR block/);
    const view = await config.set(u.project.id, 'email', { denyCountries: ['ru'], allowCidrs: ['10.0.0.0/8'] });
    expect(view.region).toEqual({ denyCountries: ['RU'], allowCidrs: ['10.0.0.0/8'] });
  });

  it('disable: a configured provider keeps its settings; email can be turned off; an unconfigured one is not found', async () => {
    await config.set(u.project.id, 'google', { clientId: 'cid', clientSecret: 's' });
    expect(await config.disable(u.project.id, 'google')).toMatchObject({ enabled: false, clientId: 'cid', hasClientSecret: true });
    expect(await config.provider(u.project.id, 'google')).toBeUndefined();
    await config.disable(u.project.id, 'email');
    expect(await config.enabled(u.project.id)).toEqual([]);
    expect(await refused(config.disable(u.project.id, 'github'))).toMatch(/^NOT_FOUND/);
  });
});

describe('settings', () => {
  it('defaults until set; null restores a default; the rest is kept', async () => {
    expect(await config.settings(u.project.id)).toEqual({
      sessionTtlMs: settings.sessionTtlMs,
      codeFrom: null,
      telegramWindowMs: settings.telegramWindowMs,
      requireCodeVerifier: expect.any(Boolean),
      twoFactor: 'off',
      jwtAudience: null,
      jwtTtlMs: 300_000,
    });
    const set = await config.putSettings(u.project.id, { sessionTtlSeconds: 3600, codeFrom: 'Acme <login@acme.test>', requireCodeVerifier: true });
    expect(set).toMatchObject({ sessionTtlMs: 3_600_000, codeFrom: 'Acme <login@acme.test>', requireCodeVerifier: true });
    const after = await config.putSettings(u.project.id, { sessionTtlSeconds: null, telegramWindowSeconds: 60 });
    expect(after).toMatchObject({
      sessionTtlMs: settings.sessionTtlMs,
      codeFrom: 'Acme <login@acme.test>',
      telegramWindowMs: 60_000,
      requireCodeVerifier: true,
    });
  });

  it('two-factor and the JWTs: set, checked, and null or off restores the default', async () => {
    const set = await config.putSettings(u.project.id, { twoFactor: 'required', jwtAudience: 'https://api.acme.test', jwtTtlSeconds: 120 });
    expect(set).toMatchObject({ twoFactor: 'required', jwtAudience: 'https://api.acme.test', jwtTtlMs: 120_000 });
    expect(await config.putSettings(u.project.id, { twoFactor: 'off', jwtAudience: null, jwtTtlSeconds: null })).toMatchObject({
      twoFactor: 'off',
      jwtAudience: null,
      jwtTtlMs: 300_000,
    });
    expect(await refused(config.putSettings(u.project.id, { jwtTtlSeconds: 601 }))).toMatch(/jwtTtlSeconds is between 30 and 600/);
    expect(await refused(config.putSettings(u.project.id, { twoFactor: 'sometimes' as 'off' }))).toMatch(/twoFactor is off, optional or required/);
  });

  it('codeFrom must be an address', async () => {
    expect(await refused(config.putSettings(u.project.id, { codeFrom: 'not an address' }))).toMatch(/codeFrom is not a valid address/);
  });
});
