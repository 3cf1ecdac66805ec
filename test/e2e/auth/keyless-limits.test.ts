// The auth routes that take no key (the hosted widget's calls, page and files, the embed script, the
// OAuth callback) are limited per client address and, where they name a project, per project; the
// OAuth sign-ins a project has waiting for their callback are capped in the store. Requests come from
// several loopback addresses (127.0.0.x) to stand for several clients.
import crypto from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Project } from '../../helpers/stack.js';
import { APP, allowOrigin, client, provider, setClock } from './setup.js';

const PER_PROJECT = 90;
const PENDING = 150;
let stack: Stack;

interface Answer {
  status: number;
  body: any;
  headers: http.IncomingHttpHeaders;
}

/** Requests from the loopback address `ip`. */
function from(ip: string) {
  const agent = new http.Agent({ keepAlive: true, localAddress: ip } as http.AgentOptions);
  return (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) =>
    new Promise<Answer>((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = http.request(
        `${stack.url}${p}`,
        { method, agent, headers: { ...(data ? { 'content-type': 'application/json' } : {}), ...headers } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString();
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {
              /* a page or a file */
            }
            resolve({ status: res.statusCode!, body: parsed, headers: res.headers });
          });
        },
      );
      req.on('error', reject);
      req.end(data);
    });
}

const challenge = () => crypto.createHash('sha256').update(crypto.randomBytes(32).toString('base64url')).digest('base64url');
const startBody = (slug: string) => ({ slug, provider: 'github', method: 'oauth', redirectUri: `${APP}/cb`, codeChallenge: challenge() });
const count = (answers: Answer[], status: number) => answers.filter((a) => a.status === status).length;

async function project(slug: string): Promise<Project> {
  const p = await stack.createProject(slug);
  await allowOrigin(stack, p);
  await provider(stack, p, 'github', { clientId: 'gh-client', clientSecret: 'gh-secret' });
  return p;
}

beforeAll(async () => {
  stack = await Stack.start({
    env: { POSTGATE_TEST_CLOCK: '1', POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test' },
    // Per address: the default (60 a minute).
    config: { auth: { keylessPerProjectMinute: PER_PROJECT, pendingSignInsPerProject: PENDING } },
  });
});
afterAll(async () => {
  await stack?.stop();
});

describe('keyless auth routes', () => {
  it('hosted-start with an allowed Origin: of 300 at once from one address, 60 are answered, the rest 429 with Retry-After', async () => {
    await project('per-ip');
    const call = from('127.0.0.1');
    const answers = await Promise.all(Array.from({ length: 300 }, () => call('POST', '/api/v1/auth/hosted-start', startBody('per-ip'), { origin: APP })));
    expect(count(answers, 200)).toBe(60);
    expect(count(answers, 429)).toBe(240);
    const refused = answers.find((a) => a.status === 429)!;
    expect(refused.body).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', error: expect.stringMatching(/from this address/) });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(refused.headers['ratelimit-limit']).toBe('60');
    // The page reads why (its CORS answer exposes the header).
    expect(refused.headers['access-control-allow-origin']).toBe(APP);
  });

  it('hosted-start over many addresses stops at the per-project limit', async () => {
    await project('per-project');
    const answers = await Promise.all(
      ['127.0.0.2', '127.0.0.3', '127.0.0.4'].flatMap((ip) => {
        const call = from(ip);
        return Array.from({ length: 50 }, () => call('POST', '/api/v1/auth/hosted-start', startBody('per-project'), { origin: APP }));
      }),
    );
    expect(count(answers, 200)).toBe(PER_PROJECT);
    expect(count(answers, 429)).toBe(150 - PER_PROJECT);
    expect(answers.find((a) => a.status === 429)!.body).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', error: expect.stringMatching(/this project/) });
  });

  it('hosted-config and the widget page are limited per project too', async () => {
    await project('pages');
    for (const path of ['/api/v1/auth/hosted-config/pages', `/api/v1/auth/hosted/widget?slug=pages&redirect_uri=${encodeURIComponent(`${APP}/cb`)}`]) {
      const answers = await Promise.all(
        ['127.0.0.7', '127.0.0.8'].flatMap((ip) => {
          const call = from(ip);
          return Array.from({ length: 50 }, () => call('GET', path));
        }),
      );
      expect([path, count(answers, 200)]).toEqual([path, PER_PROJECT]);
      expect(count(answers, 429)).toBe(100 - PER_PROJECT);
    }
  });

  it('every keyless route is limited per address, each on its own count', async () => {
    await project('routes');
    const call = from('127.0.0.6');
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/api/v1/auth/hosted-config/routes'],
      ['GET', `/api/v1/auth/hosted/widget?slug=routes&redirect_uri=${encodeURIComponent(`${APP}/cb`)}`],
      ['GET', '/api/v1/auth/hosted/widget.js'],
      ['GET', '/embed/v1.js'],
      ['GET', '/callback/github?state=unknown&code=x'],
      // Refused before any code is mailed or checked (a bad address): the count is the route's own.
      ['POST', '/api/v1/auth/hosted/email-otp/send', { slug: 'routes', email: 'not an address', redirectUri: `${APP}/cb` }],
      ['POST', '/api/v1/auth/hosted/email-otp/verify', { slug: 'routes', email: 'not an address', code: '123456', redirectUri: `${APP}/cb` }],
    ];
    const headers = { origin: APP };
    for (const [method, path, body] of routes) {
      const first = await Promise.all(Array.from({ length: 60 }, () => call(method, path, body, headers)));
      expect([path, count(first, 429)]).toEqual([path, 0]);
      const next = await call(method, path, body, headers);
      expect([path, next.status, next.body.code]).toEqual([path, 429, 'RATE_LIMIT_EXCEEDED']);
      expect(Number(next.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    }
    // An unknown project is looked up no more often than the address may ask: the route's count, whatever the slug.
    expect((await call('GET', '/api/v1/auth/hosted-config/no-such-project')).status).toBe(429);
    // The files share one count, and the callback's two paths share another.
    expect((await call('GET', '/api/v1/auth/hosted/widget.css')).status).toBe(429);
    expect((await call('GET', '/api/v1/auth/callback/github?state=unknown&code=x')).status).toBe(429);
    // Another address is not affected.
    expect((await from('127.0.0.9')('GET', '/api/v1/auth/hosted-config/routes')).status).toBe(200);
  });

  it(`caps the OAuth sign-ins a project has waiting at ${PENDING}, started with a key or without; they free up as they expire`, async () => {
    const p = await project('pending');
    const keyed = client(stack, p.keys.live);
    const start = () => keyed.post('/sign-in/social', { provider: 'github', callbackURL: `${APP}/cb`, codeChallenge: challenge() });
    const answers = [];
    for (let i = 0; i < PENDING; i += 25) answers.push(...(await Promise.all(Array.from({ length: 25 }, start))));
    expect(answers.map((a) => a.status)).toEqual(Array(PENDING).fill(200));
    const over = await start();
    expect([over.status, over.body.code]).toEqual([429, 'TOO_MANY_PENDING_SIGN_INS']);
    expect(over.body.error).toMatch(/waiting/);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    const hosted = await from('127.0.0.10')('POST', '/api/v1/auth/hosted-start', startBody('pending'), { origin: APP });
    expect([hosted.status, hosted.body.code]).toEqual([429, 'TOO_MANY_PENDING_SIGN_INS']);
    // Another project has room.
    await project('pending-other');
    expect((await from('127.0.0.10')('POST', '/api/v1/auth/hosted-start', startBody('pending-other'), { origin: APP })).status).toBe(200);
    // Past the states' 10 minutes they no longer count.
    await setClock(stack, 11 * 60_000);
    try {
      expect((await start()).status).toBe(200);
    } finally {
      await setClock(stack, 0);
    }
  });
});
