// Pacing end to end: a company domain whose MX (in the loopback DNS) is Google's shares
// gmail.com's warm-up budget; bulk over the day's norm is deferred to the next UTC day
// (a `deferred` event with that time, caused by our pacing) and sent when the test clock
// reaches it, on its first attempt; transactional mail is never held. Throttles are set
// with the CLI, live, and survive a restart. Same-subject limit, volume spikes held
// until announced or approved, and the connection limit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink, messageIdOf } from '../../helpers/mx-sink.js';

let dns: DnsServer;
let sink: MxSink;
let stack: Stack;
let p: Project;

const DAY = 86_400_000;
const sentTo = (id: string) => sink.messages.filter((m) => messageIdOf(m) === id);
const seq = (email: any) => email.events.map((e: any) => `${e.type}${e.attempt ? `#${e.attempt}` : ''}`);
const tomorrow = () => new Date(Math.floor(Date.now() / DAY) * DAY + DAY).toISOString();

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer([
    { type: 'MX', name: 'gmail.com', exchange: 'gmail-smtp-in.l.google.com', priority: 5 },
    { type: 'A', name: 'gmail-smtp-in.l.google.com', address: '127.0.0.1' },
    // A company hosted at Google Workspace: its own name, Google's MX.
    { type: 'MX', name: 'company.test', exchange: 'aspmx.l.google.com', priority: 1 },
    { type: 'MX', name: 'company.test', exchange: 'alt1.aspmx.l.google.com', priority: 5 },
    { type: 'A', name: 'aspmx.l.google.com', address: '127.0.0.1' },
    { type: 'A', name: 'alt1.aspmx.l.google.com', address: '127.0.0.1' },
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
  stack = await Stack.start({
    env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port), POSTGATE_TEST_CLOCK: '1' },
    config: {
      delivery: { retryDelays: [1], maxTempFailures: 5, connectTimeout: 5 },
      pacing: {
        providers: {
          google: { dailyNorm: 50, growth: 1.5, maxDailyNorm: 0, ratePerMinute: 0, connections: 0 },
          other: { dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: 0, connections: 0 },
        },
        sameSubjectDailyLimit: 4,
        volumeSpike: { factor: 4, floor: 10, days: 7 },
      },
    },
  });
  p = await stack.createProject('pacer');
  await stack.setPlan('pacer', 'scale');
  await stack.verifyDomain('pacer', 'acme.test');
}, 60_000);
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

async function send(to: string, extra: Record<string, unknown> = {}): Promise<{ status: number; body: any }> {
  return stack.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to, subject: `for ${to}`, text: 'x', ...extra });
}
async function sent(to: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await send(to, extra);
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  await stack.waitEmail(p.keys.live, r.body.id, (e) => e.status === 'sent');
  return r.body.id;
}
const pacing = async () => (await stack.api('GET', '/v1/pacing', p.keys.live)).body;
const google = async () => (await pacing()).providers.find((x: any) => x.provider === 'google');

describe('warm-up per receiving provider', () => {
  it("the operator sets a provider's throttle with the CLI, live", async () => {
    const before = JSON.parse(await stack.cli('throttle', 'list', '--json'));
    expect(before.find((t: any) => t.provider === 'google')).toMatchObject({ daily_norm: 50, source: 'config' });
    expect(before.map((t: any) => t.provider)).toEqual(expect.arrayContaining(['google', 'microsoft', 'yahoo', 'mailru', 'yandex', 'apple', 'other']));
    const set = JSON.parse(await stack.cli('throttle', 'set', '--provider', 'google', '--daily-norm', '3', '--growth', '2', '--json'));
    expect(set).toMatchObject({ provider: 'google', daily_norm: 3, growth: 2, source: 'operator' });
    await expect(stack.cli('throttle', 'set', '--provider', 'nosuch', '--rate', '5')).rejects.toThrow(/unknown provider/);
  });

  it("a Google-hosted company domain shares gmail.com's budget; bulk over the norm is deferred to the next day, transactional never", async () => {
    await sent('t1@company.test');
    const b1 = await sent('b1@gmail.com', { bulk: true });
    await sent('b2@company.test', { bulk: true });
    const s = (await stack.api('GET', `/v1/emails/${b1}`, p.keys.live)).body.events.find((e: any) => e.type === 'sent');
    expect(s.provider).toBe('google');

    // 1 transactional + 2 bulk = the day's norm of 3: more bulk waits for tomorrow, to either domain.
    const held = [(await send('b3@gmail.com', { bulk: true })).body.id, (await send('b4@company.test', { bulk: true })).body.id];
    for (const id of held) {
      const email = await stack.waitEmail(p.keys.live, id, (e) => e.events.some((x: any) => x.type === 'deferred'));
      const d = email.events.find((x: any) => x.type === 'deferred');
      expect(d).toMatchObject({
        cause: 'pacing',
        provider: 'google',
        next_attempt_at: tomorrow(),
        attempt: 1,
        response: expect.stringMatching(/warm-up norm at google .*\(3 messages\)/),
      });
      expect(email.status).toBe('sending');
    }
    // Transactional mail goes, even over the norm; other providers have their own budget.
    await sent('t2@gmail.com');
    await sent('x1@inbox.test', { bulk: true });
    await sleep(500);
    expect(held.every((id) => sentTo(id).length === 0)).toBe(true);

    const g = await google();
    expect(g).toMatchObject({ daily_norm: 3, used: { transactional: 2, bulk: 2, total: 4 }, remaining: 0, held_bulk: 2 });
    const view = await pacing();
    expect(view).toMatchObject({ warmup_day: 1, next_day_at: tomorrow() });
    expect(view.providers.find((x: any) => x.provider === 'other')).toMatchObject({ daily_norm: null, used: { bulk: 1 } });

    // Tomorrow (the test clock moves control and the gateway): the held mail goes on its first attempt.
    const next = Date.parse(tomorrow());
    const moved = await stack.admin('POST', '/admin/v1/test/clock', { offset_ms: next + 5_000 - Date.now() });
    expect(Date.parse(moved.now)).toBeGreaterThanOrEqual(next);
    for (const id of held) {
      const email = await stack.waitEmail(p.keys.live, id, (e) => e.status === 'sent');
      expect(seq(email)).toEqual(['queued', 'deferred#1', 'sending#1', 'sent#1']);
      expect(Date.parse(email.events.at(-1).at)).toBeGreaterThanOrEqual(next);
      expect(sentTo(id)).toHaveLength(1);
    }
    // Day 2 of the warm-up: the norm doubled.
    expect(await google()).toMatchObject({ daily_norm: 6, used: { bulk: 2, total: 2 }, held_bulk: 0 });
    expect((await pacing()).warmup_day).toBe(2);
  });

  it('raising the norm releases held bulk at once', async () => {
    // Day 2's norm is 6, 2 used: four more go, the next two wait.
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await send(`r${i}@gmail.com`, { bulk: true, subject: `raise ${i}` })).body.id);
    const until = Date.now() + 15_000;
    while ((await google()).held_bulk < 2 && Date.now() < until) await sleep(100);
    expect(await google()).toMatchObject({ daily_norm: 6, used: { bulk: 6 }, remaining: 0, held_bulk: 2 });
    await stack.cli('throttle', 'set', '--provider', 'google', '--daily-norm', '10');
    for (const id of ids) await stack.waitEmail(p.keys.live, id, (e) => e.status === 'sent');
  });
});

describe('bulk volume rules', () => {
  it('a daily limit of bulk emails with the same subject answers 429 BULK_LIMIT_EXCEEDED', async () => {
    for (let i = 0; i < 4; i++) expect((await send(`s${i}@inbox.test`, { bulk: true, subject: 'Flash  sale' })).status).toBe(202);
    const over = await send('s4@inbox.test', { bulk: true, subject: 'flash sale' });
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ code: 'BULK_LIMIT_EXCEEDED', error: expect.stringContaining('same subject') });
    expect(over.body.id).toBeUndefined();
    // Transactional mail with that subject is not bulk.
    expect((await send('s4@inbox.test', { subject: 'Flash sale' })).status).toBe(202);
    const batch = await stack.api('POST', '/v1/emails/batch', p.keys.live, [
      { from: 'hello@acme.test', to: 's5@inbox.test', subject: 'Flash sale', text: 'x', bulk: true },
    ]);
    expect(batch.body.data[0]).toMatchObject({ code: 'BULK_LIMIT_EXCEEDED' });
  });

  it('a bulk volume spike is held until announced beforehand or approved by the operator', async () => {
    // Today's bulk so far (day 2): 6 + 4 = 10, the floor; yesterday's 5 make a usual volume far lower.
    expect((await pacing()).bulk_volume).toMatchObject({ today: 10, threshold: 10, daily_average: 0.7, held_emails: 0 });
    const spike = await send('v1@inbox.test', { bulk: true, subject: 'spike' });
    expect(spike.status).toBe(202);
    const held = await stack.waitEmail(p.keys.live, spike.body.id, (e) => e.events.some((x: any) => x.type === 'deferred'));
    expect(held.status).toBe('queued');
    expect(held.events.find((x: any) => x.type === 'deferred')).toMatchObject({
      cause: 'volume',
      reason: expect.stringContaining('POST /v1/pacing/announcements'),
    });
    await sleep(500);
    expect(sentTo(spike.body.id)).toHaveLength(0);
    expect((await pacing()).bulk_volume.held_emails).toBe(1);

    // Announced beforehand: mail up to the announced volume goes.
    const ann = await stack.api('POST', '/v1/pacing/announcements', p.keys.live, { volume: 20 });
    expect(ann.status).toBe(201);
    expect((await stack.api('POST', '/v1/pacing/announcements', p.keys.live, { day: '2020-01-01', volume: 20 })).status).toBe(400);
    await sent('v2@inbox.test', { bulk: true, subject: 'announced' });
    expect((await pacing()).announcements).toEqual([expect.objectContaining({ volume: 20, source: 'project' })]);

    // What was held before the announcement waits for the operator.
    expect(sentTo(spike.body.id)).toHaveLength(0);
    const approved = JSON.parse(await stack.cli('pacing', 'approve', '--project', 'pacer', '--json'));
    expect(approved).toMatchObject({ project: 'pacer', released: 1 });
    await stack.waitEmail(p.keys.live, spike.body.id, (e) => e.status === 'sent');
  });
});

describe('rate and connection limits', () => {
  it('one connection at a time to a destination when the operator says so', async () => {
    await stack.cli('throttle', 'set', '--provider', 'other', '--connections', '1');
    sink.setBehaviour('*', { dataDelayMs: 400 });
    try {
      const ids = [];
      for (let i = 0; i < 4; i++) ids.push((await send(`c${i}@inbox.test`)).body.id);
      for (const id of ids) await stack.waitEmail(p.keys.live, id, (e) => e.status === 'sent');
      const times = ids.map((id) => sentTo(id)[0]!.receivedAt).sort((a, b) => a - b);
      for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(350);
    } finally {
      sink.setBehaviour('*', {});
      await stack.cli('throttle', 'set', '--provider', 'other', '--connections', '0');
    }
  });
});

describe('throttles survive a restart', () => {
  it('are stored in control and pushed to the restarted gateway', async () => {
    expect(await stack.stop()).toBe(0);
    await stack.boot();
    const list = JSON.parse(await stack.cli('throttle', 'list', '--json'));
    expect(list.find((t: any) => t.provider === 'google')).toMatchObject({ daily_norm: 10, growth: 2, source: 'operator' });
    // The clock is back to today (day 1, norm 10, 4 used): the gateway applies the operator's norm, not the config's 50.
    expect((await stack.api('POST', '/v1/pacing/announcements', p.keys.live, { volume: 100 })).status).toBe(201);
    const ids = [];
    for (let i = 0; i < 7; i++) ids.push((await send(`after${i}@gmail.com`, { bulk: true, subject: `after ${i}` })).body.id);
    const outcomes = [];
    for (const id of ids) outcomes.push(await stack.waitEmail(p.keys.live, id, (e) => e.status === 'sent' || e.events.some((x: any) => x.type === 'deferred')));
    const deferred = outcomes.flatMap((e) => e.events.filter((x: any) => x.type === 'deferred'));
    expect(deferred).toHaveLength(1);
    expect(deferred[0].response).toMatch(/\(10 messages\)/);
  });
});
