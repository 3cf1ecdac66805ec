// control/mail/pipeline.ts on a real SQLite store: requests normalised (lists, trimmed addresses,
// tags, reserved headers refused, recipient limit), the plan, pause and sender-domain checks in that
// order (an unverified domain recorded as a failed email carrying its id), the store's refusals mapped
// to the spec's codes, the platform's own mail exempt, the dispatcher woken only for queued mail.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Caller } from '../../../control/api-keys/authenticate.js';
import { MailPipeline, type SendRequest } from '../../../control/mail/pipeline.js';
import { readRequest } from '../../../control/mail/vocabulary.js';
import { clock } from '../../../core/clock.js';
import { loadConfig } from '../../../core/config.js';
import type { ApiError } from '../../../core/errors.js';
import { unitStore, type UnitStore } from '../../helpers/unit-store.js';

let u: UnitStore;
let wakes: number;
let pipeline: MailPipeline;
const config = loadConfig({});
const req = (o: Partial<SendRequest> = {}): SendRequest => ({ from: 'Acme <hello@acme.test>', to: 'a@x.test', subject: 'Hi', text: 'hi', ...o });
const refused = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: ApiError) => e,
  );
const thrown = (f: () => unknown): ApiError | undefined => {
  try {
    f();
  } catch (e) {
    return e as ApiError;
  }
  return undefined;
};

async function verify(name: string, projectId = u.project.id) {
  const id = `dom_${name}`;
  await u.store.domains.create({
    id,
    projectId,
    name,
    status: 'pending',
    selector: 's',
    dkimPrivate: 'k',
    dkimPublic: 'p',
    records: [],
    createdAt: clock.now(),
  });
  await u.store.domains.update(id, 'verified', [], clock.now(), clock.now());
}

beforeEach(async () => {
  u = await unitStore();
  wakes = 0;
  pipeline = new MailPipeline(u.store, config, { wake: () => wakes++ });
  await verify('acme.test');
});
afterEach(() => u.close());

describe('normalize', () => {
  it('makes every address field a list of trimmed addresses, tags strings, bulk a boolean', () => {
    const n = pipeline.normalize(
      req({
        from: ' hello@acme.test ',
        to: ' a@x.test',
        cc: ['c@x.test'],
        reply_to: 'r@acme.test',
        tags: ['t', { name: 'k', value: 'v' }],
        headers: { 'X-Id': '1' },
      }),
    );
    expect(n).toEqual({
      from: 'hello@acme.test',
      to: ['a@x.test'],
      cc: ['c@x.test'],
      bcc: [],
      reply_to: ['r@acme.test'],
      subject: 'Hi',
      text: 'hi',
      tags: ['t', 'k:v'],
      headers: { 'X-Id': '1' },
      bulk: false,
    });
    expect('html' in n).toBe(false);
  });

  it('refuses bad addresses, naming the field, and a missing recipient', () => {
    expect(thrown(() => pipeline.normalize(req({ from: 'nobody' })))).toMatchObject({ code: 'INVALID_REQUEST', message: 'from is not a valid address' });
    expect(thrown(() => pipeline.normalize(req({ cc: ['ok@x.test', 'bad'] }))))?.toMatchObject({ message: 'cc contains an invalid address: "bad"' });
    expect(thrown(() => pipeline.normalize(req({ to: [] }))))?.toMatchObject({ message: 'to needs at least one recipient' });
  });

  it('refuses headers the service writes itself, in any case', () => {
    for (const h of ['From', 'message-id', 'DKIM-Signature', 'List-Unsubscribe']) {
      expect(thrown(() => pipeline.normalize(req({ headers: { [h]: 'x' } }))))?.toMatchObject({
        code: 'INVALID_REQUEST',
        message: `headers: ${h} is set by the service and cannot be given`,
      });
    }
  });

  it('refuses more recipients than the limit across to, cc and bcc together', () => {
    const max = config.limits.maxRecipients;
    const many = (n: number, p: string) => Array.from({ length: n }, (_, i) => `${p}${i}@x.test`);
    expect(thrown(() => pipeline.normalize(req({ to: many(max - 1, 't'), bcc: ['b@x.test'] })))).toBeUndefined();
    expect(thrown(() => pipeline.normalize(req({ to: many(max, 't'), bcc: ['b@x.test'] }))))?.toMatchObject({
      message: `at most ${max} recipients in to, cc and bcc together`,
    });
  });

  it('refuses an unreadable scheduled_at', () => {
    expect(thrown(() => pipeline.normalize(req({ scheduled_at: 'someday' }))))?.toMatchObject({ code: 'INVALID_REQUEST' });
  });
});

describe('send', () => {
  it('stores a queued email with its recipients once each, canonical, and wakes the dispatcher', async () => {
    const a = await pipeline.send(u.caller(), req({ to: ['a@X.TEST', 'b@x.test'], cc: 'a@x.test', bcc: 'B <b@x.test>' }));
    expect(a.status).toBe('queued');
    expect(wakes).toBe(1);
    const found = await u.store.emails.get(u.project.id, a.id);
    expect(found!.email.status).toBe('queued');
    expect(found!.recipients.map((r) => [r.address, r.kind])).toEqual([
      ['a@x.test', 'to'],
      ['b@x.test', 'to'],
    ]);
  });

  it('stores a scheduled email without waking the dispatcher', async () => {
    const a = await pipeline.send(u.caller(), req({ scheduled_at: new Date(clock.now() + 3600_000).toISOString() }));
    expect(a.status).toBe('scheduled');
    expect(wakes).toBe(0);
    expect((await u.store.emails.get(u.project.id, a.id))!.email.status).toBe('scheduled');
  });

  it('refuses a project without a subscription before anything else, recording nothing', async () => {
    const caller = u.caller();
    const e = await refused(
      pipeline.send({ ...caller, project: { ...caller.project, plan: 'none', status: 'paused' } } as Caller, req({ from: 'x@unverified.test' })),
    );
    expect(e).toMatchObject({ code: 'SUBSCRIPTION_REQUIRED' });
    expect((await u.store.emails.list(u.project.id, { limit: 10 }))!.emails ?? []).toHaveLength(0);
  });

  it('refuses a paused project before looking at the domain', async () => {
    await u.store.projects.setStatus(u.project.id, 'paused');
    const project = (await u.store.projects.byId(u.project.id))!;
    const e = await refused(pipeline.send(u.caller('live', 'all', project), req({ from: 'x@unverified.test' })));
    expect(e).toMatchObject({ code: 'SENDING_PAUSED', status: 403 });
    expect(wakes).toBe(0);
  });

  it('records an email from an unverified domain as failed and refuses it with the id', async () => {
    const e = (await refused(pipeline.send(u.caller(), req({ from: 'x@other.test' }))))!;
    expect(e).toMatchObject({ code: 'DOMAIN_NOT_VERIFIED' });
    expect(e.message).toContain('other.test');
    const id = e.extra.id as string;
    const found = await u.store.emails.get(u.project.id, id);
    expect(found!.email).toMatchObject({ status: 'failed', errorCode: 'DOMAIN_NOT_VERIFIED' });
    expect(found!.recipients.every((r) => r.status === 'failed')).toBe(true);
    expect(wakes).toBe(0);
  });

  it("maps the store's quota refusal to its code", async () => {
    const caller = u.caller();
    const limited = { ...caller, project: { ...caller.project, dailyQuota: 1 } } as Caller;
    await pipeline.send(limited, req());
    const e = await refused(pipeline.send(limited, req()));
    expect(e).toMatchObject({ code: 'QUOTA_EXCEEDED', status: 429 });
    expect(wakes).toBe(1);
  });

  it("lets the platform's own mail past plan, pause, domain and quota, marked system", async () => {
    const caller = u.caller();
    const odd = { ...caller, project: { ...caller.project, plan: 'none', status: 'paused', dailyQuota: 0 } } as Caller;
    const a = await pipeline.send(odd, req({ from: 'login@platform.test' }), { system: true });
    expect(a.status).toBe('queued');
    const found = await u.store.emails.get(u.project.id, a.id);
    expect(readRequest(found!.email.request).system).toBe(true);
  });

  it('uses the id an idempotency key reserved', async () => {
    const a = await pipeline.send(u.caller(), req(), { id: 'reserved-id-1' });
    expect(a.id).toBe('reserved-id-1');
  });
});

describe('submit and checkBatch', () => {
  it('checks the shape of a request from outside HTTP', async () => {
    // submit throws its shape refusal at once rather than rejecting (its callers await it in a try).
    const submit = (body: unknown) => refused(Promise.resolve().then(() => pipeline.submit(u.caller(), body)));
    expect(await submit({ from: 'hello@acme.test', subject: 'Hi', to: 'a@x.test' })).toMatchObject({
      code: 'INVALID_REQUEST',
      message: "request must have required property 'html'",
    });
    expect(await submit('not an object')).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(await submit({ from: 'hello@acme.test', to: 'a@x.test', subject: 'Hi', text: 'hi' })).toBeUndefined();
    expect(wakes).toBe(1);
  });

  it('refuses a whole batch naming every bad item', async () => {
    const e = await refused(pipeline.checkBatch(u.caller(), [req(), { from: 'nobody', to: 'a@x.test', subject: 's', text: 't' }, req({ to: [] })]));
    expect(e).toMatchObject({ code: 'BATCH_INVALID' });
    expect(e!.message).toContain('[1] from is not a valid address');
    expect(e!.message).toMatch(/\[2\] to /);
    expect(e!.message).not.toContain('[0]');
    expect(await refused(pipeline.checkBatch(u.caller(), [req(), req()]))).toBeUndefined();
  });
});

describe('sendMany', () => {
  it('keeps each outcome apart and wakes once', async () => {
    const out = await pipeline.sendMany(u.caller(), [req(), { from: 'nobody', to: 'a@x.test', subject: 's', text: 't' }, req({ from: 'x@other.test' })]);
    expect(out[0]).toMatchObject({ status: 'queued' });
    expect(out[1]).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(out[2]).toMatchObject({ code: 'DOMAIN_NOT_VERIFIED' });
    expect((out[2] as ApiError).extra.id).toEqual(expect.any(String));
    expect(wakes).toBe(1);
  });
});
