// Injection-shaped input in every id, cursor, slug, tag and text a client can send, on
// PostgreSQL and on SQLite side by side: NUL and other control characters, SQL quotes, LIKE
// wildcards, %-encoded oddities (invalid UTF-8, overlong forms, traversal), huge strings and
// unusual Unicode. None may answer 5xx, and every input gets the same answer on both
// backends. A NUL is refused at the edge (400, or 404 where the path itself names nothing):
// PostgreSQL cannot store it, and answered 500 with the driver's error in the log before.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import nodemailer from 'nodemailer';
import { grpcClient, unary } from '../../../proto/grpc.js';
import { CheckSessionRequestSchema, GetEmailRequestSchema, PostgateService, SendEmailRequestSchema } from '../../../proto/gen/postgate/v1/public_pb.js';
import { Stack, type Project } from '../../helpers/stack.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';

interface Backend {
  name: 'sqlite' | 'postgres';
  stack: Stack;
  p: Project;
  adminToken: string;
  /** A real email id of the project, for routes that need one beside the injected value. */
  emailId: string;
}

const backends: Backend[] = [];
let db: TestDatabase;

async function setUp(name: Backend['name'], env: Record<string, string>): Promise<Backend> {
  const stack = await Stack.start({ env: { POSTGATE_LOG_LEVEL: 'warn', ...env } });
  const p = await stack.createProject('inject');
  // The battery is a few hundred requests a key: the plan's request rate must not answer them.
  await stack.setPlan('inject', 'scale', { rate: 1_000_000 });
  const adminToken = fs.readFileSync(path.join(stack.dataDir, 'admin-token'), 'utf8').trim();
  // From a domain the project has not verified: recorded (failed) and never sent.
  const sent = await stack.api('POST', '/v1/emails', p.keys.live, { from: 'a@unverified.test', to: 'b@inbox.test', subject: 's', text: 't' });
  return { name, stack, p, adminToken, emailId: sent.body.id };
}

beforeAll(async () => {
  db = await createTestDatabase('pg_inject');
  const secret = crypto.randomBytes(32).toString('hex');
  backends.push(await setUp('sqlite', {}), await setUp('postgres', { POSTGATE_DATABASE_URL: db.url, POSTGATE_SECRET: secret }));
}, 120_000);
afterAll(async () => {
  for (const b of backends) await b.stack.stop();
  await db?.drop();
});

/** A value as a client sends it: `raw` goes into a URL as it is (already %-encoded), `text` is encoded (and JSON-stringified in bodies). */
type Value = { name: string; nul?: boolean } & ({ text: string } | { raw: string });

const values: Value[] = [
  { name: 'NUL inside', text: 'a\u0000b', nul: true },
  { name: 'NUL alone', text: '\u0000', nul: true },
  { name: 'NUL at the end', text: 'abc\u0000', nul: true },
  { name: 'NUL, overlong UTF-8', raw: '%C0%80' },
  { name: 'SOH', text: 'a\u0001b' },
  { name: 'LF', text: 'a\nb' },
  { name: 'CR LF', text: 'a\r\nb: c' },
  { name: 'TAB', text: 'a\tb' },
  { name: 'ESC sequence', text: '\u001b[31mred' },
  { name: 'DEL', text: 'a\u007fb' },
  { name: 'C1 NEL', text: 'a\u0085b' },
  { name: 'single quote', text: "' OR '1'='1" },
  { name: 'statement', text: "x'; DROP TABLE emails; --" },
  { name: 'double quote', text: '" OR ""="' },
  { name: 'backslash', text: 'a\\b\\' },
  { name: 'LIKE percent', text: '%' },
  { name: 'LIKE underscore', text: '_' },
  { name: 'LIKE and quote', text: "%' --" },
  { name: 'a literal %00', text: '%00' },
  { name: 'sleep', text: '1;SELECT pg_sleep(5)' },
  { name: 'JSON-ish', text: '{"$ne":null}' },
  { name: 'traversal', text: '../../etc/passwd' },
  { name: 'encoded traversal', raw: '..%2F..%2Fetc%2Fpasswd' },
  { name: 'bad %-escape', raw: '%zz' },
  { name: 'lone %', raw: '%' },
  { name: 'invalid UTF-8', raw: '%FF%FE' },
  { name: 'UTF-16 surrogate as UTF-8', raw: '%ED%A0%80' },
  { name: '%u escape', raw: '%u0000' },
  { name: 'long (4 kB)', text: 'a'.repeat(4096) },
  { name: 'huge (40 kB)', text: 'a'.repeat(40_000) },
  { name: 'unicode', text: 'ünïcødé 😀 日本' },
  { name: 'right-to-left override', text: '\u202eexe.txt' },
  { name: 'BOM and zero width', text: '\ufeffa\u200bb' },
  { name: 'noncharacter', text: '\uffff' },
];

const enc = (v: Value) => ('raw' in v ? v.raw : encodeURIComponent(v.text));
/** In a JSON body a raw value is what a client would have decoded it to (or kept as it is). */
const str = (v: Value) => {
  if ('text' in v) return v.text;
  try {
    return decodeURIComponent(v.raw);
  } catch {
    return v.raw;
  }
};

interface Call {
  method: string;
  url: string;
  /** 'key': Authorization: Bearer <live key>; 'service': X-Service-Key; 'admin': the admin listener's token. */
  auth?: 'key' | 'service' | 'admin';
  body?: unknown;
}

type Target = [string, (v: Value, b: Backend) => Call];

const id = (v: Value) => enc(v);
const targets: Target[] = [
  // Ids and tokens in paths.
  ['GET /v1/emails/:id', (v) => ({ method: 'GET', url: `/v1/emails/${id(v)}`, auth: 'key' })],
  ['PATCH /v1/emails/:id', (v) => ({ method: 'PATCH', url: `/v1/emails/${id(v)}`, auth: 'key', body: { scheduled_at: '2031-01-01T00:00:00Z' } })],
  ['POST /v1/emails/:id/cancel', (v) => ({ method: 'POST', url: `/v1/emails/${id(v)}/cancel`, auth: 'key' })],
  ['GET /v1/domains/:id', (v) => ({ method: 'GET', url: `/v1/domains/${id(v)}`, auth: 'key' })],
  ['DELETE /v1/domains/:id', (v) => ({ method: 'DELETE', url: `/v1/domains/${id(v)}`, auth: 'key' })],
  ['POST /v1/domains/:id/verify', (v) => ({ method: 'POST', url: `/v1/domains/${id(v)}/verify`, auth: 'key' })],
  ['DELETE /v1/suppressions/:email', (v) => ({ method: 'DELETE', url: `/v1/suppressions/${id(v)}`, auth: 'key' })],
  ['GET /v1/webhooks/:id', (v) => ({ method: 'GET', url: `/v1/webhooks/${id(v)}`, auth: 'key' })],
  ['DELETE /v1/webhooks/:id', (v) => ({ method: 'DELETE', url: `/v1/webhooks/${id(v)}`, auth: 'key' })],
  ['POST /v1/webhooks/:id/signing-secret/rotate', (v) => ({ method: 'POST', url: `/v1/webhooks/${id(v)}/signing-secret/rotate`, auth: 'key' })],
  ['GET /api/v1/auth/hosted-config/:slug', (v) => ({ method: 'GET', url: `/api/v1/auth/hosted-config/${id(v)}` })],
  ['GET /unsubscribe/:token', (v) => ({ method: 'GET', url: `/unsubscribe/${id(v)}` })],
  ['POST /unsubscribe/:token', (v) => ({ method: 'POST', url: `/unsubscribe/${id(v)}`, body: 'List-Unsubscribe=One-Click' })],
  ['GET /api/v1/auth/callback/:provider', (v) => ({ method: 'GET', url: `/api/v1/auth/callback/${id(v)}?code=c&state=s` })],
  ['GET /admin/v1/projects/:slug/audit', (v) => ({ method: 'GET', url: `/admin/v1/projects/${id(v)}/audit`, auth: 'admin' })],
  ['DELETE /admin/v1/projects/:slug/keys/:id', (v) => ({ method: 'DELETE', url: `/admin/v1/projects/inject/keys/${id(v)}`, auth: 'admin' })],
  // Cursors, filters and other query strings.
  ...['after', 'before', 'status', 'tag', 'since', 'until', 'limit'].map(
    (q): Target => [`GET /v1/emails?${q}`, (v) => ({ method: 'GET', url: `/v1/emails?${q}=${enc(v)}`, auth: 'key' })],
  ),
  ...['after', 'before'].map((q): Target => [`GET /v1/webhooks?${q}`, (v) => ({ method: 'GET', url: `/v1/webhooks?${q}=${enc(v)}`, auth: 'key' })]),
  ['GET /v1/domains?after', (v) => ({ method: 'GET', url: `/v1/domains?limit=1&after=${enc(v)}`, auth: 'key' })],
  ['GET /v1/analytics/timeseries?since', (v) => ({ method: 'GET', url: `/v1/analytics/timeseries?since=${enc(v)}`, auth: 'key' })],
  ['GET /admin/v1/projects/:slug/audit?after', (v) => ({ method: 'GET', url: `/admin/v1/projects/inject/audit?after=${enc(v)}`, auth: 'admin' })],
  ['GET /admin/v1/projects/:slug/audit?before', (v) => ({ method: 'GET', url: `/admin/v1/projects/inject/audit?before=${enc(v)}`, auth: 'admin' })],
  ...['slug', 'redirect_uri', 'origin', 'code_challenge'].map(
    (q): Target => [
      `GET /api/v1/auth/hosted/widget?${q}`,
      (v) => {
        const query: Record<string, string> = { slug: 'inject', redirect_uri: 'https://app.test/cb', [q]: '' };
        const qs = Object.entries(query)
          .map(([k, x]) => `${k}=${k === q ? enc(v) : encodeURIComponent(x)}`)
          .join('&');
        return { method: 'GET', url: `/api/v1/auth/hosted/widget?${qs}` };
      },
    ],
  ),
  ['GET /api/v1/auth/callback/google?state', (v) => ({ method: 'GET', url: `/api/v1/auth/callback/google?code=c&state=${enc(v)}` })],
  ['GET /api/v1/auth/test/code?email', (v) => ({ method: 'GET', url: `/api/v1/auth/test/code?email=${enc(v)}`, auth: 'service' })],
  // Text that is stored: an email's fields and tags (recorded even from an unverified domain), names and slugs.
  ...['from', 'to', 'subject', 'text', 'html', 'reply_to', 'scheduled_at'].map(
    (f): Target => [
      `POST /v1/emails ${f}`,
      (v) => ({
        method: 'POST',
        url: '/v1/emails',
        auth: 'key',
        body: { from: 'a@unverified.test', to: 'b@inbox.test', subject: 's', text: 't', [f]: str(v) },
      }),
    ],
  ),
  ...['name', 'value'].map(
    (f): Target => [
      `POST /v1/emails tags[].${f}`,
      (v) => ({
        method: 'POST',
        url: '/v1/emails',
        auth: 'key',
        body: { from: 'a@unverified.test', to: 'b@inbox.test', subject: 's', text: 't', tags: [{ name: 'n', value: 'v', [f]: str(v) }] },
      }),
    ],
  ),
  [
    'POST /v1/emails headers',
    (v) => ({
      method: 'POST',
      url: '/v1/emails',
      auth: 'key',
      body: { from: 'a@unverified.test', to: 'b@inbox.test', subject: 's', text: 't', headers: { 'X-Note': str(v) } },
    }),
  ],
  [
    'POST /v1/emails/batch subject',
    (v) => ({ method: 'POST', url: '/v1/emails/batch', auth: 'key', body: [{ from: 'a@unverified.test', to: 'b@inbox.test', subject: str(v), text: 't' }] }),
  ],
  ['POST /v1/domains name', (v) => ({ method: 'POST', url: '/v1/domains', auth: 'key', body: { name: str(v) } })],
  ['POST /v1/webhooks url', (v) => ({ method: 'POST', url: '/v1/webhooks', auth: 'key', body: { url: str(v) } })],
  ['POST /v1/webhooks events', (v) => ({ method: 'POST', url: '/v1/webhooks', auth: 'key', body: { url: 'https://hooks.example.com/x', events: [str(v)] } })],
  ['POST /v1/pacing/announcements day', (v) => ({ method: 'POST', url: '/v1/pacing/announcements', auth: 'key', body: { day: str(v), volume: 10 } })],
  [
    'POST hosted-start slug',
    (v) => ({ method: 'POST', url: '/api/v1/auth/hosted-start', body: { slug: str(v), provider: 'google', redirectUri: 'https://app.test/cb' } }),
  ],
  [
    'POST hosted/email-otp/send slug',
    (v) => ({ method: 'POST', url: '/api/v1/auth/hosted/email-otp/send', body: { slug: str(v), email: 'c@inbox.test', redirectUri: 'https://app.test/cb' } }),
  ],
  [
    'POST hosted/email-otp/verify code',
    (v) => ({
      method: 'POST',
      url: '/api/v1/auth/hosted/email-otp/verify',
      body: { slug: 'inject', email: 'c@inbox.test', code: str(v), redirectUri: 'https://app.test/cb' },
    }),
  ],
  ['POST exchange-code code', (v) => ({ method: 'POST', url: '/api/v1/auth/exchange-code', auth: 'service', body: { code: str(v) } })],
  [
    'POST verify-token provider',
    (v) => ({ method: 'POST', url: '/api/v1/auth/verify-token', auth: 'service', body: { provider: str(v), method: 'id_token', credential: 'x' } }),
  ],
  [
    'POST verify-token credential',
    (v) => ({ method: 'POST', url: '/api/v1/auth/verify-token', auth: 'service', body: { provider: 'google', method: 'id_token', credential: str(v) } }),
  ],
  ['POST sign-in/email-otp/send email', (v) => ({ method: 'POST', url: '/api/v1/auth/sign-in/email-otp/send', auth: 'service', body: { email: str(v) } })],
  [
    'POST sign-in/email-otp/verify code',
    (v) => ({ method: 'POST', url: '/api/v1/auth/sign-in/email-otp/verify', auth: 'service', body: { email: 'd@inbox.test', code: str(v) } }),
  ],
  ['POST sign-in/sms-otp/send phone', (v) => ({ method: 'POST', url: '/api/v1/auth/sign-in/sms-otp/send', auth: 'service', body: { phone: str(v) } })],
  [
    'POST sign-in/social callbackURL',
    (v) => ({ method: 'POST', url: '/api/v1/auth/sign-in/social', auth: 'service', body: { provider: 'google', callbackURL: str(v) } }),
  ],
  ['POST /admin/v1/projects name', (v) => ({ method: 'POST', url: '/admin/v1/projects', auth: 'admin', body: { name: str(v), slug: 'inject' } })],
  ['POST /admin/v1/projects slug', (v) => ({ method: 'POST', url: '/admin/v1/projects', auth: 'admin', body: { name: 'n', slug: str(v) } })],
  [
    'POST /admin/v1/projects/:slug/domains/verify name',
    (v) => ({ method: 'POST', url: '/admin/v1/projects/inject/domains/verify', auth: 'admin', body: { name: str(v), force: true } }),
  ],
];

async function call(b: Backend, c: Call): Promise<{ status: number; body: string }> {
  const admin = c.auth === 'admin';
  const headers: Record<string, string> = {};
  if (c.auth === 'key') headers.authorization = `Bearer ${b.p.keys.live}`;
  if (c.auth === 'service') headers['x-service-key'] = b.p.keys.live;
  if (admin) headers.authorization = `Bearer ${b.adminToken}`;
  let body: string | undefined;
  if (typeof c.body === 'string') {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = c.body;
  } else if (c.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(c.body);
  }
  const base = admin ? b.stack.adminUrl : b.stack.url;
  const r = await fetch(base + c.url, { method: c.method, headers, body, redirect: 'manual' });
  return { status: r.status, body: await r.text() };
}

describe('injection-shaped input, PostgreSQL beside SQLite', () => {
  it.each(targets)('%s', async (_name, make) => {
    const answers: string[] = [];
    const problems: string[] = [];
    for (const v of values) {
      const [onSqlite, onPostgres] = await Promise.all(backends.map((b) => call(b, make(v, b))));
      const got = { sqlite: onSqlite!.status, postgres: onPostgres!.status };
      answers.push(`${v.name}: ${got.sqlite}/${got.postgres}`);
      if (got.sqlite >= 500 || got.postgres >= 500)
        problems.push(`${v.name}: 5xx (sqlite ${got.sqlite}, postgres ${got.postgres}) ${onPostgres!.body.slice(0, 200)}`);
      else if (got.sqlite !== got.postgres) problems.push(`${v.name}: sqlite ${got.sqlite}, postgres ${got.postgres}`);
      else if (v.nul && got.postgres !== 400 && got.postgres !== 404) problems.push(`${v.name}: ${got.postgres}, not 400/404`);
      // Every error is the one shape; nothing from the driver or a stack trace.
      for (const r of [onSqlite!, onPostgres!])
        if (r.status >= 400 && r.body.startsWith('{')) {
          const json = JSON.parse(r.body);
          if (typeof json.error !== 'string' || typeof json.code !== 'string')
            problems.push(`${v.name}: ${r.status} without {error, code}: ${r.body.slice(0, 200)}`);
          if (/invalid byte sequence|syntax error at or near|SQLITE_[A-Z]|relation "|\.js:\d+:\d+/.test(r.body))
            problems.push(`${v.name}: leaks ${r.body.slice(0, 200)}`);
        }
    }
    expect(problems, answers.join('; ')).toEqual([]);
  });

  // The other doors into the same store: the public gRPC API and SMTP submission.
  const grpcCalls: Array<[string, (v: string) => [string, unknown]]> = [
    ['GetEmail id', (v) => ['getEmail', create(GetEmailRequestSchema, { id: v })]],
    ['SendEmail subject', (v) => ['sendEmail', create(SendEmailRequestSchema, { from: 'a@unverified.test', to: ['b@inbox.test'], subject: v, text: 't' })]],
    [
      'SendEmail tags',
      (v) => ['sendEmail', create(SendEmailRequestSchema, { from: 'a@unverified.test', to: ['b@inbox.test'], subject: 's', text: 't', tags: [v] })],
    ],
    ['CheckSession token', (v) => ['checkSession', create(CheckSessionRequestSchema, { token: v })]],
  ];
  it.each(grpcCalls)('gRPC %s', async (_name, make) => {
    const problems: string[] = [];
    for (const v of values.filter((x): x is Value & { text: string } => 'text' in x)) {
      const codes = await Promise.all(
        backends.map(async (b) => {
          const client = grpcClient(PostgateService, `127.0.0.1:${b.stack.env.POSTGATE_GRPC_PORT}`);
          const md = new grpc.Metadata();
          md.set('x-service-key', b.p.keys.live);
          const [method, request] = make(v.text);
          try {
            await unary(client, method, request, md);
            return grpc.status.OK;
          } catch (err) {
            return (err as grpc.ServiceError).code;
          } finally {
            client.close();
          }
        }),
      );
      const [onSqlite, onPostgres] = codes as [grpc.status, grpc.status];
      if ([onSqlite, onPostgres].some((c) => c === grpc.status.INTERNAL || c === grpc.status.UNKNOWN)) problems.push(`${v.name}: ${onSqlite}/${onPostgres}`);
      else if (onSqlite !== onPostgres) problems.push(`${v.name}: sqlite ${onSqlite}, postgres ${onPostgres}`);
      else if (v.nul && onPostgres !== grpc.status.INVALID_ARGUMENT) problems.push(`${v.name}: ${onPostgres}, not INVALID_ARGUMENT`);
    }
    expect(problems).toEqual([]);
  });

  it.each([
    ['subject', (v: string) => ({ subject: v, text: 't' })],
    ['text', (v: string) => ({ subject: 's', text: v })],
    ['html', (v: string) => ({ subject: 's', html: `<p>${v}</p>` })],
  ])('SMTP %s', async (_name, fields) => {
    const problems: string[] = [];
    for (const v of values.filter((x): x is Value & { text: string } => 'text' in x)) {
      const replies = await Promise.all(
        backends.map(async (b) => {
          const t = nodemailer.createTransport({
            host: '127.0.0.1',
            port: Number(b.stack.env.POSTGATE_SMTP_PORT),
            auth: { user: 'anything', pass: b.p.keys.live },
            tls: { rejectUnauthorized: false },
          });
          try {
            const info = await t.sendMail({ from: 'a@unverified.test', to: 'b@inbox.test', ...fields(v.text) });
            return info.response;
          } catch (err) {
            return String((err as { response?: string }).response ?? err);
          } finally {
            t.close();
          }
        }),
      );
      const [onSqlite, onPostgres] = replies.map((r) => r.slice(0, 3)) as [string, string];
      if (onSqlite !== onPostgres) problems.push(`${v.name}: sqlite ${replies[0]}, postgres ${replies[1]}`);
      else if (!/^[25]\d\d$/.test(onPostgres)) problems.push(`${v.name}: ${replies[1]} (a failure, not an answer)`);
      // Refused for the NUL itself (the sender's domain is not verified, which refuses the rest with 550 too).
      else if (v.nul && !replies.every((r) => /^550 .*U\+0000/.test(r))) problems.push(`${v.name}: ${replies.join(' / ')}`);
    }
    expect(problems).toEqual([]);
  });

  it('no request failed in either log, and both stacks still answer', async () => {
    for (const b of backends) {
      const log = fs.readFileSync(b.stack.logFile, 'utf8');
      expect(log, b.name).not.toMatch(/request failed|grpc call failed|smtp submission failed|invalid byte sequence/);
      expect((await b.stack.api('GET', `/v1/emails/${b.emailId}`, b.p.keys.live)).status).toBe(200);
    }
  });
});
