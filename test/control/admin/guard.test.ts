// control/admin/guard.ts: the operator's token lets a request through; a wrong or missing one is
// UNAUTHORIZED, counted per source address and logged without the token; past the limit the address
// is refused with Retry-After before its token is looked at, until the window ends.
import type { FastifyRequest } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { adminGuard } from '../../../control/admin/guard.js';
import { memoryCounters } from '../../../control/limits/counters.js';
import { clock } from '../../../core/clock.js';
import type { ApiError } from '../../../core/errors.js';
import type { Logger } from '../../../core/log.js';

const TOKEN = 'operator-secret-token';

function setup(o: { failures?: number; windowMs?: number } = {}) {
  const warnings: Array<Record<string, unknown>> = [];
  const refusals: string[] = [];
  const log = { warn: (obj: Record<string, unknown>) => warnings.push(obj) } as unknown as Logger;
  const guard = adminGuard({ token: TOKEN, counters: memoryCounters(), log, onRefused: (r) => refusals.push(r), ...o });
  const call = (authorization: string | undefined, ip = '10.0.0.1', url = '/admin/projects?x=1') =>
    guard({ ip, method: 'GET', url, headers: authorization === undefined ? {} : { authorization } } as unknown as FastifyRequest).then(
      () => 'ok',
      (e: ApiError) => e,
    );
  return { call, warnings, refusals };
}

afterEach(() => clock.setOffset(0));

describe('adminGuard', () => {
  it('lets the right bearer token through, and nothing else', async () => {
    const g = setup();
    expect(await g.call(`Bearer ${TOKEN}`)).toBe('ok');
    for (const wrong of [undefined, TOKEN, `Bearer ${TOKEN}x`, `bearer ${TOKEN}`, `Bearer ${TOKEN.slice(0, -1)}`, 'Bearer ', '']) {
      const e = await g.call(wrong);
      expect(e).toMatchObject({ code: 'UNAUTHORIZED', status: 401, message: 'Admin token required' });
    }
    expect(g.refusals).toEqual(Array(7).fill('token'));
  });

  it('logs a wrong token with the address, path and count, never the token itself', async () => {
    const g = setup();
    await g.call('Bearer guessed-token-value');
    await g.call(undefined);
    expect(g.warnings).toEqual([
      { ip: '10.0.0.1', method: 'GET', path: '/admin/projects', failures: 1, presented: true },
      { ip: '10.0.0.1', method: 'GET', path: '/admin/projects', failures: 2, presented: false },
    ]);
    expect(JSON.stringify(g.warnings)).not.toContain('guessed-token-value');
  });

  it('refuses an address past the limit with Retry-After, even with the right token, while others pass', async () => {
    const g = setup({ failures: 3, windowMs: 60_000 });
    for (let i = 0; i < 3; i++) expect(await g.call('Bearer wrong')).toMatchObject({ code: 'UNAUTHORIZED' });
    const e = (await g.call(`Bearer ${TOKEN}`)) as ApiError;
    expect(e).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', status: 429 });
    expect(Number(e.headers['Retry-After'])).toBeGreaterThanOrEqual(59);
    expect(Number(e.headers['Retry-After'])).toBeLessThanOrEqual(60);
    expect(e.message).toContain(`${e.headers['Retry-After']} s`);
    expect(g.refusals.at(-1)).toBe('throttled');
    // A throttled attempt is not logged as a wrong token, nor counted further.
    expect(g.warnings).toHaveLength(3);
    // Another address is not affected.
    expect(await g.call(`Bearer ${TOKEN}`, '10.0.0.2')).toBe('ok');
  });

  it('does not count the right token as a failure', async () => {
    const g = setup({ failures: 2 });
    await g.call('Bearer wrong');
    for (let i = 0; i < 5; i++) expect(await g.call(`Bearer ${TOKEN}`)).toBe('ok');
    expect(await g.call('Bearer wrong')).toMatchObject({ code: 'UNAUTHORIZED' });
    expect(await g.call(`Bearer ${TOKEN}`)).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED' });
  });

  it('lets the address try again once the window has passed', async () => {
    const g = setup({ failures: 1, windowMs: 60_000 });
    await g.call('Bearer wrong');
    expect(await g.call(`Bearer ${TOKEN}`)).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED' });
    clock.setOffset(61_000);
    expect(await g.call(`Bearer ${TOKEN}`)).toBe('ok');
  });
});
