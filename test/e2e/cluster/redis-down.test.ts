// Redis gone under two nodes: sending and sign-in go on, each node keeps to its share of the
// project's API rate, nothing accepted is lost, and shared counting resumes when Redis is back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../../helpers/cluster.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink, messageIdOf } from '../../helpers/mx-sink.js';
import { startOwnRedis, type OwnRedis } from '../../helpers/redis.js';
import { sleep, type Project, type Stack } from '../../helpers/stack.js';

let dns: DnsServer;
let sink: MxSink;
let redis: OwnRedis;
let cluster: Cluster;
let a: Stack;
let b: Stack;

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
  redis = await startOwnRedis();
  cluster = await startCluster(2, {
    redis: redis.url,
    env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port), POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test' },
  });
  [a, b] = cluster.nodes as [Stack, Stack];
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
  await redis?.kill();
  await sink?.close();
  await dns?.close();
});

/** A burst split over both nodes: how many got through, and how many one-second windows it touched. */
async function burst(p: Project, n: number): Promise<{ ok: number; windows: number }> {
  const start = Date.now();
  const answers = await Promise.all(Array.from({ length: n }, (_, i) => (i % 2 ? a : b).api('GET', '/v1/domains', p.keys.live)));
  const windows = Math.floor(Date.now() / 1000) - Math.floor(start / 1000) + 1;
  expect(answers.every((r) => r.status === 200 || r.status === 429)).toBe(true);
  return { ok: answers.filter((r) => r.status === 200).length, windows };
}

/** Waits for the start of a fresh second, so a burst falls into one window. */
const nextSecond = () => sleep(1000 - (Date.now() % 1000) + 20);

describe('two nodes while Redis is down', () => {
  it('go on sending and signing in, each within its share of the limits, and lose nothing', async () => {
    const rate = 20;
    const p = await a.createProject();
    await a.setPlan(p.slug, 'scale', { rate });
    await a.verifyDomain(p.slug, 'acme.test');
    await sleep(2_500); // a heartbeat (every 2 s) has told each node there are two controls

    await redis.kill();
    await sleep(500);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await (i % 2 ? a : b).api('POST', '/v1/emails', p.keys.live, {
        from: 'hello@acme.test',
        to: `down${i}@inbox.test`,
        subject: `down ${i}`,
        text: 'x',
      });
      expect(r.status).toBe(202);
      ids.push(r.body.id);
    }
    const h = { 'x-service-key': p.keys.test };
    expect((await a.api('POST', '/api/v1/auth/sign-in/email-otp/send', undefined, { email: 'down@example.com' }, h)).status).toBe(200);
    const code = (await b.api('GET', '/api/v1/auth/test/code?email=down@example.com', undefined, undefined, h)).body.code;
    const v = await b.api('POST', '/api/v1/auth/sign-in/email-otp/verify', undefined, { email: 'down@example.com', code }, h);
    expect(v.status).toBe(200);
    expect((await a.api('GET', '/api/v1/auth/session', undefined, undefined, { ...h, authorization: `Bearer ${v.body.token}` })).status).toBe(200);
    // Each node alone lets through only its share (rate / 2), so the two together stay within the rate.
    await nextSecond();
    const down = await burst(p, 40);
    expect(down.ok).toBeLessThanOrEqual(rate * down.windows);

    await redis.start();
    await sleep(3_000); // reconnect, rewrite the counts, heartbeat
    await nextSecond();
    // Back on shared counts (test/core/shared-counters.test.ts measures the resumption itself): the
    // limit holds within the documented burst tolerance, and the project is not stuck at one node's share.
    const shared = await burst(p, 40);
    expect(shared.ok).toBeGreaterThan(rate / 2);
    expect(shared.ok).toBeLessThanOrEqual(rate * shared.windows + rate / 2);

    const until = Date.now() + 30_000;
    while (Date.now() < until && !ids.every((id) => sink.messages.some((m) => messageIdOf(m) === id))) await sleep(200);
    expect(ids.filter((id) => sink.messages.filter((m) => messageIdOf(m) === id).length !== 1)).toEqual([]);
  }, 90_000);
});
