// The one ingestion pipeline for mail, whatever the door (HTTP, SMTP, gRPC):
// validate → checks → store (committed) → answer queued. Delivery starts after
// the commit, in the dispatcher.
import { Ajv, type ValidateFunction } from 'ajv';
import '../../core/ajv-length.js'; // before the send schema is compiled
import { ApiError, invalid, StoreUnavailableError } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import { uuidv7 } from '../../core/ids.js';
import { parseWhen, WHEN_EXAMPLES } from '../../core/when.js';
import type { Config } from '../../core/config.js';
import type { Caller } from '../api-keys/authenticate.js';
import type { Acceptance, AcceptGuards, NewEmail, Refusal, Store } from '../store/index.js';
import { refusalText } from './rules.js';
import { limitsOf, requireSubscription } from '../plans.js';
import { canonical, domainOf, parseMailbox } from '../../common/address.js';
import { sendRequestSchema, sendSchemaError } from './schema.js';
import { attachmentContents, checkAttachments, type AttachmentInput } from './attachments.js';
import { readRequest, type StoredRequest } from './vocabulary.js';
import { type TemplateRef, TemplateRenderer } from '../templates/apply.js';

/** The error a user sees for a store's refusal (`id`: the email's, when it was recorded as failed). */
function refusalError(r: Refusal | { kind: 'suppressed' }, id?: string): ApiError {
  const { code, message } = refusalText(r);
  return new ApiError(code, message, r.kind === 'suppressed' && id ? { id } : undefined);
}

export interface SendRequest {
  from: string;
  to: string | string[];
  subject: string;
  html?: string;
  text?: string;
  cc?: string | string[];
  bcc?: string | string[];
  reply_to?: string | string[];
  tags?: Array<string | { name: string; value: string }>;
  headers?: Record<string, string>;
  bulk?: boolean;
  scheduled_at?: string;
  attachments?: AttachmentInput[];
  /** Open and click tracking for this email, over its domain's settings (control/tracking). */
  tracking?: { open?: boolean; click?: boolean };
}

/**
 * A request as the doors give it: an ordinary one, or one naming a template (control/templates), whose
 * published version gives the html and text and, where the request has none, from, subject and reply_to.
 */
export type SendInput = SendRequest | (Omit<SendRequest, 'from' | 'subject' | 'html' | 'text'> & { from?: string; subject?: string; template: TemplateRef });

export interface Accepted {
  id: string;
  /** 'scheduled' when scheduled_at lies ahead. */
  status: 'queued' | 'scheduled';
}

// Headers the service writes itself; a caller setting them would forge or break the message.
const RESERVED_HEADERS = new Set([
  'from',
  'to',
  'cc',
  'bcc',
  'subject',
  'date',
  'message-id',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'sender',
  'reply-to',
  'return-path',
  'received',
  'dkim-signature',
  'list-unsubscribe',
  'list-unsubscribe-post',
  'feedback-id',
]);

const asList = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** How far ahead an email may be scheduled (as Resend: 30 days). */
export const MAX_SCHEDULE_MS = 30 * 24 * 3600_000;

/**
 * When a scheduled email leaves (epoch ms), or undefined to send it now: absent, or a time already past.
 * An ISO 8601 date-time with a zone, or a time in words as Resend takes them ("in 1 min", "tomorrow at
 * 9am", core/when.ts) read against `now`; more than 30 days ahead is refused. Every door (REST, batch,
 * gRPC, PATCH) comes through here.
 */
export function scheduledTime(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const iso = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/i.test(value.trim());
  const at = iso ? Date.parse(value.trim()) : (parseWhen(value, now) ?? Number.NaN);
  if (!Number.isFinite(at)) {
    throw invalid(
      `scheduled_at must be an ISO 8601 date-time with a time zone (2026-12-01T09:00:00Z) or a time in words: ${WHEN_EXAMPLES.map((x) => JSON.stringify(x)).join(', ')} (in words, UTC unless a zone is given)`,
    );
  }
  if (at - now > MAX_SCHEDULE_MS) throw invalid('scheduled_at may be at most 30 days ahead');
  return at > now ? at : undefined;
}

export interface Dispatch {
  wake(): void;
}

/** Counts accepted emails (control/operations/traffic.ts): an array increment, called once per accept. */
export interface AcceptCounter {
  add(n: number): void;
}

export class MailPipeline {
  private readonly validateSchema: ValidateFunction;
  private readonly templates: TemplateRenderer;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
    private readonly dispatcher: Dispatch,
    private readonly acceptCount?: AcceptCounter,
  ) {
    const ajv = new Ajv({ allErrors: false, coerceTypes: false, removeAdditional: false });
    this.validateSchema = ajv.compile(sendRequestSchema(config.limits));
    this.templates = new TemplateRenderer(store, config.limits);
  }

  /** The request with its template rendered (control/templates/apply.ts); an ordinary one as it is. */
  private render(caller: Caller, req: SendInput): SendRequest | Promise<SendRequest> {
    return 'template' in req && req.template !== undefined ? this.templates.apply(caller.project.id, req) : (req as SendRequest);
  }

  /** Checks a request that did not come through an HTTP route schema (SMTP, gRPC). */
  validateShape(body: unknown): SendInput {
    if (!this.validateSchema(body)) {
      const e = sendSchemaError(this.validateSchema.errors ?? []);
      throw invalid(`${e.path ? e.path.slice(1) : 'request'} ${e.message}`);
    }
    return body as SendInput;
  }

  normalize(req: SendRequest): StoredRequest {
    const check = (field: string, list: string[]): string[] =>
      list.map((a) => {
        const m = parseMailbox(a);
        if (!m) throw invalid(`${field} contains an invalid address: ${JSON.stringify(a.slice(0, 100))}`);
        return a.trim();
      });
    if (!parseMailbox(req.from)) throw invalid('from is not a valid address');
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers ?? {})) {
      if (RESERVED_HEADERS.has(name.toLowerCase())) throw invalid(`headers: ${name} is set by the service and cannot be given`);
      headers[name] = value;
    }
    const n: StoredRequest = {
      from: req.from.trim(),
      to: check('to', asList(req.to)),
      cc: check('cc', asList(req.cc)),
      bcc: check('bcc', asList(req.bcc)),
      reply_to: check('reply_to', asList(req.reply_to)),
      subject: req.subject,
      tags: (req.tags ?? []).map((t) => (typeof t === 'string' ? t : `${t.name}:${t.value}`)),
      headers,
      bulk: req.bulk === true,
    };
    if (req.html !== undefined) n.html = req.html;
    if (req.text !== undefined) n.text = req.text;
    if (req.tracking?.open !== undefined || req.tracking?.click !== undefined) n.tracking = { ...req.tracking };
    const attachments = checkAttachments(req.attachments, this.config.limits);
    if (attachments.length) n.attachments = attachments;
    if (!n.to.length) throw invalid('to needs at least one recipient');
    scheduledTime(req.scheduled_at, clock.now());
    if (n.to.length + n.cc.length + n.bcc.length > this.config.limits.maxRecipients) {
      throw invalid(`at most ${this.config.limits.maxRecipients} recipients in to, cc and bcc together`);
    }
    return n;
  }

  /** Envelope recipients, each once, with the field that named it first. */
  private recipients(n: StoredRequest): NewEmail['recipients'] {
    const seen = new Set<string>();
    const out: NewEmail['recipients'] = [];
    for (const kind of ['to', 'cc', 'bcc'] as const) {
      for (const a of n[kind]) {
        const address = canonical(parseMailbox(a)!.address);
        if (seen.has(address)) continue;
        seen.add(address);
        out.push({ address, kind });
      }
    }
    return out;
  }

  /**
   * The ingestion checks, in the order the README's "How an email travels" gives, after key and scope: plan, pause,
   * sender domain. Throws refusals that record nothing; returns the ones the spec calls `failed` (the email is
   * recorded with that status). Suppression and the quota follow, in the insert's transaction (AcceptGuards).
   */
  private async judge(caller: Caller, email: NewEmail, system: boolean): Promise<ApiError | undefined> {
    if (system) return undefined;
    const { project } = caller;
    requireSubscription(project);
    if (project.status === 'paused') throw new ApiError('SENDING_PAUSED', "Sending is paused for this project; write to the operator's abuse contact");
    const domain = domainOf(parseMailbox(email.from)!.address);
    if (!(await this.store.domains.isVerified(project.id, domain))) {
      return new ApiError('DOMAIN_NOT_VERIFIED', `The sender domain ${domain} is not verified; add it with POST /v1/domains and complete the DNS setup`);
    }
    return undefined;
  }

  /** Records a refused email as failed and returns the refusal carrying its id. */
  private failed(email: NewEmail, refusal: ApiError): NewEmail {
    email.status = 'failed';
    email.error = refusal.message;
    email.errorCode = refusal.code;
    for (const r of email.recipients) r.status = 'failed';
    return email;
  }

  /** What a scheduled email of this project is judged by when it leaves (control/mail/scheduler.ts): judged for suppressions when accepted. */
  guardsOf(project: Caller['project']): AcceptGuards {
    return this.guards(project, false, false);
  }

  /**
   * What the store judges in the insert's transaction: suppressions (a new email), the plan's quota and
   * bulk mail's own rules (spec: bulk rule 3, pacing rules 4 and 5: the same-subject daily limit, 429
   * BULK_LIMIT_EXCEEDED, and the volume-spike hold), so concurrent sends cannot overshoot. The platform's
   * own mail has no quota nor bulk rules. Built as one literal: it is asked for every email.
   */
  private guards(project: Caller['project'], system: boolean, suppressions: boolean): AcceptGuards {
    if (system) return { suppressions };
    const l = limitsOf(project, this.config);
    const { sameSubjectDailyLimit, volumeSpike } = this.config.pacing;
    return {
      suppressions,
      quota: { daily: l.dailyQuota, monthly: l.monthlyQuota },
      bulk: { subjectLimit: sameSubjectDailyLimit, spike: volumeSpike },
    };
  }

  /** `id`: the id an idempotency key reserved for this email (control/mail/idempotency.ts); a new one otherwise. */
  private prepare(caller: Caller, req: SendRequest, id?: string): NewEmail {
    const n = this.normalize(req);
    const now = clock.now();
    const at = scheduledTime(req.scheduled_at, now);
    return {
      id: id ?? uuidv7(now),
      projectId: caller.project.id,
      status: at === undefined ? 'queued' : 'scheduled',
      ...(at === undefined ? {} : { scheduledAt: at }),
      from: n.from,
      subject: n.subject,
      bulk: n.bulk,
      request: JSON.stringify(n),
      createdAt: now,
      recipients: this.recipients(n),
      ...(n.attachments ? { attachments: attachmentContents(req.attachments) } : {}),
    };
  }

  /**
   * Accepts one email; resolves once it is committed. `system` marks the
   * platform's own mail (sign-in codes): exempt from the project's plan limits.
   */
  async send(caller: Caller, input: SendInput, opts: { system?: boolean; id?: string } = {}): Promise<Accepted> {
    const system = opts.system === true;
    const req = this.render(caller, input);
    const email = this.prepare(caller, req instanceof Promise ? await req : req, opts.id);
    if (system) {
      email.system = true;
      email.request = JSON.stringify({ ...readRequest(email.request), system: true });
    }
    const refusal = await this.judge(caller, email, system);
    if (refusal) {
      await this.store.emails.accept(this.failed(email, refusal));
      throw new ApiError(refusal.code, refusal.message, { id: email.id });
    }
    const accepted = await this.store.emails.accept(email, this.guards(caller.project, system, true));
    if (accepted.kind !== 'accepted') throw refusalError(accepted, email.id);
    this.acceptCount?.add(1);
    if (email.status === 'queued') this.dispatcher.wake();
    return { id: email.id, status: email.status === 'scheduled' ? 'scheduled' : 'queued' };
  }

  /** Checks the shape of a request from outside HTTP (SMTP, gRPC), then sends it. */
  submit(caller: Caller, body: unknown, opts: { id?: string } = {}): Promise<Accepted> {
    return this.send(caller, this.validateShape(body), opts);
  }

  /**
   * Resend's `x-batch-validation: strict`: one invalid item refuses the whole batch
   * (422, nothing recorded), naming every bad item. Only the request's own shape counts;
   * what the store judges (quota, suppression) stays per item.
   */
  async checkBatch(caller: Caller, reqs: unknown[]): Promise<void> {
    const bad: string[] = [];
    for (const [index, r] of reqs.entries()) {
      try {
        this.normalize(await this.render(caller, this.validateShape(r)));
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        bad.push(`[${index}] ${err.message}`);
      }
    }
    if (bad.length) throw new ApiError('BATCH_INVALID', `The batch was refused, nothing was sent: ${bad.slice(0, 10).join('; ')}`);
  }

  /** Accepts several emails, each judged on its own; one commit for all. */
  async sendMany(caller: Caller, reqs: unknown[], opts: { ids?: string[] } = {}): Promise<Array<Accepted | ApiError>> {
    const guards = this.guards(caller.project, false, true);
    // An unreachable store fails the whole batch (503): a 202 must mean what it answers was stored.
    const own = (err: unknown): ApiError => {
      if (err instanceof ApiError && !(err instanceof StoreUnavailableError)) return err;
      throw err;
    };
    const prepared = await Promise.all(
      reqs.map(async (r, i): Promise<NewEmail | ApiError> => {
        try {
          return this.prepare(caller, await this.render(caller, this.validateShape(r)), opts.ids?.[i]);
        } catch (err) {
          return own(err);
        }
      }),
    );
    const judged = await Promise.all(
      prepared.map(async (email): Promise<{ email: NewEmail; refusal?: ApiError } | ApiError> => {
        if (email instanceof ApiError) return email;
        try {
          const refusal = await this.judge(caller, email, false);
          return refusal ? { email: this.failed(email, refusal), refusal } : { email };
        } catch (err) {
          return own(err);
        }
      }),
    );
    const emails = judged.filter((j): j is { email: NewEmail; refusal?: ApiError } => !(j instanceof ApiError));
    // One commit for the whole batch; each email keeps its own outcome (e.g. the quota runs out midway).
    const outcomes = await Promise.allSettled(
      this.store.emails.acceptMany(
        emails.map((e) => e.email),
        guards,
      ),
    );
    const accepted = (o: PromiseSettledResult<Acceptance>) => o.status === 'fulfilled' && o.value.kind === 'accepted';
    const lost = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected' && o.reason instanceof StoreUnavailableError);
    if (lost && !outcomes.some((o) => o.status === 'fulfilled')) throw lost.reason;
    let taken = 0;
    for (let k = 0; k < emails.length; k++) if (!emails[k]!.refusal && accepted(outcomes[k]!)) taken++;
    this.acceptCount?.add(taken);
    if (taken) this.dispatcher.wake();
    let i = 0;
    return judged.map((j) => {
      if (j instanceof ApiError) return j;
      const outcome = outcomes[i++]!;
      if (outcome.status === 'rejected') {
        if (outcome.reason instanceof ApiError) return outcome.reason;
        throw outcome.reason;
      }
      if (outcome.value.kind !== 'accepted') return refusalError(outcome.value, j.email.id);
      if (j.refusal) return new ApiError(j.refusal.code, j.refusal.message, { id: j.email.id });
      return { id: j.email.id, status: j.email.status === 'scheduled' ? ('scheduled' as const) : ('queued' as const) };
    });
  }
}
