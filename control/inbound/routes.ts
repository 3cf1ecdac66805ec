// Received mail over the API, in Resend's receiving shapes (the `resend` SDK's emails.receiving.get/list and
// emails.receiving.attachments.get/list): behind the project key like the rest of the mail API. Another
// project's id is a 404. The files themselves come from signed, short-lived links (links.ts), served by
// inboundDownloadRoutes without the key, always as a download (never rendered on our origin).
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { invalid, notFound } from '../../core/errors.js';
import { errorSchema } from '../http/schemas.js';
import type { InboundAttachmentRow, InboundEmailRow, Store } from '../store/index.js';
import type { DownloadLinks } from './links.js';

export interface InboundRoutesOptions {
  store: Store;
  links: DownloadLinks;
}

const errors = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 422: errorSchema, 429: errorSchema };
const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { serviceKey: [] }];
const strings = { type: 'array', items: { type: 'string' } } as const;
const nullableStrings = { type: ['array', 'null'], items: { type: 'string' } } as const;

const attachmentMeta = {
  id: { type: 'string' },
  filename: { type: ['string', 'null'], description: 'As the sender named it, without directories or control characters.' },
  size: { type: 'integer' },
  content_type: { type: 'string' },
  content_id: { type: ['string', 'null'] },
  content_disposition: { type: 'string', enum: ['inline', 'attachment'] },
} as const;
const attachmentSchema = {
  type: 'object',
  properties: {
    object: { type: 'string', enum: ['attachment'] },
    ...attachmentMeta,
    download_url: { type: 'string', description: 'A signed link to the file, valid until expires_at (one hour); no key needed.' },
    expires_at: { type: 'string' },
  },
} as const;
const authenticationSchema = {
  type: 'object',
  description:
    'SPF, DKIM and DMARC as the inbound listener judged them (pass, fail, softfail, neutral, none, temperror, permerror). Not a verdict on the content.',
  properties: {
    spf: { type: 'string' },
    dkim: { type: 'string' },
    dmarc: { type: 'string' },
    results: { type: 'string', description: 'The Authentication-Results header value.' },
    details: { type: 'object', additionalProperties: true, description: 'Domains, selectors and the DMARC policy.' },
  },
} as const;
const listItem = {
  id: { type: 'string' },
  from: { type: 'string' },
  to: strings,
  cc: nullableStrings,
  bcc: nullableStrings,
  reply_to: nullableStrings,
  received_for: { ...strings, description: 'The envelope recipients (RCPT TO) at your receiving domains.' },
  subject: { type: 'string' },
  message_id: { type: 'string' },
  created_at: { type: 'string' },
  attachments: { type: 'array', items: { type: 'object', properties: attachmentMeta } },
  authentication: authenticationSchema,
} as const;
const emailSchema = {
  type: 'object',
  properties: {
    object: { type: 'string', enum: ['email'] },
    ...listItem,
    html: { type: ['string', 'null'] },
    text: { type: ['string', 'null'] },
    headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'Each header by lower-case name; a repeated one joined by newlines.' },
    raw: {
      type: ['object', 'null'],
      properties: { download_url: { type: 'string' }, expires_at: { type: 'string' } },
      description: 'A signed link to the message as received (message/rfc822).',
    },
  },
} as const;
const idParams = (names: string[]) => ({
  type: 'object',
  required: names,
  properties: Object.fromEntries(names.map((n) => [n, { type: 'string', minLength: 1, maxLength: 100 }])),
});
const pageQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'string', pattern: '^(100|[1-9][0-9]?)$', description: '1 to 100 (20 when omitted)' },
    after: { type: 'string', maxLength: 100, description: 'An id: the items after it' },
    before: { type: 'string', maxLength: 100, description: 'An id: the items before it' },
  },
} as const;

type PageQuery = { limit?: string; after?: string; before?: string };

const iso = (ms: number) => new Date(ms).toISOString();
const orNull = (list: string[]) => (list.length ? list : null);

function details(json: string): Record<string, unknown> {
  try {
    return JSON.parse(json) as Record<string, unknown>;
  } catch {
    return {};
  }
}

function listView(e: InboundEmailRow) {
  return {
    id: e.id,
    from: e.from,
    to: e.to,
    cc: orNull(e.cc),
    bcc: orNull(e.bcc),
    reply_to: orNull(e.replyTo),
    received_for: e.rcptTo,
    subject: e.subject,
    message_id: e.messageId,
    created_at: iso(e.createdAt),
    attachments: e.attachments.map(attachmentView),
    authentication: { spf: e.auth.spf, dkim: e.auth.dkim, dmarc: e.auth.dmarc, results: e.auth.header, details: details(e.auth.details) },
  };
}

const attachmentView = (a: InboundAttachmentRow) => ({
  id: a.id,
  filename: a.filename,
  size: a.size,
  content_type: a.contentType,
  content_id: a.contentId,
  content_disposition: a.contentDisposition,
});

function pageOptions(q: PageQuery): { limit: number; after?: string; before?: string } {
  if (q.after !== undefined && q.before !== undefined) throw invalid('Give after or before, not both');
  return {
    limit: q.limit ? Number(q.limit) : 20,
    ...(q.after !== undefined ? { after: q.after } : {}),
    ...(q.before !== undefined ? { before: q.before } : {}),
  };
}

export const inboundRoutes: FastifyPluginAsync<InboundRoutesOptions> = async (app, { store, links }) => {
  const signed = (projectId: string, emailId: string, a: InboundAttachmentRow) => {
    const link = links.sign(projectId, emailId, a.id);
    return { object: 'attachment' as const, ...attachmentView(a), download_url: link.url, expires_at: iso(link.expiresAt) };
  };

  app.get<{ Querystring: PageQuery }>(
    '/v1/emails/receiving',
    {
      schema: {
        summary: 'List received emails',
        description:
          'Newest first, a page at a time as Resend: `after` (an id) gives the next page, `before` the one before; `has_more` says whether more lie that way.',
        tags: ['receiving'],
        security,
        querystring: pageQuery,
        response: {
          200: {
            type: 'object',
            properties: {
              object: { type: 'string', enum: ['list'] },
              has_more: { type: 'boolean' },
              data: { type: 'array', items: { type: 'object', properties: listItem } },
            },
          },
          ...errors,
        },
      },
    },
    async (req) => {
      const page = await store.inbound.list(req.caller!.project.id, pageOptions(req.query));
      if (!page) throw invalid(`${req.query.after !== undefined ? 'after' : 'before'} names no received email of this project`);
      return { object: 'list', has_more: page.hasMore, data: page.emails.map(listView) };
    },
  );

  /** The html with each inline image (cid:<content_id>) as a data: URI, read from the stored attachment. */
  async function inlineImages(projectId: string, e: InboundEmailRow, html: string): Promise<string> {
    for (const a of e.attachments) {
      if (!a.contentId || !html.includes(`cid:${a.contentId}`)) continue;
      const file = await store.inbound.attachment(projectId, e.id, a.id);
      if (!file) continue;
      const type = /^[\w.+-]+\/[\w.+-]+$/.test(a.contentType) ? a.contentType : 'application/octet-stream';
      html = html.split(`cid:${a.contentId}`).join(`data:${type};base64,${Buffer.from(file.content).toString('base64')}`);
    }
    return html;
  }

  app.get<{ Params: { id: string }; Querystring: { html_format?: 'cid' | 'data_uri' } }>(
    '/v1/emails/receiving/:id',
    {
      schema: {
        summary: 'Get a received email',
        tags: ['receiving'],
        security,
        params: idParams(['id']),
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            html_format: {
              type: 'string',
              enum: ['cid', 'data_uri'],
              description:
                "As Resend: `data_uri` (the default) puts inline images in `html` as data: URIs; `cid` keeps the message's cid: references (each an attachment's content_id).",
            },
          },
        },
        response: { 200: emailSchema, ...errors },
      },
    },
    async (req) => {
      const projectId = req.caller!.project.id;
      const e = await store.inbound.get(projectId, req.params.id);
      if (!e) throw notFound('Received email not found');
      const raw = links.sign(projectId, e.id, 'raw');
      const html = e.html && req.query.html_format !== 'cid' ? await inlineImages(projectId, e, e.html) : e.html;
      return {
        object: 'email',
        ...listView(e),
        html,
        text: e.text,
        headers: e.headers,
        raw: { download_url: raw.url, expires_at: iso(raw.expiresAt) },
      };
    },
  );

  app.get<{ Params: { id: string }; Querystring: PageQuery }>(
    '/v1/emails/receiving/:id/attachments',
    {
      schema: {
        summary: "List a received email's attachments",
        tags: ['receiving'],
        security,
        params: idParams(['id']),
        querystring: pageQuery,
        response: {
          200: {
            type: 'object',
            properties: { object: { type: 'string', enum: ['list'] }, has_more: { type: 'boolean' }, data: { type: 'array', items: attachmentSchema } },
          },
          ...errors,
        },
      },
    },
    async (req) => {
      const projectId = req.caller!.project.id;
      const e = await store.inbound.get(projectId, req.params.id);
      if (!e) throw notFound('Received email not found');
      const q = pageOptions(req.query);
      // An email's few attachments, in message order, paged in memory.
      const cursor = q.after ?? q.before;
      const at = cursor === undefined ? -1 : e.attachments.findIndex((a) => a.id === cursor);
      if (cursor !== undefined && at < 0) throw invalid(`${q.after !== undefined ? 'after' : 'before'} names no attachment of this email`);
      const list = q.before !== undefined ? e.attachments.slice(Math.max(0, at - q.limit), at) : e.attachments.slice(at + 1, at + 1 + q.limit);
      const hasMore = q.before !== undefined ? at - q.limit > 0 : at + 1 + q.limit < e.attachments.length;
      return { object: 'list', has_more: hasMore, data: list.map((a) => signed(projectId, e.id, a)) };
    },
  );

  app.get<{ Params: { email_id: string; id: string } }>(
    '/v1/emails/receiving/:email_id/attachments/:id',
    {
      schema: {
        summary: "Get a received email's attachment",
        tags: ['receiving'],
        security,
        params: idParams(['email_id', 'id']),
        response: { 200: attachmentSchema, ...errors },
      },
    },
    async (req) => {
      const projectId = req.caller!.project.id;
      const e = await store.inbound.get(projectId, req.params.email_id);
      const a = e?.attachments.find((x) => x.id === req.params.id);
      if (!e || !a) throw notFound('Attachment not found');
      return signed(projectId, e.id, a);
    },
  );
};

type LinkQuery = { project?: string; expires?: string; signature?: string };
const linkQuery = {
  type: 'object',
  properties: { project: { type: 'string', maxLength: 100 }, expires: { type: 'string', maxLength: 20 }, signature: { type: 'string', maxLength: 100 } },
} as const;
const fileResponse = {
  200: { description: 'The file, as a download', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
};

/**
 * A name for Content-Disposition: ASCII with quotes and backslashes replaced in `filename`, the whole
 * name percent-encoded in `filename*` (RFC 6266); nothing of it can end the header.
 */
export function contentDisposition(filename: string | null): string {
  const name = filename ?? 'attachment';
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** Served so that a file never runs as a page of our origin: a download, of a type that renders nothing, sandboxed. */
function sendFile(reply: FastifyReply, body: Uint8Array, type: string, filename: string | null) {
  return reply
    .header('content-type', type)
    .header('content-disposition', contentDisposition(filename))
    .header('x-content-type-options', 'nosniff')
    .header('content-security-policy', "default-src 'none'; sandbox")
    .header('cache-control', 'private, no-store')
    .send(Buffer.from(body));
}

/** The signed links: no key (the link is the credential); a wrong, foreign or expired one is a 404. */
export const inboundDownloadRoutes: FastifyPluginAsync<InboundRoutesOptions> = async (app, { store, links }) => {
  app.get<{ Params: { id: string; attachment: string }; Querystring: LinkQuery }>(
    '/downloads/received/:id/attachments/:attachment',
    {
      schema: {
        summary: "Download a received email's attachment (signed link)",
        description: 'The `download_url` of an attachment: valid until its `expires_at`, no key needed.',
        tags: ['receiving'],
        params: idParams(['id', 'attachment']),
        querystring: linkQuery,
        response: { ...fileResponse, 404: errorSchema },
      },
    },
    async (req, reply) => {
      const { id, attachment } = req.params;
      if (!links.check(req.query, id, attachment)) throw notFound('Link not found or expired');
      const found = await store.inbound.attachment(req.query.project!, id, attachment);
      if (!found) throw notFound('Link not found or expired');
      return sendFile(reply, found.content, 'application/octet-stream', found.row.filename);
    },
  );

  app.get<{ Params: { id: string }; Querystring: LinkQuery }>(
    '/downloads/received/:id/raw',
    {
      schema: {
        summary: 'Download a received email as received (signed link)',
        description: 'The `raw.download_url` of a received email: the message (RFC 5322) as the inbound listener took it.',
        tags: ['receiving'],
        params: idParams(['id']),
        querystring: linkQuery,
        response: { ...fileResponse, 404: errorSchema },
      },
    },
    async (req, reply) => {
      const { id } = req.params;
      if (!links.check(req.query, id, 'raw')) throw notFound('Link not found or expired');
      const raw = await store.inbound.raw(req.query.project!, id);
      if (!raw) throw notFound('Link not found or expired');
      return sendFile(reply, raw, 'message/rfc822', `${id}.eml`);
    },
  );
};
