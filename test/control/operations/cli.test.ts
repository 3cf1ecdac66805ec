// control/operations/cli.ts: the --for durations `queue suspend` takes, and the bodies the queue
// commands send to the admin API (a CliContext recording its calls, no process or network).
import { describe, expect, it } from 'vitest';
import { CliError, type CliContext } from '../../../core/cli-commands.js';
import { durationMs, queueControlCommands } from '../../../control/operations/cli.js';

function context(opts: Record<string, string | boolean>, answers: Record<string, unknown> = {}) {
  const calls: Array<[string, string, unknown]> = [];
  const c: CliContext = {
    opts,
    positionals: [],
    async call(method, path, body) {
      calls.push([method, path, body]);
      return answers[`${method} ${path}`] ?? {};
    },
    need(name) {
      const v = opts[name];
      if (typeof v !== 'string') throw new CliError(`--${name} is required`);
      return v;
    },
    slug: () => encodeURIComponent(c.need('project')),
    table: (rows) => JSON.stringify(rows),
    fail(message) {
      throw new CliError(message);
    },
  };
  return { c, calls };
}

describe('queue commands', () => {
  it('--for takes seconds, minutes, hours or days, nothing else', () => {
    expect([durationMs('90s'), durationMs('30m'), durationMs('2h'), durationMs('1d')]).toEqual([90_000, 1_800_000, 7_200_000, 86_400_000]);
    for (const bad of ['', '30', '0m', '1w', '-5m', '1.5h']) expect(() => durationMs(bad), bad).toThrow(CliError);
  });

  it('suspend sends the provider, project, end and reason; needs one of provider and project, not --until with --for', async () => {
    const { c, calls } = context({ provider: 'google', for: '30m', reason: 'incident' });
    const t0 = Date.now();
    await queueControlCommands['queue suspend']!.run(c);
    const [method, path, body] = calls[0]!;
    expect([method, path]).toEqual(['POST', '/admin/v1/queue/suspensions']);
    expect(body).toMatchObject({ provider: 'google', reason: 'incident' });
    expect(Date.parse((body as { until: string }).until) - t0).toBeGreaterThanOrEqual(1_800_000);
    await expect(queueControlCommands['queue suspend']!.run(context({}).c)).rejects.toThrow(/--provider, --project or both/);
    await expect(queueControlCommands['queue suspend']!.run(context({ project: 'acme', until: '2030-01-01T00:00:00Z', for: '1h' }).c)).rejects.toThrow(
      /not both/,
    );
  });

  it('resume by provider/project ends exactly the suspensions naming them; none is an error', async () => {
    const list = {
      data: [
        { id: 'sus_a', provider: 'google', project: null },
        { id: 'sus_b', provider: 'google', project: 'acme' },
        { id: 'sus_c', provider: null, project: 'acme' },
      ],
    };
    const { c, calls } = context({ provider: 'google' }, { 'GET /admin/v1/queue/suspensions': list });
    await queueControlCommands['queue resume']!.run(c);
    expect(calls.slice(1).map(([m, p]) => `${m} ${p}`)).toEqual(['DELETE /admin/v1/queue/suspensions/sus_a']);
    await expect(queueControlCommands['queue resume']!.run(context({ provider: 'yahoo' }, { 'GET /admin/v1/queue/suspensions': list }).c)).rejects.toThrow(
      /no suspension/,
    );
  });

  it('cancel and send-now call their routes', async () => {
    const { c, calls } = context({ project: 'acme', provider: 'google' });
    await queueControlCommands['queue cancel']!.run(c);
    await queueControlCommands['queue send-now']!.run(c);
    expect(calls).toEqual([
      ['POST', '/admin/v1/projects/acme/cancel-queued', undefined],
      ['POST', '/admin/v1/queue/send-now', { provider: 'google', project: 'acme' }],
    ]);
  });
});
