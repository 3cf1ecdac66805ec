// The project's side of pacing: GET /v1/pacing shows, per receiving provider, today's
// warm-up norm, what is used (transactional and bulk) and what remains, plus the bulk
// volume rules; POST /v1/pacing/announcements announces a day's bulk volume beforehand
// (the spec's bulk rule 3 and pacing rule 5), so it is not held as a spike.
import type { FastifyPluginAsync } from 'fastify';
import { errorSchema } from '../http/schemas.js';
import type { PacingService } from './service.js';

const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { serviceKey: [] }];
const errors = { 400: errorSchema, 401: errorSchema, 429: errorSchema };
const nullableInt = { type: ['integer', 'null'] } as const;

const pacingSchema = {
  type: 'object',
  properties: {
    day: { type: 'string', description: 'UTC day the figures are for' },
    warmup_day: { type: 'integer', description: "1 on the project's first sending day" },
    first_sending_day: { type: ['string', 'null'] },
    next_day_at: { type: 'string', description: "when bulk mail held for today's norms is tried again" },
    providers: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          provider: { type: 'string' },
          daily_norm: { ...nullableInt, description: 'null: no norm' },
          used: { type: 'object', properties: { transactional: { type: 'integer' }, bulk: { type: 'integer' }, total: { type: 'integer' } } },
          remaining: nullableInt,
          held_bulk: { type: 'integer', description: 'bulk messages waiting for a later day' },
          rate_per_minute: nullableInt,
          connections: nullableInt,
        },
      },
    },
    bulk_volume: {
      type: 'object',
      properties: {
        today: { type: 'integer' },
        daily_average: { type: 'number' },
        threshold: { type: 'integer' },
        announced: { type: 'integer' },
        held_emails: { type: 'integer' },
        same_subject_daily_limit: { type: 'integer' },
      },
    },
    announcements: { type: 'array', items: { $ref: 'Announcement#' } },
    incomplete: { type: 'string' },
  },
} as const;

const announcementSchema = {
  $id: 'Announcement',
  type: 'object',
  properties: {
    day: { type: 'string' },
    volume: { type: 'integer' },
    source: { type: 'string', enum: ['project', 'operator'] },
    created_at: { type: 'string' },
  },
} as const;

export const pacingRoutes: FastifyPluginAsync<{ pacing: PacingService }> = async (app, { pacing }) => {
  app.addSchema(announcementSchema);

  app.get(
    '/v1/pacing',
    {
      schema: {
        summary: "Warm-up pacing per receiving provider: today's norm, used and remaining (transactional and bulk), and the bulk volume rules",
        tags: ['pacing'],
        security,
        response: { 200: pacingSchema, ...errors },
      },
    },
    async (req) => pacing.view(req.caller!.project),
  );

  app.post<{ Body: { day?: string; volume: number } }>(
    '/v1/pacing/announcements',
    {
      schema: {
        summary: "Announce a day's bulk volume beforehand, so mail up to it is not held as a spike",
        tags: ['pacing'],
        security,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['volume'],
          properties: { day: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' }, volume: { type: 'integer', minimum: 1, maximum: 100_000_000 } },
        },
        response: { 201: { $ref: 'Announcement#' }, ...errors },
      },
    },
    async (req, reply) => reply.code(201).send(await pacing.announce(req.caller!.project, req.body.day, req.body.volume)),
  );
};
