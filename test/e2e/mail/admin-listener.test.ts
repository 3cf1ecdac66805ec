// The admin API lives on its own listener (loopback by default): the public listener does
// not know its routes, the CLI reaches it, and wrong tokens are logged and throttled per
// address, so the admin token cannot be guessed through the public port or at speed.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Stack } from '../../helpers/stack.js';
import { until } from '../../helpers/until.js';

let stack: Stack;
let token: string;

beforeAll(async () => {
  stack = await Stack.start();
  token = fs.readFileSync(path.join(stack.dataDir, 'admin-token'), 'utf8').trim();
});
afterAll(async () => {
  await stack?.stop();
});

describe('admin listener', () => {
  it('the public listener has no admin routes, even with the right token', async () => {
    for (const [method, p] of [
      ['GET', '/admin/v1/projects'],
      ['POST', '/admin/v1/projects'],
      ['GET', '/admin/v1/throttles'],
      ['POST', '/admin/v1/test/clock'],
    ] as const) {
      const r = await stack.api(method, p, token, method === 'POST' ? { name: 'x', slug: 'x' } : undefined);
      expect(r.status, `${method} ${p}`).toBe(404);
      expect(r.body.code).toBe('NOT_FOUND');
    }
    // Health and metrics stay on both.
    expect((await stack.api('GET', '/healthz', undefined)).status).toBe(200);
    expect((await stack.adminApi('GET', '/healthz', undefined)).status).toBe(200);
    expect((await stack.adminApi('GET', '/metrics', undefined)).status).toBe(200);
  });

  it("/metrics tells where control's memory is: resident, the JavaScript heap (used of committed), outside the heap", async () => {
    const text = (await stack.adminApi('GET', '/metrics', undefined)).body as string;
    const gauge = (name: string) => {
      expect(text).toContain(`# TYPE ${name} gauge`);
      return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
    };
    const rss = gauge('postgate_process_rss_bytes');
    const used = gauge('postgate_process_heap_used_bytes');
    const total = gauge('postgate_process_heap_total_bytes');
    const external = gauge('postgate_process_external_bytes');
    expect(used).toBeGreaterThan(1 << 20);
    expect(used).toBeLessThanOrEqual(total);
    expect(total).toBeLessThan(rss);
    expect(external).toBeGreaterThan(0);
  });

  it('the CLI and the admin API work on the admin listener, bound to loopback by default', async () => {
    const out = JSON.parse(await stack.cli('project', 'create', '--name', 'Admin', '--slug', 'adm', '--json'));
    expect(out.slug).toBe('adm');
    const list = await stack.admin('GET', '/admin/v1/projects');
    expect(list.data.map((x: { slug: string }) => x.slug)).toContain('adm');
    expect(stack.tail(400)).toMatch(/"admin":"127\.0\.0\.1:\d+"/);
  });

  it('logs wrong tokens without the token, and refuses an address after 10 of them, the right token too', async () => {
    const guess = `pga_guess_${'x'.repeat(30)}`;
    const answers: number[] = [];
    for (let i = 0; i < 10; i++) answers.push((await stack.adminApi('GET', '/admin/v1/projects', guess)).status);
    expect(answers).toEqual(Array(10).fill(401));
    const refused = await stack.adminApi('GET', '/admin/v1/projects', token);
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const missing = await stack.adminApi('GET', '/admin/v1/projects', undefined);
    expect(missing.status).toBe(429);

    // Control's log reaches the stack's file through the supervisor a moment after the answers: wait for it (5 s at most).
    const refusals = () =>
      stack
        .tail(2000)
        .split('\n')
        .filter((l) => l.includes('admin API: wrong or missing token'));
    await until(() => refusals().length >= 10, 5000, 'ten refusal lines in the log');
    const log = stack.tail(2000);
    const lines = refusals();
    expect(lines).toHaveLength(10);
    expect(JSON.parse(lines[0]!)).toMatchObject({ ip: '127.0.0.1', method: 'GET', path: '/admin/v1/projects', presented: true });
    expect(log).not.toContain(guess);
    const metrics = (await stack.adminApi('GET', '/metrics', undefined)).body as string;
    expect(metrics).toMatch(/postgate_admin_refused_total\{reason="token"\} 10/);
    expect(metrics).toMatch(/postgate_admin_refused_total\{reason="throttled"\} 2/);
  });
});
