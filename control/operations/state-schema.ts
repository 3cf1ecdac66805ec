// The response schema of GET /admin/v1/queue/status (DeliveryStateService.status): it types the admin
// OpenAPI document for the console. Fastify's serializer keeps only what a schema lists, so every field
// the service answers is here, nullable where it answers null.
import { DEFER_CAUSES } from '../../common/delivery-state.js';

const nullable = (type: string) => ({ type: [type, 'null'] }) as const;
const int = { type: 'integer' } as const;

export const deferredSchema = {
  type: 'object',
  required: [...DEFER_CAUSES],
  properties: Object.fromEntries(DEFER_CAUSES.map((c) => [c, { type: 'integer' }])),
} as const;

const queue = { type: 'object', required: ['ready', 'in_flight', 'deferred'], properties: { ready: int, in_flight: int, deferred: deferredSchema } } as const;
const outcomes = {
  type: 'object',
  required: ['delivered', 'deferred', 'bounced', 'complained'],
  properties: { delivered: int, deferred: int, bounced: int, complained: int },
} as const;
const windows = {
  type: 'object',
  required: ['last_5m', 'last_hour', 'last_day'],
  properties: { last_5m: outcomes, last_hour: outcomes, last_day: outcomes },
} as const;

/** A shaping action in force (also in the overview). */
export const actionSchema = {
  type: 'object',
  required: ['rule', 'action', 'value', 'project', 'since', 'until', 'trigger'],
  properties: {
    rule: { type: 'string' },
    action: { type: 'string', description: 'suspend, rate or connections' },
    value: { type: 'number', description: 'The lowered rate per minute or connections; 0 for suspend' },
    project: { ...nullable('string'), description: "A project's slug; null: every project" },
    since: { ...nullable('string'), format: 'date-time' },
    until: { ...nullable('string'), format: 'date-time' },
    trigger: { type: 'string', description: 'The answer that drew it' },
  },
} as const;

export const queueStatusSchema = {
  type: 'object',
  required: ['at', 'nodes', 'unreachable', 'held', 'providers'],
  properties: {
    at: { type: 'string', format: 'date-time' },
    nodes: { type: 'array', items: { type: 'string' } },
    unreachable: { type: 'array', items: { type: 'string' } },
    held: {
      type: 'object',
      required: ['emails', 'projects'],
      properties: {
        emails: int,
        projects: { type: 'array', items: { type: 'object', required: ['project', 'emails'], properties: { project: nullable('string'), emails: int } } },
      },
    },
    providers: {
      type: 'array',
      items: {
        type: 'object',
        required: ['provider', 'queue', 'connections', 'rate', 'warmup', 'answers', 'windows', 'actions', 'projects'],
        properties: {
          provider: { type: 'string' },
          queue,
          connections: {
            type: 'object',
            required: ['open', 'limit'],
            properties: { open: int, limit: { ...nullable('integer'), description: 'null: unlimited' } },
          },
          rate: {
            type: 'object',
            required: ['per_minute', 'configured', 'effective'],
            properties: {
              per_minute: { type: 'number', description: 'Attempts started in the last minute' },
              configured: { ...nullable('number'), description: "The throttle's rate per minute; null: unlimited" },
              effective: { ...nullable('number'), description: 'After shaping; null: unlimited' },
            },
          },
          warmup: {
            type: 'array',
            items: { type: 'object', required: ['project', 'used', 'norm'], properties: { project: nullable('string'), used: int, norm: nullable('integer') } },
          },
          answers: {
            type: 'array',
            items: {
              type: 'object',
              required: ['enhanced_code', 'count', 'sample', 'last_at'],
              properties: {
                enhanced_code: { type: 'string' },
                count: int,
                sample: { type: 'string' },
                last_at: { ...nullable('string'), format: 'date-time' },
              },
            },
          },
          windows,
          actions: { type: 'array', items: actionSchema },
          projects: {
            type: 'array',
            items: { type: 'object', required: ['project', 'queue', 'windows'], properties: { project: nullable('string'), queue, windows } },
          },
        },
      },
    },
  },
} as const;
