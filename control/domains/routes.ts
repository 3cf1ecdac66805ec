// Sender domains: add (DKIM key + the records to publish), list, verify over DNS, delete.
import type { FastifyPluginAsync } from 'fastify';
import { clock } from '../../core/clock.js';
import type { Sealer } from '../../core/crypto.js';
import type { Resolver } from '../../core/dns.js';
import type { Config } from '../../core/config.js';
import { DEFAULT_DOMAIN_SETTINGS, type DomainRow, type DomainSettings, type Store } from '../store/index.js';
import { allOrPageQuerySchema, errorSchema } from '../http/schemas.js';
import { type DnsRecord, mergeRecords, recordsFor, returnPathLabel, SENDING_PURPOSES } from './records.js';
import { createDomain, returnPathLabelOf } from './create.js';
import { ApiError, invalid, notFound } from '../../core/errors.js';
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
    type: { type: 'string', enum: ['TXT', 'MX', 'CNAME'] },
    name: { type: 'string' },
    value: { type: 'string' },
    priority: { type: 'integer' },
    status: { type: 'string', enum: ['pending', 'verified', 'failed'] },
    problem: { type: 'string' },
    record: { type: 'string', description: "Resend's grouping of the record: SPF, DKIM, DMARC, Tracking or Receiving." },
    ttl: { type: 'string', description: 'Always `Auto` (any TTL works).' },
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
    object: { type: 'string', enum: ['domain'] },
    region: { type: ['string', 'null'], description: 'As given at creation (accepted for Resend clients; one install has no regions).' },
    custom_return_path: { type: 'string', description: 'The subdomain label bounces and reports come back to (`pg-bounces` unless chosen).' },
    capabilities: {
      type: 'object',
      properties: { sending: { type: 'string', enum: ['enabled', 'disabled'] }, receiving: { type: 'string', enum: ['enabled', 'disabled'] } },
    },
    open_tracking: { type: 'boolean' },
    click_tracking: { type: 'boolean' },
    tls: { type: 'string', enum: ['opportunistic', 'enforced'] },
    tracking_subdomain: { type: 'string' },
  },
} as const;
/** The settings POST and PATCH take, in Resend's names. */
const settingsProperties = {
  open_tracking: { type: 'boolean', description: 'A 1×1 pixel in HTML mail reports opens (`email.opened`).' },
  click_tracking: { type: 'boolean', description: 'Links in HTML mail go through the tracking host, which reports `email.clicked`.' },
  tls: {
    type: 'string',
    enum: ['opportunistic', 'enforced'],
    description: '`enforced`: delivered only over STARTTLS with a certificate valid for the MX name, else deferred.',
  },
  tracking_subdomain: { type: 'string', maxLength: 63, description: 'The tracking host is `<tracking_subdomain>.<domain>` (`links` unless chosen).' },
  capabilities: {
    type: 'object',
    additionalProperties: false,
    properties: { sending: { type: 'string', enum: ['enabled'] }, receiving: { type: 'string', enum: ['enabled', 'disabled'] } },
  },
} as const;
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } } as const;
const errors = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 409: errorSchema, 429: errorSchema };
const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { serviceKey: [] }];

// Resend groups the return-path MX and SPF records under SPF.
const RESEND_RECORD: Record<string, string> = {
  dkim: 'DKIM',
  spf: 'SPF',
  dmarc: 'DMARC',
  return_path_mx: 'SPF',
  return_path_spf: 'SPF',
  tracking: 'Tracking',
  inbound_mx: 'Receiving',
};

export const domainView = (d: DomainRow) => ({
  object: 'domain',
  id: d.id,
  name: d.name,
  status: d.status,
  created_at: iso(d.createdAt),
  verified_at: iso(d.verifiedAt),
  checked_at: iso(d.checkedAt),
  region: d.region ?? null,
  custom_return_path: returnPathLabel(d.records as unknown as DnsRecord[], d.name),
  capabilities: { sending: 'enabled', receiving: d.settings.receiving ? 'enabled' : 'disabled' },
  open_tracking: d.settings.openTracking,
  click_tracking: d.settings.clickTracking,
  tls: d.settings.tls,
  tracking_subdomain: d.settings.trackingSubdomain,
  records: (d.records as unknown as DnsRecord[]).map((r) => ({ ...r, record: RESEND_RECORD[r.purpose] ?? r.purpose.toUpperCase(), ttl: 'Auto' })),
});

interface SettingsBody {
  open_tracking?: boolean;
  click_tracking?: boolean;
  tls?: 'opportunistic' | 'enforced';
  tracking_subdomain?: string;
  capabilities?: { sending?: 'enabled'; receiving?: 'enabled' | 'disabled' };
}
interface DomainChange extends SettingsBody {
  custom_return_path?: string;
}

/** The settings after a request's changes (what it leaves out stays as it was). */
export function settingsOf(b: SettingsBody, was: DomainSettings = DEFAULT_DOMAIN_SETTINGS): DomainSettings {
  const receiving = b.capabilities?.receiving;
  return {
    openTracking: b.open_tracking ?? was.openTracking,
    clickTracking: b.click_tracking ?? was.clickTracking,
    tls: b.tls ?? was.tls,
    trackingSubdomain: b.tracking_subdomain === undefined ? was.trackingSubdomain : returnPathLabelOf(b.tracking_subdomain, 'tracking_subdomain'),
    receiving: receiving === undefined ? was.receiving : receiving === 'enabled',
  };
}

const sameSettings = (a: DomainSettings, b: DomainSettings) =>
  a.openTracking === b.openTracking &&
  a.clickTracking === b.clickTracking &&
  a.tls === b.tls &&
  a.trackingSubdomain === b.trackingSubdomain &&
  a.receiving === b.receiving;

export const domainRoutes: FastifyPluginAsync<DomainRoutesOptions> = async (app, { config, store, dkimSealer, resolver }) => {
  app.post<{ Body: { name: string; custom_return_path?: string; region?: string } & SettingsBody }>(
    '/v1/domains',
    {
      schema: {
        summary: 'Add a sender domain; the answer lists the DNS records to publish',
        tags: ['domains'],
        security,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['name'],
          properties: {
            name: { type: 'string', maxLength: 253 },
            custom_return_path: { type: 'string', maxLength: 63, description: 'The return-path subdomain label; `pg-bounces` when omitted.' },
            region: { type: 'string', maxLength: 40, pattern: '^[a-z0-9-]+$', description: 'Accepted and echoed for Resend clients.' },
            ...settingsProperties,
          },
        },
        response: { 201: domainSchema, ...errors },
      },
    },
    async (req, reply) => {
      const { name, custom_return_path, region } = req.body;
      const row = await createDomain(store, config, dkimSealer, req.caller!.project.id, name, {
        ...(custom_return_path === undefined ? {} : { returnPath: custom_return_path }),
        ...(region === undefined ? {} : { region }),
        settings: settingsOf(req.body),
      });
      return reply.code(201).send(domainView(row));
    },
  );

  app.get<{ Querystring: { limit?: string; after?: string; before?: string } }>(
    '/v1/domains',
    {
      schema: {
        summary: "List the project's domains with their status (verified ones can send), oldest first",
        description:
          'Every domain unless `limit` is given; then a page at a time as Resend: `after` (a domain id) gives the next page, `before` the one before; `has_more` says whether more lie that way.',
        tags: ['domains'],
        security,
        querystring: allOrPageQuerySchema('domain', 'domains'),
        response: {
          200: {
            type: 'object',
            properties: { object: { type: 'string', enum: ['list'] }, has_more: { type: 'boolean' }, data: { type: 'array', items: domainSchema } },
          },
          ...errors,
        },
      },
    },
    async (req) => {
      const { limit, after, before } = req.query;
      if (after !== undefined && before !== undefined) throw invalid('Give after or before, not both');
      const page = await store.domains.list(req.caller!.project.id, {
        ...(limit !== undefined ? { limit: Number(limit) } : {}),
        ...(after !== undefined ? { after } : {}),
        ...(before !== undefined ? { before } : {}),
      });
      if (!page) throw invalid(`${after !== undefined ? 'after' : 'before'} names no domain of this project`);
      return { object: 'list', has_more: page.hasMore, data: page.domains.map(domainView) };
    },
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
      // Sending depends on the sending records only; a setting's record (tracking, inbound) is shown with its own status.
      const ok = records.every((r) => !SENDING_PURPOSES.has(r.purpose) || r.status === 'verified');
      const now = clock.now();
      // A verified domain stays verified: a DNS hiccup at re-check must not stop its mail.
      const status = ok || d.status === 'verified' ? 'verified' : 'pending';
      const verifiedAt = d.verifiedAt ?? (ok ? now : null);
      await store.domains.update(d.id, status, records as unknown as DomainRow['records'], now, verifiedAt);
      return domainView({ ...d, status, records: records as unknown as DomainRow['records'], checkedAt: now, verifiedAt });
    },
  );

  app.patch<{ Params: { id: string }; Body: DomainChange }>(
    '/v1/domains/:id',
    {
      schema: {
        summary: "Change a domain's settings",
        description:
          '`custom_return_path` can change while the domain is pending (its records are rewritten); a verified domain keeps its return path (409: delete and add it again), as on Resend. Open and click tracking, enforced TLS, the tracking subdomain and receiving change at any time; a setting that needs a DNS record adds it to `records` (pending until the next verify), without changing whether the domain may send.',
        tags: ['domains'],
        security,
        params: idParams,
        body: {
          type: 'object',
          additionalProperties: false,
          properties: {
            custom_return_path: { type: 'string', maxLength: 63 },
            ...settingsProperties,
          },
        },
        response: { 200: domainSchema, ...errors },
      },
    },
    async (req) => {
      const d = await store.domains.get(req.caller!.project.id, req.params.id);
      if (!d) throw notFound('Domain not found');
      const b = req.body ?? {};
      const was = d.records as unknown as DnsRecord[];
      const settings = settingsOf(b, d.settings);
      const oldLabel = returnPathLabel(was, d.name);
      const label = b.custom_return_path === undefined ? oldLabel : returnPathLabelOf(b.custom_return_path);
      if (label !== oldLabel && d.status === 'verified') {
        throw new ApiError('CONFLICT', 'A verified domain keeps its return path; delete the domain and add it again to change it');
      }
      if (label === oldLabel && sameSettings(settings, d.settings)) return domainView(d);
      const records = mergeRecords(was, recordsFor(d.name, d.selector, d.dkimPublic, config, label, settings)) as unknown as DomainRow['records'];
      if (!(await store.domains.updateSettings(d.projectId, d.id, settings, records))) throw notFound('Domain not found');
      return domainView({ ...d, records, settings });
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
        response: { 200: { type: 'object', properties: { object: { type: 'string' }, id: { type: 'string' }, deleted: { type: 'boolean' } } }, ...errors },
      },
    },
    async (req) => {
      if (!(await store.domains.remove(req.caller!.project.id, req.params.id))) throw notFound('Domain not found');
      return { object: 'domain', id: req.params.id, deleted: true };
    },
  );
};
