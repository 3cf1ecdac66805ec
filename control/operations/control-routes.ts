// The operator's queue control (admin listener, behind the admin token; the CLI's `queue` commands):
// suspensions, send now, a project's cancel, and the operator audit log every change writes to.
import type { FastifyPluginAsync } from 'fastify';
import { invalid } from '../../core/errors.js';
import type { OperatorAuditEntry, Store } from '../store/index.js';
import { audit } from './audit.js';
import type { QueueControls } from './controls.js';

export interface ControlRoutesOptions {
  store: Store;
  controls: QueueControls;
}

const hide = { hide: true, tags: ['admin'] };
const providerSchema = { type: 'string', pattern: '^[a-z0-9-]{1,40}$' } as const;
const slugSchema = { type: 'string', pattern: '^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$' } as const;
const target = { provider: providerSchema, project: slugSchema } as const;

// Response schemas (the admin OpenAPI document types the console with them). Fastify's serializer keeps
// only the fields a schema lists: every field answered is listed, nullable where it may be null.
const nullable = (type: string) => ({ type: [type, 'null'] }) as const;
const SUSPENSION_FIELDS = {
  id: { type: 'string' },
  provider: { ...nullable('string'), description: 'null: every provider' },
  project: { ...nullable('string'), description: "A project's slug; null: every project" },
  until: { ...nullable('string'), format: 'date-time', description: 'null: until resumed' },
  reason: { type: 'string' },
  created_at: { type: 'string', format: 'date-time' },
} as const;
const suspensionSchema = { type: 'object', required: Object.keys(SUSPENSION_FIELDS), properties: SUSPENSION_FIELDS } as const;
const resumedSchema = {
  type: 'object',
  required: [...Object.keys(SUSPENSION_FIELDS), 'resumed'],
  properties: { ...SUSPENSION_FIELDS, resumed: { type: 'boolean' } },
} as const;
const auditEntrySchema = {
  type: 'object',
  required: ['id', 'at', 'action', 'actor', 'target', 'details', 'emails'],
  properties: {
    id: { type: 'string' },
    at: { type: 'string', format: 'date-time' },
    action: { type: 'string' },
    actor: { type: 'string', description: "The first 12 hex digits of the SHA-256 of the operator's token" },
    target: { type: 'string' },
    details: { type: 'object', additionalProperties: true },
    emails: { ...nullable('integer'), description: 'How many emails it concerned, when known' },
  },
} as const;
const count = { type: 'integer' } as const;

const auditOut = (e: OperatorAuditEntry) => ({
  id: e.id,
  at: new Date(e.at).toISOString(),
  action: e.action,
  actor: e.actor,
  target: e.target,
  details: e.details,
  emails: e.emails,
});

/** What an audit entry names: the provider and/or the project. */
const targetOf = (t: { provider?: string; project?: string }) =>
  [t.provider ? `provider:${t.provider}` : '', t.project ? `project:${t.project}` : ''].filter(Boolean).join(' ');

export const controlRoutes: FastifyPluginAsync<ControlRoutesOptions> = async (app, { store, controls }) => {
  app.post<{ Body: { provider?: string; project?: string; until?: string; reason?: string } }>(
    '/admin/v1/queue/suspensions',
    {
      schema: {
        ...hide,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: { ...target, until: { type: 'string', maxLength: 40 }, reason: { type: 'string', maxLength: 500 } },
        },
        response: { 201: suspensionSchema },
      },
    },
    async (req, reply) => {
      const b = req.body ?? {};
      let until: number | undefined;
      if (b.until !== undefined) {
        until = Date.parse(b.until);
        if (!/^\d{4}-\d{2}-\d{2}T/.test(b.until) || Number.isNaN(until)) throw invalid('until must be an ISO 8601 date and time, e.g. 2030-01-01T12:00:00Z');
      }
      const s = await controls.suspend({ provider: b.provider, project: b.project, until, reason: b.reason });
      await audit(store, req, { action: 'queue.suspend', target: targetOf(b), details: { suspension: s.id, until: s.until, reason: s.reason } });
      return reply.code(201).send(s);
    },
  );

  app.get(
    '/admin/v1/queue/suspensions',
    {
      schema: {
        ...hide,
        response: {
          200: {
            type: 'object',
            required: ['object', 'data'],
            properties: { object: { type: 'string', enum: ['list'] }, data: { type: 'array', items: suspensionSchema } },
          },
        },
      },
    },
    async () => ({ object: 'list', data: await controls.list() }),
  );

  app.delete<{ Params: { id: string } }>(
    '/admin/v1/queue/suspensions/:id',
    {
      schema: {
        ...hide,
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } },
        response: { 200: resumedSchema },
      },
    },
    async (req) => {
      const s = await controls.resume(req.params.id);
      await audit(store, req, {
        action: 'queue.resume',
        target: targetOf({ provider: s.provider ?? undefined, project: s.project ?? undefined }),
        details: { suspension: s.id },
      });
      return { ...s, resumed: true };
    },
  );

  app.post<{ Body: { provider?: string; project?: string } }>(
    '/admin/v1/queue/send-now',
    {
      schema: {
        ...hide,
        body: { type: 'object', additionalProperties: false, properties: target },
        response: {
          200: { type: 'object', required: ['woken'], properties: { woken: { ...count, description: "Queue items woken on this node's gateways" } } },
        },
      },
    },
    async (req) => {
      const b = req.body ?? {};
      const out = await controls.sendNow(b);
      // Counted in queue items (one per recipient copy) on this node's gateways.
      await audit(store, req, { action: 'queue.send_now', target: targetOf(b), emails: out.woken });
      return out;
    },
  );

  app.post<{ Params: { slug: string } }>(
    '/admin/v1/projects/:slug/cancel-queued',
    {
      schema: {
        ...hide,
        params: { type: 'object', required: ['slug'], properties: { slug: slugSchema } },
        response: {
          200: {
            type: 'object',
            required: ['canceled', 'dropped'],
            properties: {
              canceled: { ...count, description: 'Emails that became canceled in the store' },
              dropped: { ...count, description: 'Queue items the gateways that answered dropped' },
            },
          },
        },
      },
    },
    async (req) => {
      const out = await controls.cancel(req.params.slug);
      await audit(store, req, { action: 'queue.cancel', target: `project:${req.params.slug}`, details: { dropped: out.dropped }, emails: out.canceled });
      return out;
    },
  );

  // Newest first; `before` (an entry id) pages on to older entries.
  app.get<{ Querystring: { limit?: string; before?: string } }>(
    '/admin/v1/audit',
    {
      schema: {
        ...hide,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            // Query strings are not coerced (control/http/fastify.ts): a number arrives as digits.
            limit: { type: 'string', pattern: '^(1000|[1-9][0-9]{0,2})$' },
            before: { type: 'string', maxLength: 100 },
          },
        },
        response: {
          200: {
            type: 'object',
            required: ['object', 'has_more', 'data'],
            properties: { object: { type: 'string', enum: ['list'] }, has_more: { type: 'boolean' }, data: { type: 'array', items: auditEntrySchema } },
          },
        },
      },
    },
    async (req) => {
      const { before } = req.query;
      const page = await store.operations.auditLog({ limit: req.query.limit ? Number(req.query.limit) : 50, ...(before !== undefined ? { before } : {}) });
      if (!page) throw invalid(`before names no audit entry: ${before}`);
      return { object: 'list', has_more: page.hasMore, data: page.entries.map(auditOut) };
    },
  );
};
