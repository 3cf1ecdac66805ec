// control/inbound/push.ts on a real SQLite store with gateways faked in this process: what is pushed (the
// receiving, verified domains, a full replacement), a push after a domain changes (the store's invalidation
// message), once for a burst of changes, and a gateway that is down getting it once it answers.
import crypto from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Gateway, GatewayClients } from '../../../control/delivery/gateways.js';
import { ReceivingPush } from '../../../control/inbound/push.js';
import { DEFAULT_DOMAIN_SETTINGS } from '../../../control/store/index.js';
import { type UnitStore, unitStore } from '../../helpers/unit-store.js';

const silent = { info() {}, warn() {}, error() {}, debug() {} } as never;
type Domains = Array<{ domain: string; projectId: string }>;

function fakeGateways(names: string[], log: { pushes: Array<{ gateway: string; domains: Domains }>; down: Set<string> }) {
  return {
    list: names.map((name) => ({ name }) as Gateway),
    async setReceivingDomains(gw: Gateway, domains: Domains) {
      if (log.down.has(gw.name)) throw new Error('unavailable');
      log.pushes.push({ gateway: gw.name, domains });
    },
  } as unknown as GatewayClients;
}

let u: UnitStore;
let log: { pushes: Array<{ gateway: string; domains: Domains }>; down: Set<string> };
let push: ReceivingPush;
beforeEach(async () => {
  u = await unitStore('acme');
  log = { pushes: [], down: new Set() };
  push = new ReceivingPush(u.store, fakeGateways(['gw1', 'gw2'], log), u.invalidator, silent);
});
afterEach(async () => {
  push.stop();
  await u.close();
});

const until = async (done: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!done()) {
    if (Date.now() > end) throw new Error('not yet');
    await new Promise((r) => setTimeout(r, 20));
  }
};

async function addDomain(name: string, receiving: boolean, verified: boolean) {
  const d = {
    id: crypto.randomUUID(),
    projectId: u.project.id,
    name,
    status: 'pending' as const,
    selector: 's',
    dkimPrivate: 'k',
    dkimPublic: 'p',
    records: [],
    createdAt: Date.now(),
    settings: { ...DEFAULT_DOMAIN_SETTINGS, receiving },
  };
  await u.store.domains.create(d);
  if (verified) await u.store.domains.update(d.id, 'verified', [], Date.now(), Date.now());
  return d;
}

describe('receiving domains pushed to the gateways', () => {
  it('a push is the receiving, verified domains, to the gateway asked', async () => {
    await addDomain('in.test', true, true);
    await addDomain('out.test', false, true);
    await addDomain('new.test', true, false);
    log.pushes = [];
    await push.push({ name: 'gw1' } as Gateway);
    expect(log.pushes.at(-1)).toEqual({ gateway: 'gw1', domains: [{ domain: 'in.test', projectId: u.project.id }] });
  });

  it('a domain change reaches every gateway, once for a burst of changes', async () => {
    const d = await addDomain('in.test', true, false);
    await u.store.domains.update(d.id, 'verified', [], Date.now(), Date.now());
    await until(() => log.pushes.length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(log.pushes.map((p) => p.gateway).sort()).toEqual(['gw1', 'gw2']);
    expect(log.pushes[0]!.domains).toEqual([{ domain: 'in.test', projectId: u.project.id }]);
    // Receiving turned off: the next push is empty.
    await u.store.domains.updateSettings(u.project.id, d.id, { ...DEFAULT_DOMAIN_SETTINGS, receiving: false }, []);
    await until(() => log.pushes.length >= 4);
    expect(log.pushes.slice(2).map((p) => p.domains)).toEqual([[], []]);
  });

  it('a gateway that is down gets the push once it answers', async () => {
    log.down.add('gw2');
    await addDomain('in.test', true, true);
    await until(() => log.pushes.some((p) => p.gateway === 'gw1'));
    expect(log.pushes.some((p) => p.gateway === 'gw2')).toBe(false);
    log.down.delete('gw2');
    await until(() => log.pushes.some((p) => p.gateway === 'gw2'), 5000);
    expect(log.pushes.find((p) => p.gateway === 'gw2')!.domains).toEqual([{ domain: 'in.test', projectId: u.project.id }]);
  });
});
