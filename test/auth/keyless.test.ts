// The limits of the auth routes that take no key (auth/keyless.ts) on control's real limiter: an IPv6
// client counted by its /64, an IPv4-mapped address as IPv4, per-address and per-project counts kept
// apart by route, and the 429 past either with Retry-After and its own wording.
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { addressKey, KeylessLimits } from '../../auth/keyless.js';
import { RateLimiter } from '../../control/limits/rate-limit.js';
import { ApiError } from '../../core/errors.js';

const req = (ip: string) => ({ ip }) as FastifyRequest;
const limits = (perIp = 2, perProject = 3) => new KeylessLimits(new RateLimiter(), { keylessPerIpMinute: perIp, keylessPerProjectMinute: perProject });
const refusal = (fn: () => void): ApiError => {
  try {
    fn();
  } catch (err) {
    return err as ApiError;
  }
  throw new Error('not refused');
};

describe('addressKey', () => {
  it('keeps an IPv4 address as it is', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
  });

  it('counts an IPv6 address by its /64, however it is written', () => {
    expect(addressKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0DB8:0001:0002:ffff::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2::')).toBe('2001:db8:1:2::/64');
    // A compressed run inside the first four groups is filled with zeros.
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::')).toBe('fe80:0:0:0::/64');
  });

  it('two hosts of one /64 share a key; the next /64 does not', () => {
    expect(addressKey('2001:db8:1:2::a')).toBe(addressKey('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(addressKey('2001:db8:1:3::a')).not.toBe(addressKey('2001:db8:1:2::a'));
  });
});

describe('KeylessLimits', () => {
  it('refuses an address past its limit per minute with 429 RATE_LIMIT_EXCEEDED and Retry-After', () => {
    const l = limits(2);
    l.ip(req('203.0.113.7'), 'widget');
    l.ip(req('203.0.113.7'), 'widget');
    const err = refusal(() => l.ip(req('203.0.113.7'), 'widget'));
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(err.status).toBe(429);
    expect(err.message).toMatch(/^Too many requests from this address; try again in \d+ s$/);
    expect(Number(err.headers['Retry-After'])).toBeGreaterThan(0);
    expect(Number(err.headers['Retry-After'])).toBeLessThanOrEqual(60);
  });

  it('counts each route and each address apart', () => {
    const l = limits(1);
    l.ip(req('203.0.113.7'), 'widget');
    l.ip(req('203.0.113.7'), 'embed');
    l.ip(req('203.0.113.8'), 'widget');
    expect(() => l.ip(req('203.0.113.7'), 'widget')).toThrow(ApiError);
  });

  it('an IPv4-mapped address is the IPv4 one, and a whole /64 shares one count', () => {
    const l = limits(1);
    l.ip(req('::ffff:203.0.113.7'), 'widget');
    expect(() => l.ip(req('203.0.113.7'), 'widget')).toThrow(ApiError);
    l.ip(req('2001:db8:1:2::1'), 'widget');
    expect(() => l.ip(req('2001:db8:1:2::2'), 'widget')).toThrow(ApiError);
  });

  it('refuses a project past its limit with its own words, apart from the address counts', () => {
    const l = limits(1, 2);
    l.project('callback', 'prj_a');
    l.project('callback', 'prj_a');
    const err = refusal(() => l.project('callback', 'prj_a'));
    expect(err.status).toBe(429);
    expect(err.message).toMatch(/^Too many sign-in requests for this project; try again in \d+ s$/);
    // Another project, another route, and the address counts are untouched.
    l.project('callback', 'prj_b');
    l.project('widget', 'prj_a');
    l.ip(req('203.0.113.7'), 'callback');
  });
});
