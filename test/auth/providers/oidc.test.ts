// auth/providers/oidc.ts and google.ts: claims to a profile, where an email may link accounts
// (Google for Gmail and its Workspace domain, never an arbitrary issuer), and endpoints taken from
// the configuration before any discovery.
import { describe, expect, it } from 'vitest';
import { google } from '../../../auth/providers/google.js';
import { claimsProfile, effectiveEndpoints } from '../../../auth/providers/oidc.js';
import { oidc } from '../../../auth/providers/oidc.js';
import type { ProviderConfig } from '../../../auth/providers/types.js';

describe('claimsProfile', () => {
  const claims = {
    sub: 'abc',
    email: 'Ada@Example.com',
    email_verified: true,
    name: 'Ada',
    picture: 'https://p',
    phone_number: '+1',
    preferred_username: 'ada',
  };

  it('maps the standard claims, the email lower-cased', () => {
    expect(claimsProfile(claims, true)).toEqual({
      subject: 'abc',
      email: 'ada@example.com',
      emailVerified: true,
      name: 'Ada',
      avatarUrl: 'https://p',
      phone: '+1',
      username: 'ada',
    });
  });

  it('an email is verified only from an authority that says so', () => {
    expect(claimsProfile(claims, false).emailVerified).toBe(false);
    expect(claimsProfile({ ...claims, email_verified: 'true' }, true).emailVerified).toBe(false);
    expect(claimsProfile({ ...claims, email: undefined }, true)).toMatchObject({ email: null, emailVerified: false });
  });
});

describe('who is an authority on an email', () => {
  const profile = (claims: Record<string, unknown>) =>
    google.oauth!.profile({} as ProviderConfig, { accessToken: 't', claims: { sub: '1', email_verified: true, ...claims } });

  it('Google: for Gmail, and for a Workspace account’s own domain', async () => {
    expect((await profile({ email: 'a@gmail.com' })).emailVerified).toBe(true);
    expect((await profile({ email: 'a@corp.example', hd: 'corp.example' })).emailVerified).toBe(true);
    expect((await profile({ email: 'a@corp.example' })).emailVerified).toBe(false);
    expect((await profile({ email: 'a@other.example', hd: 'corp.example' })).emailVerified).toBe(false);
    expect((await profile({ email: 'a@gmail.com', email_verified: false })).emailVerified).toBe(false);
  });

  it('a generic OpenID issuer: never', async () => {
    const p = await oidc.oauth!.profile({} as ProviderConfig, { accessToken: 't', claims: { sub: '1', email: 'a@gmail.com', email_verified: true } });
    expect(p.emailVerified).toBe(false);
  });
});

describe('effectiveEndpoints', () => {
  it('a provider other than oidc, or an oidc with every endpoint pinned, is taken as configured (no discovery)', async () => {
    const e = { authorizationUrl: 'http://127.0.0.1:1/a', tokenUrl: 'http://127.0.0.1:1/t', jwksUrl: 'http://127.0.0.1:1/j', issuer: 'http://127.0.0.1:1' };
    expect(await effectiveEndpoints({ id: 'oidc', endpoints: e } as ProviderConfig)).toBe(e);
    expect(await effectiveEndpoints({ id: 'google', endpoints: google.defaults } as ProviderConfig)).toBe(google.defaults);
  });

  it('an unreachable issuer to discover is a CredentialError naming it', async () => {
    await expect(effectiveEndpoints({ id: 'oidc', endpoints: { issuer: 'http://127.0.0.1:1' } } as ProviderConfig)).rejects.toThrow(
      /OpenID discovery of http:\/\/127.0.0.1:1 failed/,
    );
  });
});
