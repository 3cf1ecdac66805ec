// control/admin/guard.ts with the console's cookie: a live session reads; a change needs the session's
// X-CSRF-Token; a foreign Origin is refused; a dead cookie is 401; the bearer token still works beside
// it; and the console's sign-in counts wrong tokens on the guard's own per-address counter.
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { adminGuard } from '../../../control/admin/guard.js';
import { ConsoleSessions, sessionOf } from '../../../control/console/sessions.js';
import { memoryCounters } from '../../../control/limits/counters.js';
import type { ApiError } from '../../../core/errors.js';
import type { Logger } from '../../../core/log.js';

const TOKEN = 'operator-secret-token';
const log = { warn: () => {} } as unknown as Logger;

function setup() {
  const sessions = new ConsoleSessions({ idleMs: 60_000, maxMs: 600_000 });
  const guard = adminGuard({ token: TOKEN, counters: memoryCounters(), log, failures: 3, sessions });
  const req = (method: string, headers: Record<string, string>, ip = '10.0.0.1') =>
    ({ ip, method, url: '/admin/v1/projects', protocol: 'http', headers: { host: 'admin.local:8081', ...headers } }) as unknown as FastifyRequest;
  const call = (r: FastifyRequest) =>
    guard(r).then(
      () => 'ok',
      (e: ApiError) => e.code,
    );
  return { sessions, guard, req, call };
}

describe('admin guard with the console cookie', () => {
  it('reads with the cookie, changes only with the CSRF token, and marks the request as the console', async () => {
    const g = setup();
    const { cookie, session } = g.sessions.open('fp');
    const c = `postgate_console=${cookie}`;
    const read = g.req('GET', { cookie: c });
    expect(await g.call(read)).toBe('ok');
    expect(sessionOf(read)).toBe(session);
    expect(await g.call(g.req('HEAD', { cookie: c }))).toBe('ok');
    for (const m of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      expect(await g.call(g.req(m, { cookie: c }))).toBe('CSRF_TOKEN_INVALID');
      expect(await g.call(g.req(m, { cookie: c, 'x-csrf-token': 'nope' }))).toBe('CSRF_TOKEN_INVALID');
      expect(await g.call(g.req(m, { cookie: c, 'x-csrf-token': session.csrfToken }))).toBe('ok');
    }
    // A bearer request is no console request.
    const cli = g.req('POST', { authorization: `Bearer ${TOKEN}` });
    expect(await g.call(cli)).toBe('ok');
    expect(sessionOf(cli)).toBeUndefined();
  });

  it('refuses a foreign Origin and takes its own', async () => {
    const g = setup();
    const { cookie, session } = g.sessions.open('fp');
    const h = { cookie: `postgate_console=${cookie}`, 'x-csrf-token': session.csrfToken };
    expect(await g.call(g.req('GET', { ...h, origin: 'http://evil.test' }))).toBe('CSRF_TOKEN_INVALID');
    expect(await g.call(g.req('POST', { ...h, origin: 'null' }))).toBe('CSRF_TOKEN_INVALID');
    expect(await g.call(g.req('POST', { ...h, origin: 'https://admin.local:8081' }))).toBe('CSRF_TOKEN_INVALID');
    expect(await g.call(g.req('POST', { ...h, origin: 'http://admin.local:8081' }))).toBe('ok');
  });

  it('answers 401 to a dead or unknown cookie, and a wrong bearer token beside a live cookie is still wrong', async () => {
    const g = setup();
    const { cookie } = g.sessions.open('fp');
    expect(await g.call(g.req('GET', { cookie: 'postgate_console=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' }))).toBe('UNAUTHORIZED');
    expect(await g.call(g.req('GET', { cookie: 'other=1' }))).toBe('UNAUTHORIZED');
    expect(await g.call(g.req('GET', { cookie: `postgate_console=${cookie}`, authorization: 'Bearer wrong' }))).toBe('UNAUTHORIZED');
    g.sessions.close(cookie);
    expect(await g.call(g.req('GET', { cookie: `postgate_console=${cookie}` }))).toBe('UNAUTHORIZED');
  });

  it('counts the sign-in on the same counter: wrong tokens there throttle the bearer door, and back', () => {
    const g = setup();
    const r = g.req('POST', {}, '10.0.0.9');
    const attempt = (t: unknown) => {
      try {
        g.guard.checkToken(r, t);
        return 'ok';
      } catch (e) {
        return (e as ApiError).code;
      }
    };
    expect(attempt(TOKEN)).toBe('ok');
    expect(attempt('wrong')).toBe('UNAUTHORIZED');
    expect(attempt('')).toBe('UNAUTHORIZED');
    expect(attempt(undefined)).toBe('UNAUTHORIZED');
    expect(attempt(TOKEN)).toBe('RATE_LIMIT_EXCEEDED');
    return expect(g.call(g.req('GET', { authorization: `Bearer ${TOKEN}` }, '10.0.0.9'))).resolves.toBe('RATE_LIMIT_EXCEEDED');
  });
});
