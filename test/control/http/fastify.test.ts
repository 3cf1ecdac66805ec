// control/http/fastify.ts: one error shape ({error, code, …}) for everything a listener answers: thrown
// ApiErrors with their headers, schema refusals, bad media types, oversized and NUL-carrying JSON
// bodies, encoded control characters in the URL, unknown routes, what Node's parser refuses; an
// unknown error is a bare 500 that never shows its message; every answer and error is counted.
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Server } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newFastify } from '../../../control/http/fastify.js';
import { Registry } from '../../../core/metrics.js';
import { expositionProblems, parseExposition } from '../../helpers/prometheus.js';
import type { PromHistogramData } from 'prom2javascript';
import { loadConfig } from '../../../core/config.js';
import { ApiError } from '../../../core/errors.js';
import { createLogger } from '../../../core/log.js';

let app: FastifyInstance<Server>;
let metrics: Registry;
let seen: unknown[];

beforeEach(async () => {
  metrics = new Registry();
  seen = [];
  const config = loadConfig({});
  config.http.bodyLimitBytes = 1024;
  app = newFastify({ config, log: createLogger('test', 'silent'), metrics });
  app.post('/echo', { schema: { body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } } } }, async (req) => req.body);
  app.post('/optional', async (req) => ({ body: req.body ?? null }));
  app.get('/items/:id', async (req) => {
    seen.push((req.params as { id: string }).id);
    return { ok: true };
  });
  app.get('/limited', async () => {
    throw new ApiError('RATE_LIMIT_EXCEEDED', 'Slow down', {}, { 'Retry-After': '7' });
  });
  app.get('/boom', async () => {
    throw new Error('connect ECONNREFUSED 10.0.0.5:5432 password=hunter2');
  });
  app.get('/teapot', async () => {
    throw Object.assign(new Error('client side problem'), { statusCode: 418 });
  });
  await app.ready();
});
afterEach(() => app.close());

const post = (url: string, payload: string, contentType = 'application/json') =>
  app.inject({ method: 'POST', url, payload, headers: { 'content-type': contentType } });

describe('the one error shape', () => {
  it('answers a thrown ApiError with its status, body and headers', async () => {
    const r = await app.inject('/limited');
    expect(r.statusCode).toBe(429);
    expect(r.headers['retry-after']).toBe('7');
    expect(r.json()).toMatchObject({ error: 'Slow down', code: 'RATE_LIMIT_EXCEEDED', message: 'Slow down', statusCode: 429 });
  });

  it('turns an unknown error into a bare 500 that leaks nothing, and counts it', async () => {
    const r = await app.inject('/boom');
    expect(r.statusCode).toBe(500);
    expect(r.json()).toEqual({ error: 'Internal error', code: 'INTERNAL', name: expect.any(String), message: 'Internal error', statusCode: 500 });
    expect(r.body).not.toMatch(/ECONNREFUSED|hunter2|10\.0\.0\.5|stack/);
    expect(metrics.render()).toContain('postgate_http_errors_total{code="INTERNAL"} 1');
    expect(metrics.render()).toContain('postgate_http_responses_total{status="500"} 1');
  });

  it('keeps a 4xx error as INVALID_REQUEST with its message', async () => {
    const r = await app.inject('/teapot');
    expect(r.statusCode).toBe(400);
    expect(r.json()).toMatchObject({ code: 'INVALID_REQUEST', error: 'client side problem' });
  });

  it('answers schema refusals, bad media types, empty and oversized bodies in the shape', async () => {
    const bad = await post('/echo', '{"name": 5}');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toMatchObject({ code: 'INVALID_REQUEST' });
    const media = await post('/echo', 'name=x', 'application/x-www-form-urlencoded');
    expect(media.statusCode).toBe(415);
    expect(media.json()).toMatchObject({ code: 'UNSUPPORTED_MEDIA_TYPE', error: 'Content-Type must be application/json' });
    const big = await post('/echo', JSON.stringify({ name: 'x'.repeat(2000) }));
    expect(big.statusCode).toBe(413);
    expect(big.json()).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    const broken = await post('/echo', '{"name":');
    expect(broken.statusCode).toBe(400);
    expect(broken.json()).toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it('takes an empty JSON body as no body, and refuses it where a body is needed', async () => {
    expect((await post('/optional', '  ')).json()).toEqual({ body: null });
    const r = await post('/echo', '');
    expect(r.statusCode).toBe(400);
    expect(r.json()).toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it('refuses a NUL escape anywhere in a JSON body before parsing it', async () => {
    for (const payload of ['{"name":"a\\u0000b"}', '{"a\\u0000":1, "name":"x"}']) {
      const r = await post('/echo', payload);
      expect(r.statusCode).toBe(400);
      expect(r.json()).toMatchObject({ code: 'INVALID_REQUEST', error: 'The body must not contain the NUL character (U+0000)' });
    }
    // A raw NUL is not JSON at all: refused as such.
    const raw = await post('/echo', '{"name":"a\u0000b"}');
    expect(raw.statusCode).toBe(400);
    expect(raw.json()).toMatchObject({ code: 'INVALID_REQUEST' });
    // An escaped backslash before u0000 is text, not a NUL.
    const ok = await post('/echo', '{"name":"a\\\\u0000b"}');
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ name: 'a\\u0000b' });
  });

  it('refuses %-encoded control characters in the path or query before the route runs', async () => {
    for (const url of ['/items/a%00b', '/items/a%0Ab', '/items/x?cursor=%1f', '/items/a%7F', '/nowhere/%00']) {
      const r = await app.inject(url);
      expect(r.statusCode, url).toBe(400);
      expect(r.json()).toMatchObject({ code: 'INVALID_REQUEST', error: 'The URL must not contain control characters' });
    }
    expect(seen).toEqual([]);
    // Other encodings pass.
    expect((await app.inject('/items/a%20b%2F%C3%A9')).statusCode).toBe(200);
    expect(seen).toEqual(['a b/é']);
  });

  it('answers an unknown route with NOT_FOUND naming the path, not the query', async () => {
    const r = await app.inject('/nope?secret=1');
    expect(r.statusCode).toBe(404);
    expect(r.json()).toMatchObject({ code: 'NOT_FOUND', error: 'No route GET /nope' });
  });

  it('serves /healthz and /metrics', async () => {
    expect((await app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    const m = await app.inject('/metrics');
    expect(m.headers['content-type']).toContain('text/plain');
    expect(m.body).toContain('postgate_http_responses_total{status="200"} 1');
  });

  it('times every answer by route pattern, method and status class: never the raw path, unmatched for no route', async () => {
    await app.inject('/items/secret-id-1');
    await app.inject('/items/secret-id-2');
    await app.inject('/limited');
    await app.inject({ method: 'PROPFIND', url: '/nope/a@b.test' });
    await app.inject('/nope/user@example.test');
    const text = (await app.inject('/metrics')).body;
    expect(text).toContain('postgate_http_request_duration_seconds_count{route="/items/:id",method="GET",status_class="2xx"} 2');
    expect(text).toContain('postgate_http_request_duration_seconds_count{route="/limited",method="GET",status_class="4xx"} 1');
    expect(text).toContain('postgate_http_request_duration_seconds_count{route="unmatched",method="GET",status_class="4xx"} 1');
    expect(text).toContain('postgate_http_request_duration_seconds_count{route="unmatched",method="other",status_class="4xx"} 1');
    expect(text).not.toMatch(/secret-id|example\.test|a@b/);
    const parsed = await parseExposition(text);
    expect(expositionProblems(parsed)).toEqual([]);
    const items = (parsed.postgate_http_request_duration_seconds!.data as PromHistogramData[]).find((h) => h.labels.route === '/items/:id')!;
    expect(items.sum).toBeGreaterThan(0);
  });
});

describe("what Node's parser refuses", () => {
  it('gets the one error shape on the socket', async () => {
    await app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = app.server.address() as AddressInfo;
    const answer = await new Promise<string>((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => s.write('GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'));
      let data = '';
      s.on('data', (d) => (data += d));
      s.on('end', () => resolve(data));
      s.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(answer).toContain('Connection: close');
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body).toEqual({
      error: 'Malformed HTTP request',
      code: 'INVALID_REQUEST',
      name: 'invalid_request',
      message: 'Malformed HTTP request',
      statusCode: 400,
    });
  });
});
