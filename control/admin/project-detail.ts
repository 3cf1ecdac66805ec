// GET /admin/v1/projects/:slug: one project as the console's Projects page shows it: its plan's
// limits against today's and this month's usage, the bounce and complaint rates of the last 7 days,
// its keys (never a secret: the hint shown at creation) and its domains with their DNS checks.
import type { FastifyPluginAsync } from 'fastify';
import { DAY_MS, clock, dayOf } from '../../core/clock.js';
import type { Config } from '../../core/config.js';
import type { Store } from '../store/index.js';
import { limitsOf } from '../plans.js';
import { adminErrors, iso, projectBySlug, projectOut, projectProperties, slugParams } from './common.js';

export const RATE_WINDOW_DAYS = 7;

const nullableString = { type: ['string', 'null'] } as const;
const nullableNumber = { type: ['number', 'null'] } as const;
const object = (properties: Record<string, unknown>) => ({ type: 'object', required: Object.keys(properties), properties }) as const;

export const keySchema = object({
  id: { type: 'string' },
  kind: { type: 'string', enum: ['live', 'test'] },
  scope: { type: 'string', enum: ['all', 'auth', 'users'] },
  prefix: { type: 'string', description: 'The start and end of the key, as shown at creation (pg_live_AbCd…wXyZ).' },
  created_at: { type: 'string' },
  revoked_at: nullableString,
});

const recordSchema = {
  type: 'object',
  required: ['type', 'name', 'value', 'status'],
  properties: {
    purpose: { type: 'string' },
    type: { type: 'string' },
    name: { type: 'string' },
    value: { type: 'string' },
    priority: { type: 'integer' },
    status: { type: 'string', enum: ['pending', 'verified', 'failed'] },
    problem: { type: 'string', description: 'Why the last check failed.' },
  },
} as const;

const detailSchema = object({
  ...projectProperties,
  limits: object({ daily_quota: { type: 'integer' }, monthly_quota: { type: 'integer' }, rate: { type: 'integer' } }),
  usage: object({ day: { type: 'integer' }, month: { type: 'integer' } }),
  rates: object({
    window_days: { type: 'integer' },
    sent: { type: 'integer', description: 'Emails the receiving servers accepted (reached sent).' },
    delivered: { type: 'integer', description: 'Emails with a delivery report (reached delivered).' },
    bounced: { type: 'integer' },
    complained: { type: 'integer' },
    bounce_rate: { ...nullableNumber, description: 'bounced / (sent + bounced); null before any.' },
    complaint_rate: { ...nullableNumber, description: 'complained / sent; null before any.' },
  }),
  keys: { type: 'array', items: keySchema },
  domains: {
    type: 'array',
    items: object({
      id: { type: 'string' },
      name: { type: 'string' },
      status: { type: 'string', enum: ['pending', 'verified'] },
      records: { type: 'array', items: recordSchema },
      created_at: { type: 'string' },
      checked_at: nullableString,
      verified_at: nullableString,
    }),
  },
});

/** Rates over whole UTC days, today included, from the daily counts (control/store Analytics.daily). */
async function ratesOf(store: Store, projectId: string, now: number) {
  const counts = { sent: 0, delivered: 0, bounced: 0, complained: 0 };
  for (const r of await store.analytics.daily(projectId, dayOf(now - (RATE_WINDOW_DAYS - 1) * DAY_MS), dayOf(now))) {
    if (r.status in counts) counts[r.status as keyof typeof counts] += r.count;
  }
  // An email bounced after it was sent is in both counts: the rate is then a little low, never over 1.
  const attempted = counts.sent + counts.bounced;
  return {
    window_days: RATE_WINDOW_DAYS,
    ...counts,
    bounce_rate: attempted ? counts.bounced / attempted : null,
    complaint_rate: counts.sent ? Math.min(1, counts.complained / counts.sent) : null,
  };
}

export const projectDetailRoutes: FastifyPluginAsync<{ config: Config; store: Store }> = async (app, { config, store }) => {
  app.get<{ Params: { slug: string } }>(
    '/admin/v1/projects/:slug',
    { schema: { hide: true, tags: ['admin'], params: slugParams, response: { 200: detailSchema, ...adminErrors } } },
    async (req) => {
      const p = await projectBySlug(store, req.params.slug);
      const now = clock.now();
      const [usage, rates, keys, domains] = await Promise.all([
        store.analytics.usage(p.id, now),
        ratesOf(store, p.id, now),
        store.apiKeys.list(p.id),
        store.domains.list(p.id),
      ]);
      const l = limitsOf(p, config);
      return {
        ...projectOut(p),
        limits: { daily_quota: l.dailyQuota, monthly_quota: l.monthlyQuota, rate: l.rateLimit },
        usage,
        rates,
        keys: keys.map((k) => ({
          id: k.id,
          kind: k.kind,
          scope: k.scope,
          prefix: k.hint,
          created_at: new Date(k.createdAt).toISOString(),
          revoked_at: iso(k.revokedAt),
        })),
        domains: (domains?.domains ?? []).map((d) => ({
          id: d.id,
          name: d.name,
          status: d.status,
          records: d.records,
          created_at: new Date(d.createdAt).toISOString(),
          checked_at: iso(d.checkedAt),
          verified_at: iso(d.verifiedAt),
        })),
      };
    },
  );
};
