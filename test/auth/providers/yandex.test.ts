// auth/providers/yandex.ts against a Yandex ID API on loopback: the token goes in
// `Authorization: OAuth`, never in the URL; an instant token counts only when Yandex says it was
// issued to this project's app; Yandex never links accounts by email.
import { afterEach, expect, it } from 'vitest';
import { CredentialError, type ProviderConfig } from '../../../auth/providers/types.js';
import { yandex } from '../../../auth/providers/yandex.js';
import { httpPeer, type HttpPeer } from '../../helpers/http-peer.js';

let peer: HttpPeer | undefined;
afterEach(() => peer?.close());

const user = {
  id: '1000',
  login: 'ivan',
  client_id: 'our-app',
  default_email: 'Ivan@Yandex.ru',
  real_name: 'Иван',
  default_avatar_id: '131652443',
  is_avatar_empty: false,
  default_phone: { number: '+79990000000' },
};

async function cfg(answer: unknown): Promise<ProviderConfig> {
  peer = await httpPeer({ '/info': () => ({ json: answer }) });
  return { clientId: 'our-app', endpoints: { userinfoUrl: `${peer.url}/info` } } as ProviderConfig;
}

it('an instant token issued to our app gives the profile, never a verified email', async () => {
  const p = await yandex.verify!.instant_token!(await cfg(user), 'y0_token', { windowMs: 0 });
  expect(p).toEqual({
    subject: '1000',
    email: 'ivan@yandex.ru',
    emailVerified: false,
    name: 'Иван',
    avatarUrl: 'https://avatars.yandex.net/get-yapic/131652443/islands-200',
    phone: '+79990000000',
    username: 'ivan',
  });
  const r = peer!.requests[0]!;
  expect(r.headers.authorization).toBe('OAuth y0_token');
  expect(r.query.get('format')).toBe('json');
  expect(r.query.toString()).not.toContain('y0_token');
});

it('an instant token issued to another app is refused', async () => {
  await expect(yandex.verify!.instant_token!(await cfg({ ...user, client_id: 'their-app' }), 't', { windowMs: 0 })).rejects.toThrow(/another application/);
});

it('an answer without a user id is refused; no avatar when Yandex says it is empty', async () => {
  await expect(yandex.oauth!.profile(await cfg({ login: 'x' }), { accessToken: 't' })).rejects.toThrow(CredentialError);
  await peer!.close();
  expect((await yandex.oauth!.profile(await cfg({ ...user, is_avatar_empty: true }), { accessToken: 't' })).avatarUrl).toBeNull();
});
