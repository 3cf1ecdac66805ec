// auth/providers/http.ts: calls to providers' APIs (a peer on loopback here) answer JSON or a
// CredentialError; redirects are never followed.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { providerJson } from '../../../auth/providers/http.js';
import { CredentialError } from '../../../auth/providers/types.js';
import { httpPeer, type HttpPeer } from '../../helpers/http-peer.js';

let peer: HttpPeer;
beforeAll(async () => {
  peer = await httpPeer({
    '/ok': () => ({ json: { id: 1 } }),
    '/moved': () => ({ status: 302, headers: { location: '/ok' } }),
    '/html': () => ({ text: '<html>' }),
    '/error': () => ({ status: 401, json: { error: 'bad_token' } }),
  });
});
afterAll(() => peer.close());

it('GET by default, POST with a form; JSON accepted, the caller’s headers sent', async () => {
  expect(await providerJson(`${peer.url}/ok`, { headers: { authorization: 'Bearer t' } })).toEqual({ id: 1 });
  const get = peer.requests.at(-1)!;
  expect(get).toMatchObject({ method: 'GET', headers: { accept: 'application/json', authorization: 'Bearer t', 'user-agent': 'postgate' } });
  await providerJson(`${peer.url}/ok`, { form: { a: '1', b: 'x y' } });
  expect(peer.requests.at(-1)).toMatchObject({ method: 'POST', body: 'a=1&b=x+y' });
});

it('a redirect is an error, not followed (a provider cannot send our token elsewhere)', async () => {
  const before = peer.requests.length;
  await expect(providerJson(`${peer.url}/moved`)).rejects.toThrow(CredentialError);
  expect(peer.requests.slice(before).map((r) => r.path)).toEqual(['/moved']);
});

it('an error status, a body that is not JSON and an unreachable host are CredentialErrors naming no secret', async () => {
  await expect(providerJson(`${peer.url}/error`)).rejects.toThrow(/provider answered 401 at \/error/);
  await expect(providerJson(`${peer.url}/html`)).rejects.toThrow(/provider answered 200 at \/html/);
  const err = await providerJson('http://127.0.0.1:1/x?access_token=secret').catch((e: Error) => e);
  expect(err).toBeInstanceOf(CredentialError);
  expect((err as Error).message).toMatch(/provider unreachable \(127\.0\.0\.1:1\)/);
  expect((err as Error).message).not.toContain('secret');
});
