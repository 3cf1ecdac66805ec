// The console's Suppressions page: search every project's suppression list (or one project's) by a
// piece of the address, newest first a page at a time, with where each entry came from (reason,
// scope, the email that caused it); and remove an address, audited like every operator change.
import type { FastifyPluginAsync } from 'fastify';
import { invalid, notFound } from '../../core/errors.js';
import { canonical, isAddress } from '../../common/address.js';
import type { Store, SuppressionCursor } from '../store/index.js';
import { audit } from '../operations/audit.js';
import { adminErrors, limitQuery, projectBySlug, slugSchema, slugsOf } from './common.js';

/** No control character (a NUL would be refused by PostgreSQL, not by SQLite): refused alike on both. */
const printable = '^[^\\u0000-\\u001f\\u007f]*$';

const entrySchema = {
  type: 'object',
  required: ['project', 'address', 'reason', 'scope', 'email_id', 'created_at'],
  properties: {
    project: { type: 'string', description: 'The slug.' },
    address: { type: 'string' },
    reason: { type: 'string', description: 'bounced, complained, unsubscribed or manual.' },
    scope: { type: 'string', description: 'all: no mail at all; bulk: no bulk mail.' },
    email_id: { type: ['string', 'null'], description: 'The email whose outcome suppressed the address.' },
    created_at: { type: 'string' },
  },
} as const;

/** The cursor is the last row given, opaque to the client. */
const encodeCursor = (c: SuppressionCursor): string => Buffer.from(JSON.stringify([c.createdAt, c.projectId, c.address])).toString('base64url');
function decodeCursor(s: string): SuppressionCursor {
  try {
    const v: unknown = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 3 && Number.isSafeInteger(v[0]) && typeof v[1] === 'string' && typeof v[2] === 'string') {
      return { createdAt: v[0], projectId: v[1], address: v[2] };
    }
  } catch {
    /* answered below */
  }
  throw invalid('after is not a cursor this API gave');
}

export const suppressionAdminRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get<{ Querystring: { project?: string; q?: string; limit?: string; after?: string } }>(
    '/admin/v1/suppressions',
    {
      schema: {
        hide: true,
        tags: ['admin'],
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            project: slugSchema,
            q: { type: 'string', maxLength: 320, pattern: printable, description: 'A piece of the address (case-insensitive), or all of it.' },
            limit: limitQuery,
            after: { type: 'string', maxLength: 1500 },
          },
        },
        response: {
          200: {
            type: 'object',
            required: ['data', 'has_more', 'next'],
            properties: { data: { type: 'array', items: entrySchema }, has_more: { type: 'boolean' }, next: { type: ['string', 'null'] } },
          },
          ...adminErrors,
        },
      },
    },
    async (req) => {
      const project = req.query.project !== undefined ? await projectBySlug(store, req.query.project) : undefined;
      const limit = req.query.limit ? Number(req.query.limit) : 25;
      const q = req.query.q?.trim();
      const page = await store.suppressions.search({
        limit,
        ...(project ? { projectId: project.id } : {}),
        ...(q ? { q } : {}),
        ...(req.query.after !== undefined ? { after: decodeCursor(req.query.after) } : {}),
      });
      const slugs = await slugsOf(
        store,
        page.rows.map((r) => r.projectId),
        project,
      );
      const last = page.rows.at(-1);
      return {
        data: page.rows.map((r) => ({
          project: slugs.get(r.projectId)!,
          address: r.address,
          reason: r.reason,
          scope: r.scope,
          email_id: r.emailId,
          created_at: new Date(r.createdAt).toISOString(),
        })),
        has_more: page.hasMore,
        next: page.hasMore && last ? encodeCursor(last) : null,
      };
    },
  );

  app.delete<{ Params: { slug: string; address: string } }>(
    '/admin/v1/projects/:slug/suppressions/:address',
    {
      schema: {
        hide: true,
        tags: ['admin'],
        params: { type: 'object', required: ['slug', 'address'], properties: { slug: slugSchema, address: { type: 'string', maxLength: 320 } } },
        response: { 204: { type: 'null', description: 'Removed: mail to the address goes again.' }, ...adminErrors },
      },
    },
    async (req, reply) => {
      const p = await projectBySlug(store, req.params.slug);
      const address = req.params.address.trim();
      if (!isAddress(address)) throw invalid('address must be an email address');
      // The public DELETE /v1/suppressions/:email does the same: no cache holds suppressions (the accept reads them in its transaction).
      if (!(await store.suppressions.remove(p.id, canonical(address)))) throw notFound(`${canonical(address)} is not suppressed in ${p.slug}`);
      await audit(store, req, { action: 'suppression.remove', target: `project:${p.slug} address:${canonical(address)}` });
      return reply.code(204).send();
    },
  );
};
