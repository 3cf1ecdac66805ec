// The auth area's services as createAuthServices (auth/services.ts) builds them on a real store: the
// sign-in part of the store, the pass-through dependencies, and the keyless limits on the process's one
// limiter with the configured numbers (so a limit set in config is the one enforced).
import type { FastifyRequest } from 'fastify';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAuthServices } from '../../auth/services.js';
import type { KeyAuthenticator } from '../../control/api-keys/authenticate.js';
import { RateLimiter } from '../../control/limits/rate-limit.js';
import { loadConfig } from '../../core/config.js';
import { ApiError } from '../../core/errors.js';
import { createLogger } from '../../core/log.js';
import { type UnitStore, unitStore } from '../helpers/unit-store.js';

let us: UnitStore;
beforeEach(async () => {
  us = await unitStore();
});
afterEach(() => us.close());

function build(perIp: number) {
  const config = loadConfig({ POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test' });
  const auth = { ...config.auth, keylessPerIpMinute: perIp, keylessPerProjectMinute: 1000 };
  const limiter = new RateLimiter();
  const take = vi.spyOn(limiter, 'take');
  const access = {} as KeyAuthenticator;
  const log = createLogger('test', 'silent');
  const s = createAuthServices({
    config: { ...config, auth },
    log,
    store: us.store,
    access,
    invalidator: us.invalidator,
    secret: 'a'.repeat(64),
    sendSystemMail: async () => ({ id: 'em_1' }),
    limiter,
    operatorAudit: async () => {},
  });
  return { s, take, access, log };
}

describe('createAuthServices', () => {
  it('works on the sign-in part of the store and passes the rest through', () => {
    const { s, access, log } = build(10);
    expect(s.store).toBe(us.store.signIn);
    expect(s.projectsStore).toBe(us.store);
    expect(s.access).toBe(access);
    expect(s.log).toBe(log);
    for (const k of ['projects', 'sessions', 'codes', 'oauth', 'events', 'keyless'] as const) expect(s[k]).toBeDefined();
  });

  it('limits the keyless routes on the given limiter with the configured per-address number', () => {
    const { s, take } = build(2);
    const req = { ip: '203.0.113.7' } as FastifyRequest;
    s.keyless.ip(req, 'widget');
    s.keyless.ip(req, 'widget');
    expect(() => s.keyless.ip(req, 'widget')).toThrow(ApiError);
    expect(take).toHaveBeenCalledWith('auth:keyless-ip:widget:203.0.113.7', 2, 60_000, expect.any(Function));
  });
});
