// The console's overview on the admin listener (behind the admin guard). The response schema types the
// admin OpenAPI document for the front end; Fastify's serializer keeps only what it lists, so it lists
// every field the service answers.
import type { FastifyPluginAsync } from 'fastify';
import type { OverviewService } from './overview.js';
import { actionSchema, deferredSchema } from './state-schema.js';

export interface OverviewRoutesOptions {
  overview: OverviewService;
}

const nullable = (type: string) => ({ type: [type, 'null'] }) as const;
const numbers = { type: 'array', items: { type: 'number' } } as const;
const span = (buckets: number) =>
  ({
    type: 'object',
    required: ['start', 'step_s', 'accepted', 'delivered', 'deferred', 'bounced', 'complained'],
    properties: {
      start: { type: 'string', format: 'date-time', description: 'Start of the first bucket; the last one holds now' },
      step_s: { type: 'integer' },
      accepted: {
        ...numbers,
        description: `Emails control accepted, ${buckets} buckets oldest first (kept in control's memory: a restart of control starts them again)`,
      },
      delivered: { ...numbers, description: 'Recipients delivered (the gateways count per recipient)' },
      deferred: numbers,
      bounced: numbers,
      complained: numbers,
    },
  }) as const;

export const overviewSchema = {
  type: 'object',
  required: ['at', 'nodes', 'unreachable', 'series', 'queue', 'providers', 'alerts'],
  properties: {
    at: { type: 'string', format: 'date-time' },
    nodes: { type: 'array', items: { type: 'string' } },
    unreachable: { type: 'array', items: { type: 'string' }, description: 'Gateways of this node that did not answer' },
    series: { type: 'object', required: ['minute', 'hour'], properties: { minute: span(60), hour: span(24) } },
    queue: {
      type: 'object',
      required: ['ready', 'in_flight', 'deferred', 'held', 'scheduled', 'oldest_at'],
      properties: {
        ready: { type: 'integer' },
        in_flight: { type: 'integer' },
        deferred: deferredSchema,
        held: { type: 'integer', description: 'Emails control holds before dispatch (a volume spike)' },
        scheduled: { type: 'integer', description: 'Emails waiting for their scheduled time' },
        oldest_at: { ...nullable('string'), format: 'date-time', description: 'When control accepted the oldest message the gateways still queue' },
      },
    },
    providers: {
      type: 'array',
      description: 'Only the providers suspended or shaped now',
      items: {
        type: 'object',
        required: ['provider', 'suspended', 'shaped', 'actions', 'suspensions'],
        properties: {
          provider: { type: 'string' },
          suspended: { type: 'boolean' },
          shaped: { type: 'boolean' },
          actions: { type: 'array', items: actionSchema },
          suspensions: {
            type: 'array',
            items: {
              type: 'object',
              required: ['id', 'provider', 'project', 'reason', 'until'],
              properties: {
                id: { type: 'string' },
                provider: nullable('string'),
                project: nullable('string'),
                reason: { type: 'string' },
                until: nullable('string'),
              },
            },
          },
        },
      },
    },
    alerts: {
      type: 'array',
      items: {
        type: 'object',
        required: ['kind', 'severity', 'project', 'provider', 'value', 'threshold', 'message'],
        properties: {
          kind: { type: 'string', enum: ['bounce_rate', 'complaint_rate', 'queue_age', 'gateway_unreachable'] },
          severity: { type: 'string', enum: ['warning', 'critical'] },
          project: nullable('string'),
          provider: nullable('string'),
          value: { ...nullable('number'), description: 'A share (0-1) for rates, minutes for queue age, null for an unreachable gateway' },
          threshold: nullable('number'),
          message: { type: 'string' },
        },
      },
    },
  },
} as const;

export const overviewRoutes: FastifyPluginAsync<OverviewRoutesOptions> = async (app, { overview }) => {
  app.get('/admin/v1/overview', { schema: { hide: true, tags: ['admin'], response: { 200: overviewSchema } } }, async () => overview.overview());
};
