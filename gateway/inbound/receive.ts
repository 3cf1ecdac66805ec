// Mail for a receiving domain at the inbound listener: which domains receive (pushed by control,
// SetReceivingDomains, kept in the outbox settings across restarts), the limits judged at RCPT and at
// the end of DATA, SPF/DKIM/DMARC judged with mailauth over our resolver, and the 'received' event
// that carries the message to control. The event (with the message) is committed before the 250:
// what the listener accepts is never lost by a crash of either process.
import { create, toBinary } from '@bufbuild/protobuf';
import { authenticate } from 'mailauth';
import { uuidv7 } from '../../core/ids.js';
import type { InboundSettings } from '../../core/config.js';
import type { Resolver } from '../../core/dns.js';
import { memoryCounters, type Counters } from '../../core/window-counters.js';
import { InboundMailSchema } from '../../proto/gen/postgate/gateway/v1/gateway_pb.js';
import type { NewDeliveryEvent, Outbox } from '../outbox/outbox.js';

export const RECEIVING_SETTING = 'receiving-domains';
const MINUTE_MS = 60_000;

export interface ReceivingDomain {
  domain: string;
  projectId: string;
}

/** The domains whose mail this gateway accepts, by lower-case name. */
export class ReceivingDomains {
  private byName = new Map<string, string>();

  constructor(private readonly outbox: Pick<Outbox, 'setting' | 'putSetting'>) {}

  /** The last push, read at start: a restarted gateway receives before control pushes again. */
  async load(): Promise<void> {
    const saved = await this.outbox.setting(RECEIVING_SETTING);
    if (saved) this.apply(JSON.parse(saved) as ReceivingDomain[]);
  }

  /** A full replacement: stored first, so a restart keeps what is in force. */
  async set(list: ReceivingDomain[]): Promise<void> {
    const clean = list.map((d) => ({ domain: d.domain.toLowerCase().replace(/\.$/, ''), projectId: d.projectId }));
    await this.outbox.putSetting(RECEIVING_SETTING, JSON.stringify(clean));
    this.apply(clean);
  }

  private apply(list: ReceivingDomain[]): void {
    this.byName = new Map(list.map((d) => [d.domain, d.projectId]));
  }

  /** The project receiving mail for `host`; undefined when nobody routes it. */
  projectOf(host: string): string | undefined {
    return this.byName.get(host.toLowerCase().replace(/\.$/, ''));
  }

  get size(): number {
    return this.byName.size;
  }
}

/** What a limit says at RCPT: undefined to go on, else the SMTP answer (code, enhanced code and text). */
export interface Refusal {
  code: 452 | 451 | 550;
  text: string;
}

/** Recipients per message and each domain's messages per minute (core/window-counters.ts, per gateway). */
export class InboundLimits {
  constructor(
    private readonly settings: InboundSettings,
    private readonly counters: Counters = memoryCounters(),
  ) {}

  /** Judged at each RCPT to a receiving domain: `accepted` of them are in the transaction already. */
  atRcpt(domain: string, accepted: number): Refusal | undefined {
    if (accepted >= this.settings.maxRecipients) return { code: 452, text: `4.5.3 too many recipients (at most ${this.settings.maxRecipients} per message)` };
    const w = this.counters.hit(`inbound:${domain}`, MINUTE_MS, 0);
    if (w.count >= this.settings.ratePerMinute)
      return { code: 451, text: `4.7.1 ${domain} receives at most ${this.settings.ratePerMinute} messages a minute; try again later` };
    return undefined;
  }

  /** Judged at the end of DATA, before anything is stored. */
  atData(bytes: number): Refusal | undefined {
    if (bytes > this.settings.maxMessageBytes) return { code: 550, text: `5.3.4 message too big (at most ${this.settings.maxMessageBytes} bytes)` };
    return undefined;
  }

  /** A message was accepted for these domains: each counts once in its window. */
  count(domains: Iterable<string>): void {
    for (const d of new Set(domains)) this.counters.hit(`inbound:${d}`, MINUTE_MS, 1);
  }
}

export interface AuthVerdict {
  spf: string;
  dkim: string;
  dmarc: string;
  /** The Authentication-Results header's value (without the name). */
  header: string;
  /** The details (domains, selectors, policy) as JSON. */
  json: string;
}

export interface Client {
  ip: string;
  helo: string;
  /** Envelope sender; '' for <>. */
  mailFrom: string;
}

const resultOf = (x: unknown): string => (x && typeof x === 'object' ? String((x as { status?: { result?: string } }).status?.result ?? 'none') : 'none');

/** SPF, DKIM and DMARC of a received message, asked of `resolver` (POSTGATE_DNS_SERVERS: loopback in tests). */
export async function checkAuth(raw: Buffer, client: Client, resolver: Resolver, mta: string): Promise<AuthVerdict> {
  const res = await authenticate(raw, {
    ip: client.ip,
    helo: client.helo,
    sender: client.mailFrom,
    mta,
    resolver: (name: string, rrtype: string) => resolver.resolve(name, rrtype as 'TXT') as Promise<never>,
    disableArc: true,
    disableBimi: true,
  } as never);
  const dkimResults = (res.dkim?.results ?? []) as Array<{ status?: { result?: string }; signingDomain?: string; selector?: string }>;
  // The best signature decides: one pass is a pass, whatever other signatures say.
  const order = ['pass', 'fail', 'policy', 'neutral', 'temperror', 'permerror', 'none'];
  const dkim = dkimResults.map((r) => r.status?.result ?? 'none').sort((a, b) => order.indexOf(a) - order.indexOf(b))[0] ?? 'none';
  const spfRes = (res.spf || undefined) as { domain?: string } | undefined;
  const dmarcRes = (res.dmarc || undefined) as { domain?: string; policy?: string } | undefined;
  const header = /Authentication-Results:\s*([\s\S]*)$/i.exec(String(res.headers ?? '').trim())?.[1]?.replace(/\r\n\s+/g, ' ') ?? '';
  return {
    spf: resultOf(res.spf),
    dkim,
    dmarc: resultOf(res.dmarc),
    header,
    json: JSON.stringify({
      spf: { result: resultOf(res.spf), domain: spfRes?.domain || null },
      dkim: dkimResults.map((r) => ({ result: r.status?.result ?? 'none', domain: r.signingDomain ?? null, selector: r.selector ?? null })),
      dmarc: { result: resultOf(res.dmarc), domain: dmarcRes?.domain || null, policy: dmarcRes?.policy || null },
    }),
  };
}

/** One 'received' event per project the message is for: each project gets its own copy (and id). */
export function receivedEvents(raw: Buffer, client: Client, byProject: ReadonlyMap<string, string[]>, auth: AuthVerdict, atMs: number): NewDeliveryEvent[] {
  return [...byProject].map(([projectId, rcptTo]) => {
    const inbound = create(InboundMailSchema, {
      projectId,
      mailFrom: client.mailFrom,
      rcptTo,
      raw,
      remoteIp: client.ip,
      helo: client.helo,
      spf: auth.spf,
      dkim: auth.dkim,
      dmarc: auth.dmarc,
      authenticationResults: auth.header,
      authJson: auth.json,
    });
    return {
      emailId: uuidv7(atMs),
      type: 'received',
      recipient: rcptTo[0] ?? '',
      atMs,
      mx: '',
      response: '',
      attempt: 0,
      enhancedCode: '',
      nextAttemptMs: 0,
      inbound: toBinary(InboundMailSchema, inbound),
    };
  });
}

let instance: Promise<ReceivingDomains> | undefined;

/** The gateway process's receiving domains, loaded once (the inbound plugin and the gRPC service share them). */
export function receivingDomains(outbox: Pick<Outbox, 'setting' | 'putSetting'>): Promise<ReceivingDomains> {
  return (instance ??= (async () => {
    const d = new ReceivingDomains(outbox);
    await d.load();
    return d;
  })());
}
