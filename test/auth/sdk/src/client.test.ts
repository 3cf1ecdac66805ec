// auth/sdk/src/client.ts, the low-level client, with a fetch of the test's own: what each call sends
// (the key, the token, no key on the public hosted calls) and every failure as a PostgateError.
import { describe, expect, it } from 'vitest';
import { createClient, PostgateError } from '../../../../auth/sdk/src/client.js';

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

function client(answer: () => Response | Promise<Response>, baseURL = 'https://auth.example.com/') {
  const sent: Sent[] = [];
  const c = createClient({
    apiKey: 'pg_live_key',
    baseURL,
    fetch: async (url, init) => {
      sent.push({
        url: String(url),
        method: init?.method ?? 'GET',
        headers: init?.headers as Record<string, string>,
        body: init?.body ? JSON.parse(String(init.body)) : undefined,
      });
      return answer();
    },
  });
  return { c, sent };
}
const json = (body: unknown, status = 200, headers: Record<string, string> = {}) => new Response(JSON.stringify(body), { status, headers });

it('needs an API key', () => {
  expect(() => createClient({ apiKey: '' })).toThrow(PostgateError);
});

describe('requests', () => {
  it('the key in x-service-key, JSON bodies, the base URL without its trailing slash', async () => {
    const { c, sent } = client(() => json({ success: true, message: 'sent' }));
    await c.sendEmailOTP('a@example.com');
    expect(sent[0]).toEqual({
      url: 'https://auth.example.com/api/v1/auth/sign-in/email-otp/send',
      method: 'POST',
      headers: { 'x-service-key': 'pg_live_key', 'content-type': 'application/json' },
      body: { email: 'a@example.com' },
    });
  });

  it('a session token as a bearer token', async () => {
    const { c, sent } = client(() => json({ user: {}, session: {} }));
    await c.getSession('pgs_token');
    expect(sent[0]!.headers).toEqual({ 'x-service-key': 'pg_live_key', authorization: 'Bearer pgs_token' });
    expect(sent[0]!.method).toBe('GET');
  });

  it('the hosted calls are public: no key is sent, and the slug is encoded', async () => {
    const { c, sent } = client(() => json({ url: 'https://provider/authorize' }));
    await c.getHostedConfig('a/b?c');
    await c.hostedStart({ slug: 'acme', provider: 'google', redirectUri: 'https://app/cb', codeChallenge: 'ch' });
    expect(sent[0]!.url).toBe('https://auth.example.com/api/v1/auth/hosted-config/a%2Fb%3Fc');
    expect(sent.every((s) => !('x-service-key' in s.headers))).toBe(true);
    expect(sent[1]!.body).toEqual({ slug: 'acme', provider: 'google', redirectUri: 'https://app/cb', codeChallenge: 'ch', method: 'oauth' });
  });

  it('outside a browser, a sign-in is bound only when the caller gives the challenge and verifier', async () => {
    const { c, sent } = client(() => json({ url: 'u', token: 't', user: {} }));
    await c.signIn('google', { callbackURL: 'https://app/cb' });
    await c.signIn('google', { callbackURL: 'https://app/cb', codeChallenge: 'ch' });
    await c.exchangeCode('svc', { codeVerifier: 'v' });
    await c.exchangeCode('svc');
    expect(sent.map((s) => s.body)).toEqual([
      { provider: 'google', method: 'oauth', callbackURL: 'https://app/cb' },
      { provider: 'google', method: 'oauth', callbackURL: 'https://app/cb', codeChallenge: 'ch' },
      { code: 'svc', codeVerifier: 'v' },
      { code: 'svc' },
    ]);
  });
});

describe('failures', () => {
  const failure = async (answer: () => Response | Promise<Response>) =>
    (await client(answer)
      .c.getProviders()
      .catch((e: unknown) => e)) as PostgateError;

  it('the API’s {error, code}, its status and Retry-After', async () => {
    const e = await failure(() => json({ error: 'Too many', code: 'RATE_LIMIT_EXCEEDED' }, 429, { 'retry-after': '7' }));
    expect(e).toBeInstanceOf(PostgateError);
    expect(e).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', message: 'Too many', status: 429, retryAfter: 7 });
  });

  it('an answer that is not the API’s: HTTP_<status> and the start of its text', async () => {
    const e = await failure(() => new Response('<html>Bad gateway</html>', { status: 502 }));
    expect(e).toMatchObject({ code: 'HTTP_502', status: 502, retryAfter: null });
    expect(e.message).toBe('postgate answered 502: <html>Bad gateway</html>');
  });

  it('no answer at all: NETWORK_ERROR, status 0, naming the server', async () => {
    const e = await failure(() => Promise.reject(new TypeError('fetch failed')));
    expect(e).toMatchObject({ code: 'NETWORK_ERROR', status: 0 });
    expect(e.message).toBe('Could not reach postgate at https://auth.example.com: fetch failed');
  });
});
