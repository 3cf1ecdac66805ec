// control/operations/controls.ts on a real SQLite store with gateways faked in this process: what is
// stored and pushed (a full replacement: suspensions in force, cancel orders of 14 days), the order
// reaching the gateways before the store cancels, the answers to bad input, and another control
// node hearing a change on the invalidation bus and pushing to its own gateways.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clock, DAY_MS } from '../../../core/clock.js';
import type { ApiError } from '../../../core/errors.js';
import type { Gateway, GatewayClients } from '../../../control/delivery/gateways.js';
import { QueueControls } from '../../../control/operations/controls.js';
import { unitStore, type UnitStore } from '../../helpers/unit-store.js';

const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;

interface Pushed {
  gateway: string;
  suspensions: Array<{ id: string; provider: string; projectId: string; untilMs: bigint; reason: string }>;
  cancels: Array<{ projectId: string; acceptedBeforeMs: bigint; orderedMs: bigint }>;
}

/** Gateways that record what they are told; `down` ones fail every call. */
function fakeGateways(names: string[], log: { pushes: Pushed[]; sendNow: string[]; down: Set<string>; onPush?: () => void }) {
  return {
    list: names.map((name) => ({ name }) as Gateway),
    async setControls(gw: Gateway, suspensions: Pushed['suspensions'], cancels: Pushed['cancels']) {
      if (log.down.has(gw.name)) throw new Error('unavailable');
      log.pushes.push({ gateway: gw.name, suspensions, cancels });
      log.onPush?.();
      return cancels.length;
    },
    async sendNow(gw: Gateway, provider: string, projectId: string) {
      if (log.down.has(gw.name)) throw new Error('unavailable');
      log.sendNow.push(`${gw.name} ${provider} ${projectId}`);
      return 2;
    },
  } as unknown as GatewayClients;
}

let u: UnitStore;
let log: { pushes: Pushed[]; sendNow: string[]; down: Set<string>; onPush?: () => void };
let controls: QueueControls;
const providers = () => ['google', 'yahoo', 'other'];

beforeEach(async () => {
  u = await unitStore('acme');
  log = { pushes: [], sendNow: [], down: new Set() };
  controls = new QueueControls(u.store, fakeGateways(['gw1', 'gw2'], log), u.invalidator, silent, providers);
});
afterEach(async () => {
  await u.close();
});

const code = async (p: Promise<unknown>) => ((await p.catch((e: unknown) => e)) as ApiError).code;

describe('queue controls (control side)', () => {
  it('a suspension is stored and every gateway gets the suspensions in force; resume removes it from the next push', async () => {
    const s = await controls.suspend({ provider: 'google', project: 'acme', until: clock.now() + 60_000, reason: 'incident' });
    expect(s).toMatchObject({ id: expect.stringMatching(/^sus_/), provider: 'google', project: 'acme', reason: 'incident' });
    expect(log.pushes.map((p) => p.gateway).sort()).toEqual(['gw1', 'gw2']);
    expect(log.pushes[0]!.suspensions).toEqual([
      { id: s.id, provider: 'google', projectId: u.project.id, untilMs: BigInt(Date.parse(s.until!)), reason: 'incident' },
    ]);
    expect((await controls.list()).map((x) => x.id)).toEqual([s.id]);
    log.pushes = [];
    expect(await controls.resume(s.id)).toMatchObject({ id: s.id });
    expect(log.pushes.map((p) => p.suspensions)).toEqual([[], []]);
    expect(await controls.list()).toEqual([]);
  });

  it('bad input: nothing named or a past end is 400; an unknown provider, project or suspension 404', async () => {
    expect(await code(controls.suspend({}))).toBe('INVALID_REQUEST');
    expect(await code(controls.suspend({ provider: 'google', until: clock.now() - 1 }))).toBe('INVALID_REQUEST');
    expect(await code(controls.suspend({ provider: 'nosuch' }))).toBe('NOT_FOUND');
    expect(await code(controls.suspend({ project: 'nosuch' }))).toBe('NOT_FOUND');
    expect(await code(controls.resume('sus_nosuch'))).toBe('NOT_FOUND');
    expect(await code(controls.sendNow({ provider: 'nosuch' }))).toBe('NOT_FOUND');
    expect(await code(controls.cancel('nosuch'))).toBe('NOT_FOUND');
    expect(log.pushes).toEqual([]);
  });

  it("a project's cancel: the order reaches the gateways before the store cancels; later pushes carry it for 14 days", async () => {
    const order: string[] = [];
    log.onPush = () => order.push('push');
    const cancel = u.store.operations.cancelProject.bind(u.store.operations);
    u.store.operations.cancelProject = async (...args) => {
      order.push('store');
      return cancel(...args);
    };
    const out = await controls.cancel('acme');
    expect(out).toEqual({ canceled: 0, dropped: 2 });
    expect(order).toEqual(['push', 'push', 'store']);
    const pushed = log.pushes[0]!.cancels;
    expect(pushed).toEqual([{ projectId: u.project.id, acceptedBeforeMs: expect.any(BigInt), orderedMs: expect.any(BigInt) }]);
    // An order from 15 days ago is no longer pushed (nor kept).
    await u.store.operations.orderCancel({ projectId: u.project.id, acceptedBefore: 1, orderedAt: clock.now() - 15 * DAY_MS });
    log.pushes = [];
    await controls.pushAll(1000);
    expect(log.pushes.map((p) => p.cancels.length)).toEqual([1, 1]);
  });

  it('a gateway that is down does not hold the answer up for ever; it gets the controls when it comes back', async () => {
    log.down.add('gw2');
    // Answers (after a few seconds' wait for the gateway), rather than hanging until it is back.
    await controls.suspend({ provider: 'yahoo' });
    expect(log.pushes.map((p) => p.gateway)).toEqual(['gw1']);
    log.down.clear();
    await new Promise((r) => setTimeout(r, 1500));
    expect(log.pushes.map((p) => p.gateway)).toContain('gw2');
  }, 20_000);

  it('send-now asks every gateway and sums what woke; another node hears changes and send-now on the bus', async () => {
    const other = { pushes: [], sendNow: [], down: new Set<string>() } as typeof log;
    new QueueControls(u.store, fakeGateways(['gw3'], other), u.invalidator, silent, providers);
    expect(await controls.sendNow({ provider: 'google', project: 'acme' })).toEqual({ woken: 4 });
    expect(log.sendNow.sort()).toEqual([`gw1 google ${u.project.id}`, `gw2 google ${u.project.id}`]);
    await controls.suspend({ provider: 'google' });
    await new Promise((r) => setTimeout(r, 50));
    expect(other.sendNow).toEqual([`gw3 google ${u.project.id}`]);
    expect(other.pushes.map((p) => [p.gateway, p.suspensions.length])).toEqual([['gw3', 1]]);
    // This node acted itself: it does not push twice for its own change.
    expect(log.pushes.filter((p) => p.gateway === 'gw1')).toHaveLength(1);
  });
});
