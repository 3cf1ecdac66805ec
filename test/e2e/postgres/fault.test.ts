// PostgreSQL lost for 10 s under a steady trickle of sends: a TCP proxy between the stack and the
// server is cut, then restored. Every answer must be a 202 (stored) or a 503 with Retry-After
// (nothing promised), never a 500; every email that got a 202 is found and delivered exactly once;
// and the stack recovers by itself, without a restart, when the server is back.
import crypto from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import nodemailer from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grpcClient, unary } from '../../../proto/grpc.js';
import { PostgateService, SendEmailRequestSchema } from '../../../proto/gen/postgate/v1/public_pb.js';
import { Stack, sleep, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink, messageIdOf } from '../../helpers/mx-sink.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';
import { startTcpProxy, type TcpProxy } from '../../helpers/tcp-proxy.js';

describe('PostgreSQL lost under load', () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let dns: DnsServer;
  let sink: MxSink;
  let stack: Stack;
  let p: Project;

  beforeAll(async () => {
    db = await createTestDatabase('pg_test');
    const target = new URL(db.url);
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const through = new URL(db.url);
    through.hostname = '127.0.0.1';
    through.port = String(proxy.port);
    sink = await startMxSink();
    dns = await startDnsServer([
      { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
      { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
    ]);
    stack = await Stack.start({
      env: {
        POSTGATE_DATABASE_URL: through.toString(),
        POSTGATE_SECRET: crypto.randomBytes(32).toString('hex'),
        POSTGATE_DNS_SERVERS: dns.address,
        POSTGATE_DELIVERY_PORT: String(sink.port),
      },
      config: { delivery: { retryDelays: [1], maxTempFailures: 5, connectTimeout: 5 } },
    });
    p = await stack.createProject('pgfault');
    await stack.setPlan('pgfault', 'scale');
    await stack.verifyDomain('pgfault', 'acme.test');
  });
  afterAll(async () => {
    proxy?.restore();
    await stack?.stop();
    await sink?.close();
    await dns?.close();
    await proxy?.close();
    await db?.drop();
  });

  it('answers 202 or 503 with Retry-After while it is away, loses nothing that got a 202, and recovers by itself', async () => {
    const answers: Array<{ at: number; status: number; id?: string; code?: string; retryAfter: string | null }> = [];
    let n = 0;
    const send = async () => {
      const i = n++;
      const r = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'hello@acme.test', to: `r${i}@inbox.test`, subject: `trickle ${i}`, text: 'x' });
      answers.push({ at: Date.now(), status: r.status, id: r.body?.id, code: r.body?.code, retryAfter: r.headers.get('retry-after') });
    };
    const trickle = async (ms: number) => {
      const until = Date.now() + ms;
      const inFlight: Array<Promise<void>> = [];
      while (Date.now() < until) {
        inFlight.push(send());
        await sleep(100);
      }
      await Promise.all(inFlight);
    };

    const controlPid = stack.pid('control');
    await trickle(2000);
    proxy.cut();
    const cutAt = Date.now();
    // The other doors while it is away: SMTP answers a temporary 451 4.3.0, gRPC UNAVAILABLE with the code and a retry-after.
    const doors = (async () => {
      await sleep(2000);
      const smtp = nodemailer.createTransport({
        host: '127.0.0.1',
        port: Number(stack.env.POSTGATE_SMTP_PORT),
        auth: { user: 'app', pass: p.keys.live },
        tls: { rejectUnauthorized: false },
      });
      const smtpError = (await smtp
        .sendMail({ from: 'hello@acme.test', to: 'smtp@inbox.test', subject: 'smtp in the outage', text: 'x' })
        .catch((e: unknown) => e)) as { responseCode?: number; response?: string };
      smtp.close();
      const client = grpcClient(PostgateService, `127.0.0.1:${stack.env.POSTGATE_GRPC_PORT}`);
      const md = new grpc.Metadata();
      md.set('x-service-key', p.keys.live);
      const grpcError = (await unary(
        client,
        'sendEmail',
        create(SendEmailRequestSchema, { from: 'hello@acme.test', to: ['grpc@inbox.test'], subject: 'grpc in the outage', text: 'x' }),
        md,
      ).catch((e: unknown) => e)) as grpc.ServiceError;
      client.close();
      return { smtpError, grpcError };
    })();
    await trickle(10_000);
    const { smtpError, grpcError } = await doors;
    expect(smtpError.responseCode).toBe(451);
    expect(smtpError.response).toMatch(/^451 4\.3\.0 STORE_UNAVAILABLE/);
    expect(grpcError.code).toBe(grpc.status.UNAVAILABLE);
    expect(grpcError.metadata.get('x-postgate-code')).toEqual(['STORE_UNAVAILABLE']);
    expect(Number(grpcError.metadata.get('retry-after')[0])).toBeGreaterThan(0);
    proxy.restore();
    const restoredAt = Date.now();
    await trickle(6000);

    const statuses = [...new Set(answers.map((a) => a.status))].sort();
    expect(
      statuses.every((s) => s === 202 || s === 503),
      `statuses ${statuses.join(', ')}\n${stack.tail(20)}`,
    ).toBe(true);
    const refused = answers.filter((a) => a.status === 503);
    expect(refused.length).toBeGreaterThan(0);
    for (const a of refused) {
      expect(a.code).toBe('STORE_UNAVAILABLE');
      expect(Number(a.retryAfter)).toBeGreaterThan(0);
    }
    // While it was away nothing was accepted (with a moment for requests already under way at the cut).
    expect(answers.filter((a) => a.status === 202 && a.at > cutAt + 1000 && a.at < restoredAt)).toEqual([]);
    // Recovered without a restart: the last seconds are all accepted again.
    const tail = answers.filter((a) => a.at > restoredAt + 3000);
    expect(tail.length).toBeGreaterThan(10);
    expect(tail.every((a) => a.status === 202)).toBe(true);

    // The same control process throughout: its connections recovered, it was not restarted.
    expect(stack.pid('control')).toBe(controlPid);
    console.log(`fault: ${answers.length} sends, ${answers.filter((a) => a.status === 202).length} accepted, ${refused.length} refused 503`);

    // Every 202 was stored and is delivered, once.
    const accepted = answers.filter((a) => a.status === 202).map((a) => a.id!);
    for (const id of accepted) await stack.waitEmail(p.keys.live, id, (e) => e.status === 'sent', 30_000);
    for (const id of accepted) expect(sink.messages.filter((m) => messageIdOf(m) === id)).toHaveLength(1);
  }, 120_000);
});
