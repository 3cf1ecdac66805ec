// Control's side of a 'received' event: the gateway's InboundMail parsed (parse.ts) and stored with its
// email.received webhook messages (store.inbound.receive) before the event stream's cursor moves past it,
// so a control killed at any point finds the event again and stores it once (the id is the key).
import type { Logger } from '../../core/log.js';
import type { DeliveryEvent } from '../../proto/gen/postgate/gateway/v1/gateway_pb.js';
import { receivedPayload } from '../webhooks/payload.js';
import type { Store } from '../store/index.js';
import { parseReceived, receivedEventData, type ReceivedMessage, unparsedReceived } from './parse.js';

/** The event's message in plain fields; undefined when it carries none (pruned, or a gateway of another build). */
export function receivedMessage(e: DeliveryEvent): ReceivedMessage | undefined {
  const m = e.inbound;
  if (!m || !e.emailId || !m.projectId) return undefined;
  return {
    id: e.emailId,
    atMs: Number(e.atMs),
    projectId: m.projectId,
    mailFrom: m.mailFrom,
    rcptTo: m.rcptTo,
    raw: m.raw,
    remoteIp: m.remoteIp,
    helo: m.helo,
    spf: m.spf,
    dkim: m.dkim,
    dmarc: m.dmarc,
    authenticationResults: m.authenticationResults,
    authJson: m.authJson,
  };
}

export class InboundReceiver {
  constructor(
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  /** Stores each received message (in order); throws when one cannot be stored, so the cursor stays before it. */
  async receive(events: readonly DeliveryEvent[]): Promise<void> {
    for (const e of events) {
      const m = receivedMessage(e);
      if (!m) {
        this.log.warn({ seq: Number(e.seq), emailId: e.emailId }, 'received event without its message ignored');
        continue;
      }
      const email = await parseReceived(m).catch((err: unknown) => {
        this.log.warn({ id: m.id, err: (err as Error).message }, 'received message unreadable; stored as received, unparsed');
        return unparsedReceived(m);
      });
      const stored = await this.store.inbound.receive(email, receivedPayload(email.createdAt, receivedEventData(email)));
      if (stored)
        this.log.info(
          { id: email.id, projectId: email.projectId, rcpts: email.rcptTo.length, spf: email.auth.spf, dkim: email.auth.dkim, dmarc: email.auth.dmarc },
          'mail received',
        );
    }
  }
}
