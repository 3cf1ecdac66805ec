// auth/providers/vk.ts: VK ID's own token reply (read here, not as OAuth 2.0: its id_token has no
// issuer to check), its user_info, and the legacy SDK's silent token, against a VK API on loopback.
import { afterEach, describe, expect, it } from 'vitest';
import { CredentialError, type ProviderConfig } from '../../../auth/providers/types.js';
import { vk } from '../../../auth/providers/vk.js';
import { httpPeer, type HttpPeer } from '../../helpers/http-peer.js';

let peer: HttpPeer | undefined;
afterEach(() => peer?.close());

const reply = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

describe('the token reply', () => {
  const read = vk.oauth!.readToken!;

  it('takes the access token of a reply for our state', async () => {
    expect(await read(reply({ access_token: 'vk1.a', state: 's1', id_token: 'x' }), 's1')).toEqual({ accessToken: 'vk1.a' });
    expect(await read(reply({ access_token: 'vk1.a' }), 's1')).toEqual({ accessToken: 'vk1.a' });
  });

  it('refuses a reply for another state, an error, a failed status and a reply without a token', async () => {
    await expect(read(reply({ access_token: 'vk1.a', state: 'other' }), 's1')).rejects.toThrow(/another state/);
    await expect(read(reply({ error: 'invalid_grant' }), 's1')).rejects.toThrow(/invalid_grant/);
    await expect(read(reply({ access_token: 'vk1.a' }, 400), 's1')).rejects.toThrow(CredentialError);
    await expect(read(reply({ access_token: 42 }), 's1')).rejects.toThrow(CredentialError);
    await expect(read(new Response('<html>'), 's1')).rejects.toThrow(CredentialError);
  });
});

it('user_info: the profile, a phone with its +, never a verified email', async () => {
  peer = await httpPeer({
    '/user_info': () => ({
      json: { user: { user_id: 77, first_name: 'Pavel', last_name: 'D', email: 'P@VK.com', phone: '79991112233', avatar: 'https://vk/a.jpg' } },
    }),
  });
  const cfg = { clientId: 'app', endpoints: { userinfoUrl: `${peer.url}/user_info` } } as ProviderConfig;
  expect(await vk.oauth!.profile(cfg, { accessToken: 't' })).toEqual({
    subject: '77',
    email: 'p@vk.com',
    emailVerified: false,
    name: 'Pavel D',
    avatarUrl: 'https://vk/a.jpg',
    phone: '+79991112233',
    username: null,
  });
  expect(new URLSearchParams(peer.requests[0]!.body).get('access_token')).toBe('t');
});

describe('silent token', () => {
  const verify = vk.verify!.silent_token!;

  it('exchanges the SDK payload with the app’s service token, then reads the user', async () => {
    peer = await httpPeer({
      '/method/auth.exchangeSilentAuthToken': () => ({ json: { response: { access_token: 'user-token', user_id: 9, email: 'A@b.ru' } } }),
      '/method/users.get': () => ({ json: { response: [{ first_name: 'A', last_name: 'B', photo_200: 'https://vk/p', screen_name: 'ab' }] } }),
    });
    const cfg = { clientSecret: 'service-token', endpoints: { apiUrl: `${peer.url}/method/` } } as ProviderConfig;
    const p = await verify(cfg, JSON.stringify({ token: 'silent', uuid: 'u-1' }), { windowMs: 0 });
    expect(p).toMatchObject({ subject: '9', email: 'a@b.ru', emailVerified: false, name: 'A B', username: 'ab' });
    const exchange = new URLSearchParams(peer.requests[0]!.body);
    expect(Object.fromEntries(exchange)).toMatchObject({ token: 'silent', uuid: 'u-1', access_token: 'service-token', v: '5.131' });
  });

  it('refuses a payload that is not the SDK’s, and VK’s error answer', async () => {
    const cfg = { clientSecret: 's', endpoints: { apiUrl: 'http://127.0.0.1:1' } } as ProviderConfig;
    await expect(verify(cfg, 'not json', { windowMs: 0 })).rejects.toThrow(/must be the SDK payload/);
    await expect(verify(cfg, JSON.stringify({ token: 1 }), { windowMs: 0 })).rejects.toThrow(/needs token and uuid/);
    peer = await httpPeer({ '/auth.exchangeSilentAuthToken': () => ({ json: { error: { error_code: 15 } } }) });
    await expect(
      verify({ clientSecret: 's', endpoints: { apiUrl: peer.url } } as ProviderConfig, JSON.stringify({ token: 't', uuid: 'u' }), { windowMs: 0 }),
    ).rejects.toThrow(/auth.exchangeSilentAuthToken refused: 15/);
  });
});
