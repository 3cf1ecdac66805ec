// Enforced TLS and MTA-STS through the real stack: a loopback MX offering STARTTLS with a certificate
// from a CA made here (trusted through POSTGATE_TLS_CA_FILE), another MX without STARTTLS, the loopback
// DNS server, and a loopback HTTPS server serving MTA-STS policies. The sender domain's tls is set with
// the real `resend` SDK (domains.update); every outcome and its TLS show in GET /v1/emails/:id.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { type MxSink, messageIdOf, startMxSink } from '../../helpers/mx-sink.js';
import { type Project, Stack } from '../../helpers/stack.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';
import { publishDomain } from '../deliverability/helpers.js';
import { makeTestCa } from '../../gateway/tls/test-ca.js';
import { grpcClient, unary } from '../../../proto/grpc.js';
import { type Email, GetEmailRequestSchema, PostgateService } from '../../../proto/gen/postgate/v1/public_pb.js';

let dns: DnsServer;
/** STARTTLS with a certificate for mx.secure.test and aspmx.l.google.com (127.0.0.1). */
let tlsMx: MxSink;
/** No STARTTLS at all (127.0.0.2, the same port). */
let plainMx: MxSink;
let policyHost: https.Server;
/** An old MX that refuses EHLO and takes HELO (127.0.0.3, the same port); the ids of what it accepted. */
let oldMx: net.Server;
const oldMxGot: string[] = [];
const policyFetches: string[] = [];
const policies = new Map<string, string>();
let stack: Stack;
let p: Project;
let db: TestDatabase | undefined;
let caFile: string;
/** The sender domains of the stack: tls enforced, and opportunistic (one pair per backend, both in one DNS zone). */
let strict = '';
let loose = '';

beforeAll(async () => {
  const ca = await makeTestCa();
  tlsMx = await startMxSink({ tls: await ca.issue('mx.secure.test', 'aspmx.l.google.com') });
  plainMx = await startMxSink({ host: '127.0.0.2', port: tlsMx.port });
  oldMx = net.createServer((socket) => {
    let data: string | undefined;
    socket.write('220 old.test ESMTP-less\r\n');
    socket.on('data', (chunk) => {
      for (const line of chunk.toString('latin1').split('\r\n')) {
        if (data !== undefined) {
          if (line === '.') {
            oldMxGot.push(/^Message-ID:\s*<([^@>]+)@/im.exec(data)?.[1] ?? '');
            data = undefined;
            socket.write('250 2.0.0 ok\r\n');
          } else data += `${line}\r\n`;
          continue;
        }
        const verb = line.slice(0, 4).toUpperCase();
        if (!line) continue;
        if (verb === 'EHLO') socket.write('502 5.5.2 EHLO not implemented\r\n');
        else if (verb === 'DATA') {
          data = '';
          socket.write('354 go ahead\r\n');
        } else if (verb === 'QUIT') socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((r) => oldMx.listen(tlsMx.port, '127.0.0.3', r));
  const stsCert = await ca.issue(...['sts-enforce', 'sts-mismatch', 'sts-testing', 'sts-bad'].map((d) => `mta-sts.${d}.test`));
  policyHost = https.createServer(stsCert, (req, res) => {
    const host = String(req.headers.host).replace(/:\d+$/, '');
    policyFetches.push(host);
    const body = policies.get(host);
    if (!body || req.url !== '/.well-known/mta-sts.txt') return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'text/plain' }).end(body);
  });
  await new Promise<void>((r) => policyHost.listen(0, '127.0.0.1', r));
  const policy = (mode: string, mx: string) => `version: STSv1\r\nmode: ${mode}\r\nmx: ${mx}\r\nmax_age: 86400\r\n`;
  policies.set('mta-sts.sts-enforce.test', policy('enforce', 'mx.secure.test'));
  policies.set('mta-sts.sts-mismatch.test', policy('enforce', '*.elsewhere.test'));
  policies.set('mta-sts.sts-testing.test', policy('testing', 'mx.secure.test'));
  policies.set('mta-sts.sts-bad.test', '<html>Welcome to nginx!</html>');

  dns = await startDnsServer([
    { type: 'A', name: 'mx.secure.test', address: '127.0.0.1' },
    { type: 'A', name: 'aspmx.l.google.com', address: '127.0.0.1' },
    { type: 'A', name: 'mx.wrongname.test', address: '127.0.0.1' },
    { type: 'A', name: 'mx.plain.test', address: '127.0.0.2' },
    { type: 'A', name: 'mx.old.test', address: '127.0.0.3' },
    { type: 'MX', name: 'old.test', exchange: 'mx.old.test' },
    { type: 'MX', name: 'secure.test', exchange: 'mx.secure.test' },
    { type: 'MX', name: 'wrongname.test', exchange: 'mx.wrongname.test' },
    { type: 'MX', name: 'plain.test', exchange: 'mx.plain.test' },
    // A company domain hosted by Google (found by its MX), and Google's own domain on a server without STARTTLS.
    { type: 'MX', name: 'company.test', exchange: 'aspmx.l.google.com' },
    { type: 'MX', name: 'gmail.com', exchange: 'mx.plain.test' },
    { type: 'MX', name: 'sts-enforce.test', exchange: 'mx.secure.test' },
    { type: 'MX', name: 'sts-mismatch.test', exchange: 'mx.secure.test' },
    { type: 'MX', name: 'sts-testing.test', exchange: 'mx.plain.test' },
    { type: 'MX', name: 'sts-bad.test', exchange: 'mx.plain.test' },
  ]);
  for (const d of ['sts-enforce', 'sts-mismatch', 'sts-testing', 'sts-bad']) {
    dns.add({ type: 'TXT', name: `_mta-sts.${d}.test`, value: 'v=STSv1; id=20261129T1;' });
    dns.add({ type: 'A', name: `mta-sts.${d}.test`, address: '127.0.0.1' });
  }

  caFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-tls-ca-')), 'test-ca.pem');
  fs.writeFileSync(caFile, ca.cert);
}, 60_000);

afterAll(async () => {
  await tlsMx?.close();
  await plainMx?.close();
  await dns?.close();
  policyHost?.close();
  oldMx?.close();
});

/** A stack on this backend, with a project sending from strict-<backend>.test (tls: enforced) and loose-<backend>.test. */
async function bootStack(backend: 'sqlite' | 'postgres'): Promise<void> {
  const env: Record<string, string> = {
    POSTGATE_DNS_SERVERS: dns.address,
    POSTGATE_DELIVERY_PORT: String(tlsMx.port),
    POSTGATE_SENDING_IPS: '127.0.0.1',
    POSTGATE_TLS_CA_FILE: caFile,
  };
  if (backend === 'postgres') {
    db = await createTestDatabase('pg_tls');
    env.POSTGATE_DATABASE_URL = db.url;
    env.POSTGATE_SECRET = crypto.randomBytes(32).toString('hex');
  }
  policyFetches.length = 0;
  strict = `strict-${backend}.test`;
  loose = `loose-${backend}.test`;
  stack = await Stack.start({
    env,
    config: {
      // A deferral stays one within a test: the next attempt is a minute away.
      delivery: { retryDelays: [60], maxTempFailures: 3, connectTimeout: 5 },
      tls: {
        requireProviders: ['google'],
        mtaSts: { allowCidrs: ['127.0.0.0/8'], port: (policyHost.address() as { port: number }).port, timeoutMs: 3000 },
      },
    },
  });
  p = await stack.createProject('tls');
  await stack.setPlan('tls', 'scale');
  await publishDomain(stack, p.keys.live, dns, strict);
  await publishDomain(stack, p.keys.live, dns, loose);
  // Resend's call for it, through its SDK.
  process.env.RESEND_BASE_URL = `${stack.url}/v1`;
  const resend = new Resend(p.keys.live);
  const enforced = (await stack.api('GET', '/v1/domains', p.keys.live)).body.data.find((d: any) => d.name === strict);
  const updated = await resend.domains.update({ id: enforced.id, tls: 'enforced' });
  expect(updated.error).toBeNull();
  delete process.env.RESEND_BASE_URL;
}

async function send(from: string, to: string): Promise<string> {
  const r = await stack.api('POST', '/v1/emails', p.keys.live, { from, to, subject: `to ${to}`, text: 'hello' });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return r.body.id;
}
const waitFor = (id: string, type: string) => stack.waitEmail(p.keys.live, id, (e) => e.events.some((x: any) => x.type === type), 30_000);
const eventOf = (email: any, type: string) => email.events.find((e: any) => e.type === type);
const delivered = (id: string, mx: MxSink) => mx.messages.some((m) => messageIdOf(m) === id);

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`enforced TLS and MTA-STS (${backend})`, () => {
    beforeAll(() => bootStack(backend), 90_000);
    afterAll(async () => {
      await stack?.stop();
      await db?.drop();
      db = undefined;
    });

    describe('a sender domain with tls: "enforced"', () => {
      it('delivers over STARTTLS with a certificate that verifies for the MX name, and says so', async () => {
        const id = await send(`hello@${strict}`, 'someone@secure.test');
        const email = await waitFor(id, 'sent');
        expect(eventOf(email, 'sent')).toMatchObject({ mx: 'mx.secure.test', tls: { used: true, version: 'TLSv1.3', verified: true, policy: 'domain' } });
        expect(tlsMx.messages.find((m) => messageIdOf(m) === id)?.tls).toBe(true);
        // The public gRPC API's GetEmail says the same (EmailEvent.tls).
        const client = grpcClient(PostgateService, `127.0.0.1:${stack.env.POSTGATE_GRPC_PORT}`);
        const md = new grpc.Metadata();
        md.set('x-service-key', p.keys.live);
        const got = await unary<Email>(client, 'getEmail', create(GetEmailRequestSchema, { id }), md);
        client.close();
        expect(got.events.find((e) => e.type === 'sent')?.tls).toMatchObject({ used: true, version: 'TLSv1.3', verified: true, policy: 'domain' });
      });

      it('is deferred, not bounced, when the MX offers no STARTTLS', async () => {
        const id = await send(`hello@${strict}`, 'someone@plain.test');
        const email = await waitFor(id, 'deferred');
        expect(email.status).toBe('sending');
        expect(eventOf(email, 'deferred')).toMatchObject({
          mx: 'mx.plain.test',
          response: 'TLS required (domain): the MX mx.plain.test offers no STARTTLS',
          enhanced_code: '4.7.10',
          cause: 'receiver',
          tls: { used: false, verified: false, policy: 'domain' },
        });
        expect(delivered(id, plainMx)).toBe(false);
        // The operator's view of the email says the same.
        const admin = await stack.admin('GET', `/admin/v1/emails/${id}`);
        expect(admin.events.find((e: any) => e.type === 'deferred')).toMatchObject({ enhanced_code: '4.7.10', tls: { used: false, policy: 'domain' } });
      });

      it('is deferred when the certificate names another host', async () => {
        const id = await send(`hello@${strict}`, 'someone@wrongname.test');
        const email = await waitFor(id, 'deferred');
        const ev = eventOf(email, 'deferred');
        expect(ev.response).toBe(
          'TLS required (domain): certificate for mx.wrongname.test does not verify: it names mx.secure.test, aspmx.l.google.com, not mx.wrongname.test',
        );
        expect(ev).toMatchObject({ mx: 'mx.wrongname.test', enhanced_code: '4.7.5', tls: { used: true, verified: false, policy: 'domain' } });
        expect(delivered(id, tlsMx)).toBe(false);
      });

      it('is deferred, not left hanging, when the MX refuses EHLO (and so cannot offer STARTTLS)', async () => {
        const id = await send(`hello@${strict}`, 'someone@old.test');
        const email = await waitFor(id, 'deferred');
        expect(eventOf(email, 'deferred')).toMatchObject({
          mx: 'mx.old.test',
          response: 'TLS required (domain): the MX mx.old.test refused EHLO (502 5.5.2 EHLO not implemented), so it offers no STARTTLS',
          enhanced_code: '4.7.10',
          tls: { used: false, policy: 'domain' },
        });
        expect(oldMxGot).not.toContain(id);
      });
    });

    describe('opportunistic mail, as before', () => {
      it('takes TLS when offered and accepts a certificate that does not verify', async () => {
        const id = await send(`hello@${loose}`, 'someone@wrongname.test');
        const email = await waitFor(id, 'sent');
        expect(eventOf(email, 'sent').tls).toEqual({ used: true, version: 'TLSv1.3', verified: false, policy: '' });
      });
      it('an MX that refuses EHLO gets HELO, in clear', async () => {
        const id = await send(`hello@${loose}`, 'someone@old.test');
        await waitFor(id, 'sent');
        expect(oldMxGot).toContain(id);
      });
      it('goes in clear when no STARTTLS is offered', async () => {
        const id = await send(`hello@${loose}`, 'someone@plain.test');
        const email = await waitFor(id, 'sent');
        expect(eventOf(email, 'sent').tls).toEqual({ used: false, version: '', verified: false, policy: '' });
      });
    });

    describe('a receiving provider that requires TLS (tls.requireProviders: google)', () => {
      it('a domain whose MX is Google goes over verified TLS', async () => {
        const id = await send(`hello@${loose}`, 'someone@company.test');
        const email = await waitFor(id, 'sent');
        expect(eventOf(email, 'sent')).toMatchObject({ mx: 'aspmx.l.google.com', tls: { used: true, verified: true, policy: 'provider' } });
      });
      it('Google on a server without STARTTLS: deferred', async () => {
        const id = await send(`hello@${loose}`, 'someone@gmail.com');
        const email = await waitFor(id, 'deferred');
        expect(eventOf(email, 'deferred')).toMatchObject({
          response: 'TLS required (provider): the MX mx.plain.test offers no STARTTLS',
          tls: { policy: 'provider' },
        });
      });
    });

    describe('MTA-STS', () => {
      it('enforce: delivered to a listed MX over verified TLS; the policy is fetched once and kept', async () => {
        const first = await send(`hello@${loose}`, 'a@sts-enforce.test');
        expect(eventOf(await waitFor(first, 'sent'), 'sent').tls).toEqual({ used: true, version: 'TLSv1.3', verified: true, policy: 'mta-sts' });
        const second = await send(`hello@${loose}`, 'b@sts-enforce.test');
        expect(eventOf(await waitFor(second, 'sent'), 'sent').tls).toMatchObject({ verified: true, policy: 'mta-sts' });
        expect(policyFetches.filter((h) => h === 'mta-sts.sts-enforce.test')).toHaveLength(1);
        // Kept in the gateway's data dir for the next start.
        const kept = JSON.parse(fs.readFileSync(path.join(stack.dataDir, 'gateway', 'mta-sts.json'), 'utf8'));
        expect(kept.policies['sts-enforce.test']).toMatchObject({ id: '20261129T1', policy: { mode: 'enforce', mx: ['mx.secure.test'], maxAge: 86400 } });
      });
      it('a restarted gateway enforces the kept policy without fetching it again', async () => {
        await stack.waitRestart('gateway', stack.kill('gateway'));
        const id = await send(`hello@${loose}`, 'c@sts-enforce.test');
        expect(eventOf(await waitFor(id, 'sent'), 'sent').tls).toMatchObject({ verified: true, policy: 'mta-sts' });
        expect(policyFetches.filter((h) => h === 'mta-sts.sts-enforce.test')).toHaveLength(1);
      });
      it('enforce: an MX the policy does not list is not used; deferred with the reason', async () => {
        const id = await send(`hello@${loose}`, 'a@sts-mismatch.test');
        const email = await waitFor(id, 'deferred');
        expect(eventOf(email, 'deferred').response).toBe(
          'MTA-STS policy of sts-mismatch.test (enforce) allows none of its MX hosts: mx.secure.test (the policy names *.elsewhere.test)',
        );
        expect(delivered(id, tlsMx)).toBe(false);
      });
      it('testing: delivered anyway, with a note of what enforce would have refused', async () => {
        const id = await send(`hello@${loose}`, 'a@sts-testing.test');
        const email = await waitFor(id, 'sent');
        expect(eventOf(email, 'sent').tls).toEqual({
          used: false,
          version: '',
          verified: false,
          policy: '',
          note: 'MTA-STS policy of sts-testing.test in testing mode: enforce would have refused MX mx.plain.test (not in its mx list)',
        });
      });
      it('a policy that does not parse is ignored: delivered as without one', async () => {
        const id = await send(`hello@${loose}`, 'a@sts-bad.test');
        const email = await waitFor(id, 'sent');
        expect(eventOf(email, 'sent').tls).toEqual({ used: false, version: '', verified: false, policy: '' });
        expect(policyFetches).toContain('mta-sts.sts-bad.test');
      });
    });
  });
}
