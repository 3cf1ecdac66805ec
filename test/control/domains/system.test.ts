// control/domains/system.ts on a real store: the platform's own sender (POSTGATE_SYSTEM_FROM) gets
// a system project and a verified domain at the first start, the same ones at every later start
// and when several controls start together; a sender that is no address is logged, not fatal.
import { afterEach, beforeEach, expect, it } from 'vitest';
import { ensureSystemSender, SYSTEM_PROJECT_SLUG } from '../../../control/domains/system.js';
import { loadConfig } from '../../../core/config.js';
import { sealer } from '../../../core/crypto.js';
import { createLogger } from '../../../core/log.js';
import { unitStore, type UnitStore } from '../../helpers/unit-store.js';

const config = loadConfig({ POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test' });
const dkim = sealer('s', 'dkim');
const log = createLogger('test', 'silent');
let u: UnitStore;
beforeEach(async () => {
  u = await unitStore();
});
afterEach(() => u.close());

it('creates the system project and its domain, verified by the operator’s configuration', async () => {
  const r = await ensureSystemSender(u.store, config, dkim, log);
  expect(r).toEqual({ projectId: 'system', domain: 'postgate.test' });
  const project = await u.store.projects.bySlug(SYSTEM_PROJECT_SLUG);
  expect(project).toMatchObject({ id: 'system', plan: 'scale' });
  expect(await u.store.domains.isVerified('system', 'postgate.test')).toBe(true);
});

it('later starts, and starts at once, find the same project and domain', async () => {
  const first = await ensureSystemSender(u.store, config, dkim, log);
  const [a, b] = await Promise.all([ensureSystemSender(u.store, config, dkim, log), ensureSystemSender(u.store, config, dkim, log)]);
  expect([a, b]).toEqual([first, first]);
  expect((await u.store.domains.list('system'))?.domains).toHaveLength(1);
});

it('a system sender that is no address: nothing created, and the caller is told', async () => {
  expect(await ensureSystemSender(u.store, { ...config, systemFrom: 'not an address' }, dkim, log)).toBeUndefined();
  expect(await u.store.projects.bySlug(SYSTEM_PROJECT_SLUG)).toBeUndefined();
});
