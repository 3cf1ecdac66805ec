// auth/providers/github.ts against a GitHub API on loopback: the id is the subject, and only an email
// GitHub marks verified counts (the primary one first); an unverified one never links accounts.
import { afterEach, expect, it } from 'vitest';
import { github } from '../../../auth/providers/github.js';
import type { ProviderConfig } from '../../../auth/providers/types.js';
import { httpPeer, type HttpPeer } from '../../helpers/http-peer.js';

let peer: HttpPeer | undefined;
afterEach(() => peer?.close());

async function profileWith(user: unknown, emails: unknown) {
  peer = await httpPeer({ '/user': () => ({ json: user }), '/user/emails': () => ({ json: emails }) });
  const cfg = { endpoints: { userinfoUrl: `${peer.url}/user`, apiUrl: `${peer.url}/` } } as ProviderConfig;
  return github.oauth!.profile(cfg, { accessToken: 'gho_token' });
}

it('the verified primary email, lower-cased; the token in the Authorization header only', async () => {
  const p = await profileWith({ id: 583231, login: 'octocat', name: null, avatar_url: 'https://a/1' }, [
    { email: 'other@example.com', primary: false, verified: true },
    { email: 'Octo@Example.com', primary: true, verified: true },
  ]);
  expect(p).toEqual({
    subject: '583231',
    email: 'octo@example.com',
    emailVerified: true,
    name: 'octocat',
    avatarUrl: 'https://a/1',
    phone: null,
    username: 'octocat',
  });
  expect(peer!.requests.map((r) => r.headers.authorization)).toEqual(['Bearer gho_token', 'Bearer gho_token']);
  expect(peer!.requests.every((r) => !r.query.toString().includes('gho_token'))).toBe(true);
});

it('a verified secondary email when the primary is not verified; none when nothing is', async () => {
  expect(
    await profileWith({ id: 1, login: 'a' }, [
      { email: 'primary@example.com', primary: true, verified: false },
      { email: 'second@example.com', primary: false, verified: true },
    ]),
  ).toMatchObject({ email: 'second@example.com', emailVerified: true });
  await peer!.close();
  expect(await profileWith({ id: 1, login: 'a' }, [{ email: 'x@example.com', primary: true, verified: false }])).toMatchObject({
    email: null,
    emailVerified: false,
  });
  await peer!.close();
  expect(await profileWith({ id: 1, login: 'a' }, { message: 'not a list' })).toMatchObject({ email: null, emailVerified: false });
});
