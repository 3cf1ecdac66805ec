// control/webhooks/signature.ts: Standard Webhooks signing (HMAC-SHA256 over id.timestamp.body with
// the whsec_ secret's bytes) and the receiver's check, as standardwebhooks.com specifies them.
import crypto from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { newWebhookSecret, sign, verify } from '../../../control/webhooks/signature.js';

const SECRET = `whsec_${Buffer.from('a 32-byte secret for the tests!!').toString('base64')}`;
const NOW = 1_760_000_000;
const headers = (id: string, ts: number, sig: string) => ({ 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': sig });

afterEach(() => vi.restoreAllMocks());

it('a new secret is whsec_ and 32 random bytes in base64', () => {
  const s = newWebhookSecret();
  expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
  expect(newWebhookSecret()).not.toBe(s);
});

it('the signature is v1, then base64 HMAC-SHA256 of id.timestamp.body keyed with the secret’s bytes', () => {
  const want = crypto.createHmac('sha256', Buffer.from('a 32-byte secret for the tests!!')).update(`msg_1.${NOW}.{"a":1}`).digest('base64');
  expect(sign(SECRET, 'msg_1', NOW, '{"a":1}')).toBe(`v1,${want}`);
});

describe('verify', () => {
  const body = '{"type":"email.sent"}';
  const sig = sign(SECRET, 'msg_1', NOW, body);

  it('accepts the message as sent, among several signatures (a secret being rotated)', () => {
    expect(verify(SECRET, headers('msg_1', NOW, sig), body, 300, NOW)).toBe(true);
    expect(verify(SECRET, headers('msg_1', NOW, `v1,b3RoZXI= ${sig}`), body, 300, NOW)).toBe(true);
  });

  it('refuses another body, id, timestamp or secret, and a missing header', () => {
    expect(verify(SECRET, headers('msg_1', NOW, sig), `${body} `, 300, NOW)).toBe(false);
    expect(verify(SECRET, headers('msg_2', NOW, sig), body, 300, NOW)).toBe(false);
    expect(verify(SECRET, headers('msg_1', NOW + 1, sig), body, 300, NOW)).toBe(false);
    expect(verify(newWebhookSecret(), headers('msg_1', NOW, sig), body, 300, NOW)).toBe(false);
    expect(verify(SECRET, { 'webhook-timestamp': String(NOW), 'webhook-signature': sig }, body, 300, NOW)).toBe(false);
    expect(verify(SECRET, { 'webhook-id': 'msg_1', 'webhook-signature': sig }, body, 300, NOW)).toBe(false);
  });

  it('refuses a timestamp outside the tolerance, either way (replays)', () => {
    expect(verify(SECRET, headers('msg_1', NOW, sig), body, 300, NOW + 301)).toBe(false);
    expect(verify(SECRET, headers('msg_1', NOW, sig), body, 300, NOW - 301)).toBe(false);
    expect(verify(SECRET, headers('msg_1', NOW, sig), body, 300, NOW + 299)).toBe(true);
  });

  it('compares in constant time', () => {
    const spy = vi.spyOn(crypto, 'timingSafeEqual');
    verify(SECRET, headers('msg_1', NOW, sig.replace(/.$/, 'A')), body, 300, NOW);
    expect(spy).toHaveBeenCalled();
  });
});
