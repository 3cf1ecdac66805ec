// Plans: free, pro and scale, with quotas and API rate from POSTGATE_CONFIG,
// overridable per project (`postgate plan set`). Plan `none` = no active
// subscription: sending answers SUBSCRIPTION_REQUIRED.
import { ApiError } from '../core/errors.js';
import type { Config, PlanLimits } from '../core/config.js';
import type { Project } from './store/index.js';

export const PLANS = ['free', 'pro', 'scale', 'none'] as const;
export type PlanName = (typeof PLANS)[number];

export function limitsOf(project: Project, config: Config): PlanLimits {
  const base = project.plan in config.plans ? config.plans[project.plan as keyof Config['plans']] : config.plans.free;
  return {
    dailyQuota: project.dailyQuota ?? base.dailyQuota,
    monthlyQuota: project.monthlyQuota ?? base.monthlyQuota,
    rateLimit: project.rateLimit ?? base.rateLimit,
  };
}

export function requireSubscription(project: Project): void {
  if (!(project.plan in { free: 1, pro: 1, scale: 1 })) {
    throw new ApiError('SUBSCRIPTION_REQUIRED', 'The project has no active subscription; choose a plan (postgate plan set)');
  }
}
