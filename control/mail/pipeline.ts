// The one ingestion pipeline for mail, whatever the door (HTTP, SMTP, gRPC):
// validate → checks → store (committed) → answer queued. Delivery starts after
// the commit, in the dispatcher.
import crypto from 'node:crypto';
import { Ajv, type ValidateFunction } from 'ajv';
import { ApiError, invalid } from '../../core/errors.js';
import { clock } from '../../core/clock.js';
import type { Config } from '../../core/config.js';
import type { Caller } from '../access.js';
import type { NewEmail, Store } from '../store/store.js';
import { canonical, parseMailbox } from './address.js';
import { sendRequestSchema } from './schema.js';

export interface SendRequest {
  from: string;
  to: string | string[];
  subject: string;
  html?: string;
  text?: string;
  cc?: string[];
  bcc?: string[];
  reply_to?: string | string[];
  tags?: string[];
  headers?: Record<string, string>;
  bulk?: boolean;
}

/** What is stored: every list a list, every address checked. */
export interface NormalizedRequest {
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  reply_to: string[];
  subject: string;
  html?: string;
  text?: string;
  tags: string[];
  headers: Record<string, string>;
  bulk: boolean;
}

export interface Accepted {
  id: string;
  status: 'queued';
}

// Headers the service writes itself; a caller setting them would forge or break the message.
const RESERVED_HEADERS = new Set([
  'from', 'to', 'cc', 'bcc', 'subject', 'date', 'message-id', 'mime-version', 'content-type', 'content-transfer-encoding',
  'sender', 'reply-to', 'return-path', 'received', 'dkim-signature', 'list-unsubscribe', 'list-unsubscribe-post', 'feedback-id',
]);

const asList = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

export interface Dispatch {
  wake(): void;
}

export class MailPipeline {
  private readonly validateSchema: ValidateFunction;

  constructor(private readonly store: Store, private readonly config: Config, private readonly dispatcher: Dispatch) {
    const ajv = new Ajv({ allErrors: false, coerceTypes: false, removeAdditional: false });
    this.validateSchema = ajv.compile(sendRequestSchema(config.limits));
  }

  /** Checks a request that did not come through an HTTP route schema (SMTP, gRPC). */
  validateShape(body: unknown): SendRequest {
    if (!this.validateSchema(body)) {
      const e = this.validateSchema.errors?.[0];
      throw invalid(`${e?.instancePath ? e.instancePath.slice(1) : 'request'} ${e?.message ?? 'is invalid'}`);
    }
    return body as SendRequest;
  }

  normalize(req: SendRequest): NormalizedRequest {
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
    const n: NormalizedRequest = {
      from: req.from.trim(),
      to: check('to', asList(req.to)),
      cc: check('cc', req.cc ?? []),
      bcc: check('bcc', req.bcc ?? []),
      reply_to: check('reply_to', asList(req.reply_to)),
      subject: req.subject,
      tags: req.tags ?? [],
      headers,
      bulk: req.bulk === true,
    };
    if (req.html !== undefined) n.html = req.html;
    if (req.text !== undefined) n.text = req.text;
    if (!n.to.length) throw invalid('to needs at least one recipient');
    if (n.to.length + n.cc.length + n.bcc.length > this.config.limits.maxRecipients) {
      throw invalid(`at most ${this.config.limits.maxRecipients} recipients in to, cc and bcc together`);
    }
    return n;
  }

  /** Envelope recipients, each once, with the field that named it first. */
  private recipients(n: NormalizedRequest): NewEmail['recipients'] {
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

  private prepare(caller: Caller, req: SendRequest): NewEmail {
    const n = this.normalize(req);
    const now = clock.now();
    return {
      id: crypto.randomUUID(),
      projectId: caller.project.id,
      status: 'queued',
      from: n.from,
      subject: n.subject,
      bulk: n.bulk,
      request: JSON.stringify(n),
      createdAt: now,
      recipients: this.recipients(n),
    };
  }

  /**
   * Accepts one email; resolves once it is committed. `system` marks the
   * platform's own mail (sign-in codes): exempt from the project's plan limits.
   */
  async send(caller: Caller, req: SendRequest, _opts: { system?: boolean } = {}): Promise<Accepted> {
    const email = this.prepare(caller, req);
    await this.store.insertEmail(email);
    this.dispatcher.wake();
    return { id: email.id, status: 'queued' };
  }

  /** Checks the shape of a request from outside HTTP (SMTP, gRPC), then sends it. */
  submit(caller: Caller, body: unknown): Promise<Accepted> {
    return this.send(caller, this.validateShape(body));
  }

  /** Accepts several emails, each judged on its own; one commit for all. */
  async sendMany(caller: Caller, reqs: unknown[]): Promise<Array<Accepted | ApiError>> {
    const prepared: Array<NewEmail | ApiError> = reqs.map((r) => {
      try {
        return this.prepare(caller, this.validateShape(r));
      } catch (err) {
        if (err instanceof ApiError) return err;
        throw err;
      }
    });
    const emails = prepared.filter((p): p is NewEmail => !(p instanceof ApiError));
    if (emails.length) {
      await this.store.insertEmails(emails);
      this.dispatcher.wake();
    }
    return prepared.map((p) => (p instanceof ApiError ? p : { id: p.id, status: 'queued' as const }));
  }
}
