// Templates end to end, on SQLite and on PostgreSQL: the real `resend` SDK creates, reads, lists,
// updates, duplicates, publishes and removes them and sends with them (single and batch); SMTP
// (X-Postgate-Template headers) and gRPC send with them too. Mail goes through the gateway to a
// loopback MX found over loopback DNS, where the rendered message is read and its DKIM signature
// checked as a receiver does. Then the attacks: another project's ids and aliases, alias
// collisions, huge variables, and line breaks in a variable rendered into the subject.
import crypto from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import { Resend } from 'resend';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgateService, SendEmailRequestSchema, type SendEmailResponse } from '../../../proto/gen/postgate/v1/public_pb.js';
import { grpcClient, unary } from '../../../proto/grpc.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/cluster.js';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { messageIdOf, startMxSink, type MxSink } from '../../helpers/mx-sink.js';
import { Stack, type Project } from '../../helpers/stack.js';
import { authResults, publishDomain } from '../deliverability/helpers.js';

function templatesSuite(backend: 'sqlite' | 'postgres'): void {
  describe(`templates on ${backend}`, () => {
    let db: TestDatabase | undefined;
    let dns: DnsServer;
    let sink: MxSink;
    let stack: Stack;
    let p: Project;
    let other: Project;
    let resend: Resend;
    let n = 0;
    const to = () => `tpl${++n}@inbox.test`;

    const received = async (id: string) => {
      const until = Date.now() + 20_000;
      while (Date.now() < until) {
        const m = sink.messages.find((x) => messageIdOf(x) === id);
        if (m) return m;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`email ${id} never reached the receiving server`);
    };
    const api = (method: string, path: string, body?: unknown, key = p.keys.live) => stack.api(method, path, key, body);
    /** A published template of `p` with these fields; its id. */
    const published = async (fields: Record<string, unknown>) => {
      const c = await api('POST', '/v1/templates', { name: 'T', html: '<p>x</p>', ...fields });
      expect(c.status, JSON.stringify(c.body)).toBe(201);
      expect((await api('POST', `/v1/templates/${c.body.id}/publish`)).status).toBe(200);
      return c.body.id as string;
    };

    beforeAll(async () => {
      const env: Record<string, string> = {};
      if (backend === 'postgres') {
        db = await createTestDatabase('pg_test');
        env.POSTGATE_DATABASE_URL = db.url;
        env.POSTGATE_SECRET = crypto.randomBytes(32).toString('hex');
      }
      sink = await startMxSink();
      dns = await startDnsServer([
        { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
        { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
      ]);
      stack = await Stack.start({
        env: { ...env, POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port), POSTGATE_SENDING_IPS: '127.0.0.1' },
        config: { limits: { maxBodyBytes: 200_000 } },
      });
      p = await stack.createProject('tpl');
      await stack.setPlan('tpl', 'scale', { rate: 100000 });
      await publishDomain(stack, p.keys.live, dns, 'acme.test');
      other = await stack.createProject('tpl-other');
      await stack.setPlan('tpl-other', 'scale', { rate: 100000 });
      await stack.verifyDomain('tpl-other', 'other.test');
      resend = new Resend(p.keys.live, { baseUrl: `${stack.url}/v1` });
    });
    afterAll(async () => {
      await stack?.stop();
      await sink?.close();
      await dns?.close();
      await db?.drop();
    });

    it('the SDK: create, get, list, update, duplicate, publish, remove', async () => {
      const created = await resend.templates.create({
        name: 'order-confirmation',
        alias: 'order-confirmation',
        from: 'Acme Store <store@acme.test>',
        subject: 'Thanks for your order, {{{NAME}}}!',
        replyTo: 'help@acme.test',
        html: '<p>Name: {{{PRODUCT}}}</p><p>Total: {{{PRICE}}}</p><p>Hi {{NAME}}</p>',
        text: 'Name: {{{PRODUCT}}} Total: {{{PRICE}}}',
        variables: [
          { key: 'PRODUCT', type: 'string', fallbackValue: 'item' },
          { key: 'PRICE', type: 'number', fallbackValue: 25 },
          { key: 'NAME', type: 'string' },
        ],
      });
      expect(created.error).toBeNull();
      const id = created.data!.id;
      expect(created.data).toEqual({ object: 'template', id });

      const got = await resend.templates.get('order-confirmation');
      expect(got.error).toBeNull();
      expect(got.data).toMatchObject({
        object: 'template',
        id,
        name: 'order-confirmation',
        alias: 'order-confirmation',
        status: 'draft',
        published_at: null,
        from: 'Acme Store <store@acme.test>',
        subject: 'Thanks for your order, {{{NAME}}}!',
        reply_to: ['help@acme.test'],
        text: 'Name: {{{PRODUCT}}} Total: {{{PRICE}}}',
        has_unpublished_versions: false,
        current_version_id: expect.any(String),
      });
      expect(got.data!.variables).toEqual([
        { key: 'PRODUCT', type: 'string', fallback_value: 'item', created_at: expect.any(String), updated_at: expect.any(String) },
        { key: 'PRICE', type: 'number', fallback_value: 25, created_at: expect.any(String), updated_at: expect.any(String) },
        { key: 'NAME', type: 'string', fallback_value: null, created_at: expect.any(String), updated_at: expect.any(String) },
      ]);

      // Never published: sends nothing, and says why.
      const early = await resend.emails.send({ to: to(), template: { id: 'order-confirmation', variables: { NAME: 'Ann' } } });
      expect(early.error).toMatchObject({ name: 'validation_error', statusCode: 422 });
      expect(early.error!.message).toMatch(/is not published/);

      const pub = await resend.templates.publish(id);
      expect(pub).toMatchObject({ data: { object: 'template', id }, error: null });
      const after = (await resend.templates.get(id)).data!;
      expect(after).toMatchObject({ status: 'published', has_unpublished_versions: false, published_at: expect.any(String) });

      const updated = await resend.templates.update('order-confirmation', { name: 'Order confirmation', html: '<p>v2 {{{PRODUCT}}}</p>' });
      expect(updated).toMatchObject({ data: { object: 'template', id }, error: null });
      expect((await resend.templates.get(id)).data).toMatchObject({
        name: 'Order confirmation',
        status: 'published',
        has_unpublished_versions: true,
        html: '<p>v2 {{{PRODUCT}}}</p>',
      });

      const dup = await resend.templates.duplicate(id);
      expect(dup.error).toBeNull();
      expect((await resend.templates.get(dup.data!.id)).data).toMatchObject({
        name: 'Order confirmation (Copy)',
        alias: null,
        status: 'draft',
        html: '<p>v2 {{{PRODUCT}}}</p>',
      });

      // The chainable forms: create(...).publish() and duplicate(...).publish().
      const chained = await resend.templates.create({ name: 'chained', html: '<p>hi</p>' }).publish();
      expect(chained.error).toBeNull();
      expect((await resend.templates.get(chained.data!.id)).data!.status).toBe('published');

      const list = await resend.templates.list({ limit: 2 });
      expect(list.error).toBeNull();
      expect(list.data).toMatchObject({ object: 'list', has_more: true });
      expect(list.data!.data.map((t) => t.id)).toEqual([chained.data!.id, dup.data!.id]);
      const next = await resend.templates.list({ limit: 2, after: dup.data!.id });
      expect(next.data!.data[0]).toMatchObject({ id, name: 'Order confirmation', alias: 'order-confirmation', status: 'published' });

      const removed = await resend.templates.remove(dup.data!.id);
      expect(removed).toMatchObject({ data: { object: 'template', id: dup.data!.id, deleted: true }, error: null });
      expect((await resend.templates.get(dup.data!.id)).error).toMatchObject({ statusCode: 404 });
    });

    it('emails.send with a template: the receiver gets the rendered mail, DKIM verifies, GET shows what was sent', async () => {
      const id = await published({
        alias: 'welcome',
        from: 'Acme <hello@acme.test>',
        subject: 'Welcome, {{{NAME}}}',
        reply_to: 'help@acme.test',
        html: '<h1>Hi {{NAME}}</h1><p>{{{NOTE}}}</p><p>{{{PRICE}}} EUR</p>',
        text: 'Hi {{NAME}}, {{{PRICE}}} EUR',
        variables: [
          { key: 'NAME', type: 'string' },
          { key: 'NOTE', type: 'string', fallback_value: '<b>bold</b>' },
          { key: 'PRICE', type: 'number', fallback_value: 10 },
        ],
      });
      const rcpt = to();
      const sent = await resend.emails.send({ to: rcpt, template: { id: 'welcome', variables: { NAME: 'Ann <& "Co">', PRICE: 12.5 } } });
      expect(sent.error).toBeNull();
      const got = await received(sent.data!.id);
      const m = await simpleParser(got.raw);
      expect(m.subject).toBe('Welcome, Ann <& "Co">');
      expect(m.from?.value).toEqual([{ name: 'Acme', address: 'hello@acme.test' }]);
      expect(m.replyTo?.text).toBe('help@acme.test');
      expect(m.html).toContain('<h1>Hi Ann &#60;&#38; &#34;Co&#34;&#62;</h1><p><b>bold</b></p><p>12.5 EUR</p>');
      expect(m.text?.trim()).toBe('Hi Ann <& "Co">, 12.5 EUR');
      expect((await authResults(got.raw, got.mailFrom, dns)).dkim).toEqual(['pass']);

      const view = (await api('GET', `/v1/emails/${sent.data!.id}`)).body;
      expect(view).toMatchObject({ subject: 'Welcome, Ann <& "Co">', from: 'Acme <hello@acme.test>', text: 'Hi Ann <& "Co">, 12.5 EUR' });
      expect(view.html).toContain('<p><b>bold</b></p>');

      // The request's own from and subject win over the template's; the id works as the alias does.
      const own = await resend.emails.send({ from: 'Other <other@acme.test>', subject: 'Own subject', to: to(), template: { id, variables: { NAME: 'Bo' } } });
      expect(own.error).toBeNull();
      const m2 = await simpleParser((await received(own.data!.id)).raw);
      expect([m2.subject, m2.from?.value[0]?.address]).toEqual(['Own subject', 'other@acme.test']);
    });

    it('editing a published template sends the published version until it is published again', async () => {
      const id = await published({ alias: 'versions', from: 'Acme <hello@acme.test>', subject: 'Version', html: '<p>one</p>' });
      expect((await api('PATCH', '/v1/templates/versions', { html: '<p>two</p>' })).status).toBe(200);
      const first = await api('POST', '/v1/emails', { to: to(), template: { id: 'versions' } });
      expect(first.status, JSON.stringify(first.body)).toBe(202);
      expect((await simpleParser((await received(first.body.id)).raw)).html).toContain('<p>one</p>');
      expect((await api('POST', `/v1/templates/${id}/publish`)).status).toBe(200);
      const second = await api('POST', '/v1/emails', { to: to(), template: { id: 'versions' } });
      expect((await simpleParser((await received(second.body.id)).raw)).html).toContain('<p>two</p>');
    });

    it('batch.send with templates (strict, as the SDK sends it): every item rendered; one bad item refuses the batch', async () => {
      await published({
        alias: 'batch',
        from: 'Acme <hello@acme.test>',
        subject: 'For {{{WHO}}}',
        html: '<p>{{WHO}}</p>',
        variables: [{ key: 'WHO', type: 'string' }],
      });
      const r1 = to();
      const r2 = to();
      const batch = await resend.batch.send([
        { to: r1, template: { id: 'batch', variables: { WHO: 'one' } } },
        { to: r2, template: { id: 'batch', variables: { WHO: '<two>' } } },
        { from: 'Acme <hello@acme.test>', to: to(), subject: 'plain', html: '<p>plain</p>' },
      ]);
      expect(batch.error).toBeNull();
      const ids = batch.data!.data.map((d) => d.id);
      expect(ids).toHaveLength(3);
      const m2 = await simpleParser((await received(ids[1]!)).raw);
      expect([m2.subject, (m2.html || '').trim()]).toEqual(['For <two>', '<p>&#60;two&#62;</p>']);
      expect((await simpleParser((await received(ids[0]!)).raw)).subject).toBe('For one');
      await received(ids[2]!);

      const before = sink.messages.length;
      const bad = await resend.batch.send([
        { to: to(), template: { id: 'batch', variables: { WHO: 'ok' } } },
        { to: to(), template: { id: 'batch' } },
      ]);
      expect(bad.error).toMatchObject({ statusCode: 422 });
      expect(bad.error!.message).toMatch(/\[1\] template "batch": variable WHO has no fallback_value/);
      // Without the header each item has its own answer: the good one goes, the bad one says why.
      const mixed = await api('POST', '/v1/emails/batch', [
        { to: to(), template: { id: 'batch', variables: { WHO: 'ok' } } },
        { to: to(), template: { id: 'nope' } },
      ]);
      expect(mixed.body.data[0]).toMatchObject({ id: expect.any(String) });
      expect(mixed.body.data[1]).toMatchObject({ code: 'TEMPLATE_INVALID' });
      await received(mixed.body.data[0].id);
      expect(sink.messages.length).toBe(before + 1);
    });

    it('refuses with 422 what cannot render: undeclared at create, required missing, wrong type, unknown template', async () => {
      const undeclared = await api('POST', '/v1/templates', { name: 'x', html: '<p>{{{GHOST}}}</p>' });
      expect(undeclared.status).toBe(422);
      expect(undeclared.body).toMatchObject({ code: 'TEMPLATE_INVALID', name: 'validation_error' });
      expect(undeclared.body.error).toBe("Variable 'GHOST' is used in the template but not defined in the variables list");
      const wrongFallback = await api('POST', '/v1/templates', {
        name: 'x',
        html: '<p>{{{N}}}</p>',
        variables: [{ key: 'N', type: 'number', fallback_value: 'ten' }],
      });
      expect(wrongFallback.status).toBe(422);
      const reserved = await api('POST', '/v1/templates', { name: 'x', html: '<p>{{{EMAIL}}}</p>', variables: [{ key: 'EMAIL', type: 'string' }] });
      expect(reserved.body.error).toBe('variable key EMAIL is reserved');

      await published({
        alias: 'strict',
        from: 'Acme <hello@acme.test>',
        subject: 'S',
        html: '<p>{{{N}}} {{{S}}}</p>',
        variables: [
          { key: 'N', type: 'number' },
          { key: 'S', type: 'string', fallback_value: 'x' },
        ],
      });
      const cases: Array<[unknown, RegExp]> = [
        [{ id: 'strict' }, /variable N has no fallback_value and was not given/],
        [{ id: 'strict', variables: { N: '5' } }, /variable N must be a number/],
        [{ id: 'strict', variables: { N: 5, S: 6 } }, /variable S must be a string/],
        [{ id: 'no-such-template' }, /template "no-such-template" not found/],
      ];
      for (const [template, message] of cases) {
        const r = await api('POST', '/v1/emails', { to: to(), template });
        expect([r.status, r.body.code], JSON.stringify(r.body)).toEqual([422, 'TEMPLATE_INVALID']);
        expect(r.body.error).toMatch(message);
      }
      // html or text beside a template is a contradiction; a send without either and without a template is incomplete.
      expect((await api('POST', '/v1/emails', { to: to(), html: '<p>x</p>', template: { id: 'strict', variables: { N: 1 } } })).status).toBe(400);
      expect((await api('POST', '/v1/emails', { from: 'a@acme.test', to: to(), subject: 's' })).body.error).toMatch(/html/);
      // A template without from or subject, and a request without them: refused, saying which.
      await published({ alias: 'bare', html: '<p>bare</p>' });
      expect((await api('POST', '/v1/emails', { to: to(), template: { id: 'bare' } })).body.error).toMatch(/from is missing/);
      expect((await api('POST', '/v1/emails', { from: 'a@acme.test', to: to(), template: { id: 'bare' } })).body.error).toMatch(/subject is missing/);
    });

    it("another project's template is not found by id or alias, for the API or for sending", async () => {
      const id = await published({ alias: 'mine', from: 'Acme <hello@acme.test>', subject: 'S', html: '<p>secret</p>' });
      for (const name of [id, 'mine']) {
        for (const [method, path] of [
          ['GET', `/v1/templates/${name}`],
          ['PATCH', `/v1/templates/${name}`],
          ['DELETE', `/v1/templates/${name}`],
          ['POST', `/v1/templates/${name}/publish`],
          ['POST', `/v1/templates/${name}/duplicate`],
        ] as const) {
          const r = await api(method, path, method === 'PATCH' ? { name: 'stolen' } : undefined, other.keys.live);
          expect([method, path, r.status]).toEqual([method, path, 404]);
        }
        const send = await api('POST', '/v1/emails', { from: 'x@other.test', subject: 's', to: to(), template: { id: name } }, other.keys.live);
        expect([send.status, send.body.code]).toEqual([422, 'TEMPLATE_INVALID']);
      }
      expect((await api('GET', `/v1/templates/${id}`)).body).toMatchObject({ name: 'T', html: '<p>secret</p>' });
      // Other projects' lists hold none of ours; a cursor from another project names nothing here.
      expect((await api('GET', '/v1/templates', undefined, other.keys.live)).body.data).toEqual([]);
      expect((await api('GET', `/v1/templates?after=${id}`, undefined, other.keys.live)).status).toBe(400);
      // Without a key, or with a wrong one: 401.
      expect((await stack.api('GET', '/v1/templates', undefined)).status).toBe(401);
      expect((await stack.api('GET', '/v1/templates', 're_wrong')).status).toBe(401);
    });

    it('aliases: unique in a project (409), free across projects, never shaped like an id', async () => {
      expect((await api('POST', '/v1/templates', { name: 'a', alias: 'taken', html: '<p>a</p>' })).status).toBe(201);
      const dup = await api('POST', '/v1/templates', { name: 'b', alias: 'taken', html: '<p>b</p>' });
      expect([dup.status, dup.body.code]).toEqual([409, 'CONFLICT']);
      const b = await api('POST', '/v1/templates', { name: 'b', html: '<p>b</p>' });
      expect((await api('PATCH', `/v1/templates/${b.body.id}`, { alias: 'taken' })).status).toBe(409);
      expect((await api('POST', '/v1/templates', { name: 'c', alias: 'taken', html: '<p>c</p>' }, other.keys.live)).status).toBe(201);
      expect((await api('POST', '/v1/templates', { name: 'd', alias: crypto.randomUUID(), html: '<p>d</p>' })).status).toBe(400);
      for (const alias of ['', 'has space', '../etc', 'a\r\nb', 'x'.repeat(129)]) {
        expect([alias, (await api('POST', '/v1/templates', { name: 'e', alias, html: '<p>e</p>' })).status]).toEqual([alias, 400]);
      }
    });

    it('huge variables: a value past the limits, or a place repeated to grow the email past them, is refused; nothing breaks', async () => {
      await published({
        alias: 'amplify',
        from: 'Acme <hello@acme.test>',
        subject: '{{{S}}}',
        html: '{{{V}}}'.repeat(1000),
        variables: [
          { key: 'V', type: 'string' },
          { key: 'S', type: 'string', fallback_value: 's' },
        ],
      });
      const grow = await api('POST', '/v1/emails', { to: to(), template: { id: 'amplify', variables: { V: 'x'.repeat(1000) } } });
      expect([grow.status, grow.body.code]).toEqual([422, 'TEMPLATE_INVALID']);
      expect(grow.body.error).toMatch(/rendered html is longer than 200000 characters/);
      const longSubject = await api('POST', '/v1/emails', { to: to(), template: { id: 'amplify', variables: { V: 'v', S: 's'.repeat(2000) } } });
      expect(longSubject.body.error).toMatch(/rendered subject is longer than 998/);
      const tooLong = await api('POST', '/v1/emails', { to: to(), template: { id: 'amplify', variables: { V: 'x'.repeat(200_001) } } });
      expect(tooLong.status).toBe(400);
      const many = Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`K${i}`, 'v']));
      expect((await api('POST', '/v1/emails', { to: to(), template: { id: 'amplify', variables: { ...many, V: 'v' } } })).status).toBe(400);
      expect((await api('GET', '/v1/templates/amplify')).status).toBe(200);
    });

    it('line breaks in a variable rendered into the subject create no header', async () => {
      await published({
        alias: 'inject',
        from: 'Acme <hello@acme.test>',
        subject: 'Order {{{REF}}}',
        html: '<p>{{REF}}</p>',
        variables: [{ key: 'REF', type: 'string' }],
      });
      const sent = await api('POST', '/v1/emails', {
        to: to(),
        template: { id: 'inject', variables: { REF: '1\r\nBcc: victim@evil.test\r\nX-Injected: yes\n\n<p>body</p>' } },
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
      const got = await received(sent.body.id);
      expect(got.rcptTo).toHaveLength(1);
      const m = await simpleParser(got.raw);
      expect(m.headers.has('x-injected')).toBe(false);
      expect(m.headers.has('bcc')).toBe(false);
      expect(m.subject).toBe('Order 1 Bcc: victim@evil.test X-Injected: yes <p>body</p>');
      expect(m.html).toContain('&#60;p&#62;body&#60;/p&#62;');
      expect((await authResults(got.raw, got.mailFrom, dns)).dkim).toEqual(['pass']);
    });

    it('SMTP: X-Postgate-Template and X-Postgate-Template-Variables render the template and are not passed on', async () => {
      await published({
        alias: 'smtp',
        from: 'Acme <hello@acme.test>',
        subject: 'SMTP {{{WHO}}}',
        html: '<p>Hi {{WHO}}</p>',
        text: 'Hi {{WHO}}',
        variables: [
          { key: 'WHO', type: 'string' },
          { key: 'N', type: 'number', fallback_value: 1 },
        ],
      });
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: Number(stack.env.POSTGATE_SMTP_PORT),
        auth: { user: 'anything', pass: p.keys.live },
        tls: { rejectUnauthorized: false },
      });
      try {
        const rcpt = to();
        const info = await transport.sendMail({
          from: 'Acme <hello@acme.test>',
          to: rcpt,
          text: 'this body is replaced',
          headers: { 'X-Postgate-Template': 'smtp', 'X-Postgate-Template-Variables': JSON.stringify({ WHO: 'Zo\u00eb <z>', N: 3 }) },
        });
        const id = /queued as ([0-9a-f-]{36})/.exec(info.response)?.[1];
        expect(id, info.response).toBeDefined();
        const got = await received(id!);
        const raw = got.raw.toString('latin1');
        expect(raw).not.toMatch(/x-postgate-template/i);
        const m = await simpleParser(got.raw);
        expect([m.subject, (m.html || '').trim(), m.text?.trim()]).toEqual(['SMTP Zo\u00eb <z>', '<p>Hi Zo\u00eb &#60;z&#62;</p>', 'Hi Zo\u00eb <z>']);
        expect((await authResults(got.raw, got.mailFrom, dns)).dkim).toEqual(['pass']);
        // A wrong template or bad JSON is refused at DATA with the reason.
        const bad = await transport
          .sendMail({
            from: 'Acme <hello@acme.test>',
            to: to(),
            text: 'x',
            headers: { 'X-Postgate-Template': 'smtp', 'X-Postgate-Template-Variables': '{not json' },
          })
          .catch((e: Error) => e);
        expect(String(bad)).toMatch(/must be a JSON object/);
        const missing = await transport
          .sendMail({ from: 'Acme <hello@acme.test>', to: to(), text: 'x', headers: { 'X-Postgate-Template': 'nope' } })
          .catch((e: Error) => e);
        expect(String(missing)).toMatch(/template "nope" not found/);
      } finally {
        transport.close();
      }
    });

    it('gRPC SendEmail with a template (typed values)', async () => {
      await published({
        alias: 'grpc',
        from: 'Acme <hello@acme.test>',
        subject: 'gRPC {{{WHO}}} {{{N}}}',
        html: '<p>{{WHO}}</p>',
        variables: [
          { key: 'WHO', type: 'string' },
          { key: 'N', type: 'number' },
        ],
      });
      const client = grpcClient(PostgateService, `127.0.0.1:${stack.env.POSTGATE_GRPC_PORT}`);
      const md = new grpc.Metadata();
      md.set('x-service-key', p.keys.live);
      try {
        const res = await unary<SendEmailResponse>(
          client,
          'sendEmail',
          create(SendEmailRequestSchema, {
            to: [to()],
            template: { id: 'grpc', variables: { WHO: { value: { case: 'stringValue', value: 'Gil' } }, N: { value: { case: 'numberValue', value: 7 } } } },
          }),
          md,
        );
        expect(res).toMatchObject({ status: 'queued', error: '' });
        const m = await simpleParser((await received(res.id)).raw);
        expect([m.subject, (m.html || '').trim()]).toEqual(['gRPC Gil 7', '<p>Gil</p>']);
        const wrong = await unary<SendEmailResponse>(
          client,
          'sendEmail',
          create(SendEmailRequestSchema, { to: [to()], template: { id: 'grpc', variables: { WHO: { value: { case: 'numberValue', value: 1 } } } } }),
          md,
        ).catch((e: grpc.ServiceError) => e);
        expect(wrong).toMatchObject({ code: grpc.status.FAILED_PRECONDITION });
        expect((wrong as grpc.ServiceError).metadata.get('x-postgate-code')).toEqual(['TEMPLATE_INVALID']);
      } finally {
        client.close();
      }
    });
  });
}

templatesSuite('sqlite');
templatesSuite('postgres');
