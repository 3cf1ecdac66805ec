// The operator's side of pacing (behind the admin token, used by the CLI): throttles
// per receiving provider, changed live (stored, then pushed to every gateway); approving
// a project's bulk volume (held mail goes); and, only with POSTGATE_TEST_CLOCK=1, moving
// the clock of control and its gateways so tests reach tomorrow without waiting.
import type { FastifyPluginAsync } from 'fastify';
import { notFound } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Config } from '../../core/config.js';
import type { Store } from '../store/index.js';
import type { PacingService, ThrottleView } from './service.js';
import { audit } from '../operations/audit.js';

export interface PacingAdminOptions {
  config: Config;
  store: Store;
  pacing: PacingService;
}

const hide = { hide: true, tags: ['admin'] };
const count = { type: 'integer', minimum: 0, maximum: 1_000_000_000 } as const;

// Response schemas (typed in the admin OpenAPI document); every field answered is listed.
const throttleSchema = {
  type: 'object',
  required: ['provider', 'daily_norm', 'growth', 'max_daily_norm', 'rate_per_minute', 'connections', 'source', 'updated_at'],
  properties: {
    provider: { type: 'string' },
    daily_norm: { type: 'number', description: "A project's norm on its first sending day; 0 = no norm" },
    growth: { type: 'number' },
    max_daily_norm: { type: 'number', description: '0 = no cap' },
    rate_per_minute: { type: 'number', description: '0 = unlimited' },
    connections: { type: 'number', description: '0 = unlimited' },
    source: { type: 'string', enum: ['config', 'operator'] },
    updated_at: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;

const throttleOut = (t: ThrottleView) => ({
  provider: t.provider,
  daily_norm: t.dailyNorm,
  growth: t.growth,
  max_daily_norm: t.maxDailyNorm,
  rate_per_minute: t.ratePerMinute,
  connections: t.connections,
  source: t.source,
  updated_at: t.updatedAt === null ? null : new Date(t.updatedAt).toISOString(),
});

export const pacingAdminRoutes: FastifyPluginAsync<PacingAdminOptions> = async (app, { config, store, pacing }) => {
  app.get(
    '/admin/v1/throttles',
    { schema: { ...hide, response: { 200: { type: 'object', required: ['data'], properties: { data: { type: 'array', items: throttleSchema } } } } } },
    async () => ({ data: (await pacing.throttles()).map(throttleOut) }),
  );

  app.post<{
    Params: { provider: string };
    Body: { daily_norm?: number; growth?: number; max_daily_norm?: number; rate_per_minute?: number; connections?: number };
  }>(
    '/admin/v1/throttles/:provider',
    {
      schema: {
        ...hide,
        params: { type: 'object', required: ['provider'], properties: { provider: { type: 'string', pattern: '^[a-z0-9-]{1,40}$' } } },
        body: {
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: {
            daily_norm: count,
            growth: { type: 'number', minimum: 1, maximum: 10 },
            max_daily_norm: count,
            rate_per_minute: count,
            connections: { type: 'integer', minimum: 0, maximum: 100_000 },
          },
        },
        response: { 200: throttleSchema },
      },
    },
    async (req) => {
      const b = req.body;
      const out = throttleOut(
        await pacing.setThrottle(req.params.provider, {
          dailyNorm: b.daily_norm,
          growth: b.growth,
          maxDailyNorm: b.max_daily_norm,
          ratePerMinute: b.rate_per_minute,
          connections: b.connections,
        }),
      );
      await audit(store, req, { action: 'throttle.set', target: `provider:${out.provider}`, details: { ...b } });
      return out;
    },
  );

  app.post<{ Params: { slug: string }; Body: { day?: string; volume?: number } }>(
    '/admin/v1/projects/:slug/pacing/approve',
    {
      schema: {
        ...hide,
        params: { type: 'object', required: ['slug'], properties: { slug: { type: 'string', maxLength: 63 } } },
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { day: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' }, volume: { type: 'integer', minimum: 1, maximum: 100_000_000 } },
        },
        response: {
          200: {
            type: 'object',
            required: ['project', 'day', 'volume', 'released'],
            properties: {
              project: { type: 'string' },
              day: { type: 'string' },
              volume: { type: 'integer' },
              released: { type: 'integer', description: 'Held emails released' },
            },
          },
        },
      },
    },
    async (req) => {
      const p = await store.projects.bySlug(req.params.slug);
      if (!p) throw notFound(`No project ${req.params.slug}`);
      const out = await pacing.approve(p, req.body?.day, req.body?.volume);
      await audit(store, req, { action: 'pacing.approve', target: `project:${p.slug}`, details: { day: out.day, volume: out.volume }, emails: out.released });
      return { project: p.slug, ...out };
    },
  );

  // Test-only: absent (404) unless POSTGATE_TEST_CLOCK=1.
  if (config.testClock) {
    app.post<{ Body: { offset_ms?: number; advance_ms?: number } }>(
      '/admin/v1/test/clock',
      {
        schema: {
          ...hide,
          body: { type: 'object', additionalProperties: false, properties: { offset_ms: { type: 'integer' }, advance_ms: { type: 'integer' } } },
        },
      },
      async (req) => {
        const offset = req.body.offset_ms ?? clock.offset() + (req.body.advance_ms ?? 0);
        await pacing.setClockOffset(offset);
        return { offset_ms: clock.offset(), now: new Date(clock.now()).toISOString() };
      },
    );
  }
};
