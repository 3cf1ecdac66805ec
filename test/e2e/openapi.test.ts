// The OpenAPI document (GET /openapi.json) as tools take it: redocly's recommended rules
// pass with no error, every operation has a unique operationId and documents its answers,
// and a client generated from it (openapi-typescript + openapi-fetch) type-checks, refuses
// a wrong field at compile time, and really calls the mail and auth APIs. Every field the
// calls get back is in the document.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root } from '../../deploy/build.js';
import { completeOpenapi } from '../../control/http/openapi.js';
import { Stack, type Project } from '../helpers/stack.js';

const exec = promisify(execFile);
/** The operations that answer a browser with a page, refusals included. */
const HTML_PAGES = ['/api/v1/auth/hosted/widget', '/api/v1/auth/magic-link/{token}'];
type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

let stack: Stack;
let project: Project;
let doc: Json;
/** Inside the checkout (test-results/ is git-ignored), so the generated client resolves openapi-fetch and @types/node. */
let dir: string;
let docFile: string;

beforeAll(async () => {
  stack = await Stack.start();
  project = await stack.createProject('openapi');
  await stack.verifyDomain('openapi', 'acme.test');
  const res = await fetch(`${stack.url}/openapi.json`);
  expect(res.status).toBe(200);
  doc = (await res.json()) as Json;
  fs.mkdirSync(path.join(root, 'test-results'), { recursive: true });
  dir = fs.mkdtempSync(path.join(root, 'test-results', 'openapi-'));
  docFile = path.join(dir, 'openapi.json');
  fs.writeFileSync(docFile, JSON.stringify(doc, null, 2));
});
afterAll(async () => {
  await stack?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function operations(): Array<{ method: string; path: string; op: Json }> {
  return Object.entries(doc.paths as Record<string, Json>).flatMap(([p, item]) =>
    METHODS.filter((m) => item[m]).map((m) => ({ method: m.toUpperCase(), path: p, op: item[m] as Json })),
  );
}

const deref = (x: Json): Json => {
  let v = x;
  while (v?.$ref)
    v = (v.$ref as string)
      .split('/')
      .slice(1)
      .reduce((o: Json, k: string) => o[k], doc);
  return v;
};

/** Paths in `value` whose keys the schema does not declare (an undocumented field). */
function undocumented(schema: Json | undefined, value: unknown, at = '$'): string[] {
  const s = schema && deref(schema);
  if (!s || value === null || typeof value !== 'object') return [];
  const alts: Json[] = [...(s.oneOf ?? []), ...(s.anyOf ?? []), ...(s.allOf ?? [])].map(deref);
  if (Array.isArray(value)) {
    const items = s.items ?? alts.find((a) => a.items)?.items;
    return items ? value.flatMap((v, i) => undocumented(items, v, `${at}[${i}]`)) : [];
  }
  const props: Json = Object.assign({}, ...alts.map((a) => a.properties ?? {}), s.properties ?? {});
  const open = s.additionalProperties !== undefined && s.additionalProperties !== false;
  return Object.entries(value as Json).flatMap(([k, v]) => (props[k] ? undocumented(props[k], v, `${at}.${k}`) : open ? [] : [`${at}.${k}`]));
}

/** The documented JSON schema of an operation's answer. */
function answerSchema(method: string, p: string, status: number): Json | undefined {
  const r = deref(doc.paths[p]?.[method.toLowerCase()]?.responses?.[String(status)] ?? {});
  return r.content?.['application/json']?.schema;
}

describe('the document', () => {
  it('passes `redocly lint` (recommended rules) with no error', async () => {
    const bin = path.join(root, 'node_modules', '.bin', 'redocly');
    // redocly exits non-zero when it finds errors; its JSON report is on stdout either way.
    const out = await exec(bin, ['lint', docFile, '--format=json', `--config=${path.join(root, 'redocly.yaml')}`], {
      cwd: dir,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    }).catch((err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? '', stderr: err.stderr ?? '' }));
    const report = JSON.parse(out.stdout) as { totals: { errors: number; warnings: number }; problems: Json[] };
    const line = (p: Json) => `${p.severity} ${p.ruleId} ${p.location?.[0]?.pointer ?? ''}: ${p.message}`;
    const errors = report.problems.filter((p) => p.severity === 'error').map(line);
    expect(errors, errors.join('\n')).toEqual([]);
    expect(report.totals.errors).toBe(0);
    // Warnings are allowed (redocly.yaml says which remain and why); print them for whoever reads the run.
    if (report.totals.warnings) console.log(`redocly: ${report.totals.warnings} warnings\n${report.problems.map(line).join('\n')}`);
  });

  it('names every operation with a unique operationId', () => {
    const ids = operations().map((o) => o.op.operationId);
    expect(ids.filter((id) => typeof id !== 'string' || !/^[A-Za-z][A-Za-z0-9]*$/.test(id))).toEqual([]);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    const byRoute = Object.fromEntries(operations().map((o) => [`${o.method} ${o.path}`, o.op.operationId]));
    expect(byRoute).toMatchObject({
      'POST /v1/emails': 'sendEmail',
      'POST /v1/emails/batch': 'sendBatch',
      'GET /v1/emails/{id}': 'getEmail',
      'GET /v1/domains': 'listDomains',
      'POST /v1/domains': 'createDomain',
      'GET /api/v1/auth/session': 'getSession',
    });
  });

  it('declares security on every operation: the API keys on the APIs, [] on the public routes', () => {
    const schemes = Object.keys(doc.components.securitySchemes);
    for (const { method, path: p, op } of operations()) {
      const where = `${method} ${p}`;
      expect(Array.isArray(op.security), where).toBe(true);
      for (const req of op.security) for (const name of Object.keys(req)) expect(schemes, where).toContain(name);
      if (p.startsWith('/v1/')) expect(op.security, where).toEqual([{ bearerAuth: [] }, { serviceKey: [] }]);
    }
    const security = (method: string, p: string) => doc.paths[p][method].security;
    expect(security('get', '/unsubscribe/{token}')).toEqual([]);
    expect(security('post', '/unsubscribe/{token}')).toEqual([]);
    expect(security('get', '/api/v1/auth/hosted-config/{slug}')).toEqual([]);
    expect(security('get', '/api/v1/auth/session')).toEqual([{ serviceKey: [], sessionToken: [] }]);
  });

  it('documents a success answer and the error answers of every operation, errors as {error, code}', () => {
    for (const { method, path: p, op } of operations()) {
      const where = `${method} ${p}`;
      const statuses = Object.keys(op.responses);
      expect(
        statuses.some((s) => /^[23]/.test(s)),
        where,
      ).toBe(true);
      const errors = statuses.filter((s) => /^[45]/.test(s));
      expect(errors, where).toContain('500');
      for (const s of errors) {
        const json = answerSchema(method, p, Number(s));
        // An error a browser is shown as a page (the widget's refusals) is documented as that page.
        if (!json && HTML_PAGES.includes(p)) {
          expect(Object.keys(deref(op.responses[s]).content), `${where} ${s}`).toEqual(['text/html']);
          continue;
        }
        expect(deref(json ?? {}).required, `${where} ${s}`).toEqual(expect.arrayContaining(['error', 'code']));
      }
      if (op.security.length) expect(errors, where).toEqual(expect.arrayContaining(['401', '429']));
      if (op.requestBody?.content?.['application/json']) expect(errors, where).toEqual(expect.arrayContaining(['400', '413']));
      if (p.includes('{')) expect(errors, where).toContain('404');
    }
    const send = Object.keys(doc.paths['/v1/emails'].post.responses);
    expect(send).toEqual(expect.arrayContaining(['202', '400', '401', '403', '413', '422', '429', '500', '503']));
  });

  it('has what the recommended rules and generators read: license, servers, described tags, named schemas', () => {
    expect(doc.info.license).toMatchObject({ name: 'MIT' });
    expect(doc.servers[0].url).toMatch(/^https?:\/\//);
    const used = new Set(operations().flatMap((o) => o.op.tags ?? []));
    for (const t of used) expect(doc.tags.find((x: Json) => x.name === t)?.description, t).toEqual(expect.any(String));
    expect(doc.components.schemas.Error.required).toEqual(['error', 'code']);
    expect(Object.keys(doc.components.schemas).filter((k) => /^def-\d+$/.test(k) && doc.components.schemas[k].title)).toEqual([]);
  });

  it('documents the widget page, its files and the embed script as what they are, not JSON, and they answer so', async () => {
    const media = (p: string, status: number) => Object.keys(deref(doc.paths[p].get.responses[String(status)]).content ?? {});
    expect(media('/api/v1/auth/hosted/widget', 200)).toEqual(['text/html']);
    expect(media('/api/v1/auth/hosted/widget.js', 200)).toEqual(['text/javascript']);
    expect(media('/api/v1/auth/hosted/widget.css', 200)).toEqual(['text/css']);
    expect(media('/embed/v1.js', 200)).toEqual(['text/javascript']);
    // What each really answers is among what its status documents: the files, a refused widget (no such
    // project: 404; a callback the project does not allow: 400, both pages) and a malformed query (400, JSON).
    const widget = '/api/v1/auth/hosted/widget';
    const calls: Array<[string, string, number]> = [
      ['/api/v1/auth/hosted/widget.js', '', 200],
      ['/api/v1/auth/hosted/widget.css', '', 200],
      ['/embed/v1.js', '', 200],
      [widget, '?slug=no-such-project&redirect_uri=https%3A%2F%2Fapp.test%2Fcb', 404],
      [widget, '?slug=openapi&redirect_uri=https%3A%2F%2Fnot-allowed.test%2Fcb', 400],
      [widget, '?slug=openapi', 400],
    ];
    for (const [p, query, status] of calls) {
      const res = await fetch(`${stack.url}${p}${query}`);
      await res.arrayBuffer();
      expect(res.status, p + query).toBe(status);
      const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
      expect(media(p, status), `${p}${query}: ${type}`).toContain(type);
    }
  });

  it('keeps hidden routes out', () => {
    for (const p of ['/openapi.json', '/healthz', '/metrics']) expect(doc.paths[p], p).toBeUndefined();
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/admin'))).toEqual([]);
  });
});

describe('completeOpenapi (control/http/openapi.ts)', () => {
  it('names a route the table does not know, uniquely, and documents its answers', () => {
    const op = (extra: Json = {}) => ({ tags: ['things'], responses: {}, ...extra });
    const out = completeOpenapi({
      openapi: '3.1.0',
      info: { title: 't', version: '1' },
      components: {},
      paths: {
        '/v1/things/{id}': { patch: op({ security: [{ bearerAuth: [] }], requestBody: { content: { 'application/json': { schema: {} } } } }) },
        '/v1/things/by-id/{id}': { patch: op() },
        '/v1/emails': { post: op({ operationId: 'patchThingsById' }) },
      },
    });
    const ids = [out.paths['/v1/things/{id}'].patch.operationId, out.paths['/v1/things/by-id/{id}'].patch.operationId];
    expect(ids[0]).toBe('patchThingsById');
    // A route's own operationId wins over the table; a collision gets a suffix.
    expect(out.paths['/v1/emails'].post.operationId).not.toBe(ids[0]);
    expect(new Set([...ids, out.paths['/v1/emails'].post.operationId]).size).toBe(3);
    const patch = out.paths['/v1/things/{id}'].patch;
    expect(Object.keys(patch.responses)).toEqual(['200', '400', '401', '404', '413', '415', '429', '500', '503']);
    expect(out.paths['/v1/things/by-id/{id}'].patch.security).toEqual([]);
    expect(out.tags).toEqual([{ name: 'things', description: expect.any(String) }]);
  });
});

// The client a user would write against the generated types.
const CLIENT = `
import createClient from 'openapi-fetch';
import type { paths } from './api.ts';

export async function run(baseUrl: string, liveKey: string, testKey: string, to: string) {
  const mail = createClient<paths>({ baseUrl, headers: { authorization: \`Bearer \${liveKey}\` } });
  const sent = await mail.POST('/v1/emails', { body: { from: 'Acme <hello@acme.test>', to, subject: 'Typed', text: 'Hello' } });
  if (!sent.data) throw new Error(\`send: \${sent.response.status} \${JSON.stringify(sent.error)}\`);
  const id: string = sent.data.id;
  const status: string = sent.data.status;
  const email = await mail.GET('/v1/emails/{id}', { params: { path: { id } } });
  const recipients: string[] | undefined = email.data?.to;
  const domains = await mail.GET('/v1/domains');
  const names = (domains.data?.data ?? []).map((d) => d.name);
  const missing = await mail.GET('/v1/emails/{id}', { params: { path: { id: 'no-such-email' } } });
  const code: string | undefined = missing.error?.code;

  const auth = createClient<paths>({ baseUrl, headers: { 'x-service-key': testKey } });
  const address = 'typed@example.test';
  const otp = await auth.POST('/api/v1/auth/sign-in/email-otp/send', { body: { email: address } });
  const read = await auth.GET('/api/v1/auth/test/code', { params: { query: { email: address } } });
  const verified = await auth.POST('/api/v1/auth/sign-in/email-otp/verify', { body: { email: address, code: read.data?.code ?? '' } });
  const token = verified.data?.token ?? '';
  const session = await auth.GET('/api/v1/auth/session', { headers: { authorization: \`Bearer \${token}\` } });
  const signedInAs: string | null | undefined = session.data?.user.email;

  return {
    sent: { status: sent.response.status, body: sent.data, id, queued: status },
    email: { status: email.response.status, body: email.data, recipients },
    domains: { status: domains.response.status, body: domains.data, names },
    missing: { status: missing.response.status, body: missing.error, code },
    otp: { status: otp.response.status, body: otp.data },
    verified: { status: verified.response.status, body: verified.data },
    session: { status: session.response.status, body: session.data, signedInAs },
  };
}
`;

// The same calls with mistakes a typed client must refuse at compile time: each line marked
// "wrong" must get a type error, and no other line.
const WRONG = `
import createClient from 'openapi-fetch';
import type { paths } from './api.ts';

export async function wrong(baseUrl: string) {
  const mail = createClient<paths>({ baseUrl });
  await mail.POST('/v1/emails', { body: { from: 'a@acme.test', to: 'b@example.test', subjekt: 'Hi', text: 'x' } }); // wrong: a field the send request lacks
  await mail.POST('/v1/emails', { body: { from: 'a@acme.test', to: 42, subject: 'Hi', text: 'x' } }); // wrong: a field of the wrong type
  const email = await mail.GET('/v1/emails/{id}', { params: { path: { id: 'x' } } });
  const n: string | undefined = email.data?.statuz; // wrong: a field the email lacks
  await mail.GET('/v1/emailz', {}); // wrong: a path the API lacks
  await mail.DELETE('/v1/emails/{id}', { params: { path: { id: 'x' } } }); // wrong: a method the path lacks
  return n;
}
`;

function typeErrors(files: string[]): ts.Diagnostic[] {
  const program = ts.createProgram(files, {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    allowImportingTsExtensions: true,
    strict: true,
    noUncheckedIndexedAccess: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
  });
  return [...ts.getPreEmitDiagnostics(program)];
}
const show = (d: ts.Diagnostic) => `${d.file ? path.basename(d.file.fileName) : ''}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;

describe('a client generated from the document', () => {
  let clientFile: string;

  beforeAll(async () => {
    fs.writeFileSync(path.join(dir, 'api.ts'), astToString(await openapiTS(doc as Parameters<typeof openapiTS>[0])));
    clientFile = path.join(dir, 'client.ts');
    fs.writeFileSync(clientFile, CLIENT);
    fs.writeFileSync(path.join(dir, 'wrong.ts'), WRONG);
  });

  it('type-checks, and the types refuse a wrong field, type, path or method', () => {
    const file = path.join(dir, 'wrong.ts');
    // One program for both files: loading the Node typings once halves the time.
    const diagnostics = typeErrors([clientFile, file]);
    const good = diagnostics.filter((d) => d.file?.fileName !== file).map(show);
    expect(good, good.join('\n')).toEqual([]);
    const lines = WRONG.split('\n');
    const flagged = new Set(diagnostics.filter((d) => d.file?.fileName === file).map((d) => lines[d.file!.getLineAndCharacterOfPosition(d.start ?? 0).line]!));
    expect([...flagged].filter((l) => !l.includes('// wrong:'))).toEqual([]);
    expect(lines.filter((l) => l.includes('// wrong:') && !flagged.has(l))).toEqual([]);
  });

  it('calls the mail and auth APIs and gets documented answers', async () => {
    const { run } = (await import(clientFile)) as { run: (...a: string[]) => Promise<Record<string, { status: number; body: unknown } & Json>> };
    const r = await run(stack.url, project.keys.live, project.keys.test, 'reader@example.test');
    expect(r.sent!.status).toBe(202);
    expect(r.sent!.body).toEqual({ id: expect.any(String), status: 'queued' });
    expect(r.email!.status).toBe(200);
    expect(r.email!.body).toMatchObject({ id: r.sent!.id, to: ['reader@example.test'], subject: 'Typed' });
    expect(r.domains!.status).toBe(200);
    expect(r.domains!.names).toContain('acme.test');
    expect(r.missing!.status).toBe(404);
    expect(r.missing!.code).toBe('NOT_FOUND');
    expect(r.otp!.status).toBe(200);
    expect(r.verified!.status).toBe(200);
    expect(r.verified!.body).toMatchObject({ token: expect.stringMatching(/^pgs_/), user: { email: 'typed@example.test' } });
    expect(r.session!.status).toBe(200);
    expect(r.session!.signedInAs).toBe('typed@example.test');

    // Every field the calls got back is in the document, with its schema.
    const answers: Array<[string, string, number, unknown]> = [
      ['POST', '/v1/emails', 202, r.sent!.body],
      ['GET', '/v1/emails/{id}', 200, r.email!.body],
      ['GET', '/v1/domains', 200, r.domains!.body],
      ['GET', '/v1/emails/{id}', 404, r.missing!.body],
      ['POST', '/api/v1/auth/sign-in/email-otp/send', 200, r.otp!.body],
      ['POST', '/api/v1/auth/sign-in/email-otp/verify', 200, r.verified!.body],
      ['GET', '/api/v1/auth/session', 200, r.session!.body],
    ];
    for (const [method, p, status, body] of answers) {
      const schema = answerSchema(method, p, status);
      expect(schema, `${method} ${p} ${status}`).toBeDefined();
      expect(undocumented(schema, body), `${method} ${p} ${status}`).toEqual([]);
    }
  });
});
