// Project auth configuration through the CLI (provider set/list/disable,
// origin allow/list/remove, auth set/show), secrets at rest, the providers
// list, the regional filter, and the auth API in the OpenAPI document.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Stack, Project } from '../../helpers/stack.js';
import { APP, authStack, client } from './setup.js';

let stack: Stack;
let p: Project;
// The CLI costs a Node start per call: it is used where it is the subject, the admin API elsewhere.
const cli = (...args: string[]) => stack.cli(...args, '--project', p.slug, '--json').then((o) => JSON.parse(o));
const admin = (method: string, sub: string, body?: unknown) => stack.admin(method, `/admin/v1/projects/${p.slug}/auth/${sub}`, body);
const RU = '77.88.8.8'; // Yandex DNS
const US = '8.8.8.8';

beforeAll(async () => {
  stack = await authStack();
  p = await stack.createProject('cfg');
});
afterAll(async () => {
  await stack?.stop();
});

describe('CLI', () => {
  it('provider set / list / disable, with endpoint overrides and secrets never shown', async () => {
    const set = await cli(
      'provider',
      'set',
      '--provider',
      'google',
      '--client-id',
      'gid.apps',
      '--client-secret',
      'SUPER-SECRET-VALUE-1',
      '--jwks-url',
      'https://keys.example.net/jwks',
    );
    expect(set).toMatchObject({
      provider: 'google',
      enabled: true,
      methods: ['oauth', 'id_token'],
      clientId: 'gid.apps',
      hasClientSecret: true,
      endpoints: { jwksUrl: 'https://keys.example.net/jwks' },
    });
    expect(JSON.stringify(set)).not.toContain('SUPER-SECRET');
    await admin('PUT', 'providers/telegram', { botToken: '42:SUPER-SECRET-BOT-TOKEN', methods: ['widget', 'miniapp'] });
    const [list, text] = await Promise.all([cli('provider', 'list'), stack.cli('provider', 'list', '--project', p.slug)]);
    expect(list.map((x: any) => x.provider)).toEqual(['google', 'telegram', 'email']);
    expect(JSON.stringify(list)).not.toContain('SUPER-SECRET');
    expect(text).toContain('telegram');
    expect(text).not.toContain('SUPER-SECRET');

    const off = await cli('provider', 'disable', '--provider', 'telegram');
    expect(off).toMatchObject({ provider: 'telegram', enabled: false, hasBotToken: true });
    // Re-enabling keeps the stored settings.
    expect(await admin('PUT', 'providers/telegram', {})).toMatchObject({ enabled: true, methods: ['widget', 'miniapp'], hasBotToken: true });
  });

  it('refuses impossible settings with a clear message', async () => {
    await expect(stack.cli('provider', 'set', '--project', p.slug, '--provider', 'myspace')).rejects.toThrow(/Unknown provider/);
    const refusals = await Promise.all(
      [
        admin('PUT', 'providers/github', { methods: ['oauth'] }),
        admin('PUT', 'providers/vk', { clientId: 'x', methods: ['widget'] }),
        admin('PUT', 'providers/vk', { clientId: 'x', tokenUrl: 'ftp://x' }),
        admin('PUT', 'providers/vk', { clientId: 'x', denyCountries: ['Russia'] }),
        admin('PUT', 'providers/vk', { clientId: 'x', allowCidrs: ['10.0.0.0/33'] }),
        admin('PUT', 'providers/github', {}),
      ].map((call) =>
        call.then(
          () => 'accepted',
          (err: Error) => err.message,
        ),
      ),
    );
    expect(refusals[0]).toMatch(/needs clientId, clientSecret/);
    expect(refusals[1]).toMatch(/supports the methods/);
    expect(refusals[2]).toMatch(/http/);
    expect(refusals[3]).toMatch(/ISO 3166/);
    expect(refusals[4]).toMatch(/CIDR/);
    expect(refusals[5]).toMatch(/Nothing to enable/);
  });

  it('refuses a flag the provider does not use, instead of storing it silently', async () => {
    // Yandex has no API URL; the email provider has no credentials; Google has no bot token.
    await expect(
      stack.cli(
        'provider',
        'set',
        '--project',
        p.slug,
        '--provider',
        'yandex',
        '--client-id',
        'y',
        '--client-secret',
        's',
        '--api-url',
        'https://api.example.net',
      ),
    ).rejects.toThrow(/Yandex ID does not use apiUrl; its settings are .*userinfoUrl/);
    await expect(admin('PUT', 'providers/email', { clientSecret: 'x' })).rejects.toThrow(
      /Email does not use clientSecret; its settings are methods and region rules only/,
    );
    await expect(admin('PUT', 'providers/google', { clientId: 'g', botToken: '1:x' })).rejects.toThrow(/Google does not use botToken/);
    expect((await admin('GET', 'providers')).data.map((x: any) => x.provider)).not.toContain('yandex');
    // What a provider does read is taken: SMS's gateway URL and token, a generic issuer's endpoints.
    expect(await admin('PUT', 'providers/sms', { apiUrl: 'https://sms.example.net/send', clientSecret: 't' })).toMatchObject({ enabled: true });
    expect(
      await admin('PUT', 'providers/oidc', { clientId: 'c', issuer: 'https://id.example.net', jwksUrl: 'https://id.example.net/keys', methods: ['oidc'] }),
    ).toMatchObject({ enabled: true });
    await admin('DELETE', 'providers/sms');
    await admin('DELETE', 'providers/oidc');
  });

  it('keeps provider secrets encrypted at rest', async () => {
    const files = fs.readdirSync(stack.dataDir).filter((f) => f.startsWith('postgate.db'));
    expect(files.length).toBeGreaterThan(0);
    const bytes = Buffer.concat(files.map((f) => fs.readFileSync(path.join(stack.dataDir, f))));
    expect(bytes.includes('gid.apps')).toBe(true); // the client id is stored as it is: not a secret
    expect(bytes.includes('SUPER-SECRET-VALUE-1')).toBe(false);
    expect(bytes.includes('SUPER-SECRET-BOT-TOKEN')).toBe(false);
  });

  it('origin allow / list / remove, normalised to scheme://host[:port]', async () => {
    expect(await cli('origin', 'allow', 'https://App.Example.com/')).toEqual({ origin: APP });
    await admin('POST', 'origins', { origin: 'http://localhost:3000' });
    expect(await cli('origin', 'list')).toEqual(['http://localhost:3000', APP]);
    await expect(admin('POST', 'origins', { origin: 'https://app.example.com/path' })).rejects.toThrow(/scheme:\/\/host/);
    await expect(admin('POST', 'origins', { origin: '*.example.com' })).rejects.toThrow(/origin/);
    expect(await cli('origin', 'remove', 'http://localhost:3000')).toMatchObject({ removed: true });
    expect((await admin('GET', 'origins')).data).toEqual([APP]);
    await expect(admin('DELETE', 'origins', { origin: 'http://localhost:3000' })).rejects.toThrow(/not allowed/);
  });

  it('auth set / show: session lifetime, code sender, Telegram window, the browser binding (on for a new project)', async () => {
    const more = { twoFactor: 'off', jwtAudience: `postgate:${p.slug}`, jwtTtlSeconds: 300 };
    expect(await cli('auth', 'show')).toEqual({ sessionTtlSeconds: 2592000, codeFrom: null, telegramWindowSeconds: 600, requireCodeVerifier: true, ...more });
    expect(await cli('auth', 'set', '--session-ttl', '86400', '--code-from', 'Acme <login@acme.test>')).toEqual({
      sessionTtlSeconds: 86400,
      codeFrom: 'Acme <login@acme.test>',
      telegramWindowSeconds: 600,
      requireCodeVerifier: true,
      ...more,
    });
    expect(await cli('auth', 'set', '--two-factor', 'optional', '--jwt-audience', 'https://api.acme.test', '--jwt-ttl', '120')).toMatchObject({
      twoFactor: 'optional',
      jwtAudience: 'https://api.acme.test',
      jwtTtlSeconds: 120,
    });
    expect(await cli('auth', 'set', '--two-factor', 'default', '--jwt-audience', 'default', '--jwt-ttl', 'default')).toMatchObject(more);
    await expect(stack.cli('auth', 'set', '--project', p.slug, '--two-factor', 'maybe')).rejects.toThrow(/takes off, optional or required/);
    await expect(admin('PATCH', 'settings', { jwtTtlSeconds: 3600 })).rejects.toThrow(/<= 600/);
    expect(await cli('auth', 'set', '--require-code-verifier', 'off')).toMatchObject({ requireCodeVerifier: false });
    expect(await cli('auth', 'set', '--require-code-verifier', 'default')).toMatchObject({ requireCodeVerifier: true });
    expect(await admin('PATCH', 'settings', { sessionTtlSeconds: null, codeFrom: null })).toMatchObject({ sessionTtlSeconds: 2592000, codeFrom: null });
    await expect(admin('PATCH', 'settings', { sessionTtlSeconds: 5 })).rejects.toThrow(/>= 60/);
    await expect(stack.cli('auth', 'set', '--project', p.slug, '--require-code-verifier', 'maybe')).rejects.toThrow(/takes on or off/);
  });
});

describe('GET /providers and the regional filter', () => {
  it('lists what the project enabled, with its methods', async () => {
    const r = await client(stack, p.keys.live).get('/providers');
    expect(r.status).toBe(200);
    expect(r.body.providers).toEqual([
      { id: 'google', name: 'Google', methods: ['oauth', 'id_token'] },
      { id: 'telegram', name: 'Telegram', methods: ['widget', 'miniapp'] },
      { id: 'email', name: 'Email', methods: ['otp'] },
    ]);
  });

  it('hides and refuses a provider in a denied country (X-Service-Client-IP from a server key; CIDR rules win)', async () => {
    const q = await stack.createProject('cfg-region');
    await stack.admin('POST', `/admin/v1/projects/${q.slug}/auth/origins`, { origin: APP });
    // The regional filter is under test here, not the browser binding (login-csrf.test.ts): starts without a challenge.
    await stack.admin('PATCH', `/admin/v1/projects/${q.slug}/auth/settings`, { requireCodeVerifier: false });
    await stack.admin('PUT', `/admin/v1/projects/${q.slug}/auth/providers/github`, {
      clientId: 'g',
      clientSecret: 's',
      denyCountries: ['RU'],
      allowCidrs: ['77.88.8.0/24'],
    });
    await stack.admin('PUT', `/admin/v1/projects/${q.slug}/auth/providers/vk`, { clientId: 'v', allowCountries: ['RU', 'BY'] });
    await stack.admin('PUT', `/admin/v1/projects/${q.slug}/auth/providers/email`, { denyCidrs: ['192.0.2.0/24'] });
    const ids = async (ip: string) =>
      ((await client(stack, q.keys.live, { 'x-service-client-ip': ip }).get('/providers')).body.providers as any[]).map((x) => x.id);
    expect(await ids(US)).toEqual(['github', 'email']);
    expect(await ids(RU)).toEqual(['vk', 'github', 'email']); // RU is denied for github, but its CIDR is allowed
    expect(await ids('77.88.55.60')).toEqual(['vk', 'email']);
    expect(await ids('192.0.2.10')).toEqual(['github']);

    const social = (ip: string, prov: string) =>
      client(stack, q.keys.live, { 'x-service-client-ip': ip }).post('/sign-in/social', { provider: prov, callbackURL: `${APP}/cb` });
    const refused = await social('77.88.55.60', 'github');
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ code: 'REGION_NOT_ALLOWED', error: expect.any(String) });
    expect((await social(US, 'github')).status).toBe(200);
    expect((await social(US, 'vk')).body.code).toBe('REGION_NOT_ALLOWED');
    const mail = await client(stack, q.keys.test, { 'x-service-client-ip': '192.0.2.10' }).post('/sign-in/email-otp/send', { email: 'r@example.com' });
    expect(mail.body.code).toBe('REGION_NOT_ALLOWED');

    // A browser-safe (auth-scope) key cannot choose its client IP: the connection's address counts.
    const browserKey = (await stack.admin('POST', `/admin/v1/projects/${q.slug}/keys`, { kind: 'live', scope: 'auth' })).key as string;
    expect((await client(stack, browserKey, { 'x-service-client-ip': RU }).get('/providers')).body.providers.map((x: any) => x.id)).toEqual([
      'github',
      'email',
    ]);
  });
});

describe('errors and the OpenAPI document', () => {
  it('answers {error, code} for bad keys and bad bodies', async () => {
    const none = await stack.api('GET', '/api/v1/auth/providers', undefined);
    expect(none.status).toBe(401);
    expect(none.body).toMatchObject({ error: expect.any(String), code: 'INVALID_API_KEY' });
    const bad = await client(stack, 'pg_live_nope').get('/providers');
    expect(bad.body.code).toBe('INVALID_API_KEY');
    const body = await client(stack, p.keys.live).post('/sign-in/social', { provider: 'google' });
    expect(body.status).toBe(400);
    expect(body.body).toMatchObject({ error: expect.any(String), code: 'INVALID_REQUEST' });
    const notJson = await stack.api('POST', '/api/v1/auth/exchange-code', undefined, '{nope', { 'x-service-key': p.keys.live });
    expect(notJson.body.code).toBe('INVALID_REQUEST');
  });

  it('documents every auth route with a summary, tag auth, schemas, and the key requirement', async () => {
    const doc = (await stack.api('GET', '/openapi.json', undefined)).body;
    // The public hosted-widget routes (no key) are documented and tested with the widget.
    const auth = Object.entries(doc.paths as Record<string, Record<string, any>>).filter(
      ([k]) => (k.startsWith('/api/v1/auth/') && !k.startsWith('/api/v1/auth/hosted')) || k.startsWith('/callback/'),
    );
    const routes = auth.flatMap(([k, ops]) => Object.entries(ops).map(([m, op]) => ({ route: `${m.toUpperCase()} ${k}`, op })));
    // The spec's routes, then issue 41's (passkeys, two-factor, magic links, user management, JWTs).
    const spec = [
      'GET /api/v1/auth/callback/{provider}',
      'GET /api/v1/auth/providers',
      'GET /api/v1/auth/session',
      'GET /api/v1/auth/test/code',
      'GET /callback/{provider}',
      'POST /api/v1/auth/exchange-code',
      'POST /api/v1/auth/sign-in/email-otp/send',
      'POST /api/v1/auth/sign-in/email-otp/verify',
      'POST /api/v1/auth/sign-in/sms-otp/send',
      'POST /api/v1/auth/sign-in/sms-otp/verify',
      'POST /api/v1/auth/sign-in/social',
      'POST /api/v1/auth/sign-in/telegram/widget',
      'POST /api/v1/auth/sign-out',
      'POST /api/v1/auth/verify-token',
    ];
    const users = [
      'DELETE /api/v1/auth/users/{id}',
      'DELETE /api/v1/auth/users/{id}/sessions',
      'DELETE /api/v1/auth/users/{id}/sessions/{sessionId}',
      'GET /api/v1/auth/users',
      'GET /api/v1/auth/users/{id}',
      'GET /api/v1/auth/users/{id}/sessions',
      'PATCH /api/v1/auth/users/{id}',
      'POST /api/v1/auth/users/{id}/ban',
      'POST /api/v1/auth/users/{id}/unban',
    ];
    // Reached by browsers without a key: the provider's redirect, the public keys, an emailed link.
    const keyless: Record<string, string> = {
      'GET /api/v1/auth/callback/{provider}': '302',
      'GET /callback/{provider}': '302',
      'GET /api/v1/auth/jwks.json': '200',
      'GET /api/v1/auth/magic-link/{token}': '200',
      'POST /api/v1/auth/magic-link/{token}': '303',
    };
    const added = [
      'DELETE /api/v1/auth/passkeys/{id}',
      'DELETE /api/v1/auth/two-factor',
      'GET /api/v1/auth/jwks.json',
      'GET /api/v1/auth/magic-link/{token}',
      'GET /api/v1/auth/passkeys',
      'GET /api/v1/auth/test/magic-link',
      'GET /api/v1/auth/two-factor',
      'POST /api/v1/auth/magic-link/{token}',
      'POST /api/v1/auth/passkey/register/options',
      'POST /api/v1/auth/passkey/register/verify',
      'POST /api/v1/auth/sign-in/magic-link/send',
      'POST /api/v1/auth/sign-in/passkey/options',
      'POST /api/v1/auth/sign-in/passkey/verify',
      'POST /api/v1/auth/token',
      'POST /api/v1/auth/two-factor/backup-codes',
      'POST /api/v1/auth/two-factor/disable',
      'POST /api/v1/auth/two-factor/enrol',
      'POST /api/v1/auth/two-factor/enrol/confirm',
      'POST /api/v1/auth/two-factor/totp/confirm',
      'POST /api/v1/auth/two-factor/totp/setup',
      'POST /api/v1/auth/two-factor/verify',
    ];
    expect(routes.map((r) => r.route).sort()).toEqual([...spec, ...users, ...added].sort());
    for (const { route, op } of routes) {
      expect(op.tags, route).toEqual([users.includes(route) ? 'users' : 'auth']);
      expect(op.summary, route).toBeTruthy();
      expect(Object.keys(op.responses), route).toContain(keyless[route] ?? '200');
      if (!(route in keyless)) expect(op.security, route).toEqual(expect.arrayContaining([expect.objectContaining({ serviceKey: [] })]));
      if (spec.includes(route) && route.startsWith('POST') && !route.endsWith('sign-out')) expect(op.requestBody, route).toBeTruthy();
    }
    expect(JSON.stringify(doc)).not.toContain('/admin/');
  });
});
