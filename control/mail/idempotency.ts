// Idempotency keys (docs/mail-api.md, "Idempotency keys"), as Resend has them: a send
// retried with the same key and the same request within 24 h gets the first answer again
// (`Idempotent-Replayed: true`) and sends nothing new; the same key with another request is
// 409 IDEMPOTENCY_CONFLICT; a retry while the first is under way is 409 IDEMPOTENCY_IN_PROGRESS.
// Keys are per project. Over HTTP the `Idempotency-Key` header (POST /v1/emails and
// /v1/emails/batch); over SMTP an `Idempotency-Key` or `Resend-Idempotency-Key` header.
//
// The key reserves the ids of the emails the request will record before anything is recorded.
// If control dies between recording the emails and recording the answer, the key stays under
// way for its lease (a minute); the next retry after that looks the reserved ids up: what was
// recorded answers as it would have, and only what was not is sent (with the same ids, so a
// first attempt still running somewhere cannot record a second copy either).
import crypto from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, invalid, type ErrorCode } from '../../core/errors.js';
import { clock, DAY_MS } from '../../core/clock.js';
import { uuidv7 } from '../../core/ids.js';
import { IDEMPOTENCY_LEASE_MS, type Store } from '../store/index.js';
import type { Accepted } from './pipeline.js';

export const IDEMPOTENCY_WINDOW_MS = DAY_MS;
export { IDEMPOTENCY_LEASE_MS };
export const MAX_IDEMPOTENCY_KEY = 256;
export const REPLAYED_HEADER = 'Idempotent-Replayed';
const PRUNE_EVERY_MS = 10 * 60_000;

/** The key as given, checked (1 to 256 printable ASCII characters); undefined when none was given. */
export function checkKey(value: string | string[] | undefined, name = 'Idempotency-Key'): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) throw invalid(`${name} must be given once`);
  if (!value.length) throw invalid(`${name} must not be empty`);
  if (value.length > MAX_IDEMPOTENCY_KEY) throw invalid(`${name} must be at most ${MAX_IDEMPOTENCY_KEY} characters`);
  if (!/^[\x20-\x7e]+$/.test(value)) throw invalid(`${name} must hold printable ASCII characters only`);
  return value;
}

/** JSON with object keys sorted, so the same request hashes the same whatever its key order. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map((x) => (x === undefined ? 'null' : canonicalJson(x))).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    const keys = Object.keys(o)
      .filter((k) => o[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** What a request asks, as one SHA-256: where it came (route or door) and what it carried. */
export const requestHash = (route: string, parts: unknown[]): string =>
  crypto
    .createHash('sha256')
    .update(`${route}\n${canonicalJson(parts)}`)
    .digest('hex');

/** One run of a keyed request. */
export interface Attempt {
  /** The ids this request's emails take, in request order (empty without a key: the pipeline makes its own). */
  ids: string[];
  /** Taking over an interrupted attempt: each email's answer when it was recorded then, undefined when it was not (send it). */
  recorded?: Array<Accepted | ApiError | undefined>;
}

export interface Answer {
  status: number;
  body: unknown;
}

/** The answer to one email of an attempt: what was recorded, or what `send` gives now. */
export async function resumeOne(a: Attempt, send: (id: string | undefined) => Promise<Accepted>): Promise<Accepted> {
  const done = a.recorded?.[0];
  if (done instanceof ApiError) throw done;
  return done ?? send(a.ids[0]);
}

/** The answers to a batch: what was recorded, and what `send` gives now for the rest (with their reserved ids). */
export async function resumeMany(
  a: Attempt,
  reqs: unknown[],
  send: (reqs: unknown[], ids: string[] | undefined) => Promise<Array<Accepted | ApiError>>,
): Promise<Array<Accepted | ApiError>> {
  const recorded = a.recorded;
  if (!recorded) return send(reqs, a.ids.length ? a.ids : undefined);
  const todo = reqs.map((_, i) => i).filter((i) => recorded[i] === undefined);
  const fresh = todo.length
    ? await send(
        todo.map((i) => reqs[i]),
        todo.map((i) => a.ids[i]!),
      )
    : [];
  const out = reqs.map((_, i) => recorded[i]);
  for (const [j, i] of todo.entries()) out[i] = fresh[j];
  return out as Array<Accepted | ApiError>;
}

/**
 * Answers kept for the key: successes and refusals of the request itself. Not kept (the
 * retry runs again): 429 (a rate or quota that a later retry may pass) and 5xx (an outage or a bug).
 */
const kept = (status: number) => status < 500 && status !== 429;

export class Idempotency {
  constructor(
    private readonly store: Store,
    private readonly windowMs = IDEMPOTENCY_WINDOW_MS,
    private readonly leaseMs = IDEMPOTENCY_LEASE_MS,
  ) {}

  /**
   * Runs `fn` once for (project, key, request) and records its answer, or gives the answer
   * recorded before (replayed). `emails`: how many emails the request may record (ids reserved).
   */
  async run(projectId: string, key: string, hash: string, emails: number, fn: (a: Attempt) => Promise<Answer>): Promise<Answer & { replayed: boolean }> {
    const now = clock.now();
    const leaseUntil = now + this.leaseMs;
    const emailIds = Array.from({ length: emails }, () => uuidv7(now));
    const claim = await this.store.idempotency.claim({ projectId, key, requestHash: hash, emailIds, now, expiresAt: now + this.windowMs, leaseUntil });
    if (claim.kind === 'replay') return { status: claim.status, body: JSON.parse(claim.body), replayed: true };
    if (claim.kind === 'mismatch') {
      throw new ApiError('IDEMPOTENCY_CONFLICT', 'This idempotency key was already used with a different request; use a new key for a new request');
    }
    if (claim.kind === 'in-progress') {
      throw new ApiError('IDEMPOTENCY_IN_PROGRESS', 'A request with this idempotency key is still in progress; try again shortly', {}, { 'Retry-After': '1' });
    }
    const attempt: Attempt = { ids: claim.emailIds };
    let answer: Answer;
    try {
      if (claim.kind === 'resumed') attempt.recorded = await this.recorded(projectId, claim.emailIds);
      answer = await fn(attempt);
    } catch (err) {
      if (err instanceof ApiError && kept(err.status)) await this.complete(projectId, key, { status: err.status, body: err.toJSON() });
      else await this.store.idempotency.abandon(projectId, key, leaseUntil).catch(() => {});
      throw err;
    }
    await this.complete(projectId, key, answer);
    return { ...answer, replayed: false };
  }

  /**
   * A keyed HTTP request (the key from the `Idempotency-Key` header; `parts`: what the route
   * hashes besides its path, e.g. the body): answers what `fn` answers, or the recorded answer again.
   */
  async reply(
    req: FastifyRequest,
    reply: FastifyReply,
    projectId: string,
    parts: unknown[],
    emails: number,
    fn: (a: Attempt) => Promise<Answer>,
  ): Promise<FastifyReply> {
    const key = checkKey(req.headers['idempotency-key']);
    const answer =
      key === undefined ? await fn({ ids: [] }) : await this.run(projectId, key, requestHash(`${req.method} ${req.routeOptions.url}`, parts), emails, fn);
    if ('replayed' in answer && answer.replayed) reply.header(REPLAYED_HEADER, 'true');
    return reply.code(answer.status).send(answer.body);
  }

  /** A keyed SMTP submission of `request` (the send request the message maps to): the email accepted, or the recorded refusal thrown. */
  async submit(projectId: string, key: string, request: unknown, send: (id: string | undefined) => Promise<Accepted>): Promise<Accepted> {
    const answer = await this.run(projectId, key, requestHash('SMTP', [request]), 1, async (a) => ({ status: 202, body: await resumeOne(a, send) }));
    if (answer.status < 300) return answer.body as Accepted;
    const b = answer.body as { code: ErrorCode; error: string; id?: unknown };
    throw new ApiError(b.code, b.error, typeof b.id === 'string' ? { id: b.id } : {});
  }

  /** Drops keys past their window every few minutes; returns the stop function. */
  startPruning(onError: (err: unknown) => void = () => {}): () => void {
    const timer = setInterval(() => {
      this.store.idempotency.prune(clock.now()).catch(onError);
    }, PRUNE_EVERY_MS);
    timer.unref();
    return () => clearInterval(timer);
  }

  /** The answer recording failed (an outage): the key stays under way until its lease ends, then a retry finds the emails. */
  private async complete(projectId: string, key: string, answer: Answer): Promise<void> {
    await this.store.idempotency.complete(projectId, key, answer.status, JSON.stringify(answer.body)).catch(() => {});
  }

  /** What an interrupted attempt recorded, per reserved id: the answer it would have given, as the pipeline words it. */
  private recorded(projectId: string, ids: string[]): Promise<Array<Accepted | ApiError | undefined>> {
    return Promise.all(
      ids.map(async (id) => {
        const stored = await this.store.emails.get(projectId, id);
        if (!stored) return undefined;
        const e = stored.email;
        // Refused at ingestion: recorded as failed from the start, with the refusal's code.
        if (e.errorCode && (stored.events[0]?.type ?? e.status) === 'failed') return new ApiError(e.errorCode as ErrorCode, e.error ?? '', { id });
        return { id, status: (stored.events[0]?.type === 'scheduled' ? 'scheduled' : 'queued') as Accepted['status'] };
      }),
    );
  }
}
