// control/http/fast-lane.ts: answers for registered GET paths from memory before Fastify, counted
// as Fastify's answers are; anything else (another method, a query string, an answerer that
// declines) goes the ordinary way. A real server on loopback, a stand-in for Fastify's handler.
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { FastLane, sendJson } from '../../../control/http/fast-lane.js';
import { Registry } from '../../../core/metrics.js';
import { loadConfig } from '../../../core/config.js';

let server: http.Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

async function start(lane: FastLane): Promise<{ url: string; ordinary: string[] }> {
  const ordinary: string[] = [];
  server = lane.server((req, res) => {
    ordinary.push(`${req.method} ${req.url}`);
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"code":"NOT_FOUND"}');
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server!.address() as AddressInfo).port}`, ordinary };
}

it('a registered GET is answered from memory and counted; the rest goes to Fastify', async () => {
  const metrics = new Registry();
  const lane = new FastLane(metrics, loadConfig({}).http);
  let known = true;
  lane.get('/api/v1/auth/session', (_req, res) => known && sendJson(res, '{"ok":true}', 11));
  const { url, ordinary } = await start(lane);

  const hit = await fetch(`${url}/api/v1/auth/session`);
  expect(hit.status).toBe(200);
  expect(hit.headers.get('content-type')).toBe('application/json; charset=utf-8');
  expect(await hit.json()).toEqual({ ok: true });

  expect((await fetch(`${url}/api/v1/auth/session?x=1`)).status).toBe(404);
  expect((await fetch(`${url}/api/v1/auth/session`, { method: 'POST' })).status).toBe(404);
  known = false;
  expect((await fetch(`${url}/api/v1/auth/session`)).status).toBe(404);
  expect(ordinary).toEqual(['GET /api/v1/auth/session?x=1', 'POST /api/v1/auth/session', 'GET /api/v1/auth/session']);

  const text = metrics.render();
  expect(text).toContain('postgate_fast_lane_answers_total 1');
  expect(text).toContain('postgate_http_responses_total{status="200"} 1');
  // Timed under the route's pattern, as Fastify's answers are.
  expect(text).toContain('postgate_http_request_duration_seconds_count{route="/api/v1/auth/session",method="GET",status_class="2xx"} 1');
});

it('one answerer per path', () => {
  const lane = new FastLane(new Registry(), loadConfig({}).http);
  lane.get('/a', () => false);
  expect(() => lane.get('/a', () => false)).toThrow(/already has an answerer/);
});

it('the server keeps Fastify’s timeouts (a body that never finishes does not hold the connection forever)', () => {
  const settings = { ...loadConfig({}).http, requestTimeoutMs: 8000, headersTimeoutMs: 60_000, keepAliveTimeoutMs: 7000 };
  const s = new FastLane(new Registry(), settings).server(() => {});
  expect([s.requestTimeout, s.headersTimeout, s.keepAliveTimeout]).toEqual([8000, 8000, 7000]);
});
