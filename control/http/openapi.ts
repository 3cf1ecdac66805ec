// The OpenAPI document as tools want it (redocly's recommended rules, generated clients),
// made in one place rather than in every route file: @fastify/swagger's `transformObject`
// runs over the finished document and
//  - names every operation (operationId): from the table below, keyed by the route as Fastify
//    writes it ("METHOD /path/:param"), or derived from method and path for a route added
//    later, so every operation has a unique id;
//  - says `security: []` on the routes that need no credentials (the document has no
//    root-level security, so that is what a route without `security` already meant);
//  - adds the answers an operation can give that its route schema leaves out: a success
//    answer, and the error answers (one shared {error, code} schema, components/responses)
//    that follow from what the route is: parameters and bodies are validated (400), bodies are
//    limited (413, 415), credentials are checked (401) and rate limited (429), path ids may
//    name nothing (404), the store may be unreachable (503) and bugs are 500;
//  - gives the shared schemas their names (Fastify's "def-N" become their titles).
// Hidden routes (schema.hide) are never in the document, so nothing here sees them.
import { statusOf, type ErrorCode } from '../../core/errors.js';
import { errorSchema } from './schemas.js';

type Json = Record<string, any>;

interface OperationInfo {
  /** The operationId; unique across the document. */
  id: string;
  /** Error statuses the operation can answer beyond those derived from its shape. */
  errors?: number[];
  /** A static file: no parameters, no store, no credentials (beyond `errors`, only a 500 can go wrong). */
  asset?: boolean;
}

/**
 * operationIds by route, "METHOD /path" as the route is registered. Routes other areas are
 * adding are listed ahead, so their ids are stable from the first day.
 */
export const OPERATIONS: Record<string, OperationInfo> = {
  // Mail API (/v1, project API key).
  'POST /v1/emails': { id: 'sendEmail', errors: [402, 403, 422] },
  'POST /v1/emails/batch': { id: 'sendBatch', errors: [402, 403] },
  'GET /v1/emails': { id: 'listEmails' },
  'GET /v1/emails/:id': { id: 'getEmail' },
  'PATCH /v1/emails/:id': { id: 'updateEmail', errors: [409] },
  'POST /v1/emails/:id/cancel': { id: 'cancelEmail', errors: [409] },
  'GET /v1/domains': { id: 'listDomains' },
  'POST /v1/domains': { id: 'createDomain', errors: [409] },
  'GET /v1/domains/:id': { id: 'getDomain' },
  'PATCH /v1/domains/:id': { id: 'updateDomain' },
  'DELETE /v1/domains/:id': { id: 'deleteDomain' },
  'POST /v1/domains/:id/verify': { id: 'verifyDomain' },
  'GET /v1/suppressions': { id: 'listSuppressions' },
  'DELETE /v1/suppressions/:email': { id: 'deleteSuppression' },
  'GET /v1/analytics/overview': { id: 'getAnalyticsOverview' },
  'GET /v1/analytics/timeseries': { id: 'getAnalyticsTimeseries' },
  'GET /v1/webhooks': { id: 'listWebhooks' },
  'POST /v1/webhooks': { id: 'createWebhook' },
  'GET /v1/webhooks/:id': { id: 'getWebhook' },
  'PATCH /v1/webhooks/:id': { id: 'updateWebhook' },
  'DELETE /v1/webhooks/:id': { id: 'deleteWebhook' },
  'GET /v1/templates': { id: 'listTemplates' },
  'POST /v1/templates': { id: 'createTemplate', errors: [409, 422] },
  'GET /v1/templates/:id': { id: 'getTemplate' },
  'PATCH /v1/templates/:id': { id: 'updateTemplate', errors: [409, 422] },
  'DELETE /v1/templates/:id': { id: 'deleteTemplate' },
  'POST /v1/templates/:id/duplicate': { id: 'duplicateTemplate' },
  'POST /v1/templates/:id/publish': { id: 'publishTemplate' },
  'GET /v1/emails/receiving': { id: 'listReceivedEmails' },
  'GET /v1/emails/receiving/:id': { id: 'getReceivedEmail' },
  'GET /v1/emails/receiving/:id/attachments': { id: 'listReceivedAttachments' },
  'GET /v1/emails/receiving/:email_id/attachments/:id': { id: 'getReceivedAttachment' },
  'GET /v1/pacing': { id: 'getPacing' },
  'POST /v1/pacing/announcements': { id: 'createPacingAnnouncement' },
  // Auth API (/api/v1/auth, project key in X-Service-Key).
  'GET /api/v1/auth/providers': { id: 'listProviders', errors: [403] },
  'POST /api/v1/auth/sign-in/social': { id: 'signInSocial', errors: [403] },
  'POST /api/v1/auth/exchange-code': { id: 'exchangeCode' },
  'POST /api/v1/auth/verify-token': { id: 'verifyToken', errors: [403] },
  'POST /api/v1/auth/sign-in/telegram/widget': { id: 'signInTelegramWidget', errors: [403] },
  'POST /api/v1/auth/sign-in/email-otp/send': { id: 'sendEmailOtp', errors: [403] },
  'POST /api/v1/auth/sign-in/email-otp/verify': { id: 'verifyEmailOtp', errors: [403] },
  'POST /api/v1/auth/sign-in/sms-otp/send': { id: 'sendSmsOtp', errors: [403] },
  'POST /api/v1/auth/sign-in/sms-otp/verify': { id: 'verifySmsOtp', errors: [403] },
  'GET /api/v1/auth/session': { id: 'getSession' },
  'POST /api/v1/auth/sign-out': { id: 'signOut' },
  'GET /api/v1/auth/test/code': { id: 'getTestCode' },
  // The routes that take no key are limited per address (and project) all the same (auth/keyless.ts): 429.
  'GET /api/v1/auth/callback/:provider': { id: 'oauthCallback', errors: [429] },
  'GET /callback/:provider': { id: 'oauthCallbackShort', errors: [429] },
  // The hosted sign-in form and its files (public). The page, scripts and stylesheet are documented with their own
  // media types (auth/hosted/schemas.ts), the errors any of them can give as {error, code}.
  'GET /api/v1/auth/hosted-config/:slug': { id: 'getHostedConfig', errors: [403, 429] },
  'POST /api/v1/auth/hosted-start': { id: 'startHostedSignIn', errors: [403, 429] },
  'POST /api/v1/auth/hosted/email-otp/send': { id: 'sendHostedEmailOtp', errors: [403, 429] },
  'POST /api/v1/auth/hosted/email-otp/verify': { id: 'verifyHostedEmailOtp', errors: [403, 429] },
  'GET /api/v1/auth/hosted/widget': { id: 'getHostedWidget', errors: [429] },
  'GET /api/v1/auth/hosted/widget.js': { id: 'getHostedWidgetScript', asset: true, errors: [429] },
  'GET /api/v1/auth/hosted/widget.css': { id: 'getHostedWidgetStyles', asset: true, errors: [429] },
  'GET /embed/v1.js': { id: 'getEmbedScript', asset: true, errors: [429] },
  // One-click unsubscribe (public).
  'GET /unsubscribe/:token': { id: 'getUnsubscribePage' },
  'POST /unsubscribe/:token': { id: 'unsubscribeOneClick' },
  // Received mail's signed, short-lived download links (public: the link is the credential).
  'GET /downloads/received/:id/attachments/:attachment': { id: 'downloadReceivedAttachment' },
  'GET /downloads/received/:id/raw': { id: 'downloadReceivedEmail' },
};

/** What each area is, for the document's tag list (a tag used but not listed here gets a generic line). */
export const TAGS: Array<{ name: string; description: string }> = [
  { name: 'emails', description: 'Send email and follow its delivery.' },
  { name: 'domains', description: 'Sender domains: the DNS records to publish, and their verification.' },
  { name: 'suppressions', description: 'Addresses no email is sent to (hard bounces, complaints, unsubscribes).' },
  { name: 'analytics', description: "Aggregated delivery figures of the project's email." },
  { name: 'webhooks', description: 'Delivery events pushed to your endpoints, signed.' },
  { name: 'templates', description: 'Email templates: a draft and a published version, variables filled in at send time.' },
  { name: 'receiving', description: 'Mail received at your receiving domains (MX to postgate): the messages, their attachments and SPF/DKIM/DMARC results.' },
  { name: 'pacing', description: "Sending pace: the project's volume ramp and announced campaigns." },
  { name: 'auth', description: 'Sign-in: providers, one-time codes, OAuth, sessions and the hosted form.' },
  { name: 'unsubscribe', description: 'One-click unsubscribe (RFC 8058) from bulk email.' },
];

/** The shared error answers, by status: components/responses/<name>. */
const ERROR_RESPONSES: Record<number, { name: string; description: string; retryAfter?: boolean }> = {
  400: { name: 'BadRequest', description: 'The request is invalid (a parameter, the query or the body)' },
  401: { name: 'Unauthorized', description: 'Missing or wrong credentials' },
  402: { name: 'PaymentRequired', description: 'The project has no active subscription' },
  403: { name: 'Forbidden', description: 'Refused for this project or caller' },
  404: { name: 'NotFound', description: 'Nothing found at this address' },
  409: { name: 'Conflict', description: 'Conflicts with the current state' },
  413: { name: 'PayloadTooLarge', description: 'The request body is too large' },
  415: { name: 'UnsupportedMediaType', description: 'The body must be application/json' },
  422: {
    name: 'UnprocessableEntity',
    description:
      'Accepted as valid but cannot be carried out (a template that does not render, a batch refused whole); an email recorded as failed has its id in the answer',
  },
  429: { name: 'TooManyRequests', description: 'A rate limit or quota is used up; Retry-After says when to try again', retryAfter: true },
  500: { name: 'InternalError', description: 'Internal error' },
  503: { name: 'ServiceUnavailable', description: 'Busy or the database is unreachable; Retry-After says when to try again', retryAfter: true },
};

/** The error codes each status carries (core/errors.ts), for the answers' descriptions. */
function codesOf(status: number): ErrorCode[] {
  return (Object.keys(statusOf) as ErrorCode[]).filter((c) => statusOf[c] === status);
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const camel = (s: string) => s.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ? c.toUpperCase() : ''));
const pascal = (s: string) => {
  const c = camel(s);
  return c.charAt(0).toUpperCase() + c.slice(1);
};

/** "/v1/emails/{id}" → "/v1/emails/:id", the form routes are registered (and the table keyed) in. */
const fastifyPath = (p: string) => p.replace(/\{([^}]+)\}/g, ':$1');

/** An id for a route the table does not name: `patchEmailsById` for PATCH /v1/emails/:id. */
export function derivedOperationId(method: string, path: string): string {
  const parts = path
    .split('/')
    .filter((s) => s && !/^(api|v\d+)$/.test(s))
    .map((s) => (s.startsWith(':') || s.startsWith('{') ? `By${pascal(s.replace(/^[:{]|}$/g, ''))}` : pascal(s)));
  return method.toLowerCase() + parts.join('');
}

const canonical = (v: unknown): string =>
  Array.isArray(v)
    ? `[${v.map(canonical).join(',')}]`
    : v && typeof v === 'object'
      ? `{${Object.keys(v)
          .filter((k) => k !== '$id')
          .sort()
          .map((k) => `${JSON.stringify(k)}:${canonical((v as Json)[k])}`)
          .join(',')}}`
      : JSON.stringify(v);

const SUCCESS: Record<string, string> = { 200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No content' };

/** Fastify's name for an answer the route schema gave no description. */
const UNDESCRIBED = 'Default Response';

function errorComponents(): { schema: Json; responses: Json } {
  const { $id: _id, ...schema } = errorSchema as Json;
  const responses: Json = {};
  for (const [status, r] of Object.entries(ERROR_RESPONSES)) {
    const codes = codesOf(Number(status));
    responses[r.name] = {
      description: codes.length ? `${r.description}. code: ${codes.join(', ')}` : r.description,
      ...(r.retryAfter ? { headers: { 'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer' } } } } : {}),
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  }
  return {
    schema: {
      ...schema,
      description: 'Every refusal: a message for people (error) and a stable code for programs, with the HTTP status.',
    },
    responses,
  };
}

/** Renames Fastify's "def-N" shared schemas to their titles and rewrites the references. */
function nameSchemas(doc: Json): void {
  const schemas: Json = doc.components?.schemas ?? {};
  const renames = new Map<string, string>();
  for (const [key, schema] of Object.entries(schemas)) {
    const title = (schema as Json)?.title;
    if (!/^def-\d+$/.test(key) || typeof title !== 'string' || !/^[A-Za-z][A-Za-z0-9_]*$/.test(title)) continue;
    if (title in schemas || [...renames.values()].includes(title)) continue;
    renames.set(key, title);
  }
  if (!renames.size) return;
  const next: Json = {};
  for (const [key, schema] of Object.entries(schemas)) next[renames.get(key) ?? key] = schema;
  doc.components.schemas = next;
  const rewrite = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(rewrite);
    if (!v || typeof v !== 'object') return;
    for (const [k, x] of Object.entries(v)) {
      if (k === '$ref' && typeof x === 'string') {
        const m = /^#\/components\/schemas\/(def-\d+)$/.exec(x);
        const to = m && renames.get(m[1]!);
        if (to) (v as Json)[k] = `#/components/schemas/${to}`;
      } else rewrite(x);
    }
  };
  rewrite(doc);
}

/**
 * `anyOf` members that only list `required` ("html or text") are moved under `allOf`: the same
 * schema in JSON Schema, but openapi-typescript types a top-level one as `unknown`
 * (openapi-ts/openapi-typescript#1441) and the whole body would be untyped.
 */
function typeableAnyOf(v: unknown): void {
  if (Array.isArray(v)) return v.forEach(typeableAnyOf);
  if (!v || typeof v !== 'object') return;
  const s = v as Json;
  if (s.properties && Array.isArray(s.anyOf) && s.anyOf.every((m: Json) => m && Object.keys(m).every((k) => k === 'required'))) {
    s.allOf = [...(s.allOf ?? []), { anyOf: s.anyOf }];
    delete s.anyOf;
  }
  for (const x of Object.values(s)) typeableAnyOf(x);
}

/** The statuses an operation can answer with an error, from what it is. */
function errorStatuses(op: Json, info: OperationInfo | undefined, hasPathParams: boolean): number[] {
  if (info?.asset) return [...new Set([500, ...(info.errors ?? [])])].sort((a, b) => a - b);
  const params: Json[] = op.parameters ?? [];
  const secured = Array.isArray(op.security) && op.security.some((s: Json) => Object.keys(s).length > 0);
  const jsonBody = !!op.requestBody?.content?.['application/json'];
  const out = new Set<number>([500, 503]);
  if (params.length || op.requestBody) out.add(400);
  if (secured) {
    out.add(401);
    out.add(429);
  }
  if (hasPathParams) out.add(404);
  if (jsonBody) {
    out.add(413);
    out.add(415);
  }
  for (const s of info?.errors ?? []) out.add(s);
  return [...out].sort((a, b) => a - b);
}

/** @fastify/swagger's `transformObject`: the finished document, completed as the file header says. */
export function completeOpenapi(input: object): Json {
  // A copy: nothing here may reach the route schemas the validators and serializers use.
  const doc: Json = structuredClone((input as Json).openapiObject ?? input);
  const { schema: errorComponent, responses: errorResponses } = errorComponents();
  doc.components ??= {};
  doc.components.schemas = { ...doc.components.schemas, Error: errorComponent };
  doc.components.responses = { ...doc.components.responses, ...errorResponses };
  const errorShape = canonical(errorSchema);
  nameSchemas(doc);
  typeableAnyOf(doc.components.schemas);
  typeableAnyOf(doc.paths);

  const used = new Set<string>();
  const tags = new Set<string>();
  for (const [path, item] of Object.entries((doc.paths ?? {}) as Record<string, Json>)) {
    for (const method of METHODS) {
      const op: Json | undefined = item[method];
      if (!op) continue;
      const key = `${method.toUpperCase()} ${fastifyPath(path)}`;
      const info = OPERATIONS[key];

      let id: string = op.operationId ?? info?.id ?? derivedOperationId(method, path);
      for (let n = 2; used.has(id); n++) id = `${op.operationId ?? info?.id ?? derivedOperationId(method, path)}${n}`;
      used.add(id);
      op.operationId = id;

      op.security ??= [];
      for (const t of op.tags ?? []) tags.add(t);

      op.responses ??= {};
      const responses: Json = op.responses;
      if (!Object.keys(responses).some((s) => /^[23]/.test(s))) responses['200'] = { description: 'Done' };
      // Undescribed success answers get a word; the shared error shape declared inline with no
      // description becomes the shared answer (a $ref, with what the status means).
      for (const [status, r] of Object.entries(responses)) {
        if (/^[23]/.test(status) && (r as Json).description === UNDESCRIBED) (r as Json).description = SUCCESS[status] ?? 'Success';
        const shared = ERROR_RESPONSES[Number(status)];
        const schema = (r as Json).content?.['application/json']?.schema;
        if (shared && (r as Json).description === UNDESCRIBED && schema && canonical(schema) === errorShape) {
          responses[status] = { $ref: `#/components/responses/${shared.name}` };
        }
      }
      for (const status of errorStatuses(op, info, /\{[^}]+\}/.test(path))) {
        const shared = ERROR_RESPONSES[status];
        if (shared && !responses[String(status)]) responses[String(status)] = { $ref: `#/components/responses/${shared.name}` };
      }
      op.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
    }
  }

  const listed = new Map<string, Json>();
  for (const t of [...TAGS, ...((doc.tags ?? []) as Json[])]) listed.set(t.name, { ...listed.get(t.name), ...t });
  for (const t of tags) if (!listed.has(t)) listed.set(t, { name: t, description: `The ${t} API.` });
  doc.tags = [...listed.values()].filter((t) => tags.has(t.name) || (doc.tags ?? []).some((d: Json) => d.name === t.name));
  return doc;
}
