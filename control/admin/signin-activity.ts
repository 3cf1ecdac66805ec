// The console's Sign-in page: a project's sign-ins and failed sign-ins over the last day (per hour)
// or week (per UTC day), by method and by provider, from the auth audit log (auth/events.ts):
// session.created is a sign-in, sign_in.failed a failure, plus the failures its rate limit left
// out (`suppressed`). The log records the provider, not the method: the method is what the
// provider is, a code channel (email, sms: `otp`) or an identity provider.
import type { FastifyPluginAsync } from 'fastify';
import { DAY_MS, clock, dayStart } from '../../core/clock.js';
import type { Store } from '../store/index.js';
import { adminErrors, projectBySlug, slugParams } from './common.js';

const HOUR_MS = 3_600_000;
const PERIODS = { day: { stepMs: HOUR_MS, buckets: 24 }, week: { stepMs: DAY_MS, buckets: 7 } } as const;
type Period = keyof typeof PERIODS;

const CODE_CHANNELS = new Set(['email', 'sms']);
export const methodOf = (provider: string | null): string => (provider === null ? 'unknown' : CODE_CHANNELS.has(provider) ? 'otp' : 'identity_provider');

const counts = { signed_in: { type: 'integer' }, failed: { type: 'integer' } } as const;
const activitySchema = {
  type: 'object',
  required: ['period', 'step_s', 'start', 'buckets', 'by_method', 'by_provider'],
  properties: {
    period: { type: 'string', enum: Object.keys(PERIODS) },
    step_s: { type: 'integer' },
    start: { type: 'string', description: 'The start of the first bucket; the last one holds now.' },
    buckets: {
      type: 'array',
      items: { type: 'object', required: ['at', 'signed_in', 'failed'], properties: { at: { type: 'string' }, ...counts } },
    },
    by_method: {
      type: 'array',
      description: 'otp (email and SMS codes), identity_provider (OAuth, OIDC, tokens, widgets) or unknown.',
      items: { type: 'object', required: ['method', 'signed_in', 'failed'], properties: { method: { type: 'string' }, ...counts } },
    },
    by_provider: {
      type: 'array',
      items: { type: 'object', required: ['provider', 'signed_in', 'failed'], properties: { provider: { type: ['string', 'null'] }, ...counts } },
    },
  },
} as const;

type Tally = { signed_in: number; failed: number };
const add = <K>(m: Map<K, Tally>, k: K, signedIn: number, failed: number) => {
  const t = m.get(k) ?? { signed_in: 0, failed: 0 };
  t.signed_in += signedIn;
  t.failed += failed;
  m.set(k, t);
};

export const signInActivityRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get<{ Params: { slug: string }; Querystring: { period?: Period } }>(
    '/admin/v1/projects/:slug/auth/activity',
    {
      schema: {
        hide: true,
        tags: ['admin'],
        params: slugParams,
        querystring: { type: 'object', additionalProperties: false, properties: { period: { type: 'string', enum: Object.keys(PERIODS) } } },
        response: { 200: activitySchema, ...adminErrors },
      },
    },
    async (req) => {
      const p = await projectBySlug(store, req.params.slug);
      const period = req.query.period ?? 'day';
      const { stepMs, buckets } = PERIODS[period];
      const now = clock.now();
      // Whole hours (days, UTC), the current one last.
      const start = (period === 'day' ? now - (now % HOUR_MS) : dayStart(now)) - (buckets - 1) * stepMs;
      const rows = await store.audit.activity(p.id, start, start + buckets * stepMs, stepMs);
      const series = Array.from({ length: buckets }, (_, i) => ({ at: new Date(start + i * stepMs).toISOString(), signed_in: 0, failed: 0 }));
      const byMethod = new Map<string, Tally>();
      const byProvider = new Map<string | null, Tally>();
      for (const r of rows) {
        const b = series[r.bucket];
        if (b) {
          b.signed_in += r.signedIn;
          b.failed += r.failed;
        }
        add(byMethod, methodOf(r.provider), r.signedIn, r.failed);
        add(byProvider, r.provider, r.signedIn, r.failed);
      }
      return {
        period,
        step_s: stepMs / 1000,
        start: new Date(start).toISOString(),
        buckets: series,
        by_method: [...byMethod].map(([method, t]) => ({ method, ...t })).sort((a, b) => a.method.localeCompare(b.method)),
        by_provider: [...byProvider].map(([provider, t]) => ({ provider, ...t })).sort((a, b) => (a.provider ?? '').localeCompare(b.provider ?? '')),
      };
    },
  );
};
