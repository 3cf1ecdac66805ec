// Drains each gateway's event outbox over a resumable gRPC stream. Events are
// applied in group commits together with the gateway's cursor; after a restart
// the stream resumes from the committed cursor, so nothing is lost or doubled.
import { EventEmitter } from 'node:events';
import type { Logger } from '../../core/log.js';
import type { GatewayEvent, Store } from '../store/index.js';
import { contractRefused, type Gateway, type GatewayClients } from './gateways.js';
import { EventType, type DeliveryEvent } from '../../proto/gen/postgate/gateway/v1/gateway_pb.js';
import { eventCauseName, eventSourceName, eventTypeName } from '../../proto/events.js';
import type { MailTokens } from '../unsubscribe/mail-tokens.js';

const RECONNECT_MS = 500;
/** A gateway of another build stays so until someone redeploys: asking again more often is noise. */
const REFUSED_RECONNECT_MS = 5000;
const ACK_EVERY_MS = 1000;

/** Counts the delivery events applied to the store. */
type AppliedCounter = { inc(by?: number): void };

export interface GatewayEventStreamOptions {
  /** Checks the tokens of reports that came back (DSN, ARF, unsubscribe mails). */
  tokens: MailTokens;
  /** Called each time a gateway's event stream (re)connects: it may have restarted. */
  onConnect?: (gw: Gateway) => void;
  /**
   * Stores mail received for receiving domains (RECEIVED events, control/inbound/receiver.ts), before the
   * cursor moves past them; a throw leaves the cursor where it was (they come again).
   */
  receive(events: readonly DeliveryEvent[]): Promise<void>;
}

/**
 * A gateway event as control records it. A report that came back to one of our
 * addresses is believed only when the address's MAC is right and names this email;
 * a forged one is kept out (its email id is blanked, so the cursor still moves past it).
 */
export function toGatewayEvent(e: DeliveryEvent, tokens: MailTokens, log?: Logger): GatewayEvent {
  const type = eventTypeName(e.type);
  // The consumer stops at a type it does not know (a gateway of another build) before it gets here.
  if (!type) throw new Error(`delivery event ${e.seq} has a type this control does not know (${e.type})`);
  const cause = eventCauseName(e.cause);
  const source = eventSourceName(e.source);
  const details: Record<string, unknown> = {};
  if (e.mx) details.mx = e.mx;
  if (e.response) details.response = e.response;
  if (e.enhancedCode) details.enhanced_code = e.enhancedCode;
  if (e.nextAttemptMs) details.next_attempt_at = new Date(Number(e.nextAttemptMs)).toISOString();
  // Who caused a delay or refusal (pacing, receiver, network), at which provider, learnt how.
  if (cause) details.cause = cause;
  // The shaping rule or the operator's suspension (operator:<id>) that holds it.
  if (e.rule) details.rule = e.rule;
  if (e.provider) details.provider = e.provider;
  if (source) details.source = source;
  // The attempt's TLS (gateway/tls): shown per event by GET /v1/emails/:id.
  if (e.tls)
    details.tls = { used: e.tls.used, version: e.tls.version, verified: e.tls.verified, policy: e.tls.policy, ...(e.tls.note ? { note: e.tls.note } : {}) };
  const ev: GatewayEvent = {
    seq: Number(e.seq),
    emailId: e.emailId,
    type,
    recipient: e.recipient,
    at: Number(e.atMs),
    attempt: e.attempt,
    details,
  };
  // Our pacing may defer one attempt to several days in turn: each is its own event.
  if (cause === 'pacing' && e.nextAttemptMs) ev.dedupe = `pacing:${details.next_attempt_at}`;
  // So may a shaping action or a suspension, each once per rule and end (none: until resumed).
  if (cause === 'shaping' || cause === 'suspended') ev.dedupe = `${cause}:${e.rule}:${details.next_attempt_at ?? ''}`;
  if (e.token) {
    const t = tokens.verify(e.token);
    if (!t || t.emailId !== e.emailId) {
      log?.warn({ emailId: e.emailId, type }, 'report with a forged or foreign return address ignored');
      ev.emailId = '';
    } else if (t.index !== undefined) {
      // The return path names the recipient; a report's own Final-Recipient (or none) does not.
      ev.recipientIndex = t.index;
      ev.recipient = '';
    } else {
      // A return path from before they named a recipient (b+<id>.<mac>): believed only for an
      // email with one recipient, the only case where it cannot be turned against another.
      ev.recipientIndex = 0;
      ev.recipient = '';
      ev.soleRecipient = true;
    }
  }
  return ev;
}

class Consumer {
  private buffer: GatewayEvent[] = [];
  /** RECEIVED events of the buffer, stored before it is applied. */
  private received: DeliveryEvent[] = [];
  private applying: Promise<void> = Promise.resolve();
  private stream: ReturnType<GatewayClients['events']> | undefined;
  private lastAck = 0;
  private ackTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private acked = 0;
  private committed = 0;
  /** The gateway refused this control's contract version (logged once until it streams again). */
  private refused = false;

  constructor(
    private readonly gw: Gateway,
    private readonly deps: {
      store: Store;
      gateways: GatewayClients;
      log: Logger;
      bus: EventEmitter;
      applied: AppliedCounter;
      options: GatewayEventStreamOptions;
    },
  ) {}

  async connect(): Promise<void> {
    if (this.stopped) return;
    await this.applying;
    let cursor: number;
    try {
      cursor = await this.deps.store.deliveryLog.cursor(this.gw.name);
    } catch (err) {
      // The store is unreachable (a network database lost): the stream resumes from the cursor once it answers.
      this.deps.log.debug({ gateway: this.gw.name, err: (err as Error).message }, 'event cursor unreadable; retrying');
      setTimeout(() => void this.connect(), RECONNECT_MS).unref();
      return;
    }
    this.committed = cursor;
    const stream = this.deps.gateways.events(this.gw, cursor);
    this.stream = stream;
    this.deps.options.onConnect?.(this.gw);
    const retry = (why: string, wait = RECONNECT_MS) => {
      if (this.stream !== stream) return;
      this.stream = undefined;
      if (!this.stopped) this.deps.log.debug({ gateway: this.gw.name, why }, 'event stream closed; reconnecting');
      setTimeout(() => void this.connect(), wait).unref();
    };
    /** A gateway of another build or another secret: one error line, nothing recorded, asked again now and then. */
    let refused = false;
    const refuse = (why: string) => {
      refused = true;
      if (!this.refused)
        this.deps.log.error(
          { gateway: this.gw.name, err: why },
          'gateway refuses this control, or cannot prove it holds POSTGATE_SECRET: its delivery events wait until both run the same build with the same secret',
        );
      this.refused = true;
      retry(why, REFUSED_RECONNECT_MS);
      stream.cancel();
    };
    stream.on('data', (e: DeliveryEvent) => {
      if (refused) return;
      if (e.type === EventType.RECEIVED) {
        // Stored by the receiver; in the batch only to move the cursor (no email of ours has its id).
        this.received.push(e);
        this.buffer.push({ seq: Number(e.seq), emailId: '', type: 'delivered', recipient: '', at: Number(e.atMs), attempt: 0, details: {} });
        if (this.buffer.length === 1) this.applying = this.applying.then(() => this.apply());
        // A message may be megabytes: read no further until it is stored (flow control holds the rest in the gateway).
        stream.pause();
        this.applying = this.applying.then(() => void stream.resume());
        return;
      }
      // A gateway from before contract versions does not check ours; its events are not ours to read either.
      // Stopping here keeps the cursor before them, so none is lost once both run the same build.
      if (!eventTypeName(e.type)) return refuse(`event ${e.seq} has an event type this control does not know (${e.type})`);
      this.refused = false;
      this.buffer.push(toGatewayEvent(e, this.deps.options.tokens, this.deps.log));
      if (this.buffer.length === 1) this.applying = this.applying.then(() => this.apply());
    });
    stream.on('error', (err: Error) => {
      if (refused) return;
      if (contractRefused(err)) refuse((err as { details?: string }).details ?? err.message);
      else retry(err.message);
    });
    stream.on('end', () => retry('end'));
  }

  private async apply(): Promise<void> {
    const batch = this.buffer;
    const received = this.received;
    this.buffer = [];
    this.received = [];
    if (!batch.length) return;
    try {
      if (received.length) await this.deps.options.receive(received);
      const applied = await this.deps.store.deliveryLog.apply(this.gw.name, batch);
      this.committed = Math.max(this.committed, ...batch.map((e) => e.seq));
      this.deps.applied.inc(applied.length);
      for (const a of applied) this.deps.bus.emit('event', a);
      this.scheduleAck();
    } catch (err) {
      // Not committed: drop the stream and resume from the stored cursor.
      this.deps.log.error({ err }, received.length ? 'could not record received mail or delivery events' : 'could not record delivery events');
      this.stream?.cancel();
    }
  }

  private scheduleAck(): void {
    if (this.ackTimer) return;
    const wait = Math.max(0, this.lastAck + ACK_EVERY_MS - Date.now());
    this.ackTimer = setTimeout(() => {
      this.ackTimer = undefined;
      this.lastAck = Date.now();
      const seq = this.committed;
      if (seq <= this.acked) return;
      // Applied events may not be on disk yet (DeliveryLog.durable): the gateway forgets them only once they are.
      this.deps.store.deliveryLog
        .durable()
        .then(() => this.deps.gateways.ack(this.gw, seq))
        .then(
          () => (this.acked = seq),
          () => {},
        );
    }, wait);
    this.ackTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.stream?.cancel();
    clearTimeout(this.ackTimer);
    await this.applying;
  }
}

export class GatewayEventStream {
  /** Emits 'event' with each AppliedEvent (the store's) after it is committed (webhooks, analytics). */
  readonly bus = new EventEmitter();
  private readonly consumers: Consumer[];

  /** `applied`: postgate_delivery_events_total (control/main.ts declares it). */
  constructor(store: Store, gateways: GatewayClients, log: Logger, applied: AppliedCounter, options: GatewayEventStreamOptions) {
    this.bus.setMaxListeners(0);
    this.consumers = gateways.list.map((gw) => new Consumer(gw, { store, gateways, log, bus: this.bus, applied, options }));
  }

  start(): void {
    for (const c of this.consumers) void c.connect();
  }

  async stop(): Promise<void> {
    await Promise.all(this.consumers.map((c) => c.stop()));
  }
}
