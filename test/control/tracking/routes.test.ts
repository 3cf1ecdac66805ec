// control/tracking/routes.ts through the project's Fastify setup: answers from the signed URL alone,
// by Host; every hit queued for the recorder, judged; anything that does not verify a 404 {error, code}.
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { newFastify } from '../../../control/http/fastify.js';
import { TrackingLinks } from '../../../control/tracking/links.js';
import type { TrackingRecorder } from '../../../control/tracking/recorder.js';
import { PIXEL, trackingRoutes } from '../../../control/tracking/routes.js';
import type { TrackingHit } from '../../../control/store/index.js';
import { loadConfig } from '../../../core/config.js';
import { createLogger } from '../../../core/log.js';
import { Registry } from '../../../core/metrics.js';

const links = new TrackingLinks('routes-test-secret-0123456789abcdef');
const host = 'links.acme.test';
const id = '0192b7a4-1111-7abc-8def-0123456789ab';
const sentAt = Date.now() - 3_600_000;
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36';
let app: FastifyInstance;
let hits: TrackingHit[];

beforeEach(async () => {
  hits = [];
  app = newFastify({ config: loadConfig({}), log: createLogger('test', 'silent'), metrics: new Registry() });
  await app.register(trackingRoutes, { links, recorder: { add: (h: TrackingHit) => hits.push(h) } as unknown as TrackingRecorder });
  await app.ready();
});
afterEach(() => app.close());

const path = (u: string) => new URL(u).pathname;
const get = (url: string, o: { host?: string; method?: 'GET' | 'HEAD'; ua?: string; ip?: string } = {}) =>
  app.inject({ method: o.method ?? 'GET', url, headers: { host: o.host ?? host, 'user-agent': o.ua ?? CHROME }, remoteAddress: o.ip ?? '198.51.100.23' });

describe('the pixel', () => {
  it('is a 42-byte GIF, never cached; the open is queued with the address truncated', async () => {
    const r = await get(path(links.openUrl('https://x', host, id, sentAt)), { host: `${host}:8443` });
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toBe('image/gif');
    expect(r.headers['cache-control']).toContain('no-store');
    expect(r.rawPayload.equals(PIXEL)).toBe(true);
    expect(PIXEL.length).toBe(42);
    expect(hits).toEqual([{ emailId: id, kind: 'open', link: '', at: expect.any(Number), userAgent: CHROME, ip: '198.51.100.0/24', agent: 'person' }]);
  });

  it("Apple's prefetch is judged a machine", async () => {
    await get(path(links.openUrl('https://x', host, id, sentAt)), { ip: '17.1.2.3' });
    expect(hits[0]).toMatchObject({ agent: 'scanner', reason: 'Apple Mail Privacy Protection', ip: '17.1.2.0/24' });
  });
});

describe('a link', () => {
  const url = 'https://shop.example/a?b=1&c=%20#d';
  const click = () => path(links.clickUrl('https://x', host, id, sentAt, url));

  it('302s to the original URL without a referrer and queues the click', async () => {
    const r = await get(click());
    expect(r.statusCode).toBe(302);
    expect(r.headers.location).toBe(url);
    expect(r.headers['referrer-policy']).toBe('no-referrer');
    expect(hits).toMatchObject([{ kind: 'click', link: url, agent: 'person' }]);
  });

  it('a long URL (non-ASCII, 4 KB) comes back, its non-ASCII percent-encoded', async () => {
    const long = `https://shop.example/${'ü✓'.repeat(500)}?q=${'x'.repeat(2000)}&e=😀`;
    const r = await get(path(links.clickUrl('https://x', host, id, sentAt, long)));
    // Non-ASCII goes percent-encoded as UTF-8 in the header (a raw ✓ cannot be in one), the rest exactly.
    expect([r.statusCode, r.headers.location]).toEqual([302, `https://shop.example/${'%C3%BC%E2%9C%93'.repeat(500)}?q=${'x'.repeat(2000)}&e=%F0%9F%98%80`]);
    expect(hits.at(-1)?.link).toBe(long);
  });

  it('HEAD redirects too, judged a machine', async () => {
    const r = await get(click(), { method: 'HEAD' });
    expect([r.statusCode, r.headers.location]).toEqual([302, url]);
    expect(hits).toMatchObject([{ agent: 'scanner', reason: 'HEAD request' }]);
  });

  it('a scanner clicking every link at once: the third different link and after', async () => {
    for (const u of ['https://a.example/', 'https://b.example/', 'https://c.example/', 'https://a.example/'])
      await get(path(links.clickUrl('https://x', host, id, sentAt, u)));
    expect(hits.map((h) => h.agent)).toEqual(['person', 'person', 'scanner', 'scanner']);
  });

  it('another Host, a changed byte or no signature at all is a 404 {error, code}, never a redirect, and records nothing', async () => {
    const p = click();
    for (const [u, h] of [
      [p, 'links.other.test'],
      [p, 'api.postgate.test'],
      [`${p.slice(0, -2)}AA`, host],
      ['/c/', host],
      ['/c/https://evil.example/', host],
      ['/o/x.gif', host],
    ] as const) {
      const r = await get(u, { host: h });
      expect([u, h, r.statusCode, r.headers.location, r.json().code]).toEqual([u, h, 404, undefined, 'NOT_FOUND']);
    }
    expect(hits).toEqual([]);
  });
});
