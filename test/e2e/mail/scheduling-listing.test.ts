// Scheduled sends, listing and the Resend-shaped parts of the mail API, over real
// HTTP against a running stack: what a client written for Resend meets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Project } from '../../helpers/stack.js';

let stack: Stack;
let a: Project;
let b: Project;
let n = 0;
const to = () => `sched${++n}@example.test`;
const mail = (extra: Record<string, unknown> = {}) => ({ from: 'Acme <hello@acme.test>', to: to(), subject: 'Hi', text: 'Hello', ...extra });
const inSeconds = (s: number) => new Date(Date.now() + s * 1000).toISOString();

beforeAll(async () => {
  stack = await Stack.start();
  a = await stack.createProject('sched');
  b = await stack.createProject('sched-other');
  await stack.verifyDomain('sched', 'acme.test');
  await stack.setPlan('sched', 'free', { rate: 100000 });
});
afterAll(async () => {
  await stack?.stop();
});

describe('Resend-shaped requests and answers', () => {
  it('takes cc, bcc and reply_to as a string, and tags as {name, value}', async () => {
    const r = await stack.api(
      'POST',
      '/v1/emails',
      a.keys.live,
      mail({ cc: 'cc@example.test', bcc: 'bcc@example.test', tags: [{ name: 'category', value: 'welcome' }, 'plain'] }),
    );
    expect(r.status).toBe(202);
    const got = await stack.api('GET', `/v1/emails/${r.body.id}`, a.keys.live);
    expect(got.body).toMatchObject({ cc: ['cc@example.test'], bcc: ['bcc@example.test'], tags: ['category:welcome', 'plain'] });
  });

  it('errors carry name, message and statusCode beside error and code', async () => {
    const r = await stack.api('POST', '/v1/emails', a.keys.live, mail({ from: 'nope' }));
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'INVALID_REQUEST', name: 'validation_error', statusCode: 400 });
    expect(r.body.message).toBe(r.body.error);
    const nokey = await stack.api('GET', '/v1/emails', 'pg_live_nope');
    expect(nokey.status).toBe(401);
    expect(nokey.body).toMatchObject({ code: 'INVALID_API_KEY', name: 'invalid_api_key', statusCode: 401 });
    const none = await stack.api('GET', '/v1/emails/no-such-id', a.keys.live);
    expect(none.body).toMatchObject({ code: 'NOT_FOUND', name: 'not_found', statusCode: 404 });
  });

  it('GET /v1/emails/:id also has Resend fields', async () => {
    const r = await stack.api('POST', '/v1/emails', a.keys.live, mail({ html: '<p>Hi</p>' }));
    const got = await stack.api('GET', `/v1/emails/${r.body.id}`, a.keys.live);
    expect(got.body).toMatchObject({
      object: 'email',
      id: r.body.id,
      html: '<p>Hi</p>',
      text: 'Hello',
      scheduled_at: null,
      last_event: expect.any(String),
      message_id: `<${r.body.id}@acme.test>`,
    });
  });

  it('x-batch-validation strict refuses the whole batch (422) when one item is invalid; nothing is sent', async () => {
    const good = mail();
    const r = await stack.api('POST', '/v1/emails/batch', a.keys.live, [good, mail({ from: 'bad' })], { 'x-batch-validation': 'strict' });
    expect(r.status).toBe(422);
    expect(r.body).toMatchObject({ name: 'validation_error', statusCode: 422 });
    expect(r.body.message).toContain('[1]');
    const list = await stack.api('GET', '/v1/emails?limit=100', a.keys.live);
    expect(list.body.data.some((e: any) => e.to.includes(good.to))).toBe(false);
  });

  it('x-batch-validation permissive sends the valid items and lists the others by index', async () => {
    const r = await stack.api('POST', '/v1/emails/batch', a.keys.live, [mail(), mail({ to: 'bad' }), mail()], { 'x-batch-validation': 'permissive' });
    expect(r.status).toBe(202);
    expect(r.body.data).toHaveLength(2);
    expect(r.body.data.every((d: any) => typeof d.id === 'string')).toBe(true);
    expect(r.body.errors).toEqual([expect.objectContaining({ index: 1, message: expect.any(String), code: 'INVALID_REQUEST' })]);
    // Without the header: one answer per item, as the spec has it.
    const plain = await stack.api('POST', '/v1/emails/batch', a.keys.live, [mail(), mail({ to: 'bad' })]);
    expect(plain.status).toBe(202);
    expect(plain.body.data[1]).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(plain.body.errors).toBeUndefined();
    const odd = await stack.api('POST', '/v1/emails/batch', a.keys.live, [mail()], { 'x-batch-validation': 'sometimes' });
    expect(odd.status).toBe(400);
  });
});

describe('listing', () => {
  it('pages newest first with after/before and has_more, only the caller’s project', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await stack.api('POST', '/v1/emails', b.keys.live, mail({ tags: ['page'] }))).body.id);
    // b has no verified domain: the emails are recorded as failed, listed all the same.
    const first = await stack.api('GET', '/v1/emails?limit=2', b.keys.live);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ object: 'list', has_more: true });
    expect(first.body.data.map((e: any) => e.id)).toEqual([ids[4], ids[3]]);
    const second = await stack.api('GET', `/v1/emails?limit=2&after=${ids[3]}`, b.keys.live);
    expect(second.body.data.map((e: any) => e.id)).toEqual([ids[2], ids[1]]);
    const last = await stack.api('GET', `/v1/emails?limit=2&after=${ids[1]}`, b.keys.live);
    expect(last.body).toMatchObject({ has_more: false });
    expect(last.body.data.map((e: any) => e.id)).toEqual([ids[0]]);
    const back = await stack.api('GET', `/v1/emails?limit=2&before=${ids[1]}`, b.keys.live);
    expect(back.body.data.map((e: any) => e.id)).toEqual([ids[3], ids[2]]);
    expect(back.body.has_more).toBe(true);
    // Project a sees none of b's.
    const other = await stack.api('GET', '/v1/emails?limit=100&tag=page', a.keys.live);
    expect(other.body.data).toEqual([]);
  });

  it('filters by status, tag and creation range', async () => {
    const tagged = await stack.api('POST', '/v1/emails', a.keys.live, mail({ tags: [{ name: 'campaign', value: 'c42' }] }));
    const byTag = await stack.api('GET', '/v1/emails?tag=campaign:c42', a.keys.live);
    expect(byTag.body.data.map((e: any) => e.id)).toEqual([tagged.body.id]);
    const failed = await stack.api('GET', '/v1/emails?status=failed&limit=100', b.keys.live);
    expect(failed.body.data.length).toBeGreaterThanOrEqual(5);
    expect(failed.body.data.every((e: any) => e.status === 'failed' && e.last_event === 'failed')).toBe(true);
    const future = await stack.api('GET', `/v1/emails?since=${encodeURIComponent(inSeconds(3600))}`, a.keys.live);
    expect(future.body.data).toEqual([]);
    const past = await stack.api('GET', `/v1/emails?until=2000-01-01`, a.keys.live);
    expect(past.body.data).toEqual([]);
  });

  it('bad list parameters are 400 with a code', async () => {
    // A cursor that is no email id is refused too, not read as the first page.
    const cursors = ['after=not-an-id', 'before=not-an-id', 'after=', `after=${'0'.repeat(36)}`];
    for (const q of ['limit=0', 'limit=101', 'limit=x', 'status=lost', 'since=yesterday', 'after=a&before=b', 'color=red', ...cursors]) {
      const r = await stack.api('GET', `/v1/emails?${q}`, a.keys.live);
      expect(r.status, q).toBe(400);
      expect(r.body.code, q).toBe('INVALID_REQUEST');
    }
  });
});

describe('scheduled sending', () => {
  it('waits as scheduled, then leaves at its time', async () => {
    const r = await stack.api('POST', '/v1/emails', a.keys.live, mail({ scheduled_at: inSeconds(3) }));
    expect(r.status).toBe(202);
    expect(r.body.status).toBe('scheduled');
    const waiting = await stack.api('GET', `/v1/emails/${r.body.id}`, a.keys.live);
    expect(waiting.body).toMatchObject({ status: 'scheduled', last_event: 'scheduled', scheduled_at: expect.any(String) });
    const left = await stack.waitEmail(a.keys.live, r.body.id, (e) => e.status !== 'scheduled', 15_000);
    expect(left.events.map((e: any) => e.type)).toEqual(expect.arrayContaining(['scheduled', 'queued']));
  });

  it('can be rescheduled and canceled while scheduled, and not after', async () => {
    const r = await stack.api('POST', '/v1/emails', a.keys.live, mail({ scheduled_at: inSeconds(3600) }));
    const later = inSeconds(7200);
    const moved = await stack.api('PATCH', `/v1/emails/${r.body.id}`, a.keys.live, { scheduled_at: later });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ object: 'email', id: r.body.id });
    expect((await stack.api('GET', `/v1/emails/${r.body.id}`, a.keys.live)).body.scheduled_at).toBe(later);
    const canceled = await stack.api('POST', `/v1/emails/${r.body.id}/cancel`, a.keys.live);
    expect(canceled.status).toBe(200);
    const got = await stack.api('GET', `/v1/emails/${r.body.id}`, a.keys.live);
    expect(got.body).toMatchObject({ status: 'canceled', last_event: 'canceled' });
    expect(got.body.recipients.every((x: any) => x.status === 'canceled')).toBe(true);
    const again = await stack.api('POST', `/v1/emails/${r.body.id}/cancel`, a.keys.live);
    expect(again.status).toBe(409);
    // Resend's SDK types `name` with its own names only: conflict is not one of them.
    expect(again.body).toMatchObject({ code: 'CONFLICT', name: 'validation_error', statusCode: 409 });
    const late = await stack.api('PATCH', `/v1/emails/${r.body.id}`, a.keys.live, { scheduled_at: inSeconds(60) });
    expect(late.status).toBe(409);
    // Another project's key finds nothing.
    expect((await stack.api('POST', `/v1/emails/${r.body.id}/cancel`, b.keys.live)).status).toBe(404);
  });

  it('takes the times in words Resend takes, on a send, in a batch and on PATCH', async () => {
    const before = Date.now();
    const r = await stack.api('POST', '/v1/emails', a.keys.live, mail({ scheduled_at: 'in 1 min' }));
    expect([r.status, r.body.status]).toEqual([202, 'scheduled']);
    const at = Date.parse((await stack.api('GET', `/v1/emails/${r.body.id}`, a.keys.live)).body.scheduled_at);
    expect(at).toBeGreaterThanOrEqual(before + 60_000);
    expect(at).toBeLessThanOrEqual(Date.now() + 60_000);
    const batch = await stack.api('POST', '/v1/emails/batch', a.keys.live, [mail({ scheduled_at: 'tomorrow at 9am' }), mail({ scheduled_at: 'in 2 hours' })], {
      'x-batch-validation': 'strict',
    });
    expect(batch.status).toBe(202);
    expect(batch.body.data.map((d: any) => d.status)).toEqual(['scheduled', 'scheduled']);
    // 09:00 UTC of the day after the one the request was read on (either side of a midnight the test may cross).
    const nineAm = [before, Date.now()].map((t) => `${new Date(t + 86_400_000).toISOString().slice(0, 10)}T09:00:00.000Z`);
    expect(nineAm).toContain((await stack.api('GET', `/v1/emails/${batch.body.data[0].id}`, a.keys.live)).body.scheduled_at);
    const moved = await stack.api('PATCH', `/v1/emails/${r.body.id}`, a.keys.live, { scheduled_at: 'in 3 days' });
    expect(moved.status).toBe(200);
    const movedAt = Date.parse((await stack.api('GET', `/v1/emails/${r.body.id}`, a.keys.live)).body.scheduled_at);
    expect(movedAt - Date.now()).toBeGreaterThan(3 * 86_400_000 - 60_000);
    expect((await stack.api('POST', `/v1/emails/${r.body.id}/cancel`, a.keys.live)).status).toBe(200);
  });

  it('refuses times more than 30 days ahead and bad dates, saying which forms it takes', async () => {
    for (const scheduled_at of [inSeconds(31 * 86400), 'in 31 days', 'someday', 'tomorrow at 25pm', '2026-13-45T00:00:00Z', '2026-12-01T09:00:00']) {
      const r = await stack.api('POST', '/v1/emails', a.keys.live, mail({ scheduled_at }));
      expect(r.status, scheduled_at).toBe(400);
      expect(r.body.code).toBe('INVALID_REQUEST');
    }
    const r = await stack.api('POST', '/v1/emails', a.keys.live, mail({ scheduled_at: 'someday' }));
    expect(r.body.error).toContain('ISO 8601');
    expect(r.body.error).toContain('"in 1 min"');
    expect(r.body.error).toContain('"tomorrow at 9am"');
    const waiting = await stack.api('POST', '/v1/emails', a.keys.live, mail({ scheduled_at: 'in 1 hour' }));
    const patch = await stack.api('PATCH', `/v1/emails/${waiting.body.id}`, a.keys.live, { scheduled_at: 'whenever' });
    expect([patch.status, patch.body.code]).toEqual([400, 'INVALID_REQUEST']);
    expect(patch.body.error).toContain('"in 2 hours"');
    await stack.api('POST', `/v1/emails/${waiting.body.id}/cancel`, a.keys.live);
  });

  it('counts the quota when the email leaves, not when it is scheduled', async () => {
    const p = await stack.createProject('sched-quota');
    await stack.verifyDomain('sched-quota', 'acme.test');
    await stack.setPlan('sched-quota', 'free', { daily_quota: 1, rate: 100000 });
    // Two scheduled emails are accepted beyond a quota of one: nothing is counted yet.
    const s1 = await stack.api('POST', '/v1/emails', p.keys.live, mail({ scheduled_at: inSeconds(2) }));
    const s2 = await stack.api('POST', '/v1/emails', p.keys.live, mail({ scheduled_at: inSeconds(2) }));
    expect([s1.status, s2.status]).toEqual([202, 202]);
    const e1 = await stack.waitEmail(p.keys.live, s1.body.id, (e) => e.status !== 'scheduled', 15_000);
    const e2 = await stack.waitEmail(p.keys.live, s2.body.id, (e) => e.status !== 'scheduled', 15_000);
    const outcomes = [e1, e2].map((e) => (e.status === 'failed' ? e.error?.code : 'left'));
    expect(outcomes.sort()).toEqual(['QUOTA_EXCEEDED', 'left']);
  });

  it('survives a restart of control while scheduled', async () => {
    const r = await stack.api('POST', '/v1/emails', a.keys.live, mail({ scheduled_at: inSeconds(4) }));
    const old = stack.kill('control');
    await stack.waitRestart('control', old);
    const left = await stack.waitEmail(a.keys.live, r.body.id, (e) => e.status !== 'scheduled', 20_000);
    expect(left.events.some((e: any) => e.type === 'queued')).toBe(true);
  });
});
