// Adaptive shaping end to end, on a real stack (real Haraka, loopback DNS and MX): the loopback MX
// answers each default rule's own text (its example, as the provider sends it) for a domain of the
// rule's provider. The action is taken: a suspension holds the mail (a `deferred` event with cause
// shaping, the rule's name and until when, once per email), for every project or only the one
// whose mail drew the answer; a lowered rate or connections shows in the gateway's metrics. When
// the action's time is over (the test clock moves past it) the mail goes and the limits are back.
// A rate lowered by a factor applies from the next attempt on: the sink sees the new spacing. On
// two nodes sharing Redis, an action taken on one gateway holds the mail on the other.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_RULES, type ShapingRule } from '../../../common/shaping.js';
import { startCluster, type Cluster } from '../../helpers/cluster.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { messageIdOf, startMxSink, type MxSink, type Reply } from '../../helpers/mx-sink.js';
import { Stack, sleep, type Project } from '../../helpers/stack.js';

/** A mailbox domain of each provider (common/providers.ts), its MX on the loopback sink. */
const DOMAIN: Record<string, string> = {
  google: 'gmail.com',
  yahoo: 'yahoo.com',
  microsoft: 'outlook.com',
  mailru: 'mail.ru',
  yandex: 'yandex.ru',
  apple: 'icloud.com',
  gmx: 'gmx.de',
  zoho: 'zoho.com',
};
const records = () =>
  Object.values(DOMAIN).flatMap((d) => [
    { type: 'MX' as const, name: d, exchange: `mx.${d}`, priority: 10 },
    { type: 'A' as const, name: `mx.${d}`, address: '127.0.0.1' },
  ]);
/** Limits high enough that halving them never slows the test; zoho's rate is what the spacing case lowers. */
const providers = Object.fromEntries(
  Object.keys(DOMAIN).map((p) => [p, { dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: p === 'zoho' ? 600 : 6000, connections: 20 }]),
);
/** The operator's rule of the spacing case: zoho's rate to a tenth (600 → 60 a minute: one a second). */
const SLOW: ShapingRule = {
  name: 'test-slow-down',
  providers: ['zoho'],
  match: { codes: [421], pattern: 'slow down' },
  action: { kind: 'rate', factor: 0.1 },
  durationSeconds: 600,
};

/** The SMTP reply a rule's example is: its code, then the rest of the text. */
const replyOf = (example: string): Reply => {
  const m = /^(\d{3})[ -](.*)$/s.exec(example)!;
  return { code: Number(m[1]), message: m[2]! };
};

let dns: DnsServer;
let sink: MxSink;
let stack: Stack;
let p: Project;
let q: Project;

const received = (id: string) => sink.messages.filter((m) => messageIdOf(m) === id);

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer(records());
  stack = await Stack.start({
    env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port), POSTGATE_TEST_CLOCK: '1' },
    config: {
      // A deferral is tried again after a second: mail not sent a few seconds on is held.
      delivery: { retryDelays: [1], maxTempFailures: 30, connectTimeout: 5 },
      pacing: { providers },
      shaping: { rules: [SLOW] },
    },
  });
  p = await stack.createProject('shaped');
  q = await stack.createProject('bystander');
  for (const x of [p, q]) {
    await stack.setPlan(x.slug, 'scale');
    await stack.verifyDomain(x.slug, `${x.slug}.test`);
  }
}, 90_000);
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

async function send(on: Stack, project: Project, to: string): Promise<string> {
  const r = await on.api('POST', '/v1/emails', project.keys.live, { from: `hello@${project.slug}.test`, to, subject: `to ${to}`, text: 'x' });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return r.body.id;
}
const eventOf = (email: any, f: (e: any) => boolean) => email.events.find(f);
const shapingHold = (rule: string) => (e: any) => e.type === 'deferred' && e.cause === 'shaping' && e.rule === rule;

/** The gateway's gauge of actions in force at a provider (of one kind, or all), 0 when none. */
async function actionsAt(provider: string, kind?: string, on = stack): Promise<number> {
  const text = await (await fetch(`${on.url}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith('postgate_gateway_shaping_actions{') && l.includes(`provider="${provider}"`) && (!kind || l.includes(`action="${kind}"`)))
    .reduce((n, l) => n + Number(l.split(' ').at(-1)), 0);
}
async function waitFor(what: string, fn: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(100);
  }
}
/** Moves the test clock (control and its gateway) forward. */
const advance = (ms: number, on = stack) => on.admin('POST', '/admin/v1/test/clock', { advance_ms: ms });

describe('each default rule, answered by the loopback MX', () => {
  for (const rule of DEFAULT_RULES) {
    const provider = rule.providers![0]!;
    const domain = DOMAIN[provider]!;
    it(`${rule.name}: ${rule.action.kind}${rule.action.kind === 'suspend' ? ` ${rule.action.scope}` : ''} at ${provider}, then back`, async () => {
      const tag = crypto.randomBytes(3).toString('hex');
      const trigger = `${rule.name}-${tag}@${domain}`;
      sink.setBehaviour(trigger, { rcpt: [replyOf(rule.example!)] });
      const id = await send(stack, p, trigger);
      const first = await stack.waitEmail(p.keys.live, id, (e) => e.events.some((x: any) => x.type === 'deferred' && x.cause === 'receiver'));
      const answer = eventOf(first, (x: any) => x.type === 'deferred' && x.cause === 'receiver');
      expect(answer).toMatchObject({ provider, attempt: 1 });
      expect(answer.response).toContain(replyOf(rule.example!).message.slice(0, 30));

      if (rule.action.kind === 'suspend') {
        // Its own retry (a second later) is held by the rule, saying so once, with until when.
        const held = await stack.waitEmail(p.keys.live, id, (e) => e.events.some(shapingHold(rule.name)));
        const hold = eventOf(held, shapingHold(rule.name));
        const until = Date.parse(hold.next_attempt_at);
        expect(until - Date.parse(answer.at)).toBeGreaterThanOrEqual(rule.durationSeconds * 1000 - 5000);
        expect(until - Date.parse(answer.at)).toBeLessThanOrEqual(rule.durationSeconds * 1000 + 5000);
        expect(hold).toMatchObject({ provider, response: expect.stringContaining(`rule ${rule.name}`) });
        // More mail of the project to the provider waits too; another project's waits only for a provider-wide suspension.
        const more = await send(stack, p, `more-${tag}@${domain}`);
        const other = await send(stack, q, `other-${tag}@${domain}`);
        await stack.waitEmail(p.keys.live, more, (e) => e.events.some(shapingHold(rule.name)));
        if (rule.action.scope === 'provider') await stack.waitEmail(q.keys.live, other, (e) => e.events.some(shapingHold(rule.name)));
        else expect((await stack.waitEmail(q.keys.live, other, (e) => e.status === 'sent')).status).toBe('sent');
        await sleep(1500);
        expect(received(id)).toHaveLength(0);
        expect(received(more)).toHaveLength(0);
        const again = (await stack.api('GET', `/v1/emails/${id}`, p.keys.live)).body;
        expect(again.events.filter(shapingHold(rule.name))).toHaveLength(1);
        expect(again.status).toBe('sending');

        // The action ends: the mail goes by itself.
        await advance(rule.durationSeconds * 1000 + 60_000);
        for (const [key, x] of [
          [p.keys.live, id],
          [p.keys.live, more],
          [q.keys.live, other],
        ] as const)
          expect((await stack.waitEmail(key, x, (e) => e.status === 'sent')).status).toBe('sent');
        expect(received(id)).toHaveLength(1);
      } else {
        // A lowered limit: in force at the gateway, the mail still goes (its retry), and it ends by itself.
        await waitFor(`${rule.name} in force`, async () => (await actionsAt(provider, rule.action.kind)) === 1);
        expect((await stack.waitEmail(p.keys.live, id, (e) => e.status === 'sent')).status).toBe('sent');
        await advance(rule.durationSeconds * 1000 + 60_000);
        await waitFor(`${rule.name} ended`, async () => (await actionsAt(provider)) === 0);
      }
    }, 60_000);
  }
});

describe('a rate lowered by a factor', () => {
  it('spaces the very next attempts by the new rate', async () => {
    const trigger = `slow-${crypto.randomBytes(3).toString('hex')}@zoho.com`;
    sink.setBehaviour(trigger, { rcpt: [{ code: 421, message: '4.7.0 Please slow down' }] });
    const t = await send(stack, p, trigger);
    await stack.waitEmail(p.keys.live, t, (e) => e.events.some((x: any) => x.type === 'deferred' && x.cause === 'receiver'));
    // 600 a minute became 60: from now on one message a second at most, the retry of the trigger included.
    const ids = [t];
    for (let i = 0; i < 4; i++) ids.push(await send(stack, p, `after-${i}-${crypto.randomBytes(3).toString('hex')}@zoho.com`));
    for (const id of ids) await stack.waitEmail(p.keys.live, id, (e) => e.status === 'sent', 30_000);
    const times = ids.map((id) => received(id)[0]!.receivedAt).sort((a, b) => a - b);
    // The pacer lets one go per 1000 ms at most (at the old rate: one per 100 ms). The sink sees each a
    // little after (the wire, a busy machine): the span of five, at least 4 s at the gateway, is judged
    // with a second to spare.
    expect(times.at(-1)! - times[0]!).toBeGreaterThanOrEqual(3000);
    await advance(SLOW.durationSeconds * 1000 + 60_000);
    await waitFor('the rate is back', async () => (await actionsAt('zoho')) === 0);
  }, 60_000);
});

describe('two nodes sharing Redis', () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster(2, {
      env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port), POSTGATE_TEST_CLOCK: '1' },
      config: { delivery: { retryDelays: [1], maxTempFailures: 30, connectTimeout: 5 }, pacing: { providers } },
    });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it('an action taken on one gateway holds the mail on the other', async () => {
    const [a, b] = cluster.nodes as [Stack, Stack];
    const gateways = a.env.POSTGATE_GATEWAYS!.split(',');
    /** The gateway control hands an email to (control/delivery/gateways.ts pick). */
    const gatewayOf = (id: string) => gateways[crypto.createHash('sha1').update(id).digest().readUInt32BE(0) % gateways.length];
    const c = await a.createProject('shaped');
    await a.setPlan(c.slug, 'scale');
    await a.verifyDomain(c.slug, 'shaped.test');
    const rule = DEFAULT_RULES.find((r) => r.name === 'yahoo-complaints')!;
    const trigger = `cluster-${crypto.randomBytes(3).toString('hex')}@yahoo.com`;
    sink.setBehaviour(trigger, { rcpt: [replyOf(rule.example!)] });
    const t = await send(a, c, trigger);
    await a.waitEmail(c.keys.live, t, (e) => e.events.some(shapingHold(rule.name)), 30_000);
    // Mail handed to the other gateway is held there by the same action.
    const elsewhere: string[] = [];
    for (let i = 0; elsewhere.length < 2 && i < 40; i++) {
      const id = await send(i % 2 ? b : a, c, `c${i}-${crypto.randomBytes(3).toString('hex')}@yahoo.com`);
      if (gatewayOf(id) !== gatewayOf(t)) elsewhere.push(id);
    }
    expect(elsewhere).toHaveLength(2);
    for (const id of elsewhere) {
      const held = await a.waitEmail(c.keys.live, id, (e) => e.events.some(shapingHold(rule.name)), 30_000);
      expect(eventOf(held, shapingHold(rule.name)).next_attempt_at).toBe(
        eventOf(await a.waitEmail(c.keys.live, t, () => true), shapingHold(rule.name)).next_attempt_at,
      );
    }
    await sleep(1500);
    for (const id of [t, ...elsewhere]) expect(received(id)).toHaveLength(0);
    // Its end lets the mail go on both.
    for (const n of [a, b]) await advance(rule.durationSeconds * 1000 + 60_000, n);
    for (const id of [t, ...elsewhere]) expect((await a.waitEmail(c.keys.live, id, (e) => e.status === 'sent', 30_000)).status).toBe('sent');
  }, 120_000);
});
