// Control's public gRPC API (POSTGATE_GRPC_PORT) for internal services: send,
// send batch, get email, check session, mirroring REST through the same
// pipeline. The API key travels in metadata `x-service-key` (or
// `authorization: Bearer`). A refused SendEmail is a non-OK status, as REST
// answers a 4xx; a refused batch item is an entry with `error` and `code`.
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { create } from '@bufbuild/protobuf';
import type { Config } from '../../core/config.js';
import type { Logger } from '../../core/log.js';
import { ApiError, invalid, notFound } from '../../core/errors.js';
import { MAIL_KEYS, type KeyAuthenticator, type Caller, type KeyRequirement } from '../api-keys/authenticate.js';
import { fromMetadata } from '../api-keys/credentials.js';
import type { Accepted, MailPipeline } from '../mail/pipeline.js';
import type { Store } from '../store/index.js';
import { emailView, type trackingSummary } from '../mail/email-view.js';
import { grpcDefinition } from '../../proto/grpc.js';
import {
  PostgateService,
  SendEmailResponseSchema,
  SendBatchResponseSchema,
  EmailSchema,
  CheckSessionResponseSchema,
  type SendEmailRequest,
  type SendEmailResponse,
  type SendBatchRequest,
  type GetEmailRequest,
  type CheckSessionRequest,
} from '../../proto/gen/postgate/v1/public_pb.js';
import { grpcError, rateMetadata } from './status.js';
import type { Counters } from '../limits/counters.js';
import { checkProjectRate } from '../limits/rate-limit.js';
import { refuseNul } from '../../core/nul.js';
import { attachmentBodyBytes, checkBatchAttachments } from '../mail/attachments.js';

export interface SessionCheck {
  valid: boolean;
  userId?: string;
  email?: string;
  sessionId?: string;
  expiresAt?: string;
}

/** Given by the composition root from the auth capability; CheckSession answers UNIMPLEMENTED without it. */
export type CheckSessionFn = (caller: Caller, token: string) => Promise<SessionCheck>;

export interface PublicGrpcDeps {
  config: Config;
  log: Logger;
  access: KeyAuthenticator;
  pipeline: Pick<MailPipeline, 'submit' | 'sendMany'>;
  store: Store;
  /** The process's fixed-window counters: every call counts against the project's API rate, as over HTTP. */
  counters: Counters;
  checkSession?: CheckSessionFn;
}

export interface PublicGrpc {
  port: number;
  close(): Promise<void>;
}

/** As the REST batch: at most 100 emails per request. */
const MAX_BATCH = 100;
/** Session checks are part of the auth API, which takes any of the project's keys. */
const SESSION_KEYS: KeyRequirement = { kinds: ['live', 'test'], scopes: ['all', 'auth'] };

/** Proto fields → the REST send request; proto3 cannot tell empty from absent, so empty means absent. */
export function toSendRequest(m: SendEmailRequest): Record<string, unknown> {
  const req: Record<string, unknown> = {};
  const str = (name: string, v: string) => void (v !== '' && (req[name] = v));
  const list = (name: string, v: string[]) => void (v.length && (req[name] = v));
  str('from', m.from);
  list('to', m.to);
  str('subject', m.subject);
  str('html', m.html);
  str('text', m.text);
  list('cc', m.cc);
  list('bcc', m.bcc);
  str('reply_to', m.replyTo);
  list('tags', m.tags);
  if (Object.keys(m.headers).length) req.headers = { ...m.headers };
  if (m.bulk) req.bulk = true;
  str('scheduled_at', m.scheduledAt);
  if (m.template) req.template = templateOf(m.template);
  if (m.tracking && (m.tracking.open !== undefined || m.tracking.click !== undefined))
    req.tracking = {
      ...(m.tracking.open !== undefined ? { open: m.tracking.open } : {}),
      ...(m.tracking.click !== undefined ? { click: m.tracking.click } : {}),
    };
  // As REST takes them (base64), so the one pipeline checks them the same way.
  if (m.attachments.length)
    req.attachments = m.attachments.map((a) => {
      const out: Record<string, unknown> = { content: Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength).toString('base64') };
      if (a.filename !== '') out.filename = a.filename;
      if (a.contentType !== '') out.content_type = a.contentType;
      if (a.contentId !== '') out.content_id = a.contentId;
      return out;
    });
  return req;
}

/** REST's `tracking` of an email, as the proto's EmailTracking (null times are empty). */
function grpcTracking(t: ReturnType<typeof trackingSummary>) {
  const count = (c: { count: number; bots: number; first_at: string | null; last_at: string | null }, link = '') => ({
    link,
    count: c.count,
    bots: c.bots,
    firstAt: c.first_at ?? '',
    lastAt: c.last_at ?? '',
  });
  return { opens: count(t.opens), clicks: count(t.clicks), links: t.clicks.links.map((l) => count(l, l.link)) };
}

/** The proto's TemplateRef as REST's `template` (a value set to neither string nor number is left out: absent). */
function templateOf(t: NonNullable<SendEmailRequest['template']>): Record<string, unknown> {
  const variables: Record<string, string | number> = {};
  for (const [key, v] of Object.entries(t.variables)) if (v.value.case !== undefined) variables[key] = v.value.value;
  return Object.keys(variables).length ? { id: t.id, variables } : { id: t.id };
}

const item = (r: Accepted | ApiError): SendEmailResponse =>
  create(SendEmailResponseSchema, r instanceof ApiError ? { error: r.message, code: r.code, id: typeof r.extra.id === 'string' ? r.extra.id : '' } : r);

export async function startPublicGrpc({ config, log, access, pipeline, store, counters, checkSession }: PublicGrpcDeps): Promise<PublicGrpc> {
  /**
   * Wraps one unary method: key check, the project's API rate (the same counter as HTTP's, so one budget over
   * both; its RateLimit-* numbers as metadata, past it RESOURCE_EXHAUSTED with `retry-after`), then the handler;
   * any refusal becomes a status with the API code.
   */
  function unary<Req, Res>(need: KeyRequirement, name: string, fn: (req: Req, caller: Caller) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      access
        .resolve(fromMetadata(call.metadata), need)
        .then((caller) => {
          const { headers } = checkProjectRate(counters, caller.project, config);
          call.sendMetadata(rateMetadata(headers));
          refuseNul(call.request, 'The request'); // as HTTP does (core/nul.ts): no NUL reaches the store
          return fn(call.request, caller);
        })
        .then(
          (res) => callback(null, res),
          (err: unknown) => {
            if (!(err instanceof ApiError)) log.error({ err, method: name }, 'grpc call failed');
            callback(grpcError(err));
          },
        );
    };
  }

  const impl: grpc.UntypedServiceImplementation = {
    sendEmail: unary<SendEmailRequest, SendEmailResponse>(MAIL_KEYS, 'SendEmail', async (req, caller) =>
      create(SendEmailResponseSchema, await pipeline.submit(caller, toSendRequest(req))),
    ),

    sendBatch: unary<SendBatchRequest, unknown>(MAIL_KEYS, 'SendBatch', async (req, caller) => {
      if (!req.emails.length) throw invalid('emails needs at least one email');
      if (req.emails.length > MAX_BATCH) throw invalid(`at most ${MAX_BATCH} emails per batch`);
      const requests = req.emails.map(toSendRequest);
      checkBatchAttachments(requests, config.limits);
      const results = await pipeline.sendMany(caller, requests);
      return create(SendBatchResponseSchema, { data: results.map(item) });
    }),

    getEmail: unary<GetEmailRequest, unknown>(MAIL_KEYS, 'GetEmail', async (req, caller) => {
      const view = req.id && req.id.length <= 100 ? await emailView(store, caller.project.id, req.id) : undefined;
      if (!view) throw notFound('Email not found');
      // REST's view, field for field (proto3 has no null: a null is empty; html and text keep their absence).
      const s = (v: unknown) => (typeof v === 'string' ? v : '');
      const list = (v: unknown) => (Array.isArray(v) ? (v as string[]) : []);
      const records = (v: unknown) => (Array.isArray(v) ? (v as Array<Record<string, unknown>>) : []);
      const error = view.error as { error?: unknown; code?: unknown } | null;
      return create(EmailSchema, {
        id: view.id,
        status: view.status,
        from: s(view.from),
        to: list(view.to),
        subject: s(view.subject),
        createdAt: s(view.created_at),
        scheduledAt: s(view.scheduled_at),
        lastEvent: s(view.last_event),
        ...(typeof view.html === 'string' ? { html: view.html } : {}),
        ...(typeof view.text === 'string' ? { text: view.text } : {}),
        attachments: records(view.attachments).map((a) => ({
          id: s(a.id),
          filename: s(a.filename),
          contentType: s(a.content_type),
          size: BigInt(typeof a.size === 'number' ? a.size : 0),
          contentId: s(a.content_id),
        })),
        cc: list(view.cc),
        bcc: list(view.bcc),
        replyTo: list(view.reply_to),
        tags: list(view.tags),
        bulk: view.bulk === true,
        updatedAt: s(view.updated_at),
        messageId: s(view.message_id),
        recipients: records(view.recipients).map((r) => ({ email: s(r.email), kind: s(r.kind), status: s(r.status), updatedAt: s(r.updated_at) })),
        ...(error ? { error: { error: s(error.error), code: s(error.code) } } : {}),
        ...(view.tracking ? { tracking: grpcTracking(view.tracking as ReturnType<typeof trackingSummary>) } : {}),
        events: view.events.map((e) => ({
          type: e.type,
          at: e.at,
          recipient: s(e.recipient),
          mx: s(e.mx),
          response: s(e.response),
          attempt: typeof e.attempt === 'number' ? e.attempt : 0,
          link: s(e.link),
          userAgent: s(e.user_agent),
          ip: s(e.ip),
          bot: e.bot === true,
          botReason: s(e.bot_reason),
          ...(e.tls && typeof e.tls === 'object' ? { tls: e.tls as { used: boolean; version: string; verified: boolean; policy: string; note?: string } } : {}),
        })),
      });
    }),

    checkSession: (call: grpc.ServerUnaryCall<CheckSessionRequest, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      if (!checkSession) return callback({ code: grpc.status.UNIMPLEMENTED, details: 'CheckSession is not available' });
      return unary<CheckSessionRequest, unknown>(SESSION_KEYS, 'CheckSession', async (req, caller) => {
        try {
          return create(CheckSessionResponseSchema, await checkSession(caller, req.token));
        } catch (err) {
          // An invalid session is an answer, not a failure of the call.
          if (err instanceof ApiError && err.code === 'SESSION_INVALID') return create(CheckSessionResponseSchema, { valid: false });
          throw err;
        }
      })(call, callback);
    },
  };

  const server = new grpc.Server({
    // The same ceiling as the HTTP body limit, so a batch that REST takes gRPC takes too (attachments
    // travel as bytes here, so this is more than they need).
    'grpc.max_receive_message_length': 2 * config.limits.maxBodyBytes + 1024 * 1024 + attachmentBodyBytes(config.limits),
  });
  server.addService(grpcDefinition(PostgateService), impl);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${net.isIPv6(config.host) ? `[${config.host}]` : config.host}:${config.grpcPort}`, grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  log.info({ grpc: `${config.host}:${port}` }, 'public grpc ready');

  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        // Calls in flight finish; a stuck one is cut after a few seconds.
        const force = setTimeout(() => server.forceShutdown(), 3000);
        force.unref();
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      }),
  };
}
