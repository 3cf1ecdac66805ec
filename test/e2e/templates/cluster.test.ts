// Templates on two nodes (one PostgreSQL, one Redis): each control caches a project's templates,
// so a change made through one node must reach the other's cache at once: a publish, an alias
// moved to another template, a delete. Sends go through the other node right after each change.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type Cluster } from '../../helpers/cluster.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink } from '../../helpers/mx-sink.js';
import type { Project, Stack } from '../../helpers/stack.js';

let dns: DnsServer;
let sink: MxSink;
let cluster: Cluster;
let a: Stack;
let b: Stack;
let p: Project;

beforeAll(async () => {
  sink = await startMxSink();
  dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
  cluster = await startCluster(2, { env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) } });
  [a, b] = cluster.nodes as [Stack, Stack];
  p = await a.createProject();
  await a.setPlan(p.slug, 'scale', { rate: 100000 });
  await a.verifyDomain(p.slug, 'acme.test');
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
  await sink?.close();
  await dns?.close();
});

/** Sends through `node` with template `id`; the html stored (what was rendered). */
async function sentHtml(node: Stack, id: string): Promise<{ status: number; html?: string; error?: string }> {
  const r = await node.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to: 'ann@inbox.test', subject: 's', template: { id } });
  if (r.status !== 202) return { status: r.status, error: r.body.error };
  return { status: 202, html: (await node.api('GET', `/v1/emails/${r.body.id}`, p.keys.live)).body.html };
}

describe('templates on two nodes', () => {
  it("a publish, an alias move and a delete through one node are what the other node's next send uses", async () => {
    const t1 = await a.api('POST', '/v1/templates', p.keys.live, { name: 'one', alias: 'news', html: '<p>one v1</p>' });
    expect(t1.status).toBe(201);
    expect((await a.api('POST', `/v1/templates/${t1.body.id}/publish`, p.keys.live)).status).toBe(200);
    expect(await sentHtml(b, 'news')).toEqual({ status: 202, html: '<p>one v1</p>' }); // b now holds it in its cache

    expect((await a.api('PATCH', '/v1/templates/news', p.keys.live, { html: '<p>one v2</p>' })).status).toBe(200);
    expect((await a.api('POST', '/v1/templates/news/publish', p.keys.live)).status).toBe(200);
    expect(await sentHtml(b, 'news')).toEqual({ status: 202, html: '<p>one v2</p>' });

    // The alias moves to another template: b must stop sending the first one under it.
    const t2 = await a.api('POST', '/v1/templates', p.keys.live, { name: 'two', html: '<p>two</p>' });
    await a.api('POST', `/v1/templates/${t2.body.id}/publish`, p.keys.live);
    expect((await a.api('PATCH', `/v1/templates/${t1.body.id}`, p.keys.live, { alias: null })).status).toBe(200);
    expect((await a.api('PATCH', `/v1/templates/${t2.body.id}`, p.keys.live, { alias: 'news' })).status).toBe(200);
    expect(await sentHtml(b, 'news')).toEqual({ status: 202, html: '<p>two</p>' });

    expect((await a.api('DELETE', '/v1/templates/news', p.keys.live)).status).toBe(200);
    const gone = await sentHtml(b, 'news');
    expect(gone.status).toBe(422);
    expect(gone.error).toMatch(/not found/);
  });
});
