// control/mail/scheduler.ts: a tick releases every due email through the store with its project's
// guards, counts those queued and wakes the dispatcher once if any; pages of 200 until a short one;
// refusals logged, vanished projects and emails skipped; a store outage leaves emails for the next
// tick; ticks never overlap.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../../../core/log.js';
import type { MailPipeline } from '../../../control/mail/pipeline.js';
import { Scheduler } from '../../../control/mail/scheduler.js';
import type { Acceptance, AcceptGuards, Project, Store } from '../../../control/store/index.js';

type Outcome = Acceptance | { kind: 'gone' };

interface Fake {
  due: Array<{ id: string; projectId: string }>;
  outcomes: Record<string, Outcome>;
  projects: string[];
  released: Array<{ id: string; guards: unknown; now: number }>;
  dueCalls: Array<{ now: number; limit: number }>;
  failDue?: Error;
  gate?: Promise<void>;
}

function fakeStore(f: Fake): Store {
  return {
    emails: {
      async due(now: number, limit: number) {
        f.dueCalls.push({ now, limit });
        await f.gate;
        if (f.failDue) throw f.failDue;
        return f.due.splice(0, limit);
      },
      async release(id: string, guards: AcceptGuards, now: number) {
        f.released.push({ id, guards, now });
        return f.outcomes[id] ?? { kind: 'accepted' };
      },
    },
    projects: { byId: async (id: string) => (f.projects.includes(id) ? ({ id } as Project) : undefined) },
  } as unknown as Store;
}

function setup(o: Partial<Fake> = {}) {
  const f: Fake = { due: [], outcomes: {}, projects: ['prj_a', 'prj_b'], released: [], dueCalls: [], ...o };
  const logs: Array<{ level: string; obj: Record<string, unknown>; msg: string }> = [];
  const log = {
    info: (obj: Record<string, unknown>, msg: string) => logs.push({ level: 'info', obj, msg }),
    warn: (obj: Record<string, unknown>, msg: string) => logs.push({ level: 'warn', obj, msg }),
  } as unknown as Logger;
  let wakes = 0;
  const pipeline: Pick<MailPipeline, 'guardsOf'> = { guardsOf: (p) => ({ guardsFor: p.id }) as unknown as AcceptGuards };
  const scheduler = new Scheduler(fakeStore(f), pipeline, { wake: () => wakes++ }, log);
  return { f, logs, scheduler, wakes: () => wakes };
}

let stop: (() => void) | undefined;
afterEach(() => stop?.());

describe('Scheduler.tick', () => {
  it('does nothing, and wakes no one, when nothing is due', async () => {
    const s = setup();
    expect(await s.scheduler.tick()).toBe(0);
    expect(s.wakes()).toBe(0);
    expect(s.f.dueCalls).toHaveLength(1);
    expect(s.f.dueCalls[0]!.limit).toBe(200);
  });

  it("releases each due email with its own project's guards at one now, and wakes the dispatcher once", async () => {
    const s = setup({
      due: [
        { id: 'em_1', projectId: 'prj_a' },
        { id: 'em_2', projectId: 'prj_b' },
      ],
    });
    const before = Date.now();
    expect(await s.scheduler.tick()).toBe(2);
    expect(s.wakes()).toBe(1);
    expect(s.f.released.map((r) => [r.id, r.guards])).toEqual([
      ['em_1', { guardsFor: 'prj_a' }],
      ['em_2', { guardsFor: 'prj_b' }],
    ]);
    const now = s.f.dueCalls[0]!.now;
    expect(now).toBeGreaterThanOrEqual(before);
    expect(s.f.released.every((r) => r.now === now)).toBe(true);
  });

  it('logs refusals, skips emails already gone silently, and counts only the queued', async () => {
    const s = setup({
      due: [
        { id: 'em_ok', projectId: 'prj_a' },
        { id: 'em_quota', projectId: 'prj_a' },
        { id: 'em_gone', projectId: 'prj_a' },
        { id: 'em_held', projectId: 'prj_a' },
      ],
      outcomes: {
        em_quota: { kind: 'quota', period: 'daily', limit: 100 },
        em_gone: { kind: 'gone' },
        em_held: { kind: 'accepted', held: 'volume spike' },
      },
    });
    expect(await s.scheduler.tick()).toBe(2);
    expect(s.wakes()).toBe(1);
    expect(s.logs).toEqual([{ level: 'info', obj: { email: 'em_quota', project: 'prj_a', refusal: 'quota' }, msg: 'scheduled email refused when it was due' }]);
  });

  it('skips an email whose project no longer exists, without releasing it', async () => {
    const s = setup({
      due: [
        { id: 'em_1', projectId: 'prj_gone' },
        { id: 'em_2', projectId: 'prj_a' },
      ],
    });
    expect(await s.scheduler.tick()).toBe(1);
    expect(s.f.released.map((r) => r.id)).toEqual(['em_2']);
  });

  it('reads further pages while a full one comes back, and stops at a short one', async () => {
    const due = Array.from({ length: 450 }, (_, i) => ({ id: `em_${i}`, projectId: 'prj_a' }));
    const s = setup({ due });
    expect(await s.scheduler.tick()).toBe(450);
    expect(s.f.dueCalls).toHaveLength(3);
    expect(s.f.released).toHaveLength(450);
  });

  it('reads one more page when the last full page was exactly 200', async () => {
    const s = setup({ due: Array.from({ length: 200 }, (_, i) => ({ id: `em_${i}`, projectId: 'prj_a' })) });
    expect(await s.scheduler.tick()).toBe(200);
    expect(s.f.dueCalls).toHaveLength(2);
  });

  it('survives a store outage: logs it, returns 0, and the next tick runs again', async () => {
    const s = setup({ failDue: new Error('database is locked') });
    expect(await s.scheduler.tick()).toBe(0);
    expect(s.logs).toEqual([{ level: 'warn', obj: { err: 'Error: database is locked' }, msg: 'releasing scheduled emails failed; retrying' }]);
    s.f.failDue = undefined;
    s.f.due.push({ id: 'em_1', projectId: 'prj_a' });
    expect(await s.scheduler.tick()).toBe(1);
  });

  it('never runs two ticks at once: one started while another runs returns 0 without reading', async () => {
    let open!: () => void;
    const s = setup({ due: [{ id: 'em_1', projectId: 'prj_a' }], gate: new Promise<void>((r) => (open = r)) });
    const first = s.scheduler.tick();
    expect(await s.scheduler.tick()).toBe(0);
    expect(s.f.dueCalls).toHaveLength(1);
    open();
    expect(await first).toBe(1);
    expect(s.f.released).toHaveLength(1);
  });
});

describe('Scheduler.start', () => {
  it('ticks about every second until stopped', async () => {
    const s = setup();
    vi.useFakeTimers();
    s.scheduler.start();
    stop = () => {
      s.scheduler.stop();
      vi.useRealTimers();
    };
    await vi.advanceTimersByTimeAsync(999);
    expect(s.f.dueCalls.length).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(s.f.dueCalls.length).toBe(1);
    await vi.advanceTimersByTimeAsync(2000);
    expect(s.f.dueCalls.length).toBe(3);
    s.scheduler.stop();
    await vi.advanceTimersByTimeAsync(5000);
    expect(s.f.dueCalls.length).toBe(3);
  });
});
