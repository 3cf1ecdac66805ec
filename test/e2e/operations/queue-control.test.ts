// Queue control end to end, on a real stack (real Haraka, loopback DNS and MX): the operator
// suspends and resumes delivery to a provider or of one project, sends deferred mail now, and
// cancels a project's queued, scheduled and deferred mail: each email gets its final status,
// events and webhooks, and nothing of it reaches the receiver afterwards, also when the gateway
// is killed (kill -9) while the order is on its way. Every action is in the operator audit log
// with who (the admin token's fingerprint), when and how many emails. A two-node cluster: a
// suspension ordered on one node holds the mail on the other node's gateway.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../../helpers/cluster.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { messageIdOf, replies, startMxSink, type MxSink } from '../../helpers/mx-sink.js';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { until } from '../../helpers/until.js';

let dns: DnsServer;
let sink: MxSink;
let stack: Stack;
let hooks: http.Server;
const posted: Array<{ type: string; data: Record<string, unknown> }> = [];

const RECORDS = [
  { type: 'MX' as const, name: 'gmail.com', exchange: 'gmail-smtp-in.l.google.com', priority: 5 },
  { type: 'A' as const, name: 'gmail-smtp-in.l.google.com', address: '127.0.0.1' },
  { type: 'MX' as const, name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
  { type: 'A' as const, name: 'mx.inbox.test', address: '127.0.0.1' },
];

const received = (id: string) => sink.messages.filter((m) => messageIdOf(m) === id);

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer(RECORDS);
  hooks = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      posted.push(JSON.parse(body));
      res.end('ok');
    });
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  stack = await Stack.start({
    env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) },
    config: {
      // A deferral waits ten minutes: only send-now (or a resume) makes it leave sooner.
      delivery: { retryDelays: [600], maxTempFailures: 5, connectTimeout: 5 },
      webhooks: { allowCidrs: ['127.0.0.0/8'] },
      pacing: { volumeSpike: { factor: 4, floor: 1, days: 7 } },
    },
  });
}, 90_000);
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
  await new Promise((r) => hooks?.close(r));
});

async function project(): Promise<Project> {
  const p = await stack.createProject();
  await stack.setPlan(p.slug, 'scale');
  await stack.verifyDomain(p.slug, 'acme.test');
  return p;
}

async function send(p: Project, to: string, extra: Record<string, unknown> = {}): Promise<string> {
  const r = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to, subject: `to ${to}`, text: 'x', ...extra });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return r.body.id;
}

const email = async (p: Project, id: string) => (await stack.api('GET', `/v1/emails/${id}`, p.keys.live)).body;
const fingerprint = (s: Stack) =>
  crypto
    .createHash('sha256')
    .update(fs.readFileSync(path.join(s.dataDir, 'admin-token'), 'utf8').trim())
    .digest('hex')
    .slice(0, 12);
const cli = async (...args: string[]) => JSON.parse(await stack.cli(...args, '--json'));
const suspendedEvent = (e: any) => e.events.some((x: any) => x.type === 'deferred' && x.cause === 'suspended');

describe('suspend and resume', () => {
  it("a provider: its mail waits with 'suspended' deferrals, other providers' mail goes; resumed, it goes", async () => {
    const p = await project();
    const s = await cli('queue', 'suspend', '--provider', 'google', '--for', '30m', '--reason', 'incident 1');
    expect(s).toMatchObject({ id: expect.stringMatching(/^sus_/), provider: 'google', project: null, reason: 'incident 1' });
    expect(Date.parse(s.until) - Date.now()).toBeGreaterThan(25 * 60_000);
    expect((await cli('queue', 'suspensions')).map((x: any) => x.id)).toContain(s.id);
    const held = await send(p, 'held@gmail.com');
    const free = await send(p, 'free@inbox.test');
    await stack.waitEmail(p.keys.live, free, (e) => e.status === 'sent');
    const waiting = await stack.waitEmail(p.keys.live, held, suspendedEvent);
    expect(waiting.status).not.toBe('sent');
    // The event names the operator's suspension and until when.
    expect(waiting.events.find((x: any) => x.cause === 'suspended')).toMatchObject({ rule: `operator:${s.id}`, next_attempt_at: s.until });
    expect(received(held)).toEqual([]);
    await cli('queue', 'resume', '--id', s.id);
    expect((await cli('queue', 'suspensions')).map((x: any) => x.id)).not.toContain(s.id);
    await stack.waitEmail(p.keys.live, held, (e) => e.status === 'sent');
    expect(received(held)).toHaveLength(1);
  }, 60_000);

  it('one project only: its mail waits, another project sends to the same provider; resumed by --project', async () => {
    const [a, b] = [await project(), await project()];
    await cli('queue', 'suspend', '--project', a.slug);
    const held = await send(a, 'a1@gmail.com');
    const other = await send(b, 'b1@gmail.com');
    await stack.waitEmail(b.keys.live, other, (e) => e.status === 'sent');
    await stack.waitEmail(a.keys.live, held, suspendedEvent);
    expect(received(held)).toEqual([]);
    const resumed = await cli('queue', 'resume', '--project', a.slug);
    expect(resumed).toHaveLength(1);
    await stack.waitEmail(a.keys.live, held, (e) => e.status === 'sent');
  }, 60_000);

  it('bad input is refused with {error, code}: nothing named, an unknown provider, project or suspension, a past time', async () => {
    const bad = async (method: string, p: string, body?: unknown) => {
      const r = await stack.adminApi(method, p, fs.readFileSync(path.join(stack.dataDir, 'admin-token'), 'utf8').trim(), body);
      return [r.status, r.body.code];
    };
    expect(await bad('POST', '/admin/v1/queue/suspensions', {})).toEqual([400, 'INVALID_REQUEST']);
    expect(await bad('POST', '/admin/v1/queue/suspensions', { provider: 'nosuch' })).toEqual([404, 'NOT_FOUND']);
    expect(await bad('POST', '/admin/v1/queue/suspensions', { project: 'nosuch' })).toEqual([404, 'NOT_FOUND']);
    expect(await bad('POST', '/admin/v1/queue/suspensions', { provider: 'google', until: '2001-01-01T00:00:00Z' })).toEqual([400, 'INVALID_REQUEST']);
    expect(await bad('POST', '/admin/v1/queue/suspensions', { provider: 'google', until: 'tomorrow' })).toEqual([400, 'INVALID_REQUEST']);
    expect(await bad('DELETE', '/admin/v1/queue/suspensions/sus_nosuch')).toEqual([404, 'NOT_FOUND']);
    expect(await bad('POST', '/admin/v1/queue/send-now', { provider: 'nosuch' })).toEqual([404, 'NOT_FOUND']);
    expect(await bad('POST', '/admin/v1/projects/nosuch/cancel-queued')).toEqual([404, 'NOT_FOUND']);
    expect(await bad('GET', '/admin/v1/audit?limit=0')).toEqual([400, 'INVALID_REQUEST']);
    await expect(stack.cli('queue', 'suspend')).rejects.toThrow(/needs --provider, --project or both/);
    await expect(stack.cli('queue', 'suspend', '--provider', 'google', '--for', 'soon')).rejects.toThrow(/--for takes a duration/);
  });
});

describe('send now', () => {
  it('deferred mail of a project leaves at once, long before its retry time', async () => {
    const p = await project();
    sink.setBehaviour('later@inbox.test', { rcpt: [replies.greylisted] });
    const id = await send(p, 'later@inbox.test');
    const deferred = await stack.waitEmail(p.keys.live, id, (e) => e.events.some((x: any) => x.type === 'deferred'));
    const next = Date.parse(deferred.events.find((x: any) => x.type === 'deferred').next_attempt_at ?? 0);
    expect(next - Date.now()).toBeGreaterThan(5 * 60_000);
    const woken = await cli('queue', 'send-now', '--project', p.slug);
    expect(woken.woken).toBeGreaterThanOrEqual(1);
    await stack.waitEmail(p.keys.live, id, (e) => e.status === 'sent', 15_000);
    expect(received(id)).toHaveLength(1);
  }, 60_000);
});

describe("a project's cancel", () => {
  it('queued (held by control), scheduled and deferred mail: canceled with events and webhooks, never delivered afterwards', async () => {
    const p = await project();
    const hook = await stack.api('POST', '/v1/webhooks', p.keys.live, {
      url: `http://127.0.0.1:${(hooks.address() as { port: number }).port}/hook`,
      statuses: ['canceled'],
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
    sink.setBehaviour('deferred@inbox.test', { rcpt: [replies.greylisted] });
    const deferred = await send(p, 'deferred@inbox.test');
    await stack.waitEmail(p.keys.live, deferred, (e) => e.events.some((x: any) => x.type === 'deferred'));
    const scheduled = await send(p, 'scheduled@inbox.test', { scheduled_at: new Date(Date.now() + 3600_000).toISOString() });
    // A bulk volume spike: held by control, never handed to a gateway.
    const queued = await send(p, 'q1@inbox.test', { to: ['q1@inbox.test', 'q2@inbox.test'], bulk: true });
    await stack.waitEmail(p.keys.live, queued, (e) => e.status === 'queued' && e.events.some((x: any) => x.type === 'deferred'));
    const done = await send(p, 'done@inbox.test');
    await stack.waitEmail(p.keys.live, done, (e) => e.status === 'sent');

    const out = await cli('queue', 'cancel', '--project', p.slug);
    // The deferred copy was held by the gateway: dropped there, unsent.
    expect(out).toEqual({ canceled: 3, dropped: 1 });
    for (const id of [deferred, scheduled, queued]) {
      const e = await email(p, id);
      expect(e.status, id).toBe('canceled');
      expect(e.events.at(-1)).toMatchObject({ type: 'canceled', reason: 'operator' });
    }
    expect((await email(p, done)).status).toBe('sent');
    await until(() => posted.filter((m) => m.type === 'email.canceled').length >= 3, 15_000, 'three email.canceled webhooks');
    expect(
      posted
        .filter((m) => m.type === 'email.canceled')
        .map((m) => m.data.email_id)
        .sort(),
    ).toEqual([deferred, scheduled, queued].sort());
    // The receiver would take it now; send-now and the operator's approval of held bulk find nothing to send.
    sink.setBehaviour('deferred@inbox.test', {});
    await cli('queue', 'send-now', '--project', p.slug);
    await stack.admin('POST', `/admin/v1/projects/${p.slug}/pacing/approve`, {});
    await sleep(3000);
    for (const id of [deferred, scheduled, queued]) expect(received(id), id).toEqual([]);
    expect((await email(p, deferred)).status).toBe('canceled');
  }, 90_000);

  it('with the gateway killed while the order is on its way: the restarted gateway delivers none of it', async () => {
    const p = await project();
    const other = await project();
    // One connection to Google, taken by another project's slow message: the project's mail waits its turn in the gateway.
    await cli('throttle', 'set', '--provider', 'google', '--connections', '1');
    sink.setBehaviour('slow@gmail.com', { dataDelayMs: 60_000 });
    const slow = await send(other, 'slow@gmail.com');
    await until(() => sink.attempts('slow@gmail.com') >= 1, 15_000, 'the slow message on the wire');
    const waiting = await Promise.all(['w1@gmail.com', 'w2@gmail.com', 'w3@gmail.com'].map((to) => send(p, to)));
    // Handed to the gateway, waiting there.
    await sleep(2000);
    const gateway = stack.pid('gateway');
    process.kill(gateway, 'SIGSTOP');
    let out: any;
    try {
      out = await cli('queue', 'cancel', '--project', p.slug);
    } finally {
      process.kill(gateway, 'SIGKILL');
      process.kill(gateway, 'SIGCONT');
    }
    expect(out.canceled).toBe(3);
    sink.setBehaviour('slow@gmail.com', {});
    await stack.waitRestart('gateway', gateway);
    // The other project's mail is delivered after the restart; none of the canceled mail is.
    await stack.waitEmail(other.keys.live, slow, (e) => e.status === 'sent', 60_000);
    await sleep(3000);
    for (const id of waiting) {
      expect(received(id), id).toEqual([]);
      expect((await email(p, id)).status).toBe('canceled');
    }
    await cli('throttle', 'set', '--provider', 'google', '--connections', '0');
  }, 120_000);
});

describe('the operator audit log', () => {
  it('lists each action with who (the token fingerprint), when and how many emails, newest first', async () => {
    const log = await cli('audit', 'list', '--limit', '200');
    expect(log.has_more).toBe(false);
    const actions = log.data.map((e: any) => e.action);
    for (const a of ['queue.suspend', 'queue.resume', 'queue.send_now', 'queue.cancel', 'throttle.set', 'project.create', 'project.plan', 'pacing.approve'])
      expect(actions, a).toContain(a);
    const me = fingerprint(stack);
    expect(log.data.every((e: any) => e.actor === me)).toBe(true);
    expect(JSON.stringify(log.data)).not.toContain(fs.readFileSync(path.join(stack.dataDir, 'admin-token'), 'utf8').trim());
    const cancels = log.data.filter((e: any) => e.action === 'queue.cancel');
    expect(cancels.map((e: any) => e.emails)).toEqual([3, 3]);
    expect(cancels[0].target).toMatch(/^project:/);
    const times = log.data.map((e: any) => Date.parse(e.at));
    expect(times).toEqual([...times].sort((x, y) => y - x));
    // Pages: `before` goes on to older entries.
    const first = await stack.admin('GET', '/admin/v1/audit?limit=2');
    const next = await stack.admin('GET', `/admin/v1/audit?limit=2&before=${first.data[1].id}`);
    expect(next.data[0].id).toBe(log.data[2].id);
    const text = await stack.cli('audit', 'list', '--limit', '3');
    expect(text).toContain(me);
  });
});

describe('a two-node cluster', () => {
  let cluster: Cluster;
  afterAll(async () => {
    await cluster?.stop();
  });

  it("a suspension ordered on one node holds the mail on the other node's gateway; resumed there, it goes", async () => {
    cluster = await startCluster(2, {
      env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) },
      config: { delivery: { retryDelays: [600], maxTempFailures: 5, connectTimeout: 5 } },
    });
    const [a, b] = cluster.nodes as [Stack, Stack];
    const p = await a.createProject();
    await a.setPlan(p.slug, 'scale');
    await a.verifyDomain(p.slug, 'acme.test');
    const s = await a.admin('POST', '/admin/v1/queue/suspensions', { provider: 'google', reason: 'cluster' });
    // Sent through the other node: each email goes to the gateway its id picks (control/delivery/gateways.ts pick).
    // Ids are random, so eight may all land on node a's (1 in 256): send until node b's holds some, at most 40.
    const onNodeB = (id: string) => crypto.createHash('sha1').update(id).digest().readUInt32BE(0) % 2 === 1;
    const ids: string[] = [];
    for (let i = 0; i < 40 && (i < 8 || !ids.some(onNodeB)); i++) {
      const r = await b.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to: `c${i}@gmail.com`, subject: `c${i}`, text: 'x' });
      expect(r.status).toBe(202);
      ids.push(r.body.id);
    }
    for (const id of ids) await b.waitEmail(p.keys.live, id, suspendedEvent);
    // Some are on node b's gateway, where the order was not given.
    expect(ids.filter(onNodeB).length).toBeGreaterThan(0);
    for (const id of ids) expect(received(id)).toEqual([]);
    await b.admin('DELETE', `/admin/v1/queue/suspensions/${s.id}`);
    for (const id of ids) await a.waitEmail(p.keys.live, id, (e) => e.status === 'sent', 30_000);
    const audit = await b.admin('GET', '/admin/v1/audit?limit=10');
    expect(audit.data.map((e: any) => e.action)).toEqual(expect.arrayContaining(['queue.suspend', 'queue.resume']));
  }, 180_000);
});
