// The live delivery state end to end, on a real stack (real Haraka, loopback DNS and MX): the MX
// answers 4xx for some recipients, so their mail is deferred by the receiver; the admin API's
// /queue/status and `postgate queue status` show the deferred counts per provider and project, the
// remote answers grouped by enhanced code with a sample, the windows with what was delivered, and the
// emails control holds for a volume spike;
// a restarted gateway counts the deferred mail it loads from its queue (and, stopped gracefully, keeps
// its windows and answers); bad filters are 404s. On a two-node cluster, the state read on one node
// sums both gateways.
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../../helpers/cluster.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink, type Reply } from '../../helpers/mx-sink.js';
import { Stack, type Project } from '../../helpers/stack.js';
import { sleep } from '../../helpers/stack.js';

let dns: DnsServer;
let sink: MxSink;
let stack: Stack;

const RECORDS = [
  { type: 'MX' as const, name: 'gmail.com', exchange: 'gmail-smtp-in.l.google.com', priority: 5 },
  { type: 'A' as const, name: 'gmail-smtp-in.l.google.com', address: '127.0.0.1' },
  { type: 'MX' as const, name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
  { type: 'A' as const, name: 'mx.inbox.test', address: '127.0.0.1' },
  // Yahoo's MX is down: the sink listens on 127.0.0.1 only, so a connection to 127.0.0.2 is refused.
  { type: 'MX' as const, name: 'yahoo.com', exchange: 'mta5.am0.yahoodns.net', priority: 1 },
  { type: 'A' as const, name: 'mta5.am0.yahoodns.net', address: '127.0.0.2' },
];

// Answers no default shaping rule matches: the provider is not slowed by them.
const full: Reply = { code: 452, message: '4.2.2 Mailbox over quota for this test' };
const grey: Reply = { code: 450, message: '4.2.0 Greylisted by the status test' };
const always = (r: Reply) => Array<Reply>(20).fill(r);

// A deferral waits ten minutes: the deferred mail stays deferred for the whole test.
const CONFIG = { delivery: { retryDelays: [600], maxTempFailures: 5, connectTimeout: 5 } };
// Bulk mail over one recipient a day is a spike control holds before dispatch (for the held count).
const SPIKE = { pacing: { volumeSpike: { factor: 4, floor: 1, days: 7 } } };

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer(RECORDS);
  stack = await Stack.start({ env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) }, config: { ...CONFIG, ...SPIKE } });
}, 90_000);
afterAll(async () => {
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

async function project(s: Stack): Promise<Project> {
  const p = await s.createProject();
  await s.setPlan(p.slug, 'scale');
  await s.verifyDomain(p.slug, 'acme.test');
  return p;
}

async function send(s: Stack, p: Project, to: string): Promise<string> {
  const r = await s.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to, subject: `to ${to}`, text: 'x' });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return r.body.id;
}

/** Reads until `done` holds (the deferred hook counts before Haraka answers; the publication is every 2 s), else fails with the last read. */
async function until<T>(read: () => Promise<T>, done: (x: T) => boolean, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const x = await read();
    if (done(x)) return x;
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${JSON.stringify(x)}`);
    await sleep(200);
  }
}

const deferred = (e: any) => e.events.some((x: any) => x.type === 'deferred' && x.cause === 'receiver');
const sent = (e: any) => e.status === 'sent';
const providerOf = (status: any, name: string) => status.providers.find((p: any) => p.provider === name);

describe('queue status on one node', () => {
  let p: Project;
  const slowIds: string[] = [];

  beforeAll(async () => {
    for (const r of ['full1@inbox.test', 'full2@inbox.test']) sink.setBehaviour(r, { rcpt: always(full) });
    sink.setBehaviour('grey@inbox.test', { rcpt: always(grey) });
    p = await project(stack);
    for (const to of ['full1@inbox.test', 'full2@inbox.test', 'grey@inbox.test']) slowIds.push(await send(stack, p, to));
    const ok = [await send(stack, p, 'ok1@gmail.com'), await send(stack, p, 'ok2@gmail.com')];
    for (const id of slowIds) await stack.waitEmail(p.keys.live, id, deferred);
    for (const id of ok) await stack.waitEmail(p.keys.live, id, sent);
  }, 60_000);

  it('shows deferred-by-receiver counts, the answers by enhanced code with a sample, and the windows', async () => {
    // The gateway counts the deferral in its hook before Haraka renames the file; read until it shows.
    const s = await until(
      () => stack.admin('GET', '/admin/v1/queue/status'),
      (x: any) => providerOf(x, 'other')?.queue.deferred.receiver === 3,
    );
    expect(s.nodes).toHaveLength(1);
    expect(s.unreachable).toEqual([]);
    const other = providerOf(s, 'other');
    expect(other.queue).toEqual({ ready: 0, in_flight: 0, deferred: { receiver: 3, network: 0, pacing: 0, volume: 0, shaping: 0, suspended: 0 } });
    expect(other.answers).toEqual([
      { enhanced_code: '4.2.2', count: 2, sample: expect.stringContaining('Mailbox over quota for this test'), last_at: expect.any(String) },
      { enhanced_code: '4.2.0', count: 1, sample: expect.stringContaining('Greylisted by the status test'), last_at: expect.any(String) },
    ]);
    expect(other.windows.last_5m).toEqual({ delivered: 0, deferred: 3, bounced: 0, complained: 0 });
    expect(other.projects).toEqual([{ project: p.slug, queue: other.queue, windows: other.windows }]);
    const google = providerOf(s, 'google');
    expect(google.windows.last_5m).toMatchObject({ delivered: 2, deferred: 0 });
    expect(google.windows.last_hour.delivered).toBe(2);
    expect(google.windows.last_day.delivered).toBe(2);
    expect(google.queue.ready + google.queue.in_flight).toBe(0);
    expect(google.rate.per_minute).toBeGreaterThanOrEqual(2);
    expect(google.connections).toMatchObject({ open: expect.any(Number) });
    expect(google.warmup).toEqual([{ project: p.slug, used: 2, norm: expect.any(Number) }]);
    expect(s.held).toEqual({ emails: 0, projects: [] });
  });

  it('filters by provider and by project; an unknown one is a 404 with {error, code}', async () => {
    const g = await stack.admin('GET', '/admin/v1/queue/status?provider=google');
    expect(g.providers.map((x: any) => x.provider)).toEqual(['google']);
    const mine = await stack.admin('GET', `/admin/v1/queue/status?project=${p.slug}`);
    expect(providerOf(mine, 'other').queue.deferred.receiver).toBe(3);
    // Another project sees none of it.
    const q = await project(stack);
    const theirs = await stack.admin('GET', `/admin/v1/queue/status?project=${q.slug}`);
    expect(theirs.providers).toEqual([]);
    const token = (await import('node:fs')).readFileSync(`${stack.dataDir}/admin-token`, 'utf8').trim();
    for (const [query, message] of [
      ['provider=nosuch', /No provider nosuch/],
      ['project=nosuch', /No project nosuch/],
    ] as const) {
      const r = await stack.adminApi('GET', `/admin/v1/queue/status?${query}`, token);
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ error: expect.stringMatching(message), code: 'NOT_FOUND' });
    }
    const bad = await stack.adminApi('GET', '/admin/v1/queue/status?provider=Bad%20Name', token);
    expect([bad.status, bad.body.code]).toEqual([400, 'INVALID_REQUEST']);
  });

  it("counts the emails control holds for a project's volume spike", async () => {
    const q = await project(stack);
    const r = await stack.api('POST', '/v1/emails', q.keys.live, {
      from: 'hello@acme.test',
      to: ['s1@gmail.com', 's2@gmail.com'],
      subject: 'spike',
      text: 'x',
      bulk: true,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect((await stack.admin('GET', '/admin/v1/queue/status')).held).toEqual({ emails: 1, projects: [{ project: q.slug, emails: 1 }] });
    expect((await stack.admin('GET', `/admin/v1/queue/status?project=${q.slug}`)).held.emails).toBe(1);
    expect((await stack.admin('GET', `/admin/v1/queue/status?project=${p.slug}`)).held.emails).toBe(0);
    expect(await stack.cli('queue', 'status')).toContain(`held before dispatch (volume spike): ${q.slug} 1`);
    // Approved, it goes; nothing is held any more.
    await stack.cli('pacing', 'approve', '--project', q.slug);
    expect((await stack.admin('GET', '/admin/v1/queue/status')).held.emails).toBe(0);
    await stack.waitEmail(q.keys.live, r.body.id, sent);
  });

  it('the CLI prints tables by default and the API JSON with --json', async () => {
    const text = await stack.cli('queue', 'status');
    expect(text).toMatch(/provider\s+ready\s+in_flight\s+receiver\s+network\s+pacing\s+volume\s+shaping\s+suspended/);
    expect(text).toMatch(/\nother\s+0\s+0\s+3\s+0\s+0\s+0\s+0\s+0/);
    expect(text).toContain('remote answers (last hour)');
    expect(text).toMatch(/other\s+4\.2\.2\s+2\s/);
    expect(text).toContain('Mailbox over quota for this test');
    expect(text).toContain(p.slug);
    const json = JSON.parse(await stack.cli('queue', 'status', '--provider', 'other', '--project', p.slug, '--json'));
    expect(json.providers.map((x: any) => x.provider)).toEqual(['other']);
    expect(json.providers[0].queue.deferred.receiver).toBe(3);
    await expect(stack.cli('queue', 'status', '--project', 'nosuch')).rejects.toThrow(/No project nosuch/);
  });

  it('a restarted gateway counts the deferred mail it loads from its queue; stopped gracefully, it keeps its windows and answers', async () => {
    const before = await stack.admin('GET', '/admin/v1/queue/status');
    for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
      const old = stack.kill('gateway', signal);
      await stack.waitRestart('gateway', old);
      const s = await until(
        () => stack.admin('GET', '/admin/v1/queue/status').catch(() => ({ providers: [] })),
        (x: any) => providerOf(x, 'other')?.queue.deferred.receiver === 3,
        30_000,
      );
      expect(providerOf(s, 'other').projects.map((f: any) => f.project)).toEqual([p.slug]);
      if (signal === 'SIGTERM') {
        // Saved at shutdown, read back at start.
        expect(providerOf(s, 'google').windows.last_hour).toEqual(providerOf(before, 'google').windows.last_hour);
        expect(providerOf(s, 'google').windows.last_hour.delivered).toBeGreaterThanOrEqual(2);
        expect(providerOf(s, 'other').answers.map((a: any) => [a.enhanced_code, a.count])).toEqual([
          ['4.2.2', 2],
          ['4.2.0', 1],
        ]);
      }
    }
    // Nothing was sent again: the deferred mail waits for its time.
    for (const id of slowIds) expect((await stack.api('GET', `/v1/emails/${id}`, p.keys.live)).body.status).not.toBe('sent');
  }, 90_000);

  it('mail to a provider whose MX is down is deferred by the network, with no remote answer to group', async () => {
    const q = await project(stack);
    const id = await send(stack, q, 'someone@yahoo.com');
    await stack.waitEmail(q.keys.live, id, (e) => e.events.some((x: any) => x.type === 'deferred' && x.cause === 'network'));
    const s = await until(
      () => stack.admin('GET', `/admin/v1/queue/status?project=${q.slug}`),
      (x: any) => providerOf(x, 'yahoo')?.queue.deferred.network === 1,
    );
    const yahoo = providerOf(s, 'yahoo');
    expect(yahoo.queue).toEqual({ ready: 0, in_flight: 0, deferred: { receiver: 0, network: 1, pacing: 0, volume: 0, shaping: 0, suspended: 0 } });
    expect(yahoo.windows.last_5m).toEqual({ delivered: 0, deferred: 1, bounced: 0, complained: 0 });
    expect(yahoo.answers).toEqual([]);
    expect(s.providers.map((x: any) => x.provider)).toEqual(['yahoo']);
  }, 30_000);
});

describe('a two-node cluster', () => {
  let cluster: Cluster;
  afterAll(async () => {
    await cluster?.stop();
  });

  it("the state read on either node sums both nodes' gateways", async () => {
    cluster = await startCluster(2, { env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) }, config: CONFIG });
    const [a, b] = cluster.nodes as [Stack, Stack];
    const p = await project(a);
    // Each email goes to the gateway its id picks (control/delivery/gateways.ts); ids are random, so eight may all
    // land on one side (1 in 128): send until both gateways hold some, at most 40.
    const side = (id: string) => crypto.createHash('sha1').update(id).digest().readUInt32BE(0) % 2;
    const ids: string[] = [];
    for (let i = 0; i < 40 && (i < 8 || new Set(ids.map(side)).size < 2); i++) {
      sink.setBehaviour(`cl${i}@inbox.test`, { rcpt: always(full) });
      ids.push(await send(b, p, `cl${i}@inbox.test`));
    }
    expect(new Set(ids.map(side)).size).toBe(2);
    for (const id of ids) await b.waitEmail(p.keys.live, id, deferred);
    for (const node of [a, b]) {
      const s = await until(
        () => node.admin('GET', `/admin/v1/queue/status?project=${p.slug}`),
        (x: any) => providerOf(x, 'other')?.queue.deferred.receiver === ids.length,
      );
      expect(s.nodes).toHaveLength(2);
      expect(new Set(s.nodes).size).toBe(2);
      const other = providerOf(s, 'other');
      expect(other.answers).toEqual([expect.objectContaining({ enhanced_code: '4.2.2', count: ids.length })]);
      expect(other.windows.last_hour.deferred).toBe(ids.length);
    }
  }, 180_000);
});
