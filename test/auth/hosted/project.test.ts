// auth/hosted/project.ts on a real store: what the keyless hosted endpoints trust (the project by
// slug, a live auth-scope stand-in caller, the browser's Origin against the allowed origins and
// postgate's own) and how the callback address gets its svc_code.
import type { FastifyRequest } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuthCrypto } from '../../../auth/crypto.js';
import { Hosted, withCode } from '../../../auth/hosted/project.js';
import { ProjectAuthConfig } from '../../../auth/project-config.js';
import type { AuthServices } from '../../../auth/services.js';
import { loadConfig } from '../../../core/config.js';
import type { ApiError } from '../../../core/errors.js';
import { unitStore, type UnitStore } from '../../helpers/unit-store.js';

let u: UnitStore;
let hosted: Hosted;
let projects: ProjectAuthConfig;
const req = (origin?: string, ip = '10.0.0.1') => ({ ip, headers: origin === undefined ? {} : { origin } }) as unknown as FastifyRequest;
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: ApiError) => e.code,
  );

beforeEach(async () => {
  u = await unitStore();
  projects = new ProjectAuthConfig(u.store.signIn, new AuthCrypto('h'.repeat(64)));
  const ctx = {
    config: loadConfig({ POSTGATE_BASE_URL: 'https://api.postgate.test', POSTGATE_ID_URL: 'https://id.postgate.test' }),
    store: u.store.signIn,
    projectsStore: u.store,
    projects,
  } as unknown as AuthServices;
  hosted = new Hosted(ctx);
  await u.store.signIn.addOrigin(u.project.id, 'https://app.example.com', 1);
});

afterEach(() => u.close());

it('finds the project by slug, or answers NOT_FOUND', async () => {
  expect((await hosted.project('acme')).id).toBe(u.project.id);
  expect(await outcome(hosted.project('nope'))).toBe('NOT_FOUND');
});

it('acts as a live, auth-scope caller: nothing a browser sends (X-Service-Client-IP) is trusted', async () => {
  const c = hosted.caller(u.project);
  expect(c.key).toMatchObject({ kind: 'live', scope: 'auth', projectId: u.project.id, revokedAt: null });
});

describe('origins', () => {
  it('postgate’s own origins and the project’s allowed ones, exactly', async () => {
    expect(hosted.ownOrigins).toEqual(new Set(['https://api.postgate.test', 'https://id.postgate.test']));
    expect(await hosted.originAllowed(u.project.id, 'https://id.postgate.test')).toBe(true);
    expect(await hosted.originAllowed(u.project.id, 'https://app.example.com')).toBe(true);
    for (const o of ['https://app.example.com:444', 'http://app.example.com', 'https://evil.example', 'https://app.example.com.evil.example', 'null'])
      expect(await hosted.originAllowed(u.project.id, o), o).toBe(false);
    const other = await u.another('other');
    expect(await hosted.originAllowed(other.id, 'https://app.example.com')).toBe(false);
  });

  it('a request without Origin passes the check (servers send none) but not the acting calls', async () => {
    expect(await outcome(hosted.checkRequestOrigin(req(), u.project.id))).toBe('ok');
    expect(await outcome(hosted.requireRequestOrigin(req(), u.project.id))).toBe('REDIRECT_NOT_ALLOWED');
    expect(await outcome(hosted.requireRequestOrigin(req('https://app.example.com'), u.project.id))).toBe('ok');
    expect(await outcome(hosted.checkRequestOrigin(req('https://evil.example'), u.project.id))).toBe('REDIRECT_NOT_ALLOWED');
    expect(await outcome(hosted.requireRequestOrigin(req('https://evil.example'), u.project.id))).toBe('REDIRECT_NOT_ALLOWED');
  });
});

describe('enabled', () => {
  it('the method must be enabled, and the region of the connection allowed', async () => {
    expect((await hosted.enabled(req(), u.project.id, 'email', 'otp')).id).toBe('email');
    expect(await outcome(hosted.enabled(req(), u.project.id, 'email', 'oauth'))).toBe('PROVIDER_NOT_ENABLED');
    expect(await outcome(hosted.enabled(req(), u.project.id, 'google', 'oauth'))).toBe('PROVIDER_NOT_ENABLED');
    await projects.set(u.project.id, 'email', { denyCidrs: ['10.0.0.0/8'] });
    expect(await outcome(hosted.enabled(req(undefined, '10.1.1.1'), u.project.id, 'email', 'otp'))).toBe('REGION_NOT_ALLOWED');
    expect(await outcome(hosted.enabled(req(undefined, '::ffff:10.1.1.1'), u.project.id, 'email', 'otp'))).toBe('REGION_NOT_ALLOWED');
    expect(await outcome(hosted.enabled(req(undefined, '192.0.2.1'), u.project.id, 'email', 'otp'))).toBe('ok');
  });
});

it('withCode sets svc_code, drops a stale one and any error, keeps the rest', () => {
  const back = new URL(withCode(new URL('https://app.example.com/cb?svc_code=old&error=x&next=%2Fhome'), 'new'));
  expect([...back.searchParams]).toEqual([
    ['next', '/home'],
    ['svc_code', 'new'],
  ]);
});
