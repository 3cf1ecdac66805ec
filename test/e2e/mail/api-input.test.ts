// POST /v1/emails and GET /v1/emails/:id at the API boundary: keys, projects
// and every field's validation. Bad input is a 4xx with a code, never a 500.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { Stack, type Project } from '../../helpers/stack.js';

function rawPost(url: string, key: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          req.destroy();
          resolve({ status: res.statusCode!, body: text });
        });
      },
    );
    req.on('error', (err) =>
      (err as NodeJS.ErrnoException).code === 'EPIPE' || (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err),
    );
    // The full length is announced but only the start is sent: the answer must not wait for the upload.
    req.write(body.slice(0, 64 * 1024));
  });
}

let stack: Stack;
let a: Project;
let b: Project;
// Each send goes to a new address: with no DNS for example.test the gateway bounces them, which suppresses the address.
let n = 0;
const valid = {
  from: 'Acme <hello@acme.test>',
  subject: 'Hi',
  text: 'Hello',
  get to() {
    return `user${++n}@example.test`;
  },
};
const send = () => ({ ...valid });

beforeAll(async () => {
  stack = await Stack.start();
  a = await stack.createProject('acme');
  b = await stack.createProject('other');
  await stack.verifyDomain('acme', 'acme.test');
  // These tests fire requests faster than the default 60/s; the limit itself is tested elsewhere.
  await stack.setPlan('acme', 'free', { rate: 100000 });
});
afterAll(async () => {
  await stack?.stop();
});

describe('API keys', () => {
  it('accepts a live key as Bearer or X-Service-Key', async () => {
    const r1 = await stack.api('POST', '/v1/emails', a.keys.live, send());
    expect(r1.status).toBe(202);
    expect(r1.body).toEqual({ id: expect.any(String), status: 'queued' });
    const r2 = await stack.api('POST', '/v1/emails', undefined, send(), { 'x-service-key': a.keys.live });
    expect(r2.status).toBe(202);
  });

  it('answers 401 INVALID_API_KEY to a missing, wrong, test-kind or revoked key', async () => {
    for (const key of [undefined, 'pg_live_nope', `${a.keys.live}x`, a.keys.test]) {
      const r = await stack.api('POST', '/v1/emails', key, send());
      expect(r.status, String(key)).toBe(401);
      expect(r.body.code).toBe('INVALID_API_KEY');
      expect(typeof r.body.error).toBe('string');
    }
    const created = JSON.parse(await stack.cli('key', 'create', '--project', 'acme', '--kind', 'live', '--json'));
    expect((await stack.api('POST', '/v1/emails', created.key, send())).status).toBe(202);
    const list = JSON.parse(await stack.cli('key', 'list', '--project', 'acme', '--json'));
    expect(list.some((k: any) => k.id === created.id && k.revoked_at === null)).toBe(true);
    expect(JSON.stringify(list)).not.toContain(created.key);
    await stack.cli('key', 'revoke', '--project', 'acme', '--id', created.id);
    const r = await stack.api('POST', '/v1/emails', created.key, send());
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('INVALID_API_KEY');
  });

  it('keys look like pg_live_/pg_test_ with 256 random bits', () => {
    expect(a.keys.live).toMatch(/^pg_live_[0-9A-Za-z]{43}$/);
    expect(a.keys.test).toMatch(/^pg_test_[0-9A-Za-z]{43}$/);
    expect(a.keys.live).not.toBe(b.keys.live);
  });

  it('never shows one project the emails of another (404)', async () => {
    const { body } = await stack.api('POST', '/v1/emails', a.keys.live, send());
    expect((await stack.api('GET', `/v1/emails/${body.id}`, a.keys.live)).status).toBe(200);
    const other = await stack.api('GET', `/v1/emails/${body.id}`, b.keys.live);
    expect(other.status).toBe(404);
    expect(other.body.code).toBe('NOT_FOUND');
    expect((await stack.api('GET', '/v1/emails/does-not-exist', a.keys.live)).status).toBe(404);
  });
});

describe('send request validation', () => {
  const long = (n: number) => 'x'.repeat(n);
  const cases: Array<[string, unknown]> = [
    ['empty body', {}],
    ['not an object', [1, 2]],
    ['string body', '"hello"'],
    ['missing from', { ...valid, from: undefined }],
    ['missing to', { ...valid, to: undefined }],
    ['missing subject', { ...valid, subject: undefined }],
    ['neither html nor text', { from: valid.from, to: valid.to, subject: 'x' }],
    ['from not an address', { ...valid, from: 'not-an-address' }],
    ['from with CRLF', { ...valid, from: 'a@acme.test\r\nBcc: victim@x.test' }],
    ['from as number', { ...valid, from: 42 }],
    ['to empty list', { ...valid, to: [] }],
    ['to with a bad address', { ...valid, to: ['ok@example.test', 'bad@'] }],
    ['to with header injection', { ...valid, to: 'x@example.test\nBcc: y@example.test' }],
    ['to as object', { ...valid, to: { a: 1 } }],
    [
      'too many recipients',
      { ...valid, to: Array.from({ length: 30 }, (_, i) => `u${i}@example.test`), cc: Array.from({ length: 21 }, (_, i) => `c${i}@example.test`) },
    ],
    ['subject with newline', { ...valid, subject: 'Hi\r\nX-Evil: 1' }],
    ['subject too long', { ...valid, subject: long(1000) }],
    ['subject as array', { ...valid, subject: ['a'] }],
    ['html as number', { ...valid, html: 5 }],
    ['text as boolean', { ...valid, text: true }],
    ['cc neither an address nor a list', { ...valid, cc: 5 }],
    ['cc a string that is no address', { ...valid, cc: 'not-an-address' }],
    ['tag object with a space', { ...valid, tags: [{ name: 'a b', value: 'x' }] }],
    ['tag object without value', { ...valid, tags: [{ name: 'a' }] }],
    ['tag object with more keys', { ...valid, tags: [{ name: 'a', value: 'b', c: 1 }] }],
    ['cc with a bad address', { ...valid, cc: ['nope'] }],
    ['bcc with a bad address', { ...valid, bcc: ['a@@b.test'] }],
    ['reply_to bad', { ...valid, reply_to: 'nobody' }],
    ['tags not strings', { ...valid, tags: [1] }],
    ['tags not a list', { ...valid, tags: 'a' }],
    ['headers not an object', { ...valid, headers: ['X-A'] }],
    ['header value not a string', { ...valid, headers: { 'X-A': 1 } }],
    ['header value with CRLF', { ...valid, headers: { 'X-A': 'a\r\nBcc: v@x.test' } }],
    ['header name with space', { ...valid, headers: { 'X A': 'a' } }],
    ['header name with colon', { ...valid, headers: { 'X-A:': 'a' } }],
    ['reserved header', { ...valid, headers: { From: 'evil@x.test' } }],
    ['bulk not boolean', { ...valid, bulk: 'yes' }],
    ['unknown field', { ...valid, attachments_url: 'http://x' }],
  ];
  for (const [name, body] of cases) {
    it(`400 INVALID_REQUEST: ${name}`, async () => {
      const r = await stack.api('POST', '/v1/emails', a.keys.live, body === undefined ? undefined : body);
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('INVALID_REQUEST');
      expect(r.body.error).toEqual(expect.any(String));
    });
  }

  it('malformed JSON, wrong content type and a huge body are 4xx with a code', async () => {
    const bad = await stack.api('POST', '/v1/emails', a.keys.live, '{"from": ');
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('INVALID_REQUEST');
    const form = await stack.api('POST', '/v1/emails', a.keys.live, undefined, { 'content-type': 'text/plain' });
    expect(form.status).toBeGreaterThanOrEqual(400);
    expect(form.status).toBeLessThan(500);
    expect(form.body.code).toEqual(expect.any(String));
    // The server answers 413 before reading the whole body; a raw request keeps the answer even if the upload is cut.
    // Over the send routes' limit, which makes room for 40 MB of attachments in base64 (about 65 MB in all).
    const huge = await rawPost(`${stack.url}/v1/emails`, a.keys.live, JSON.stringify({ ...send(), html: 'x'.repeat(80 * 1024 * 1024) }));
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.body).code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('takes an empty body with a JSON content type as no body (SDKs and curl send one on calls that need none)', async () => {
    const call = (method: string, path: string) =>
      fetch(stack.url + path, { method, headers: { authorization: `Bearer ${a.keys.live}`, 'content-type': 'application/json' }, body: '' });
    const del = await call('DELETE', '/v1/domains/no-such-id');
    expect(del.status).toBe(404);
    expect((await del.json()).code).toBe('NOT_FOUND');
    expect((await call('POST', '/v1/domains/no-such-id/verify')).status).toBe(404);
    // A route that needs a body still says so, in the one error shape.
    const send = await call('POST', '/v1/emails');
    expect(send.status).toBe(400);
    expect((await send.json()).code).toBe('INVALID_REQUEST');
  });

  it('accepts every field of the send request', async () => {
    const r = await stack.api('POST', '/v1/emails', a.keys.live, {
      from: 'Acme <hello@acme.test>',
      to: ['one@example.test', 'Two Person <two@example.test>'],
      cc: ['cc@example.test'],
      bcc: ['bcc@example.test'],
      reply_to: 'support@acme.test',
      subject: 'Всё хорошо',
      html: '<p>Hello</p>',
      text: 'Hello',
      tags: ['welcome', 'signup'],
      headers: { 'X-Campaign': 'c1' },
      bulk: false,
    });
    expect(r.status).toBe(202);
    const got = await stack.api('GET', `/v1/emails/${r.body.id}`, a.keys.live);
    expect(got.body).toMatchObject({
      id: r.body.id,
      from: 'Acme <hello@acme.test>',
      to: ['one@example.test', 'Two Person <two@example.test>'],
      cc: ['cc@example.test'],
      bcc: ['bcc@example.test'],
      reply_to: ['support@acme.test'],
      subject: 'Всё хорошо',
      tags: ['welcome', 'signup'],
      bulk: false,
    });
    expect(got.body.recipients.map((x: any) => [x.email, x.kind])).toEqual([
      ['one@example.test', 'to'],
      ['two@example.test', 'to'],
      ['cc@example.test', 'cc'],
      ['bcc@example.test', 'bcc'],
    ]);
    expect(got.body.events[0]).toMatchObject({ type: 'queued', at: expect.any(String) });
  });

  it('answers unknown routes with 404 NOT_FOUND', async () => {
    const r = await stack.api('GET', '/v1/nothing', a.keys.live);
    expect(r.status).toBe(404);
    expect(r.body.code).toBe('NOT_FOUND');
  });
});

describe('operations', () => {
  it('serves /healthz and Prometheus /metrics', async () => {
    expect((await stack.api('GET', '/healthz', undefined)).body).toEqual({ status: 'ok' });
    const m = await fetch(`${stack.url}/metrics`);
    expect(m.headers.get('content-type')).toContain('text/plain');
    const text = await m.text();
    expect(text).toMatch(/# TYPE postgate_http_responses_total counter/);
    expect(text).toMatch(/postgate_http_responses_total\{status="202"\} \d+/);
  });

  it('the CLI creates a project with its keys shown once, and lists projects', async () => {
    const created = JSON.parse(await stack.cli('project', 'create', '--name', 'Via CLI', '--slug', 'via-cli', '--json'));
    expect(created).toEqual({
      id: expect.any(String),
      slug: 'via-cli',
      keys: { live: expect.stringMatching(/^pg_live_/), test: expect.stringMatching(/^pg_test_/) },
    });
    const list = JSON.parse(await stack.cli('project', 'list', '--json'));
    // postgate-system owns the platform's sender domain (sign-in codes).
    expect(list.map((p: any) => p.slug).sort()).toEqual(['acme', 'other', 'postgate-system', 'via-cli']);
    expect(JSON.stringify(list)).not.toContain(created.keys.live);
    await expect(stack.cli('project', 'create', '--name', 'Again', '--slug', 'via-cli')).rejects.toThrow(/exists/);
  });
});
