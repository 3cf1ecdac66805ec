// The console's overview end to end, on a real stack (real Haraka, loopback DNS and MX): mail delivered,
// bounced by the MX (550 5.1.1) and deferred by Gmail's 421 4.7.28 (which shapes Google), plus one
// scheduled email. GET /admin/v1/overview shows the accepted and delivered/bounced counts in the minute
// they happened, the queue depth by state with the scheduled email and the oldest queued message, Google
// shaped, a bounce-rate alert past the (lowered) threshold, a provider the operator suspends, and, the
// test clock moved on, the queue-age alert. On a two-node cluster either node's overview counts both
// controls' accepted mail (published to Redis) and both gateways' deliveries.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../../helpers/cluster.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink, type Reply } from '../../helpers/mx-sink.js';
import { Stack, sleep, type Project } from '../../helpers/stack.js';

const RECORDS = [
  { type: 'MX' as const, name: 'gmail.com', exchange: 'gmail-smtp-in.l.google.com', priority: 5 },
  { type: 'A' as const, name: 'gmail-smtp-in.l.google.com', address: '127.0.0.1' },
  { type: 'MX' as const, name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
  { type: 'A' as const, name: 'mx.inbox.test', address: '127.0.0.1' },
];

const unknown: Reply = { code: 550, message: '5.1.1 User unknown in this overview test' };
const unsolicited: Reply = { code: 421, message: '4.7.28 Our system has detected an unusual rate of unsolicited mail - gsmtp' };
const always = (r: Reply) => Array<Reply>(20).fill(r);

let dns: DnsServer;
let sink: MxSink;
let stack: Stack;
let p: Project;

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer(RECORDS);
  stack = await Stack.start({
    env: {
      POSTGATE_DNS_SERVERS: dns.address,
      POSTGATE_DELIVERY_PORT: String(sink.port),
      POSTGATE_TEST_CLOCK: '1',
      // Warns from 30 % bounced (critical from twice that), judged from 10 final answers.
      POSTGATE_ALERT_BOUNCE_RATE: '0.3',
    },
    config: { delivery: { retryDelays: [600], maxTempFailures: 5, connectTimeout: 5 }, alerts: { minOutcomes: 10 } },
  });
  p = await stack.createProject();
  await stack.setPlan(p.slug, 'scale');
  await stack.verifyDomain(p.slug, 'acme.test');
}, 90_000);
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

async function send(to: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to, subject: `to ${to}`, text: 'x', ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return r.body.id;
}

async function until<T>(read: () => Promise<T>, done: (x: T) => boolean, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const x = await read();
    if (done(x)) return x;
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${JSON.stringify(x)}`);
    await sleep(200);
  }
}

const overview = () => stack.admin('GET', '/admin/v1/overview');
const sum = (a: number[], from = 0, to = a.length - 1) => a.slice(from, to + 1).reduce((x, y) => x + y, 0);
/** The bucket of a series that holds `ms`. */
const bucket = (span: { start: string; step_s: number }, ms: number) => Math.floor((ms - Date.parse(span.start)) / (span.step_s * 1000));

describe('the overview', () => {
  let sentFrom = 0;
  let sentTo = 0;

  beforeAll(async () => {
    for (let i = 1; i <= 4; i++) sink.setBehaviour(`b${i}@inbox.test`, { rcpt: always(unknown) });
    sink.setBehaviour('slow@gmail.com', { rcpt: always(unsolicited) });
    sentFrom = Date.now();
    const ok: string[] = [];
    const bounced: string[] = [];
    for (let i = 1; i <= 6; i++) ok.push(await send(`ok${i}@inbox.test`));
    for (let i = 1; i <= 4; i++) bounced.push(await send(`b${i}@inbox.test`));
    const slow = await send('slow@gmail.com');
    // Scheduled three hours ahead: accepted, waiting in the store.
    await send('later@inbox.test', { scheduled_at: new Date(Date.now() + 3 * 3600_000).toISOString() });
    sentTo = Date.now();
    for (const id of ok) await stack.waitEmail(p.keys.live, id, (e) => e.status === 'sent');
    for (const id of bounced) await stack.waitEmail(p.keys.live, id, (e) => e.status === 'bounced');
    await stack.waitEmail(p.keys.live, slow, (e) => e.events.some((x: any) => x.type === 'deferred'));
  }, 60_000);

  it('shows the accepted, delivered and bounced counts in the minutes they happened, and the queue by state', async () => {
    const o = await until(overview, (x: any) => sum(x.series.minute.delivered) === 6 && sum(x.series.minute.bounced) === 4);
    const readAt = Date.now();
    expect(o.nodes).toHaveLength(1);
    expect(o.unreachable).toEqual([]);
    const m = o.series.minute;
    expect(m.step_s).toBe(60);
    for (const k of ['accepted', 'delivered', 'deferred', 'bounced', 'complained']) expect(m[k]).toHaveLength(60);
    // The last bucket is the current minute.
    expect(bucket(m, readAt)).toBe(59);
    // Twelve emails accepted (the scheduled one too), all in the minutes they were sent in.
    expect(sum(m.accepted)).toBe(12);
    expect(sum(m.accepted, bucket(m, sentFrom), bucket(m, sentTo))).toBe(12);
    expect(sum(m.delivered, bucket(m, sentFrom), 59)).toBe(6);
    expect(sum(m.bounced, bucket(m, sentFrom), 59)).toBe(4);
    expect(sum(m.deferred)).toBeGreaterThanOrEqual(1);
    const h = o.series.hour;
    expect(h.step_s).toBe(3600);
    expect(h.accepted).toHaveLength(24);
    expect(sum(h.accepted, bucket(h, sentFrom), 23)).toBe(12);
    expect(sum(h.delivered)).toBe(6);

    expect(o.queue).toMatchObject({ ready: 0, in_flight: 0, held: 0, scheduled: 1 });
    expect(o.queue.deferred).toEqual({ receiver: 1, network: 0, pacing: 0, volume: 0, shaping: 0, suspended: 0 });
    // The deferred Gmail message, accepted while the test sent.
    const oldest = Date.parse(o.queue.oldest_at);
    expect(oldest).toBeGreaterThanOrEqual(sentFrom - 1000);
    expect(oldest).toBeLessThanOrEqual(sentTo + 1000);
  });

  it('lists Google as shaped by the 421 4.7.28 rule', async () => {
    const o = await until(overview, (x: any) => x.providers.some((y: any) => y.provider === 'google'));
    expect(o.providers).toEqual([
      {
        provider: 'google',
        suspended: false,
        shaped: true,
        actions: [expect.objectContaining({ rule: 'google-unsolicited-rate', action: 'rate', project: null, until: expect.any(String) })],
        suspensions: [],
      },
    ]);
  });

  it('raises a bounce-rate alert for the project and the provider past the threshold (4 of 10 bounced)', async () => {
    const o = await overview();
    const bounce = o.alerts.filter((a: any) => a.kind === 'bounce_rate');
    expect(bounce).toEqual([
      {
        kind: 'bounce_rate',
        severity: 'warning',
        project: null,
        provider: 'other',
        value: 0.4,
        threshold: 0.3,
        message: 'Provider other: 40 % of 10 messages bounced in the last hour (threshold 30 %)',
      },
      {
        kind: 'bounce_rate',
        severity: 'warning',
        project: p.slug,
        provider: null,
        value: 0.4,
        threshold: 0.3,
        message: `Project ${p.slug}: 40 % of 10 messages bounced in the last hour (threshold 30 %)`,
      },
    ]);
    expect(o.alerts.some((a: any) => a.kind === 'queue_age' || a.kind === 'gateway_unreachable')).toBe(false);
  });

  it('lists a provider the operator suspends, until resumed', async () => {
    const s = await stack.admin('POST', '/admin/v1/queue/suspensions', { provider: 'yahoo', reason: 'maintenance' });
    const o = await overview();
    expect(o.providers.find((x: any) => x.provider === 'yahoo')).toEqual({
      provider: 'yahoo',
      suspended: true,
      shaped: false,
      actions: [],
      suspensions: [{ id: s.id, provider: 'yahoo', project: null, reason: 'maintenance', until: null }],
    });
    await stack.admin('DELETE', `/admin/v1/queue/suspensions/${s.id}`);
    expect((await overview()).providers.map((x: any) => x.provider)).toEqual(['google']);
  });

  it('raises the queue-age alert once the oldest queued message is older than an hour', async () => {
    await stack.admin('POST', '/admin/v1/test/clock', { advance_ms: 61 * 60_000 });
    const o = await overview();
    expect(o.alerts.filter((a: any) => a.kind === 'queue_age')).toEqual([
      {
        kind: 'queue_age',
        severity: 'warning',
        project: null,
        provider: 'google',
        value: expect.any(Number),
        threshold: 60,
        message: expect.stringMatching(/^Provider google: the oldest queued message was accepted 6\d minutes ago \(threshold 60 minutes\)$/),
      },
    ]);
    // The last hour no longer holds the bounces: no rate alert.
    expect(o.alerts.some((a: any) => a.kind === 'bounce_rate')).toBe(false);
  });
});

describe('the overview on a two-node cluster', () => {
  let cluster: Cluster;
  afterAll(async () => {
    await cluster?.stop();
  });

  it("sums both controls' accepted counts and both gateways' deliveries, on either node", async () => {
    cluster = await startCluster(2, {
      env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) },
      config: { delivery: { retryDelays: [600], maxTempFailures: 5, connectTimeout: 5 } },
    });
    const [a, b] = cluster.nodes as [Stack, Stack];
    const q = await a.createProject();
    await a.setPlan(q.slug, 'scale');
    await a.verifyDomain(q.slug, 'acme.test');
    const ids: Array<[Stack, string]> = [];
    for (const [node, n] of [
      [a, 3],
      [b, 2],
    ] as const) {
      for (let i = 0; i < n; i++) {
        const r = await node.api('POST', '/v1/emails', q.keys.live, { from: 'hello@acme.test', to: `cl${ids.length}@inbox.test`, subject: 'x', text: 'x' });
        expect(r.status, JSON.stringify(r.body)).toBe(202);
        ids.push([node, r.body.id]);
      }
    }
    for (const [node, id] of ids) await node.waitEmail(q.keys.live, id, (e) => e.status === 'sent');
    for (const node of [a, b]) {
      // The other control publishes its counts every 5 s.
      const o = await until(
        () => node.admin('GET', '/admin/v1/overview'),
        (x: any) => sum(x.series.minute.accepted) === 5 && sum(x.series.minute.delivered) === 5,
      );
      expect(o.nodes).toHaveLength(2);
      expect(sum(o.series.hour.accepted)).toBe(5);
      expect(sum(o.series.hour.delivered)).toBe(5);
    }
  }, 180_000);
});
