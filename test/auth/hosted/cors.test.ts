// auth/hosted/cors.ts on a real store, through the project's Fastify setup: browsers call the auth API from apps'
// pages with no cookies, so answers may name the caller's origin; what keeps a foreign page out is
// the project's allowed origins, checked once the key has named the project.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { AuthCrypto } from '../../../auth/crypto.js';
import { corsHooks } from '../../../auth/hosted/cors.js';
import { Hosted } from '../../../auth/hosted/project.js';
import { ProjectAuthConfig } from '../../../auth/project-config.js';
import type { AuthServices } from '../../../auth/services.js';
import { newFastify } from '../../../control/http/fastify.js';
import { Registry } from '../../../core/metrics.js';
import { loadConfig } from '../../../core/config.js';
import { createLogger } from '../../../core/log.js';
import { unitStore, type UnitStore } from '../../helpers/unit-store.js';

let u: UnitStore;
let app: FastifyInstance;
const APP = 'https://app.example.com';

beforeEach(async () => {
  u = await unitStore();
  await u.store.signIn.addOrigin(u.project.id, APP, 1);
  const ctx = {
    config: loadConfig({ POSTGATE_BASE_URL: 'https://id.postgate.test' }),
    store: u.store.signIn,
    projectsStore: u.store,
    projects: new ProjectAuthConfig(u.store.signIn, new AuthCrypto('c'.repeat(64))),
  } as unknown as AuthServices;
  app = newFastify({ config: loadConfig({}), log: createLogger('test', 'silent'), metrics: new Registry() });
  corsHooks(app, new Hosted(ctx));
  // A key route: its own onRequest resolves the caller, as KeyAuthenticator.hook does.
  const resolveCaller = (req: FastifyRequest, _reply: unknown, done: () => void) => {
    req.caller = u.caller();
    done();
  };
  app.get('/api/v1/auth/session', { onRequest: resolveCaller }, async () => ({ ok: true }));
  app.get('/api/v1/auth/callback/google', async () => ({ callback: true }));
  await app.ready();
});

afterEach(async () => {
  await app.close();
  await u.close();
});

it('a server call (no Origin) passes untouched: no CORS headers, no origin check', async () => {
  const res = await app.inject({ method: 'GET', url: '/api/v1/auth/session' });
  expect(res.statusCode).toBe(200);
  expect(res.headers['access-control-allow-origin']).toBeUndefined();
});

it('an allowed origin is answered readably, with the rate limit headers exposed', async () => {
  const res = await app.inject({ method: 'GET', url: '/api/v1/auth/session', headers: { origin: APP } });
  expect(res.statusCode).toBe(200);
  expect(res.headers['access-control-allow-origin']).toBe(APP);
  expect(res.headers.vary).toBe('Origin');
  expect(res.headers['access-control-expose-headers']).toContain('retry-after');
});

it('a foreign origin is refused, readably (the SDK can show why), and the handler never runs', async () => {
  for (const origin of ['https://evil.example', 'https://app.example.com.evil.example', 'http://app.example.com', 'null']) {
    const res = await app.inject({ method: 'GET', url: '/api/v1/auth/session', headers: { origin } });
    expect(res.statusCode, origin).toBe(400);
    expect(res.json()).toMatchObject({ code: 'REDIRECT_NOT_ALLOWED' });
    expect(res.headers['access-control-allow-origin']).toBe(origin);
  }
});

it('postgate’s own origin (the hosted widget) is allowed for every project', async () => {
  expect((await app.inject({ method: 'GET', url: '/api/v1/auth/session', headers: { origin: 'https://id.postgate.test' } })).statusCode).toBe(200);
});

it('preflight: the methods and headers the API takes; the OAuth callback (a navigation) gets no CORS headers', async () => {
  const pre = await app.inject({ method: 'OPTIONS', url: '/api/v1/auth/session', headers: { origin: APP, 'access-control-request-method': 'GET' } });
  expect(pre.statusCode).toBe(204);
  expect(pre.headers['access-control-allow-methods']).toBe('GET, POST, DELETE');
  expect(pre.headers['access-control-allow-headers']).toBe('content-type, x-service-key, authorization');
  const cb = await app.inject({ method: 'GET', url: '/api/v1/auth/callback/google', headers: { origin: 'https://evil.example' } });
  expect(cb.statusCode).toBe(200);
  expect(cb.headers['access-control-allow-origin']).toBeUndefined();
});
