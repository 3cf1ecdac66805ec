// auth/id-token.ts: id_tokens handed over by a client SDK, checked against the issuer's JWKS (served
// here on loopback): signature, asymmetric algorithms only, issuer, audience, expiry on our clock,
// the subject and times required, and the nonce when the app gives one.
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { verifyIdToken } from '../../auth/id-token.js';
import { CredentialError } from '../../auth/providers/types.js';
import { clock } from '../../core/clock.js';
import { httpPeer, type HttpPeer } from '../helpers/http-peer.js';

const ISSUER = 'https://issuer.example';
const AUDIENCE = 'client-123';
let peer: HttpPeer;
let key: CryptoKey;
let stranger: CryptoKey;

beforeAll(async () => {
  const pair = await generateKeyPair('RS256');
  key = pair.privateKey;
  stranger = (await generateKeyPair('RS256')).privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  peer = await httpPeer({ '/jwks': () => ({ json: { keys: [jwk] } }) });
});
afterAll(() => peer.close());
afterEach(() => clock.setOffset(0));

const now = () => Math.floor(clock.now() / 1000);
async function token(claims: JWTPayload = {}, o: { signer?: CryptoKey; alg?: string; kid?: string } = {}): Promise<string> {
  return new SignJWT({ sub: 'user-1', iss: ISSUER, aud: AUDIENCE, iat: now(), exp: now() + 600, ...claims })
    .setProtectedHeader({ alg: o.alg ?? 'RS256', kid: o.kid ?? 'k1' })
    .sign(o.signer ?? key);
}
const check = (jwt: string, extra: { nonce?: string; algorithms?: string[] } = {}) =>
  verifyIdToken(jwt, { jwksUrl: `${peer.url}/jwks`, issuers: [ISSUER], audience: AUDIENCE, ...extra });
const reason = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (e: Error) => (e instanceof CredentialError ? e.message : `not a CredentialError: ${e.message}`),
  );

it('a token signed by the issuer’s key, for our audience, gives its claims', async () => {
  const claims = await check(await token({ email: 'a@example.com' }));
  expect(claims).toMatchObject({ sub: 'user-1', email: 'a@example.com', iss: ISSUER });
});

describe('refused, always as a CredentialError', () => {
  it('another key, another audience or issuer', async () => {
    expect(await reason(check(await token({}, { signer: stranger })))).toMatch(/rejected/);
    expect(await reason(check(await token({ aud: 'someone-else' })))).toBe('id_token aud check failed');
    expect(await reason(check(await token({ iss: 'https://evil.example' })))).toBe('id_token iss check failed');
  });

  it('expired, or not yet valid, beyond a 5-second tolerance, on our clock', async () => {
    expect(await reason(check(await token({ exp: now() - 10 })))).toBe('id_token has expired');
    expect(await reason(check(await token({ exp: now() - 2 })))).toBe('accepted');
    expect(await reason(check(await token({ nbf: now() + 60 })))).toBe('id_token nbf check failed');
    const jwt = await token();
    clock.setOffset(3_600_000);
    expect(await reason(check(jwt))).toBe('id_token has expired');
  });

  it('without sub, exp or iat', async () => {
    for (const claim of ['sub', 'exp', 'iat']) expect(await reason(check(await token({ [claim]: undefined }))), claim).toMatch(/check failed|rejected/);
  });

  it('a symmetric algorithm (HS256 keyed with anything public) or an unsigned token', async () => {
    const hs = await new SignJWT({ sub: 'user-1', iss: ISSUER, aud: AUDIENCE, iat: now(), exp: now() + 600 })
      .setProtectedHeader({ alg: 'HS256', kid: 'k1' })
      .sign(new TextEncoder().encode('a-secret-anyone-could-guess-32-bytes!'));
    expect(await reason(check(hs))).toMatch(/rejected/);
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: 'u', iss: ISSUER, aud: AUDIENCE, iat: now(), exp: now() + 60 })).toString('base64url')}.`;
    expect(await reason(check(none))).toMatch(/rejected/);
    expect(await reason(check('not.a.jwt'))).toMatch(/rejected|could not be verified/);
  });

  it('an algorithm outside the provider’s list (Google: RS256 only)', async () => {
    const es = await token({}, { alg: 'ES256', signer: (await generateKeyPair('ES256')).privateKey });
    expect(await reason(check(es, { algorithms: ['RS256'] }))).toBe('id_token rejected: ERR_JOSE_ALG_NOT_ALLOWED');
  });

  it('a nonce other than the one the app gave, or none when it gave one', async () => {
    expect(await reason(check(await token({ nonce: 'n-1' }), { nonce: 'n-1' }))).toBe('accepted');
    expect(await reason(check(await token({ nonce: 'n-2' }), { nonce: 'n-1' }))).toBe('id_token nonce does not match');
    expect(await reason(check(await token(), { nonce: 'n-1' }))).toBe('id_token nonce does not match');
  });
});
