// Sender domains: add (DKIM key + the records to publish), list, verify over DNS, delete.
import type { FastifyPluginAsync } from 'fastify';
import { notFound } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Sealer } from '../../core/crypto.js';
import type { Resolver } from '../../core/dns.js';
import type { Config } from '../../core/config.js';
import type { DomainRow, Store } from '../store/index.js';
import { errorSchema } from '../http/schemas.js';
import type { DnsRecord } from './records.js';
import { createDomain } from './create.js';
import { verifyRecords } from './verify.js';

export interface DomainRoutesOptions {
  config: Config;
  store: Store;
  dkimSealer: Sealer;
  resolver: Resolver;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

const recordSchema = {
  type: 'object',
  properties: {
    purpose: { type: 'string' },
    type: { type: 'string', enum: ['TXT', 'MX'] },
    name: { type: 'string' },
    value: { type: 'string' },
    priority: { type: 'integer' },
    status: { type: 'string', enum: ['pending', 'verified', 'failed'] },
    problem: { type: 'string' },
  },
} as const;
const domainSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    status: { type: 'string', enum: ['pending', 'verified'] },
    created_at: { type: 'string' },
    verified_at: { type: ['string', 'null'] },
    checked_at: { type: ['string', 'null'] },
    records: { type: 'array', items: recordSchema },
  },
} as const;
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } } as const;
const errors = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 409: errorSchema, 429: errorSchema };
const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { serviceKey: [] }];

export const domainView = (d: DomainRow) => ({
  id: d.id,
  name: d.name,
  status: d.status,
  created_at: iso(d.createdAt),
  verified_at: iso(d.verifiedAt),
  checked_at: iso(d.checkedAt),
  records: d.records,
});

export const domainRoutes: FastifyPluginAsync<DomainRoutesOptions> = async (app, { config, store, dkimSealer, resolver }) => {
  app.post<{ Body: { name: string } }>(
    '/v1/domains',
    {
      schema: {
        summary: 'Add a sender domain; the answer lists the DNS records to publish',
        tags: ['domains'],
        security,
        body: { type: 'object', additionalProperties: false, required: ['name'], properties: { name: { type: 'string', maxLength: 253 } } },
        response: { 201: domainSchema, ...errors },
      },
    },
    async (req, reply) => {
      const row = await createDomain(store, config, dkimSealer, req.caller!.project.id, req.body.name);
      return reply.code(201).send(domainView(row));
    },
  );

  app.get(
    '/v1/domains',
    {
      schema: {
        summary: "List the project's domains with their status (verified ones can send)",
        tags: ['domains'],
        security,
        response: { 200: { type: 'object', properties: { data: { type: 'array', items: domainSchema } } }, ...errors },
      },
    },
    async (req) => ({ data: (await store.domains.list(req.caller!.project.id)).map(domainView) }),
  );

  app.get<{ Params: { id: string } }>(
    '/v1/domains/:id',
    {
      schema: { summary: 'One domain and its records', tags: ['domains'], security, params: idParams, response: { 200: domainSchema, ...errors } },
    },
    async (req) => {
      const d = await store.domains.get(req.caller!.project.id, req.params.id);
      if (!d) throw notFound('Domain not found');
      return domainView(d);
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/domains/:id/verify',
    {
      schema: {
        summary: 'Check every DNS record now; the domain is verified when all pass',
        tags: ['domains'],
        security,
        params: idParams,
        response: { 200: domainSchema, ...errors },
      },
    },
    async (req) => {
      const d = await store.domains.get(req.caller!.project.id, req.params.id);
      if (!d) throw notFound('Domain not found');
      const records = await verifyRecords(resolver, d.records as unknown as DnsRecord[]);
      const ok = records.every((r) => r.status === 'verified');
      const now = clock.now();
      // A verified domain stays verified: a DNS hiccup at re-check must not stop its mail.
      const status = ok || d.status === 'verified' ? 'verified' : 'pending';
      const verifiedAt = d.verifiedAt ?? (ok ? now : null);
      await store.domains.update(d.id, status, records as unknown as DomainRow['records'], now, verifiedAt);
      return domainView({ ...d, status, records: records as unknown as DomainRow['records'], checkedAt: now, verifiedAt });
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/domains/:id',
    {
      schema: {
        summary: 'Delete a domain',
        tags: ['domains'],
        security,
        params: idParams,
        response: { 200: { type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } }, ...errors },
      },
    },
    async (req) => {
      if (!(await store.domains.remove(req.caller!.project.id, req.params.id))) throw notFound('Domain not found');
      return { id: req.params.id, deleted: true };
    },
  );
};
