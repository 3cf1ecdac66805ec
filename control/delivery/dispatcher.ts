// Hands committed emails to the gateways. Runs after the 202: sends each stored
// request with what its message needs (the gateway builds and signs it); an email
// is marked dispatched only once a gateway has queued it durably, so a crash of
// either side just means enqueueing again (the gateway answers a repeated key as a
// duplicate).
//
// What deliverability needs travels with each message: the envelope sender is a VERP
// address on the domain's return path (bounces come back naming the email, SPF aligns),
// the domain's DKIM key (the gateway signs), the project's first sending day (warm-up),
// a Feedback-ID (project and stream) and, for bulk, List-Unsubscribe with RFC 8058's
// List-Unsubscribe-Post. A bulk email goes as one copy per recipient, because each
// copy's unsubscribe link names its own recipient.
import { eventLoopLoad } from '../../core/event-loop-load.js';
import type { Logger } from '../../core/log.js';
import { clock, dayStart } from '../../core/clock.js';
import type { Sealer } from '../../core/crypto.js';
import type { DomainRow, EmailRow, RecipientRow, Store } from '../store/index.js';
import { contractRefused, type Gateway, type GatewayClients } from './gateways.js';
import { create } from '@bufbuild/protobuf';
import { CompositionSchema, type OutboundMessage } from '../../proto/gen/postgate/gateway/v1/gateway_pb.js';
import type { MailTokens } from '../unsubscribe/mail-tokens.js';
import { domainOf, parseMailbox } from '../../common/address.js';
import { readRequest, type StoredRequest } from '../mail/vocabulary.js';
import { type DnsRecord, returnPathLabel } from '../domains/records.js';
import type { TrackingLinks } from '../tracking/links.js';
import { type Tracked, trackedHtml, trackingOf, trackingReady } from '../tracking/compose.js';

const BATCH = 200;
/** Mail accepted this recently means arrivals are under way (see DeliverySettings.busyDispatchRate). */
const BUSY_MS = 100;
/**
 * Dispatch holds back only while the event loop is this busy: a burst that takes the whole CPU.
 * Arrivals alone do not say that: at a steady 200 emails/s control had most of its loop free,
 * yet dispatched 45/s until arrivals paused, and the backlog grew for as long as they lasted.
 */
const SATURATED = 0.8;

/** Emails per dispatch while busy: small, so the floor rate is spread evenly. */
const BUSY_BATCH = 20;
/**
 * Request bytes (bodies included) a dispatch round aims at: the round's size follows the size of
 * the last emails read, so a round of large emails holds about this much, not BATCH of them (each
 * is read, parsed, copied into the call and serialized at once in control, built in the gateway).
 */
const ROUND_REQUEST_BYTES = 1024 * 1024;

/** Emails to read for a round, given the mean request size of the last ones read (0: none read yet). */
export const roundSize = (meanRequestBytes: number): number =>
  Math.max(BUSY_BATCH, Math.min(BATCH, Math.floor(ROUND_REQUEST_BYTES / Math.max(1, meanRequestBytes))));

const RETRY_MS = 1000;
/** Domain keys and first sending days are read once a minute at most. */
const CACHE_MS = 60_000;
/**
 * Attachment bytes per Enqueue: emails with attachments go in calls of about this much (an
 * email with more goes alone), one call at a time, so what control and a gateway hold for a
 * hand-over stays bounded however much mail waits.
 */
export const ENQUEUE_ATTACHMENT_BYTES = 16 * 1024 * 1024;
/**
 * Attachment bytes per dispatch round: the rest of the round's emails wait for the next one, so a
 * round stays short (on PostgreSQL, well inside the claim on what it dispatches).
 */
const ROUND_ATTACHMENT_BYTES = 4 * ENQUEUE_ATTACHMENT_BYTES;

type Pending = EmailRow & { recipients: RecipientRow[] };

/** Attachment bytes of an email, from its stored request (sizes only: the bytes are read later). */
const attachmentBytes = (req: StoredRequest): number => (req.attachments ?? []).reduce((n, a) => n + a.size, 0);

/** The emails in runs of at most ENQUEUE_ATTACHMENT_BYTES of attachments, in order; mail without any is one run. */
function byAttachmentBytes(list: Pending[], requests: Map<string, StoredRequest>): Pending[][] {
  const runs: Pending[][] = [];
  let run: Pending[] = [];
  let bytes = 0;
  for (const r of list) {
    const n = attachmentBytes(requests.get(r.id)!);
    if (run.length && bytes + n > ENQUEUE_ATTACHMENT_BYTES) {
      runs.push(run);
      run = [];
      bytes = 0;
    }
    run.push(r);
    bytes += n;
  }
  if (run.length) runs.push(run);
  return runs;
}

export interface DispatchDeliverability {
  tokens: MailTokens;
  dkimSealer: Sealer;
  /** Public base URL: the one-click unsubscribe links point here. */
  baseUrl: string;
  /** The platform's system sender (sign-in codes), set once it exists. */
  system?: { projectId: string; domain: string };
  /** Open and click tracking (control/tracking): the links' signer and whether they are https. */
  tracking?: { links: TrackingLinks; https: boolean };
}

type Message = Omit<OutboundMessage, '$typeName'>;
type Dkim = NonNullable<Message['dkim']>;
/** A sender domain's DKIM key and its return-path label (custom_return_path). */
type SenderKey = { dkim: Omit<Dkim, '$typeName'>; returnPath: string; requireTls: boolean; tracking: (req: StoredRequest) => Tracked };

/** What the gateway builds the message from. Bcc stays out: it is only in the envelope. */
function composition(r: EmailRow, req: StoredRequest, serviceHeaders: Record<string, string>): Message['compose'] {
  return create(CompositionSchema, {
    // Every copy names the same bytes (EnqueueRequest.attachments): sent once per call.
    attachments: (req.attachments ?? []).map((a, i) => ({
      filename: a.filename,
      contentType: a.content_type,
      contentId: a.content_id ?? '',
      ref: `${r.id}/${i}`,
    })),
    // A scheduled email is dated when it leaves, not when it was accepted.
    createdAtMs: BigInt(r.scheduledAt ?? r.createdAt),
    serviceHeaders,
    from: req.from,
    to: req.to,
    cc: req.cc,
    replyTo: req.reply_to,
    subject: req.subject,
    text: req.text ?? '',
    html: req.html ?? '',
    headers: req.headers,
  });
}

export class Dispatcher {
  private running = false;
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Gateways whose last Enqueue failed, and why (unreachable, or built from another commit). */
  private readonly down = new Map<string, 'unavailable' | 'refused'>();
  /** When mail was last accepted (wake() is called on every accept). */
  private lastWake = 0;
  /** Mean request size of the emails read last (ROUND_REQUEST_BYTES). */
  private requestBytes = 0;
  /** The oldest email read last had waited busy.holdMs or more: no holding back until the backlog is younger. */
  private overdue = false;

  private readonly keys = new Map<string, { at: number; key: Promise<SenderKey | undefined> }>();
  private readonly starts = new Map<string, { at: number; start: Promise<number> }>();

  constructor(
    private readonly store: Store,
    private readonly gateways: GatewayClients,
    private readonly log: Logger,
    /** postgate_emails_dispatched_total (control/main.ts declares it). */
    private readonly dispatched: { inc(by?: number): void },
    private readonly deliverability: DispatchDeliverability,
    /**
     * `rate`: emails per second while mail keeps arriving and takes the CPU (0: no holding back);
     * `holdMs`: the longest the oldest waiting email is held that way (DeliverySettings.busyHoldSeconds).
     */
    private readonly busy: { rate: number; holdMs: number } = { rate: 50, holdMs: 10_000 },
    /** How busy the event loop is (0-1). */
    private readonly loopLoad: () => number = eventLoopLoad(),
  ) {}

  /** The project's key for the sender domain (opened from its sealed form), if it has the domain. */
  private dkimKey(projectId: string, domain: string): Promise<SenderKey | undefined> {
    const k = `${projectId}|${domain}`;
    const hit = this.keys.get(k);
    if (hit && clock.now() - hit.at < CACHE_MS) return hit.key;
    // The platform's system sender signs with the system project's key.
    const owner = (d: DomainRow | undefined) =>
      d || !this.deliverability.system || domain !== this.deliverability.system.domain
        ? d
        : this.store.domains.byName(this.deliverability.system.projectId, domain);
    const key = this.store.domains
      .byName(projectId, domain)
      .then(owner)
      .then((d) =>
        d
          ? {
              dkim: { domain: d.name, selector: d.selector, privateKeyPem: this.deliverability.dkimSealer.open(d.dkimPrivate) },
              returnPath: returnPathLabel(d.records as unknown as DnsRecord[], d.name),
              // The domain's `tls: "enforced"`: the gateway delivers only over verified TLS.
              requireTls: d.settings.tls === 'enforced',
              tracking: (req: StoredRequest) =>
                trackingOf(d.name, d.settings, req, trackingReady(d.records as unknown as DnsRecord[], `${d.settings.trackingSubdomain}.${d.name}`)),
            }
          : undefined,
      );
    key.catch(() => this.keys.delete(k));
    this.keys.set(k, { at: clock.now(), key });
    return key;
  }

  /** UTC midnight of the project's first sending day: day 1 of its warm-up. */
  private warmupStart(projectId: string): Promise<number> {
    const hit = this.starts.get(projectId);
    if (hit && clock.now() - hit.at < CACHE_MS) return hit.start;
    const start = this.store.pacing.firstSendAt(projectId).then((at) => dayStart(at ?? clock.now()));
    start.catch(() => this.starts.delete(projectId));
    this.starts.set(projectId, { at: clock.now(), start });
    return start;
  }

  /** The gateway messages of one email: one per recipient (its own return path; bulk: its own unsubscribe links). */
  private async messagesOf(r: Pending, req: StoredRequest, files: Record<string, Uint8Array>): Promise<Message[]> {
    const { tokens, baseUrl } = this.deliverability;
    if (req.attachments?.length) {
      const contents = await this.store.emails.attachments(r.id);
      if (contents.length !== req.attachments.length)
        throw new Error(`email ${r.id}: ${contents.length} of its ${req.attachments.length} attachments are stored`);
      contents.forEach((c, i) => {
        files[`${r.id}/${i}`] = c;
      });
    }
    const from = parseMailbox(req.from)!.address;
    const senderDomain = domainOf(from);
    const [sender, warmupStartMs] = await Promise.all([this.dkimKey(r.projectId, senderDomain), this.warmupStart(r.projectId)]);
    const dkim = sender?.dkim;
    const label = sender?.returnPath;
    // Tracked links and the pixel go in before the gateway signs; the stored html stays the sender's. System mail is never tracked.
    const tracking = this.deliverability.tracking;
    const t = sender && tracking && !req.system ? sender.tracking(req) : undefined;
    if (t && tracking && (t.open || t.click)) req = { ...req, html: trackedHtml(req.html, t, tracking.links, tracking.https, r.id, clock.now()) };
    const common = {
      emailId: r.id,
      projectId: r.projectId,
      bulk: r.bulk,
      senderDomain,
      warmupStartMs: BigInt(warmupStartMs),
      acceptedMs: BigInt(r.createdAt),
      requireTls: sender?.requireTls === true,
      ...(dkim ? { dkim: dkim as Dkim } : {}),
    };
    // Receivers aggregate complaints by it (Gmail's Feedback Loop): <project>:<stream>:<sender id>.
    const feedbackId = `${r.projectId}:${r.bulk ? 'bulk' : 'transactional'}:postgate`;
    // One copy per recipient, each with its own return path (VERP), so a bounce or complaint
    // can only ever concern the recipient it came from. Bulk copies also carry their own
    // unsubscribe links.
    return r.recipients.flatMap((x, index) => {
      if (x.status !== 'queued') return [];
      const headers: Record<string, string> = { 'Feedback-ID': feedbackId };
      if (r.bulk) {
        const token = tokens.unsubscribeToken(r.id, index);
        headers['List-Unsubscribe'] = `<${baseUrl}/unsubscribe/${token}>, <${tokens.unsubscribeMailto(r.id, index, senderDomain, label)}>`;
        headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
      }
      const mailFrom = tokens.verpAddress(r.id, index, senderDomain, label);
      return [{ ...common, key: `${r.id}/${index}`, mailFrom, rcptTo: [x.address], raw: new Uint8Array(), compose: composition(r, req, headers) }];
    });
  }

  start(): void {
    this.wake();
  }

  wake(): void {
    this.lastWake = performance.now();
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.drain().finally(() => {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  private async drain(): Promise<void> {
    while (!this.stopped) {
      let rows: Awaited<ReturnType<Dispatcher['next']>>;
      try {
        rows = await this.next();
      } catch (err) {
        // The store is unreachable (a network database lost): try again shortly, once logged per outage.
        if (!this.down.has('store')) this.log.warn({ err: (err as Error).message }, 'cannot read mail to dispatch; will retry');
        this.down.set('store', 'unavailable');
        this.schedule();
        return;
      }
      if (this.down.delete('store')) this.log.info('mail to dispatch readable again');
      this.log.debug({ rows: rows.length }, 'dispatch round');
      if (!rows.length) return;
      const byGateway = new Map<Gateway, typeof rows>();
      for (const r of rows) {
        const gw = this.gateways.pick(r.id);
        byGateway.set(gw, [...(byGateway.get(gw) ?? []), r]);
      }
      let failed = false;
      await Promise.all(
        [...byGateway].map(async ([gw, list]) => {
          try {
            // The stored request is control's own format: the gateway is sent only the typed parts of the message.
            const requests = new Map(list.map((r) => [r.id, readRequest(r.request)]));
            // One call at a time, each with a bounded amount of attachment bytes (read only for it).
            let roundBytes = 0;
            for (const part of byAttachmentBytes(list, requests)) {
              if (roundBytes >= ROUND_ATTACHMENT_BYTES) break; // the others are dispatched next round
              roundBytes += part.reduce((n, r) => n + attachmentBytes(requests.get(r.id)!), 0);
              // Prepared a few at a time, yielding in between, so accepting new mail keeps priority over dispatching it.
              const messages: Message[] = [];
              const files: Record<string, Uint8Array> = {};
              for (let i = 0; i < part.length; i += 10) {
                messages.push(...(await Promise.all(part.slice(i, i + 10).map((r) => this.messagesOf(r, requests.get(r.id)!, files)))).flat());
                await new Promise((r) => setImmediate(r));
              }
              const res = await this.gateways.enqueue(gw, messages, files);
              // An email is dispatched once every one of its messages is queued.
              const refused = new Set(res.results.filter((x) => x.error).map((x) => x.emailId));
              const answered = new Set(res.results.map((x) => x.emailId));
              const sent = new Set(messages.map((m) => m.emailId));
              const done = part.map((r) => r.id).filter((id) => !refused.has(id) && (answered.has(id) || !sent.has(id)));
              for (const x of res.results) if (x.error) this.log.error({ emailId: x.emailId, key: x.key, err: x.error }, 'gateway refused to queue');
              await this.store.emails.markDispatched(done, clock.now());
              this.dispatched.inc(done.length);
              if (done.length < part.length) {
                this.log.debug({ gateway: gw.name, done: done.length, of: part.length, refused: refused.size }, 'dispatch round incomplete');
                failed = true;
                break;
              }
            }
          } catch (err) {
            failed = true;
            // Once per outage, not once a second.
            const why = contractRefused(err) ? 'refused' : 'unavailable';
            if (this.down.get(gw.name) === why) return;
            this.down.set(gw.name, why);
            if (why === 'refused')
              this.log.error(
                { gateway: gw.name, err: (err as { details?: string }).details ?? (err as Error).message },
                'gateway refuses this control, or cannot prove it holds POSTGATE_SECRET: mail waits until both run the same build with the same secret',
              );
            else this.log.warn({ gateway: gw.name, err: (err as Error).message }, 'gateway unavailable; will retry');
            return;
          }
          if (this.down.delete(gw.name)) this.log.info({ gateway: gw.name }, 'gateway reachable again');
        }),
      );
      if (failed) {
        this.schedule();
        return;
      }
    }
  }

  /**
   * The next emails to dispatch. While mail keeps arriving and accepting it keeps the event loop
   * busy, accepting has the CPU: dispatch goes on at the configured floor rate, except for the
   * platform's own mail, and for at most busy.holdMs. Arrivals that leave the loop room are
   * dispatched as they come.
   */
  private async next(): Promise<Pending[]> {
    const held = () => this.busy.rate > 0 && !this.overdue && performance.now() - this.lastWake < BUSY_MS && this.loopLoad() >= SATURATED;
    const batch = roundSize(this.requestBytes);
    const read = async (limit: number) => {
      const rows = await this.store.emails.undispatched(limit);
      if (rows.length) this.requestBytes = rows.reduce((n, r) => n + r.request.length, 0) / rows.length;
      // Oldest first: the first row says how long mail has waited.
      this.overdue = rows.length > 0 && clock.now() - rows[0]!.createdAt >= this.busy.holdMs;
      return rows;
    };
    if (!held()) return read(batch);
    await new Promise((r) => setTimeout(r, (1000 * BUSY_BATCH) / this.busy.rate));
    if (!held()) return read(batch);
    // Once the oldest of these has waited busy.holdMs, the next rounds go at full speed until the
    // backlog is younger again: a burst has the CPU for that long, not for as long as it lasts.
    const rows = await read(BUSY_BATCH);
    const system = this.deliverability.system;
    if (!system) return rows;
    const have = new Set(rows.map((r) => r.id));
    return [...rows, ...(await this.store.emails.undispatched(BATCH, system.projectId)).filter((r) => !have.has(r.id))];
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.wake(), RETRY_MS);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}
