// Analytics from daily counters kept as statuses are reached (never a scan of
// the emails): an email counts once under each status it reached, on the UTC
// day it reached it.
import type { FastifyPluginAsync } from 'fastify';
import { clock, DAY_MS, dayOf } from '../../core/clock.js';
import type { Store } from '../store/index.js';
import { errorSchema } from '../http/schemas.js';
import { EMAIL_STATUSES, type EmailStatus } from '../../common/status.js';

const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { serviceKey: [] }];
/** Every status, and emails a person first opened or clicked that day (open and click tracking). */
const KINDS = [...EMAIL_STATUSES, 'opened', 'clicked'] as const;
const counts = { type: 'object', properties: Object.fromEntries(KINDS.map((s) => [s, { type: 'integer' }])) } as const;
const errors = { 401: errorSchema, 429: errorSchema };

const zero = () => Object.fromEntries(KINDS.map((s) => [s, 0])) as Record<EmailStatus | 'opened' | 'clicked', number>;

export const analyticsRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get(
    '/v1/analytics/overview',
    {
      schema: {
        summary: 'Counts per status for today, the last 7 days and the last 30 days (UTC days, today included)',
        tags: ['analytics'],
        security,
        response: {
          200: {
            type: 'object',
            properties: { today: counts, week: counts, month: counts, from: { type: 'object', additionalProperties: { type: 'string' } } },
          },
          ...errors,
        },
      },
    },
    async (req) => {
      const now = clock.now();
      const today = dayOf(now);
      const weekFrom = dayOf(now - 6 * DAY_MS);
      const monthFrom = dayOf(now - 29 * DAY_MS);
      const rows = await store.analytics.daily(req.caller!.project.id, monthFrom, today);
      const out = { today: zero(), week: zero(), month: zero() };
      for (const r of rows) {
        if (!(r.status in out.month)) continue;
        out.month[r.status]! += r.count;
        if (r.day >= weekFrom) out.week[r.status]! += r.count;
        if (r.day === today) out.today[r.status]! += r.count;
      }
      return { ...out, from: { today, week: weekFrom, month: monthFrom } };
    },
  );

  app.get(
    '/v1/analytics/timeseries',
    {
      schema: {
        summary: 'Per-day counts per status: exactly 30 entries, oldest first, ending today (UTC)',
        tags: ['analytics'],
        security,
        response: {
          200: {
            type: 'object',
            properties: { data: { type: 'array', items: { type: 'object', properties: { date: { type: 'string' }, ...counts.properties } } } },
          },
          ...errors,
        },
      },
    },
    async (req) => {
      const now = clock.now();
      const days = Array.from({ length: 30 }, (_, i) => dayOf(now - (29 - i) * DAY_MS));
      const byDay = new Map(days.map((d) => [d, zero()]));
      for (const r of await store.analytics.daily(req.caller!.project.id, days[0]!, days[29]!)) {
        const c = byDay.get(r.day);
        if (c && r.status in c) c[r.status]! += r.count;
      }
      return { data: days.map((date) => ({ date, ...byDay.get(date)! })) };
    },
  );
};
