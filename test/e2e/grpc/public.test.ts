// The public gRPC API (PostgateService) from a grpc-js client against the real
// stack: the same pipeline as REST, the key in `x-service-key`, refusals as
// gRPC statuses carrying the API code in the trailers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import { grpcClient, unary } from '../../../proto/grpc.js';
import {
  CheckSessionRequestSchema,
  GetEmailRequestSchema,
  PostgateService,
  SendBatchRequestSchema,
  SendEmailRequestSchema,
  type Email,
  type SendBatchResponse,
  type SendEmailResponse,
  type CheckSessionResponse,
} from '../../../proto/gen/postgate/v1/public_pb.js';
import { startPublicGrpc, type PublicGrpc } from '../../../control/grpc/public.js';
import { memoryCounters } from '../../../control/limits/counters.js';
import type { KeyAuthenticator, Caller } from '../../../control/api-keys/authenticate.js';
import type { MailPipeline } from '../../../control/mail/pipeline.js';
import type { Store } from '../../../control/store/index.js';
import type { Config } from '../../../core/config.js';
import { ApiError } from '../../../core/errors.js';
import { createLogger } from '../../../core/log.js';
import { sleep, Stack, type Project } from '../../helpers/stack.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { startMxSink, type MxSink } from '../../helpers/mx-sink.js';

let stack: Stack;
let dns: DnsServer;
let sink: MxSink;
let acme: Project;
let client: ReturnType<typeof grpcClient>;

const md = (key?: string) => {
  const m = new grpc.Metadata();
  if (key) m.set('x-service-key', key);
  return m;
};
const base = { from: 'Acme <hello@acme.test>', to: ['bob@ok.test'], subject: 'Hi', text: 'Hello' };
const send = (key: string | undefined, fields: Record<string, unknown>) =>
  unary<SendEmailResponse>(client, 'sendEmail', create(SendEmailRequestSchema, fields), md(key));

/** The status error of a call that must fail, with its API code from the trailers. */
async function failure(p: Promise<unknown>): Promise<grpc.ServiceError & { apiCode?: string; emailId?: string }> {
  try {
    await p;
  } catch (err) {
    const e = err as grpc.ServiceError;
    return Object.assign(e, {
      apiCode: e.metadata?.get('x-postgate-code')[0] as string | undefined,
      emailId: e.metadata?.get('x-postgate-email-id')[0] as string | undefined,
    });
  }
  throw new Error('the call succeeded');
}

beforeAll(async () => {
  // Accepted emails are delivered in the background: to a sink, so no recipient bounces into the suppression list.
  dns = await startDnsServer([
    { type: 'MX', name: 'ok.test', exchange: 'mx.ok.test', priority: 10 },
    { type: 'A', name: 'mx.ok.test', address: '127.0.0.1' },
  ]);
  sink = await startMxSink();
  stack = await Stack.start({ env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port) } });
  acme = await stack.createProject('acme');
  await stack.cli('domain', 'verify', '--project', 'acme', '--name', 'acme.test', '--force');
  client = grpcClient(PostgateService, `127.0.0.1:${stack.env.POSTGATE_GRPC_PORT}`);
});
afterAll(async () => {
  client?.close();
  await stack?.stop();
  await sink?.close();
  await dns?.close();
});

describe('PostgateService', () => {
  it('SendEmail queues through the pipeline; GetEmail and REST show the same email', async () => {
    const res = await send(acme.keys.live, {
      ...base,
      cc: ['cc@ok.test'],
      bcc: ['bcc@ok.test'],
      replyTo: 'support@acme.test',
      html: '<p>Hello</p>',
      tags: ['welcome'],
      headers: { 'X-Campaign': 'c1' },
      bulk: true,
    });
    expect(res).toMatchObject({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'queued', error: '', code: '' });

    const email = await unary<Email>(client, 'getEmail', create(GetEmailRequestSchema, { id: res.id }), md(acme.keys.live));
    expect(email).toMatchObject({ id: res.id, status: 'queued', from: 'Acme <hello@acme.test>', to: ['bob@ok.test'], subject: 'Hi' });
    expect(email.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(email.events[0]).toMatchObject({ type: 'queued' });

    const rest = (await stack.api('GET', `/v1/emails/${res.id}`, acme.keys.live)).body;
    expect(rest).toMatchObject({ cc: ['cc@ok.test'], bcc: ['bcc@ok.test'], reply_to: ['support@acme.test'], tags: ['welcome'], bulk: true });
  });

  it('GetEmail shows what REST shows: bodies, scheduled_at, last_event, attachments, recipients and a refusal', async () => {
    const pdf = Buffer.from('%PDF-1.4 a small file');
    const at = new Date(Date.now() + 3600_000).toISOString();
    const res = await send(acme.keys.live, {
      ...base,
      cc: ['cc@ok.test'],
      html: '<p>Hello <img src="cid:logo"></p>',
      tags: ['t1'],
      scheduledAt: at,
      attachments: [
        { filename: 'a.pdf', content: pdf },
        { filename: 'logo.png', content: Buffer.from('89504e47', 'hex'), contentType: 'image/png', contentId: 'logo' },
      ],
    });
    const get = (id: string) => unary<Email>(client, 'getEmail', create(GetEmailRequestSchema, { id }), md(acme.keys.live));
    const email = await get(res.id);
    const rest = (await stack.api('GET', `/v1/emails/${res.id}`, acme.keys.live)).body;
    expect(email).toMatchObject({
      scheduledAt: rest.scheduled_at,
      lastEvent: 'scheduled',
      html: rest.html,
      text: 'Hello',
      cc: ['cc@ok.test'],
      bcc: [],
      replyTo: [],
      tags: ['t1'],
      bulk: false,
      updatedAt: rest.updated_at,
      messageId: rest.message_id,
    });
    expect(rest.scheduled_at).toBe(at);
    expect(
      email.attachments.map((a) => ({
        id: a.id,
        filename: a.filename,
        content_type: a.contentType,
        size: Number(a.size),
        content_id: a.contentId || undefined,
      })),
    ).toEqual(rest.attachments.map((a: Record<string, unknown>) => ({ content_id: undefined, ...a })));
    expect(email.attachments.map((a) => Number(a.size))).toEqual([pdf.length, 4]);
    expect(email.recipients.map((r) => ({ email: r.email, kind: r.kind, status: r.status, updated_at: r.updatedAt }))).toEqual(rest.recipients);
    expect(email.error).toBeUndefined();
    await stack.api('POST', `/v1/emails/${res.id}/cancel`, acme.keys.live);

    // Text only: html is absent (REST's null), not an empty body; a refused email carries its refusal.
    const plain = await get((await send(acme.keys.live, base)).id);
    expect(plain.html).toBeUndefined();
    expect(plain.text).toBe('Hello');
    expect(plain.scheduledAt).toBe('');
    const refused = await failure(send(acme.keys.live, { ...base, from: 'hello@unverified.test' }));
    const failed = await get(refused.emailId!);
    expect(failed).toMatchObject({ status: 'failed', lastEvent: 'failed', error: { code: 'DOMAIN_NOT_VERIFIED', error: expect.any(String) } });
  });

  it('SendEmail with scheduled_at waits as scheduled, as REST does; a bad time is INVALID_ARGUMENT', async () => {
    const at = new Date(Date.now() + 3600_000).toISOString();
    const res = await send(acme.keys.live, { ...base, scheduledAt: at });
    expect(res).toMatchObject({ status: 'scheduled' });
    const rest = (await stack.api('GET', `/v1/emails/${res.id}`, acme.keys.live)).body;
    expect(rest).toMatchObject({ status: 'scheduled', scheduled_at: at });
    // In words too, as REST takes them; anything else is refused with the forms it takes.
    const words = await send(acme.keys.live, { ...base, scheduledAt: 'in 2 hours' });
    expect(words).toMatchObject({ status: 'scheduled' });
    const later = Date.parse((await stack.api('GET', `/v1/emails/${words.id}`, acme.keys.live)).body.scheduled_at);
    expect(Math.abs(later - (Date.now() + 7_200_000))).toBeLessThan(60_000);
    const bad = await failure(send(acme.keys.live, { ...base, scheduledAt: 'someday' }));
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(bad.details).toContain('"in 1 min"');
  });

  it('SendBatch answers each email in request order; one bad item does not lose the others', async () => {
    const res = await unary<SendBatchResponse>(
      client,
      'sendBatch',
      create(SendBatchRequestSchema, {
        emails: [
          { ...base, to: ['one@ok.test'] },
          { ...base, subject: '' }, // empty = absent: subject is required
          { ...base, from: 'hello@unverified.test' },
          { ...base, to: ['three@ok.test'] },
        ],
      }),
      md(acme.keys.live),
    );
    expect(res.data).toHaveLength(4);
    expect(res.data[0]).toMatchObject({ id: expect.any(String), status: 'queued', code: '' });
    expect(res.data[1]).toMatchObject({ id: '', code: 'INVALID_REQUEST', error: expect.stringContaining('subject') });
    expect(res.data[2]).toMatchObject({ code: 'DOMAIN_NOT_VERIFIED', id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(res.data[3]).toMatchObject({ status: 'queued' });
    const failed = (await stack.api('GET', `/v1/emails/${res.data[2]!.id}`, acme.keys.live)).body;
    expect(failed.status).toBe('failed');
  });

  it('SendBatch refuses an empty batch and more than 100 emails with INVALID_ARGUMENT', async () => {
    for (const n of [0, 101]) {
      const e = await failure(
        unary(client, 'sendBatch', create(SendBatchRequestSchema, { emails: Array.from({ length: n }, () => base) }), md(acme.keys.live)),
      );
      expect(e.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(e.apiCode).toBe('INVALID_REQUEST');
    }
  });

  it('refusals of SendEmail are statuses with the API code (and the failed email id) in the trailers', async () => {
    const bad = await failure(send(acme.keys.live, { ...base, to: ['not an address'] }));
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(bad.apiCode).toBe('INVALID_REQUEST');
    const unverified = await failure(send(acme.keys.live, { ...base, from: 'x@unverified.test' }));
    expect(unverified.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(unverified.apiCode).toBe('DOMAIN_NOT_VERIFIED');
    const email = (await stack.api('GET', `/v1/emails/${unverified.emailId}`, acme.keys.live)).body;
    expect(email).toMatchObject({ status: 'failed', error: { code: 'DOMAIN_NOT_VERIFIED' } });
  });

  it('a missing, wrong or test-kind key is UNAUTHENTICATED on every method', async () => {
    for (const key of [undefined, 'pg_live_nope', acme.keys.test]) {
      const e = await failure(send(key, base));
      expect(e.code).toBe(grpc.status.UNAUTHENTICATED);
      expect(e.apiCode).toBe('INVALID_API_KEY');
      const g = await failure(unary(client, 'getEmail', create(GetEmailRequestSchema, { id: 'x' }), md(key)));
      expect(g.code).toBe(grpc.status.UNAUTHENTICATED);
      const b = await failure(unary(client, 'sendBatch', create(SendBatchRequestSchema, { emails: [base] }), md(key)));
      expect(b.code).toBe(grpc.status.UNAUTHENTICATED);
    }
  });

  it('GetEmail of an unknown id or of another project is NOT_FOUND', async () => {
    const other = await stack.createProject('other');
    const { id } = await send(acme.keys.live, base);
    for (const [key, emailId] of [
      [acme.keys.live, 'nope'],
      [acme.keys.live, ''],
      [other.keys.live, id],
    ] as const) {
      const e = await failure(unary(client, 'getEmail', create(GetEmailRequestSchema, { id: emailId }), md(key)));
      expect(e.code).toBe(grpc.status.NOT_FOUND);
      expect(e.apiCode).toBe('NOT_FOUND');
    }
  });

  it("counts every call against the project's API rate as HTTP does: 300 concurrent GetEmail on the free plan, RESOURCE_EXHAUSTED past 60 a second", async () => {
    const burst = await stack.createProject('burst');
    await stack.cli('domain', 'verify', '--project', 'burst', '--name', 'acme.test', '--force');
    const { id } = await send(burst.keys.live, base);
    await sleep(1100); // a window of its own for the burst
    type Outcome = { ok: boolean; code?: grpc.status; md: grpc.Metadata };
    const get = () =>
      new Promise<Outcome>((resolve) => {
        let headers = new grpc.Metadata();
        const call = client.getEmail!(create(GetEmailRequestSchema, { id }), md(burst.keys.live), (err: grpc.ServiceError | null) =>
          resolve(err ? { ok: false, code: err.code, md: err.metadata } : { ok: true, md: headers }),
        ) as grpc.ClientUnaryCall;
        call.on('metadata', (m) => (headers = m));
      });
    const answers = await Promise.all(Array.from({ length: 300 }, get));
    const ok = answers.filter((a) => a.ok);
    const refused = answers.filter((a) => !a.ok);
    // 60 in a one-second window (HTTP answers the other 240 with 429); at most two windows on a slow machine.
    expect(ok.length).toBeGreaterThanOrEqual(60);
    expect(ok.length).toBeLessThanOrEqual(120);
    expect(refused.length).toBe(300 - ok.length);
    for (const r of refused) {
      expect(r.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(r.md.get('x-postgate-code')).toEqual(['RATE_LIMIT_EXCEEDED']);
      expect(Number(r.md.get('retry-after')[0])).toBeGreaterThanOrEqual(1);
      expect(r.md.get('ratelimit-limit')).toEqual(['60']);
      expect(r.md.get('ratelimit-remaining')).toEqual(['0']);
    }
    // An answered call carries the same numbers HTTP puts in its headers.
    expect(ok[0]!.md.get('ratelimit-policy')).toEqual(['60;w=1']);
    expect(Number(ok[0]!.md.get('ratelimit-remaining')[0])).toBeLessThan(60);
  });

  it('CheckSession answers a real session of the auth API, and not once it is signed out', async () => {
    // Sign in through the auth API's test environment (the code is readable with a test-kind key).
    const auth = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) =>
      stack.api(method, `/api/v1/auth${p}`, undefined, body, { 'x-service-key': acme.keys.test, ...headers });
    expect((await auth('POST', '/sign-in/email-otp/send', { email: 'grpc@inbox.test' })).status).toBe(200);
    const code = (await auth('GET', '/test/code?email=grpc%40inbox.test')).body.code;
    const signedIn = await auth('POST', '/sign-in/email-otp/verify', { email: 'grpc@inbox.test', code });
    expect(signedIn.status).toBe(200);
    const token = signedIn.body.token as string;

    const ok = await unary<any>(client, 'checkSession', create(CheckSessionRequestSchema, { token }), md(acme.keys.test));
    expect(ok).toMatchObject({
      valid: true,
      userId: signedIn.body.user.id,
      email: 'grpc@inbox.test',
      sessionId: expect.any(String),
      expiresAt: expect.any(String),
    });
    // The live environment does not know a test-environment session.
    const other = await unary<any>(client, 'checkSession', create(CheckSessionRequestSchema, { token }), md(acme.keys.live)).catch((e) => e);
    expect(other.valid === true).toBe(false);

    expect((await auth('POST', '/sign-out', {}, { authorization: `Bearer ${token}` })).status).toBe(200);
    const after = await unary<any>(client, 'checkSession', create(CheckSessionRequestSchema, { token }), md(acme.keys.test)).catch((e) => e);
    expect(after.valid === true).toBe(false);
  });
});

describe("CheckSession with the auth area's function injected", () => {
  // In process, with stand-ins for the key lookup: only the mapping is under test here.
  const caller = { key: { kind: 'live', scope: 'all' }, project: { id: 'p1' } } as unknown as Caller;
  let server: PublicGrpc;
  let local: ReturnType<typeof grpcClient>;
  const seen: Array<[string, string]> = [];

  beforeAll(async () => {
    const access = {
      resolve: async (key: string | undefined) => (key === 'good' ? caller : Promise.reject(new ApiError('INVALID_API_KEY', 'Invalid API key'))),
    } as unknown as KeyAuthenticator;
    server = await startPublicGrpc({
      config: { host: '127.0.0.1', grpcPort: 0, limits: { maxBodyBytes: 1024 }, plans: { free: { rateLimit: 100 } } } as unknown as Config,
      log: createLogger('test', 'silent'),
      access,
      pipeline: {} as MailPipeline,
      store: {} as Store,
      counters: memoryCounters(),
      checkSession: async (c, token) => {
        seen.push([c.project.id, token]);
        if (token === 'expired') throw new ApiError('SESSION_INVALID', 'Session expired');
        return { valid: true, userId: 'u1', email: 'u@ok.test', sessionId: 's1', expiresAt: '2030-01-01T00:00:00.000Z' };
      },
    });
    local = grpcClient(PostgateService, `127.0.0.1:${server.port}`);
  });
  afterAll(async () => {
    local?.close();
    await server?.close();
  });

  it('answers the session, valid=false for an invalid one, UNAUTHENTICATED for a bad key', async () => {
    const ok = await unary<CheckSessionResponse>(local, 'checkSession', create(CheckSessionRequestSchema, { token: 'tok' }), md('good'));
    expect(ok).toMatchObject({ valid: true, userId: 'u1', email: 'u@ok.test', sessionId: 's1', expiresAt: '2030-01-01T00:00:00.000Z' });
    expect(seen[0]).toEqual(['p1', 'tok']);
    const expired = await unary<CheckSessionResponse>(local, 'checkSession', create(CheckSessionRequestSchema, { token: 'expired' }), md('good'));
    expect(expired.valid).toBe(false);
    const e = await failure(unary(local, 'checkSession', create(CheckSessionRequestSchema, { token: 'tok' }), md('bad')));
    expect(e.code).toBe(grpc.status.UNAUTHENTICATED);
  });
});
