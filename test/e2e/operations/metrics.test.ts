// /metrics of a real stack, read with a Prometheus text-format parser from npm: one scrape covers the
// node (control's families and, appended, its gateway's, each with a `gateway` label), on the HTTP and
// the admin listener alike. Every family has HELP and TYPE, counters end in _total, histograms are
// cumulative with +Inf = count, labels stay bounded (no address or domain). Mail goes to a loopback MX
// whose name says Google, so the gateway counts it under `google` and times it from the accept; one
// recipient greylisted once is counted as deferred by the receiver.
// A second gateway in POSTGATE_GATEWAYS that is down is left out of the scrape, and postgate_gateway_up
// says 0 for it (one that never answers is cut at a second: test/control/delivery/gateway-metrics.test.ts).
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { PromHistogramData } from 'prom2javascript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDERS } from '../../../common/providers.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, tempFailFirst, type MxSink } from '../../helpers/mx-sink.js';
import { freePort } from '../../helpers/ports.js';
import { expositionProblems, parseExposition, type PromMetrics } from '../../helpers/prometheus.js';
import { Stack, type Project } from '../../helpers/stack.js';
import { publishDomain } from '../deliverability/helpers.js';

let dns: DnsServer;
let sink: MxSink;
let stack: Stack;
let p: Project;
let live: string;
let mute: string;

beforeAll(async () => {
  sink = await startMxSink();
  // inbox.test is hosted at "Google" (its MX name), answered by the loopback sink.
  dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'aspmx.l.google.com', priority: 10 },
    { type: 'A', name: 'aspmx.l.google.com', address: '127.0.0.1' },
  ]);
  const [gatewayPort, downPort] = await Promise.all([freePort(), freePort()]);
  live = `127.0.0.1:${gatewayPort}`;
  // Nothing listens there: the gateway is down.
  mute = `127.0.0.1:${downPort}`;
  stack = await Stack.start({
    env: {
      POSTGATE_DNS_SERVERS: dns.address,
      POSTGATE_DELIVERY_PORT: String(sink.port),
      POSTGATE_SENDING_IPS: '127.0.0.1',
      POSTGATE_GATEWAY_PORT: String(gatewayPort),
      POSTGATE_GATEWAYS: `${live},${mute}`,
    },
    config: { delivery: { retryDelays: [30], maxTempFailures: 3, connectTimeout: 5 } },
  });
  p = await stack.createProject('metrics');
  await stack.setPlan('metrics', 'scale');
  await publishDomain(stack, p.keys.live, dns, 'acme.test');
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

/** The gateway control picks for an email (control/delivery/gateways.ts pick: sha1 of the id over the list). */
const gatewayOf = (id: string) => [live, mute][crypto.createHash('sha1').update(id).digest().readUInt32BE(0) % 2];

/** Sends until an email goes to the live gateway (the others wait for the one that is down); its id. */
async function sendToLive(to: string): Promise<string> {
  for (let i = 0; i < 30; i++) {
    const r = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to, subject: 'metrics', text: 'x' });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    if (gatewayOf(r.body.id) === live) return r.body.id;
  }
  throw new Error('no email was picked for the live gateway');
}

/** One email delivered, one deferred by the receiver (450 at RCPT, retried 30 s later). */
async function deliverAndDefer(): Promise<void> {
  sink.setBehaviour('grey@inbox.test', { rcpt: tempFailFirst(1) });
  const sent = await sendToLive('user@inbox.test');
  const deferred = await sendToLive('grey@inbox.test');
  expect((await stack.waitEmail(p.keys.live, sent, (x) => x.status === 'sent' || x.status === 'failed', 30_000)).status).toBe('sent');
  await stack.waitEmail(p.keys.live, deferred, (x) => x.events.some((e: any) => e.type === 'deferred'), 30_000);
}

const scrape = async (base: string) => {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  const text = await res.text();
  return { text, parsed: await parseExposition(text) };
};

type Sample = { labels: Record<string, string>; value?: number };
const samples = (m: PromMetrics, name: string) => (m[name]?.data ?? []) as Sample[];
const sampleValue = (m: PromMetrics, name: string, labels: Record<string, string>) =>
  samples(m, name).find((s) => Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

const CONTROL = [
  'postgate_http_responses_total',
  'postgate_http_errors_total',
  'postgate_http_request_duration_seconds',
  'postgate_fast_lane_answers_total',
  'postgate_http_body_bytes_in_flight',
  'postgate_http_body_bytes_active',
  'postgate_http_body_budget_refused_total',
  'postgate_http_body_waits_total',
  'postgate_event_loop_utilization',
  'postgate_emails_dispatched_total',
  'postgate_delivery_events_total',
  'postgate_store_commits_total',
  'postgate_store_writes_total',
  'postgate_process_rss_bytes',
  'postgate_process_heap_used_bytes',
  'postgate_process_heap_total_bytes',
  'postgate_process_external_bytes',
  'postgate_admin_refused_total',
  'postgate_auth_code_sends_capped_total',
  'postgate_gateway_up',
  'postgate_held_emails',
];
const GATEWAY = [
  'postgate_gateway_attempts_total',
  'postgate_gateway_deferrals_total',
  'postgate_gateway_queue_messages',
  'postgate_gateway_queue_deferred_messages',
  'postgate_gateway_connections',
  'postgate_gateway_shaping_actions',
  'postgate_delivery_latency_seconds',
  'postgate_gateway_delivered_tls_total',
  'postgate_gateway_tls_refused_total',
  'postgate_gateway_mta_sts_fetches_total',
  'postgate_gateway_process_rss_bytes',
  'postgate_gateway_process_heap_used_bytes',
  'postgate_gateway_process_heap_total_bytes',
  'postgate_gateway_process_external_bytes',
];

describe('/metrics of a node', () => {
  it('before any mail: every counter there at 0, the gateway families with its label', async () => {
    // The gateway starts beside control: wait until it answers.
    let { text, parsed } = await scrape(stack.url);
    for (let i = 0; i < 100 && sampleValue(parsed, 'postgate_gateway_up', { gateway: live }) !== 1; i++) {
      await new Promise((r) => setTimeout(r, 200));
      ({ text, parsed } = await scrape(stack.url));
    }
    expect(sampleValue(parsed, 'postgate_gateway_up', { gateway: mute })).toBe(0);
    expect(expositionProblems(parsed)).toEqual([]);
    expect(sampleValue(parsed, 'postgate_admin_refused_total', { reason: 'token' })).toBe(0);
    expect(sampleValue(parsed, 'postgate_admin_refused_total', { reason: 'throttled' })).toBe(0);
    expect(sampleValue(parsed, 'postgate_http_body_budget_refused_total', {})).toBe(0);
    expect(sampleValue(parsed, 'postgate_gateway_attempts_total', { gateway: live, provider: 'google', class: 'transactional', outcome: 'delivered' })).toBe(0);
    expect(sampleValue(parsed, 'postgate_gateway_deferrals_total', { gateway: live, provider: 'yahoo', cause: 'suspended' })).toBe(0);
    // The gateway's families appear once, whatever number of gateways.
    for (const name of GATEWAY) expect(text.match(new RegExp(`^# TYPE ${name} `, 'gm')), name).toHaveLength(1);
  });

  it('after a delivery, on both listeners: every family well-formed, the attempt counted and timed, labels bounded', async () => {
    await deliverAndDefer();
    // The gateway's events reach control a moment after the email shows sent; one scrape later is enough.
    for (const base of [stack.url, stack.adminUrl]) {
      const { text, parsed } = await scrape(base);
      expect(expositionProblems(parsed)).toEqual([]);
      const names = Object.keys(parsed);
      for (const name of [...CONTROL, ...GATEWAY]) expect(names, name).toContain(name);

      // The node's gateway answered; the one that is down was left out.
      expect(sampleValue(parsed, 'postgate_gateway_up', { gateway: live })).toBe(1);
      expect(sampleValue(parsed, 'postgate_gateway_up', { gateway: mute })).toBe(0);
      for (const name of GATEWAY) {
        const gws = new Set((parsed[name]!.data as Sample[]).map((s) => s.labels.gateway));
        expect([...gws], name).toEqual([live]);
      }

      expect(
        sampleValue(parsed, 'postgate_gateway_attempts_total', { provider: 'google', class: 'transactional', outcome: 'delivered' }),
      ).toBeGreaterThanOrEqual(1);
      expect(sampleValue(parsed, 'postgate_gateway_attempts_total', { provider: 'google', class: 'transactional', outcome: 'deferred' })).toBe(1);
      expect(sampleValue(parsed, 'postgate_gateway_deferrals_total', { provider: 'google', cause: 'receiver' })).toBe(1);
      // The greylisted copy waits for its retry (30 s): the queue holds it, deferred by the receiver; the delivered one is gone.
      expect(sampleValue(parsed, 'postgate_gateway_queue_messages', { provider: 'google', state: 'deferred' })).toBe(1);
      expect(sampleValue(parsed, 'postgate_gateway_queue_deferred_messages', { provider: 'google', cause: 'receiver' })).toBe(1);
      expect(sampleValue(parsed, 'postgate_gateway_queue_messages', { provider: 'google', state: 'in_flight' })).toBe(0);
      const latency = (parsed.postgate_delivery_latency_seconds!.data as PromHistogramData[]).find((h) => h.labels.provider === 'google')!;
      expect(latency.count).toBeGreaterThanOrEqual(1);
      expect(latency.sum).toBeGreaterThan(0);
      expect(sampleValue(parsed, 'postgate_emails_dispatched_total', {})).toBeGreaterThanOrEqual(1);
      expect(sampleValue(parsed, 'postgate_store_commits_total', {})).toBeGreaterThan(0);
      expect(sampleValue(parsed, 'postgate_gateway_process_rss_bytes', { gateway: live })).toBeGreaterThan(0);

      // The API's requests under their route patterns: the send, and the reads of one email by id.
      const http = parsed.postgate_http_request_duration_seconds!.data as PromHistogramData[];
      expect(http.find((h) => h.labels.route === '/v1/emails' && h.labels.method === 'POST' && h.labels.status_class === '2xx')?.count).toBeGreaterThanOrEqual(
        1,
      );
      expect(http.find((h) => h.labels.route === '/v1/emails/:id' && h.labels.method === 'GET')?.count).toBeGreaterThanOrEqual(1);

      // Bounded labels: providers from the list, statuses, causes; never an address or a domain of the mail.
      const providers = new Set([...PROVIDERS.map((x) => x.name), 'other']);
      for (const [name, m] of Object.entries(parsed)) {
        for (const s of m.data as Sample[]) {
          if ('provider' in s.labels) expect(providers, `${name} ${s.labels.provider}`).toContain(s.labels.provider);
          if ('route' in s.labels) expect(s.labels.route, name).toMatch(/^(\/[^\s?]*|unmatched)$/);
          for (const v of Object.values(s.labels)) expect(v, name).not.toMatch(/@|inbox\.test|acme\.test|google\.com/);
        }
      }
      expect(text).not.toMatch(/inbox\.test|acme\.test|@/);
    }
  });

  it("a shaping action in force shows under its provider (Gmail's 4.7.28 halves the rate)", async () => {
    sink.setBehaviour('shaped@inbox.test', {
      rcpt: [{ code: 450, message: '4.7.28 Our system has detected an unusual rate of unsolicited mail originating from your IP address' }],
    });
    const id = await sendToLive('shaped@inbox.test');
    await stack.waitEmail(p.keys.live, id, (x) => x.events.some((e: any) => e.type === 'deferred'), 30_000);
    let parsed = (await scrape(stack.adminUrl)).parsed;
    for (let i = 0; i < 25 && sampleValue(parsed, 'postgate_gateway_shaping_actions', { provider: 'google', action: 'rate' }) !== 1; i++) {
      await new Promise((r) => setTimeout(r, 200));
      parsed = (await scrape(stack.adminUrl)).parsed;
    }
    expect(sampleValue(parsed, 'postgate_gateway_shaping_actions', { gateway: live, provider: 'google', action: 'rate' })).toBe(1);
    expect(sampleValue(parsed, 'postgate_gateway_shaping_actions', { gateway: live, provider: 'google', action: 'suspend' })).toBe(0);
    expect(sampleValue(parsed, 'postgate_gateway_shaping_actions', { gateway: live, provider: 'yahoo', action: 'rate' })).toBe(0);
    expect(sampleValue(parsed, 'postgate_gateway_deferrals_total', { provider: 'google', cause: 'receiver' })).toBe(2);
  });

  it("every metric the Grafana dashboard (deploy/grafana-dashboard.json) queries is in the node's scrape", async () => {
    const { parsed } = await scrape(stack.adminUrl);
    const dashboard = fs.readFileSync(new URL('../../../deploy/grafana-dashboard.json', import.meta.url), 'utf8');
    const used = new Set(dashboard.match(/\bpostgate_[a-z0-9_]+/g));
    expect(used.size).toBeGreaterThan(10);
    for (const n of used) {
      const family = parsed[n] ? n : n.replace(/_(bucket|sum|count)$/, '');
      expect(Object.keys(parsed), n).toContain(family);
      if (family !== n) expect(parsed[family]!.type, n).toBe('histogram');
    }
  });
});
