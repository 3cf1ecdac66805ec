// auth/sms.ts: the HTTP sender (POST JSON {to, text} with the project's bearer token, to a gateway
// on loopback here; redirects not followed) and the log sender, which never writes the message.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import { HttpSmsSender, LogSmsSender, maskPhone } from '../../auth/sms.js';
import { httpPeer, type HttpPeer } from '../helpers/http-peer.js';

let peer: HttpPeer | undefined;
afterEach(() => peer?.close());

it('the HTTP sender posts {to, text} as JSON, with the bearer token when there is one', async () => {
  peer = await httpPeer({ '/send': () => ({ json: { ok: true } }) });
  await new HttpSmsSender(`${peer.url}/send`, 'gw-token').send('+79991234567', 'code 123456');
  await new HttpSmsSender(`${peer.url}/send`, null).send('+79991234567', 'code 654321');
  const [a, b] = peer.requests;
  expect(a).toMatchObject({ method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer gw-token' } });
  expect(JSON.parse(a!.body)).toEqual({ to: '+79991234567', text: 'code 123456' });
  expect(b!.headers.authorization).toBeUndefined();
});

it('a gateway that refuses or redirects is an error (the code is not sent elsewhere)', async () => {
  peer = await httpPeer({ '/down': () => ({ status: 503, text: 'busy' }), '/moved': () => ({ status: 307, headers: { location: '/elsewhere' } }) });
  await expect(new HttpSmsSender(`${peer.url}/down`, null).send('+1', 't')).rejects.toThrow('SMS gateway answered 503');
  await expect(new HttpSmsSender(`${peer.url}/moved`, null).send('+1', 't')).rejects.toThrow('SMS gateway answered 307');
  expect(peer.requests.map((r) => r.path)).toEqual(['/down', '/moved']);
});

it('the log sender writes the masked number and the length, never the text (it holds the code)', async () => {
  const lines: string[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write: (c, _e, cb) => {
        lines.push(String(c));
        cb();
      },
    }),
  );
  await new LogSmsSender(log).send('+79991234567', 'Your code is 123456');
  expect(lines).toHaveLength(1);
  expect(lines[0]).not.toContain('123456');
  expect(lines[0]).not.toContain('+79991234567');
  expect(JSON.parse(lines[0]!)).toMatchObject({ to: '+799******67', chars: 19 });
});

it('maskPhone keeps the country prefix and the last two digits', () => {
  expect(maskPhone('+79991234567')).toBe('+799******67');
  expect(maskPhone('+442071234567')).toBe('+442*******67');
});
