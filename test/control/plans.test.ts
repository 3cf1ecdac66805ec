// control/plans.ts: a project's limits are its plan's, overridden per project; plan `none` (no
// subscription) refuses sending.
import { expect, it } from 'vitest';
import { limitsOf, requireSubscription } from '../../control/plans.js';
import type { Project } from '../../control/store/index.js';
import { loadConfig } from '../../core/config.js';

const config = loadConfig({});
const project = (o: Partial<Project> = {}): Project => ({
  id: 'p',
  slug: 'p',
  name: 'P',
  status: 'active',
  plan: 'free',
  dailyQuota: null,
  monthlyQuota: null,
  rateLimit: null,
  createdAt: 1,
  ...o,
});

it('the plan’s limits, each overridden by the project’s own when set', () => {
  expect(limitsOf(project(), config)).toEqual(config.plans.free);
  expect(limitsOf(project({ plan: 'pro' }), config)).toEqual(config.plans.pro);
  expect(limitsOf(project({ plan: 'pro', dailyQuota: 7 }), config)).toEqual({ ...config.plans.pro, dailyQuota: 7 });
  expect(limitsOf(project({ plan: 'scale', monthlyQuota: 0, rateLimit: 3 }), config)).toEqual({ ...config.plans.scale, monthlyQuota: 0, rateLimit: 3 });
});

it('plan none (and one postgate does not know) counts as free for limits, and refuses sending without a subscription', () => {
  expect(limitsOf(project({ plan: 'none' }), config)).toEqual(config.plans.free);
  expect(() => requireSubscription(project({ plan: 'none' }))).toThrow(expect.objectContaining({ code: 'SUBSCRIPTION_REQUIRED', status: 402 }));
  expect(() => requireSubscription(project({ plan: 'enterprise' }))).toThrow(expect.objectContaining({ code: 'SUBSCRIPTION_REQUIRED' }));
  for (const plan of ['free', 'pro', 'scale']) expect(() => requireSubscription(project({ plan }))).not.toThrow();
});
