// control/console/sessions.ts: a session lives until it has been idle for the idle lifetime or has
// reached its absolute lifetime (on the one clock), the map keeps at most `cap` (oldest dropped), the
// cookie is random and is only ever stored hashed, and the CSRF token compares exactly.
import { afterEach, describe, expect, it } from 'vitest';
import { ConsoleSessions, cookieValue, csrfMatches } from '../../../control/console/sessions.js';
import { clock } from '../../../core/clock.js';
import { loadConfig } from '../../../core/config.js';

const MIN = 60_000;
afterEach(() => clock.setOffset(0));

describe('ConsoleSessions', () => {
  it('ends a session idle for the idle lifetime; each use restarts the idle time', () => {
    const sessions = new ConsoleSessions({ idleMs: 30 * MIN, maxMs: 12 * 60 * MIN });
    const { cookie, session } = sessions.open('abc123abc123');
    expect(session.actor).toBe('abc123abc123');
    clock.setOffset(29 * MIN);
    expect(sessions.find(cookie)).toBe(session);
    clock.setOffset(58 * MIN);
    expect(sessions.find(cookie)).toBe(session);
    expect(sessions.endsAt(session)).toBe(session.lastSeenAt + 30 * MIN);
    clock.setOffset(88 * MIN);
    expect(sessions.find(cookie)).toBeUndefined();
    // Dropped when found dead: going back in time does not revive it.
    clock.setOffset(0);
    expect(sessions.find(cookie)).toBeUndefined();
    expect(sessions.size).toBe(0);
  });

  it('ends a session at its absolute lifetime however active it is', () => {
    const sessions = new ConsoleSessions({ idleMs: 30 * MIN, maxMs: 60 * MIN });
    const { cookie, session } = sessions.open('a');
    expect(session.expiresAt).toBe(session.createdAt + 60 * MIN);
    for (let m = 20; m < 60; m += 20) {
      clock.setOffset(m * MIN);
      expect(sessions.find(cookie)).toBeDefined();
    }
    expect(sessions.endsAt(session)).toBe(session.expiresAt);
    clock.setOffset(60 * MIN);
    expect(sessions.find(cookie)).toBeUndefined();
  });

  it('a peek (touch = false) does not restart the idle time', () => {
    const sessions = new ConsoleSessions({ idleMs: 30 * MIN, maxMs: 600 * MIN });
    const { cookie } = sessions.open('a');
    clock.setOffset(20 * MIN);
    expect(sessions.find(cookie, false)).toBeDefined();
    clock.setOffset(31 * MIN);
    expect(sessions.find(cookie)).toBeUndefined();
  });

  it('closes a session (sign-out) and knows nothing of other values', () => {
    const sessions = new ConsoleSessions({ idleMs: MIN, maxMs: 10 * MIN });
    const a = sessions.open('a');
    const b = sessions.open('a');
    expect(a.cookie).not.toBe(b.cookie);
    expect(a.session.csrfToken).not.toBe(b.session.csrfToken);
    expect(a.cookie).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(sessions.close(a.cookie)).toBe(true);
    expect(sessions.close(a.cookie)).toBe(false);
    expect(sessions.find(a.cookie)).toBeUndefined();
    expect(sessions.find(b.cookie)).toBe(b.session);
    for (const v of [undefined, '', 'x', `${b.cookie}x`, b.cookie.slice(1), b.session.csrfToken]) expect(sessions.find(v)).toBeUndefined();
  });

  it('keeps at most cap sessions, dropping the oldest', () => {
    const sessions = new ConsoleSessions({ idleMs: MIN, maxMs: 10 * MIN, cap: 3 });
    const opened = Array.from({ length: 5 }, (_, i) => sessions.open(String(i)));
    expect(sessions.size).toBe(3);
    expect(sessions.find(opened[0]!.cookie)).toBeUndefined();
    expect(sessions.find(opened[1]!.cookie)).toBeUndefined();
    for (const o of opened.slice(2)) expect(sessions.find(o.cookie)).toBe(o.session);
  });

  it('stores no cookie value, only its hash', () => {
    const sessions = new ConsoleSessions({ idleMs: MIN, maxMs: 10 * MIN });
    const { cookie } = sessions.open('a');
    const keys = [...(sessions as unknown as { byHash: Map<string, unknown> }).byHash.keys()];
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify([...(sessions as unknown as { byHash: Map<string, unknown> }).byHash])).not.toContain(cookie);
  });
});

describe('csrfMatches', () => {
  const sessions = new ConsoleSessions({ idleMs: MIN, maxMs: 10 * MIN });
  const { session } = sessions.open('a');
  it('takes the exact token only', () => {
    expect(csrfMatches(session, session.csrfToken)).toBe(true);
    for (const wrong of [
      undefined,
      '',
      `${session.csrfToken} `,
      session.csrfToken.slice(0, -1),
      session.csrfToken.toUpperCase(),
      [session.csrfToken, session.csrfToken],
    ])
      expect(csrfMatches(session, wrong)).toBe(false);
  });
});

describe('cookieValue', () => {
  it('finds postgate_console among other cookies, and nothing else', () => {
    expect(cookieValue('a=1; postgate_console=abc; b=2')).toBe('abc');
    expect(cookieValue('postgate_console=abc')).toBe('abc');
    expect(cookieValue('xpostgate_console=abc; postgate_consolex=d')).toBeUndefined();
    expect(cookieValue(undefined)).toBeUndefined();
    expect(cookieValue('')).toBeUndefined();
  });
});

describe('config', () => {
  it('reads the lifetimes from the environment, 30 minutes and 12 hours by default', () => {
    expect(loadConfig({})).toMatchObject({ consoleIdleMinutes: 30, consoleMaxHours: 12 });
    expect(loadConfig({ POSTGATE_CONSOLE_IDLE_MINUTES: '5', POSTGATE_CONSOLE_MAX_HOURS: '1' })).toMatchObject({ consoleIdleMinutes: 5, consoleMaxHours: 1 });
  });
  it('refuses a bad value with one clear error', () => {
    for (const v of ['0', '-1', '1.5', 'ten', '1e3', '99999999'])
      expect(() => loadConfig({ POSTGATE_CONSOLE_IDLE_MINUTES: v })).toThrow(/^POSTGATE_CONSOLE_IDLE_MINUTES must be a whole number of minutes from 1 to/);
    expect(() => loadConfig({ POSTGATE_CONSOLE_MAX_HOURS: '0' })).toThrow(/^POSTGATE_CONSOLE_MAX_HOURS must be a whole number of hours from 1 to 720/);
  });
});
