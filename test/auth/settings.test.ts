// The auth area's numbers (auth/settings.ts): the durations they are built from, and the bounds the
// comments promise (NIST 800-63B's ≤100 code guesses a day, ASVS's ≤1 minute exchange code), so a
// change that breaks one of them fails here.
import { describe, expect, it } from 'vitest';
import { durations, settings } from '../../auth/settings.js';

describe('auth settings', () => {
  it('builds on exact durations', () => {
    expect(durations).toEqual({ SECOND: 1000, MINUTE: 60_000, HOUR: 3_600_000, DAY: 86_400_000 });
  });

  it('allows at most 100 code guesses per address a day', () => {
    expect(settings.codeSendsPerTargetDay * settings.codeMaxAttempts).toBeLessThanOrEqual(100);
    expect(settings.codeSendsPerTargetHour).toBeLessThanOrEqual(settings.codeSendsPerTargetDay);
  });

  it('keeps codes short-lived and resends spaced', () => {
    expect(settings.codeTtlMs).toBeLessThanOrEqual(10 * durations.MINUTE);
    expect(settings.codeResendCooldownMs).toBeGreaterThanOrEqual(durations.MINUTE);
    expect(settings.codeResendCooldownMs).toBeLessThan(settings.codeTtlMs);
    // At the cooldown, the hourly cap is reachable but not exceeded.
    expect(settings.codeSendsPerTargetHour * settings.codeResendCooldownMs).toBeLessThanOrEqual(durations.HOUR);
  });

  it('keeps the one-time exchange code within a minute (ASVS L3)', () => {
    expect(settings.exchangeCodeTtlMs).toBeLessThanOrEqual(durations.MINUTE);
    expect(settings.exchangeCodeTtlMs).toBeGreaterThan(0);
  });

  it('gives the OAuth transaction longer than a provider request and lets Telegram skew less than its window', () => {
    expect(settings.oauthStateTtlMs).toBeGreaterThan(settings.providerTimeoutMs);
    expect(settings.telegramFutureSkewMs).toBeLessThan(settings.telegramWindowMs);
    expect(settings.sessionTtlMs).toBe(30 * durations.DAY);
  });

  it('prunes expired codes and states at least as often as a code lives', () => {
    expect(settings.pruneEveryMs).toBeLessThanOrEqual(settings.codeTtlMs);
  });
});
