// Plans, quotas, rate limits, pause, batch sends and analytics at the API.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack, type Project } from '../../helpers/stack.js';

let stack: Stack;
let n = 0;
const mail = (extra: Record<string, unknown> = {}) => ({
  from: 'Team <team@limits.test>',
  to: `u${++n}@example.test`,
  subject: `Hello ${n}`,
  text: 'Hi',
  ...extra,
});

async function project(slug: string): Promise<Project> {
  const p = await stack.createProject(slug);
  await stack.verifyDomain(slug, 'limits.test');
  return p;
}

beforeAll(async () => {
  stack = await Stack.start();
});
afterAll(async () => {
  await stack?.stop();
});

describe('rate limit', () => {
  it('answers 429 RATE_LIMIT_EXCEEDED with Retry-After and RateLimit headers past the per-second limit', async () => {
    const p = await project('rate');
    await stack.setPlan('rate', 'free', { rate: 5 });
    const answers = await Promise.all(Array.from({ length: 12 }, () => stack.api('GET', '/v1/suppressions', p.keys.live)));
    const ok = answers.filter((a) => a.status === 200);
    const limited = answers.filter((a) => a.status === 429);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    expect(ok.length).toBeLessThanOrEqual(10); // at most two one-second windows
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0]!.body).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', error: expect.any(String) });
    expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(limited[0]!.headers.get('ratelimit-limit')).toBe('5');
    expect(limited[0]!.headers.get('ratelimit-remaining')).toBe('0');
    expect(ok[0]!.headers.get('ratelimit-policy')).toBe('5;w=1');
  });

  it('the default plan allows 60 requests per second; pro raises it', async () => {
    const p = await project('rate-default');
    const list = JSON.parse(await stack.cli('plan', 'set', '--project', 'rate-default', '--plan', 'free', '--json'));
    expect(list.rate).toBe(60);
    const r = await stack.api('GET', '/v1/suppressions', p.keys.live);
    expect(r.headers.get('ratelimit-limit')).toBe('60');
    const pro = JSON.parse(await stack.cli('plan', 'set', '--project', 'rate-default', '--plan', 'pro', '--json'));
    expect(pro.rate).toBeGreaterThan(60);
    expect((await stack.api('GET', '/v1/suppressions', p.keys.live)).headers.get('ratelimit-limit')).toBe(String(pro.rate));
  });
});

describe('plans and quotas', () => {
  it('a new project starts on the free plan', async () => {
    await project('fresh');
    const list = (await stack.admin('GET', '/admin/v1/projects')).data;
    expect(list.find((x: any) => x.slug === 'fresh')).toMatchObject({ plan: 'free', status: 'active' });
  });

  it('QUOTA_EXCEEDED (429) once the daily quota is used; batches stop at the same line', async () => {
    const p = await project('quota');
    await stack.setPlan('quota', 'free', { daily_quota: 3 });
    for (let i = 0; i < 2; i++) expect((await stack.api('POST', '/v1/emails', p.keys.live, mail())).status).toBe(202);
    const batch = await stack.api('POST', '/v1/emails/batch', p.keys.live, [mail(), mail()]);
    expect(batch.status).toBe(202);
    expect(batch.body.data[0]).toEqual({ id: expect.any(String), status: 'queued' });
    expect(batch.body.data[1]).toMatchObject({ code: 'QUOTA_EXCEEDED' });
    const r = await stack.api('POST', '/v1/emails', p.keys.live, mail());
    expect(r.status).toBe(429);
    expect(r.body).toMatchObject({ code: 'QUOTA_EXCEEDED', error: expect.stringContaining('daily') });
    // Refusals for quota are not recorded as emails and do not count.
    await stack.setPlan('quota', 'free', { daily_quota: 4 });
    expect((await stack.api('POST', '/v1/emails', p.keys.live, mail())).status).toBe(202);
  });

  it('the monthly quota applies too', async () => {
    const p = await project('monthly');
    await stack.setPlan('monthly', 'pro', { monthly_quota: 1 });
    expect((await stack.api('POST', '/v1/emails', p.keys.live, mail())).status).toBe(202);
    const r = await stack.api('POST', '/v1/emails', p.keys.live, mail());
    expect(r.status).toBe(429);
    expect(r.body).toMatchObject({ code: 'QUOTA_EXCEEDED', error: expect.stringContaining('monthly') });
  });

  it('SUBSCRIPTION_REQUIRED (402) without an active plan', async () => {
    const p = await project('nosub');
    await stack.setPlan('nosub', 'none');
    const r = await stack.api('POST', '/v1/emails', p.keys.live, mail());
    expect(r.status).toBe(402);
    expect(r.body.code).toBe('SUBSCRIPTION_REQUIRED');
    await stack.setPlan('nosub', 'free');
    expect((await stack.api('POST', '/v1/emails', p.keys.live, mail())).status).toBe(202);
  });

  it('SENDING_PAUSED (403) while the operator has paused the project', async () => {
    const p = await project('paused');
    await stack.admin('POST', '/admin/v1/projects/paused/pause');
    const r = await stack.api('POST', '/v1/emails', p.keys.live, mail());
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('SENDING_PAUSED');
    // Reading still works while paused.
    expect((await stack.api('GET', '/v1/suppressions', p.keys.live)).status).toBe(200);
    await stack.cli('project', 'resume', '--project', 'paused');
    expect((await stack.api('POST', '/v1/emails', p.keys.live, mail())).status).toBe(202);
  });
});

describe('batch', () => {
  it('answers each item on its own, in request order', async () => {
    const p = await project('batch');
    const r = await stack.api('POST', '/v1/emails/batch', p.keys.live, [
      mail(),
      { ...mail(), to: 'not-an-address' },
      mail({ from: 'x@unverified.test' }),
      { subject: 'no from' },
      mail(),
    ]);
    expect(r.status).toBe(202);
    const d = r.body.data;
    expect(d).toHaveLength(5);
    expect(d[0]).toEqual({ id: expect.any(String), status: 'queued' });
    expect(d[1]).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(d[1].id).toBeUndefined();
    expect(d[2]).toMatchObject({ code: 'DOMAIN_NOT_VERIFIED', id: expect.any(String) });
    expect(d[3]).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(d[4]).toEqual({ id: expect.any(String), status: 'queued' });
    expect((await stack.api('GET', `/v1/emails/${d[0].id}`, p.keys.live)).status).toBe(200);
    expect((await stack.api('GET', `/v1/emails/${d[2].id}`, p.keys.live)).body.status).toBe('failed');
  });

  it('accepts 100 and refuses 101, an empty array and a non-array with 400', async () => {
    const p = await project('batch-size');
    await stack.setPlan('batch-size', 'pro');
    const ok = await stack.api(
      'POST',
      '/v1/emails/batch',
      p.keys.live,
      Array.from({ length: 100 }, () => mail()),
    );
    expect(ok.status).toBe(202);
    expect(ok.body.data.every((x: any) => x.status === 'queued')).toBe(true);
    expect(new Set(ok.body.data.map((x: any) => x.id)).size).toBe(100);
    for (const body of [Array.from({ length: 101 }, () => mail()), [], mail(), 'x']) {
      const r = await stack.api('POST', '/v1/emails/batch', p.keys.live, body);
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('INVALID_REQUEST');
    }
  });
});

describe('analytics', () => {
  it('counts each email once per status reached, today, this week and this month; 30 days of timeseries', async () => {
    const p = await project('stats');
    for (let i = 0; i < 3; i++) await stack.api('POST', '/v1/emails', p.keys.live, mail());
    await stack.api('POST', '/v1/emails', p.keys.live, mail({ from: 'a@unverified.test' }));
    const o = (await stack.api('GET', '/v1/analytics/overview', p.keys.live)).body;
    for (const period of ['today', 'week', 'month']) {
      expect(o[period].queued).toBe(3);
      expect(o[period].failed).toBe(1);
    }
    const ts = (await stack.api('GET', '/v1/analytics/timeseries', p.keys.live)).body.data;
    expect(ts).toHaveLength(30);
    const today = new Date().toISOString().slice(0, 10);
    expect(ts[29].date).toBe(today);
    expect(ts[29]).toMatchObject({ queued: 3, failed: 1 });
    expect(ts[0].date < ts[29].date).toBe(true);
    expect(ts.slice(0, 29).every((d: any) => d.queued === 0)).toBe(true);
    // Another project's analytics are its own.
    const other = await project('stats-other');
    expect((await stack.api('GET', '/v1/analytics/overview', other.keys.live)).body.today.queued).toBe(0);
  });
});
