// The suppression list: bounced addresses (all mail) and unsubscribes (bulk mail).
import type { FastifyPluginAsync } from 'fastify';
import { invalid, notFound } from '../../core/errors.js';
import type { Store } from '../store/index.js';
import { errorSchema } from '../http/schemas.js';
import { canonical, isAddress } from '../../common/address.js';

const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { serviceKey: [] }];
const errors = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 429: errorSchema };
const entry = {
  type: 'object',
  properties: {
    email: { type: 'string' },
    reason: { type: 'string', enum: ['bounced', 'unsubscribed', 'complained', 'manual'] },
    scope: { type: 'string', enum: ['all', 'bulk'], description: 'all: no mail at all; bulk: no bulk mail (transactional still goes)' },
    email_id: { type: ['string', 'null'] },
    created_at: { type: 'string' },
  },
} as const;

export const suppressionRoutes: FastifyPluginAsync<{ store: Store }> = async (app, { store }) => {
  app.get(
    '/v1/suppressions',
    {
      schema: {
        summary: 'Addresses that are not mailed, with the reason and when',
        tags: ['suppressions'],
        security,
        response: { 200: { type: 'object', properties: { data: { type: 'array', items: entry } } }, ...errors },
      },
    },
    async (req) => ({
      data: (await store.suppressions.list(req.caller!.project.id)).map((s) => ({
        email: s.address,
        reason: s.reason,
        scope: s.scope,
        email_id: s.emailId,
        created_at: new Date(s.createdAt).toISOString(),
      })),
    }),
  );

  app.delete<{ Params: { email: string } }>(
    '/v1/suppressions/:email',
    {
      schema: {
        summary: 'Remove an address (URL-encoded) from the suppression list',
        tags: ['suppressions'],
        security,
        params: { type: 'object', required: ['email'], properties: { email: { type: 'string', maxLength: 320 } } },
        response: { 200: { type: 'object', properties: { email: { type: 'string' }, deleted: { type: 'boolean' } } }, ...errors },
      },
    },
    async (req) => {
      const email = req.params.email.trim();
      if (!isAddress(email)) throw invalid('email must be an address');
      if (!(await store.suppressions.remove(req.caller!.project.id, canonical(email)))) throw notFound('Address is not in the suppression list');
      return { email: canonical(email), deleted: true };
    },
  );
};
