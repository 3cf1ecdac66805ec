// The templates API in Resend's shapes: create, get, list, update, delete, duplicate and publish.
// Edits change the draft; sends use the published version (apply.ts), so editing a published
// template changes nothing sent until it is published again. `:id` is the id or the alias, in
// the caller's project only (another project's is 404). Registered inside the mail API, behind
// its key check and rate limit (control/mail/routes.ts).
import type { FastifyPluginAsync } from 'fastify';
import { clock } from '../../core/clock.js';
import { ApiError, invalid, notFound } from '../../core/errors.js';
import { uuidv7 } from '../../core/ids.js';
import type { Config } from '../../core/config.js';
import { parseMailbox } from '../../common/address.js';
import type { Store, TemplateContent, TemplateRow, TemplateVariableRow } from '../store/index.js';
import { errorSchema } from '../http/schemas.js';
import { checkDeclarations, compile, TemplateProblem, type VariableType } from './render.js';
import { templateBodySchema, templateDeletedAnswer, templateIdOrAlias, templateListSchema, templateRefAnswer, templateSchema } from './schema.js';
import { templateListItem, templateView } from './view.js';

export interface TemplateRoutesOptions {
  config: Config;
  store: Store;
}

interface VariableBody {
  key: string;
  type: VariableType;
  fallback_value?: string | number | null;
}

interface TemplateBody {
  name?: string;
  alias?: string | null;
  from?: string | null;
  subject?: string | null;
  reply_to?: string | string[] | null;
  html?: string;
  text?: string | null;
  variables?: VariableBody[];
}

const errors = { 400: errorSchema, 401: errorSchema, 404: errorSchema, 409: errorSchema, 422: errorSchema, 429: errorSchema };
const security: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { serviceKey: [] }];
const idParams = { type: 'object', required: ['id'], properties: { id: { ...templateIdOrAlias, description: "The template's id or alias." } } } as const;
/** Template ids are UUIDs (time-ordered, core/ids.ts): a list cursor is one. */
const TEMPLATE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const addresses = (field: string, v: string | string[]): string[] =>
  (Array.isArray(v) ? v : [v]).map((a) => {
    if (!parseMailbox(a)) throw invalid(`${field} contains an invalid address: ${JSON.stringify(a.slice(0, 100))}`);
    return a.trim();
  });

/** The draft after a create or an edit: what the body gives over what the draft had; checked whole. */
function draftOf(was: TemplateContent | undefined, b: TemplateBody, now: number): TemplateContent {
  const pick = <K extends keyof TemplateBody, V>(k: K, old: V, map: (v: NonNullable<TemplateBody[K]>) => V): V =>
    b[k] === undefined ? old : b[k] === null ? (null as V) : map(b[k] as NonNullable<TemplateBody[K]>);
  const kept = new Map((was?.variables ?? []).map((v) => [v.key, v]));
  const variables: TemplateVariableRow[] =
    b.variables === undefined
      ? (was?.variables ?? [])
      : b.variables.map((v) => ({
          key: v.key,
          type: v.type,
          fallback: v.fallback_value ?? null,
          createdAt: kept.get(v.key)?.createdAt ?? now,
          updatedAt: now,
        }));
  const d: TemplateContent = {
    versionId: uuidv7(now),
    from: pick('from', was?.from ?? null, (v) => {
      addresses('from', v);
      return v.trim();
    }),
    subject: pick('subject', was?.subject ?? null, (v) => v),
    replyTo: pick('reply_to', was?.replyTo ?? null, (v) => addresses('reply_to', v)),
    html: b.html ?? was?.html ?? '',
    text: pick('text', was?.text ?? null, (v) => v),
    variables,
  };
  try {
    checkDeclarations(d.variables, [
      d.subject === null ? undefined : compile(d.subject, false),
      compile(d.html, true),
      d.text === null ? undefined : compile(d.text, false),
    ]);
  } catch (err) {
    if (err instanceof TemplateProblem) throw new ApiError('TEMPLATE_INVALID', err.message);
    throw err;
  }
  return d;
}

const CONTENT_FIELDS = ['from', 'subject', 'reply_to', 'html', 'text', 'variables'] as const;

const aliasTaken = (alias: string | null) => new ApiError('CONFLICT', `alias ${JSON.stringify(alias)} is taken by another template of this project`);

export const templateRoutes: FastifyPluginAsync<TemplateRoutesOptions> = async (app, { config, store }) => {
  const found = async (projectId: string, idOrAlias: string): Promise<TemplateRow> => {
    const t = await store.templates.get(projectId, idOrAlias);
    if (!t) throw notFound('Template not found');
    return t;
  };

  app.post<{ Body: TemplateBody & { name: string; html: string } }>(
    '/v1/templates',
    {
      schema: {
        summary: 'Create a template (a draft: publish it to send with it)',
        description:
          'Variables are used in subject, html and text as `{{{KEY}}}` (the value as it is) or `{{KEY}}` (HTML-escaped in html); every one used must be declared. The template sends nothing until published.',
        tags: ['templates'],
        security,
        body: templateBodySchema(config.limits, true),
        response: { 201: templateRefAnswer, ...errors },
      },
    },
    async (req, reply) => {
      const now = clock.now();
      const t: TemplateRow = {
        id: uuidv7(now),
        projectId: req.caller!.project.id,
        name: req.body.name,
        alias: req.body.alias ?? null,
        draft: draftOf(undefined, req.body, now),
        published: null,
        publishedAt: null,
        createdAt: now,
        updatedAt: now,
      };
      if ((await store.templates.create(t)) === 'alias_taken') throw aliasTaken(t.alias);
      return reply.code(201).send({ object: 'template', id: t.id });
    },
  );

  app.get<{ Querystring: { limit?: string; after?: string; before?: string } }>(
    '/v1/templates',
    {
      schema: {
        summary: "List the project's templates, newest first, a page at a time",
        description: 'Cursor pagination as Resend: `after` (a template id) gives the next, older page, `before` the newer one.',
        tags: ['templates'],
        security,
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            limit: { type: 'string', pattern: '^(100|[1-9][0-9]?)$', description: '1 to 100; 20 when omitted.' },
            after: { type: 'string', maxLength: 100, description: 'A template id: the page of templates older than it.' },
            before: { type: 'string', maxLength: 100, description: 'A template id: the page of templates newer than it.' },
          },
        },
        response: { 200: templateListSchema, ...errors },
      },
    },
    async (req) => {
      const { limit, after, before } = req.query;
      if (after !== undefined && before !== undefined) throw invalid('give after or before, not both');
      const cursor = after ?? before;
      // A cursor names a template of this project, by id (an alias is not a place in the list).
      if (cursor !== undefined && (!TEMPLATE_ID.test(cursor) || (await store.templates.get(req.caller!.project.id, cursor))?.id !== cursor)) {
        throw invalid(`${after !== undefined ? 'after' : 'before'} names no template of this project`);
      }
      const page = await store.templates.list(req.caller!.project.id, {
        limit: limit ? Number(limit) : 20,
        ...(after !== undefined ? { after } : {}),
        ...(before !== undefined ? { before } : {}),
      });
      return { object: 'list', has_more: page.hasMore, data: page.templates.map(templateListItem) };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/v1/templates/:id',
    {
      schema: {
        summary: 'One template: its draft, and whether it differs from the published version',
        tags: ['templates'],
        security,
        params: idParams,
        response: { 200: templateSchema, ...errors },
      },
    },
    async (req) => templateView(await found(req.caller!.project.id, req.params.id)),
  );

  app.patch<{ Params: { id: string }; Body: TemplateBody }>(
    '/v1/templates/:id',
    {
      schema: {
        summary: "Change a template's name, alias or draft",
        description:
          "The fields given replace the draft's (`variables` replaces the whole list); a published template keeps sending its published version until it is published again.",
        tags: ['templates'],
        security,
        params: idParams,
        body: templateBodySchema(config.limits, false),
        response: { 200: templateRefAnswer, ...errors },
      },
    },
    async (req) => {
      const t = await found(req.caller!.project.id, req.params.id);
      const now = clock.now();
      const b = req.body;
      const edited = CONTENT_FIELDS.some((k) => b[k] !== undefined);
      const next: TemplateRow = {
        ...t,
        name: b.name ?? t.name,
        alias: b.alias === undefined ? t.alias : b.alias,
        draft: edited ? draftOf(t.draft, b, now) : t.draft,
        updatedAt: now,
      };
      const done = await store.templates.update(next);
      if (done === 'alias_taken') throw aliasTaken(next.alias);
      if (done === 'not_found') throw notFound('Template not found');
      return { object: 'template', id: t.id };
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/v1/templates/:id',
    {
      schema: { summary: 'Delete a template', tags: ['templates'], security, params: idParams, response: { 200: templateDeletedAnswer, ...errors } },
    },
    async (req) => {
      const t = await found(req.caller!.project.id, req.params.id);
      if (!(await store.templates.remove(t.projectId, t.id))) throw notFound('Template not found');
      return { object: 'template', id: t.id, deleted: true };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/templates/:id/duplicate',
    {
      schema: {
        summary: "Copy a template's draft into a new draft template (no alias)",
        tags: ['templates'],
        security,
        params: idParams,
        response: { 201: templateRefAnswer, ...errors },
      },
    },
    async (req, reply) => {
      const t = await found(req.caller!.project.id, req.params.id);
      const now = clock.now();
      const copy: TemplateRow = {
        id: uuidv7(now),
        projectId: t.projectId,
        name: `${t.name.slice(0, 249)} (Copy)`,
        alias: null,
        draft: { ...t.draft, versionId: uuidv7(now) },
        published: null,
        publishedAt: null,
        createdAt: now,
        updatedAt: now,
      };
      await store.templates.create(copy);
      return reply.code(201).send({ object: 'template', id: copy.id });
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/templates/:id/publish',
    {
      schema: {
        summary: 'Publish the draft: sends use it from now on',
        tags: ['templates'],
        security,
        params: idParams,
        response: { 200: templateRefAnswer, ...errors },
      },
    },
    async (req) => {
      const t = await found(req.caller!.project.id, req.params.id);
      if (!(await store.templates.publish(t.projectId, t.id, clock.now()))) throw notFound('Template not found');
      return { object: 'template', id: t.id };
    },
  );
};
