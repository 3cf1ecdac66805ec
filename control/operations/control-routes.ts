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

  app.get('/admin/v1/queue/suspensions', { schema: hide }, async () => ({ object: 'list', data: await controls.list() }));

  app.delete<{ Params: { id: string } }>(
    '/admin/v1/queue/suspensions/:id',
    { schema: { ...hide, params: { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } } } },
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
    { schema: { ...hide, body: { type: 'object', additionalProperties: false, properties: target } } },
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
    { schema: { ...hide, params: { type: 'object', required: ['slug'], properties: { slug: slugSchema } } } },
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
