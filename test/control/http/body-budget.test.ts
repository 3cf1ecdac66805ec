// The body budget's window (control/http/body-budget.ts) without a server: requests are plain
// objects, each reply's socket an EventEmitter that emits 'close' when its answer is done.
import { EventEmitter } from 'node:events';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bodyBudget, MAX_WAIT_MS } from '../../../control/http/body-budget.js';

const MB = 1024 * 1024;

function request(bytes: number) {
  const raw = new EventEmitter();
  const req = { headers: { 'content-length': String(bytes) }, routeOptions: { bodyLimit: 50 * MB } } as unknown as FastifyRequest;
  const reply = { raw } as unknown as FastifyReply;
  return { req, reply, close: () => raw.emit('close') };
}

/** Starts the hook; `started` turns true once the request may read its body. */
function enter(budget: ReturnType<typeof bodyBudget>, bytes: number) {
  const r = request(bytes);
  const state = { started: false, ...r };
  void budget.hook(r.req, r.reply).then(() => {
    state.started = true;
  });
  return state;
}

const tick = () => new Promise((r) => setImmediate(r));

afterEach(() => {
  vi.useRealTimers();
});

describe('body budget window', () => {
  it('reads large bodies a window at a time, in arrival order; small ones never wait', async () => {
    const budget = bodyBudget(128 * MB, 4 * MB, 256 * 1024);
    const a = enter(budget, 3 * MB);
    const b = enter(budget, 2 * MB);
    const c = enter(budget, 1 * MB);
    const small = enter(budget, 10_000);
    await tick();
    expect([a.started, b.started, c.started, small.started]).toEqual([true, false, false, true]);
    // c would fit beside a, but waits behind b: no large body is passed over for ever.
    expect(budget.active).toBe(3 * MB);
    expect(budget.waited).toBe(2);
    a.close();
    await tick();
    expect([b.started, c.started]).toEqual([true, true]);
    expect(budget.active).toBe(3 * MB);
    b.close();
    c.close();
    small.close();
    expect(budget.active).toBe(0);
    expect(budget.inFlight).toBe(0);
  });

  it('a body larger than the window is read alone, once the window is empty', async () => {
    const budget = bodyBudget(128 * MB, 4 * MB, 256 * 1024);
    const a = enter(budget, 1 * MB);
    const big = enter(budget, 20 * MB);
    await tick();
    expect(big.started).toBe(false);
    a.close();
    await tick();
    expect(big.started).toBe(true);
    expect(budget.active).toBe(20 * MB);
  });

  it('a waiting request whose socket closes leaves the queue, and the next one goes', async () => {
    const budget = bodyBudget(128 * MB, 4 * MB, 256 * 1024);
    const a = enter(budget, 2 * MB);
    const gone = enter(budget, 3 * MB);
    const next = enter(budget, 2 * MB);
    await tick();
    expect([gone.started, next.started]).toEqual([false, false]);
    gone.close();
    await tick();
    expect(next.started).toBe(true);
    expect(gone.started).toBe(false);
    expect(budget.active).toBe(4 * MB);
    a.close();
    next.close();
    expect(budget.active).toBe(0);
    expect(budget.inFlight).toBe(0);
  });

  it('waits at most MAX_WAIT_MS behind a request that holds the window', async () => {
    vi.useFakeTimers();
    const budget = bodyBudget(128 * MB, 4 * MB, 256 * 1024);
    const stalled = enter(budget, 4 * MB);
    const waiting = enter(budget, 1 * MB);
    await vi.advanceTimersByTimeAsync(MAX_WAIT_MS - 1);
    expect(waiting.started).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(waiting.started).toBe(true);
    expect(budget.active).toBe(5 * MB);
    stalled.close();
    waiting.close();
    expect(budget.active).toBe(0);
  });

  it('past the whole budget a request is refused with 503 SERVER_BUSY before anything waits', async () => {
    const budget = bodyBudget(8 * MB, 4 * MB, 256 * 1024);
    enter(budget, 6 * MB);
    const r = request(3 * MB);
    await expect(budget.hook(r.req, r.reply)).rejects.toMatchObject({ code: 'SERVER_BUSY' });
    expect(budget.refused).toBe(1);
  });
});
