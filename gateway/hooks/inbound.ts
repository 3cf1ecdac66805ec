// Hook glue of the inbound plugin: Haraka's listener on POSTGATE_INBOUND_PORT takes
// mail for our return-path addresses (b+… bounces and reports, u+… unsubscribes,
// at pg-bounces.<domain>), reads it (gateway/inbound/report.ts) and records what it
// reports in the outbox, as events of the email the address names. The address's MAC
// is checked by control, which alone holds the key; here only its shape is.
// It also takes mail for any address at a receiving domain (gateway/inbound/receive.ts):
// limits at RCPT and end of DATA, SPF/DKIM/DMARC judged, the message committed to the outbox
// as a 'received' event before the 250. Any other address is refused at RCPT.
import constants from 'haraka-constants';
import { clock } from '../../core/clock.js';
import type { NewDeliveryEvent } from '../outbox/outbox.js';
import { parseToken } from '../../common/return-path.js';
import type { HarakaAddress, Next } from '../haraka.js';
import { readInbound } from '../inbound/report.js';
import { checkAuth, InboundLimits, receivedEvents, receivingDomains, type Refusal } from '../inbound/receive.js';
import { makeResolver } from '../../core/dns.js';
import { gatewayRuntime } from '../runtime.js';

/** The parts of Haraka's inbound connection these hooks use. */
export interface InboundConnection {
  remote: { ip: string };
  hello?: { host?: string };
  transaction?: {
    mail_from: HarakaAddress;
    rcpt_to: HarakaAddress[];
    message_stream: { get_data(cb: (data: Buffer) => void): void };
  };
  loginfo(...args: unknown[]): void;
}

export interface InboundHooks {
  lookupRdns(next: Next, connection: InboundConnection): void;
  rcpt(next: Next, connection: InboundConnection, params: [HarakaAddress]): void;
  queue(next: Next, connection: InboundConnection): void;
}

/** The local part, when the address is one of ours. */
export function ourLocalPart(address: Pick<HarakaAddress, 'user' | 'host'>): string | undefined {
  // A domain may name its own return-path label (custom_return_path), so any subdomain may carry
  // our tokens: the token's shape is checked here, its MAC by control, which holds the key.
  const host = (address.host ?? '').toLowerCase();
  if (host.split('.').length < 3) return undefined;
  const local = (address.user ?? '').toLowerCase();
  return parseToken(local) ? local : undefined;
}

/**
 * An answer with its own code (452, 451…), where DENYSOFT alone answers 450: Haraka's respond() takes the code
 * of any object whose constructor is named DSN (haraka-dsn's shape). After DATA Haraka answers 550 whatever it says.
 */
class DSN {
  constructor(
    readonly code: number,
    readonly reply: string,
  ) {}
  toString(): string {
    return this.reply;
  }
}

export async function inboundHooks(): Promise<InboundHooks> {
  const rt = await gatewayRuntime();
  const { log, config } = rt;
  // The same resolver as MX lookups: POSTGATE_DNS_SERVERS when set (loopback in tests).
  const resolver = makeResolver(config.dnsServers);
  const receiving = await receivingDomains(rt.outbox);
  const limits = new InboundLimits(config.inbound);
  /** The receiving recipients of each transaction (address → project), as RCPT accepted them. */
  const accepted = new WeakMap<object, Map<string, string>>();
  const refuse = (next: Next, r: Refusal) => next(r.code >= 500 ? constants.deny : constants.denysoft, new DSN(r.code, r.text));

  return {
    lookupRdns(next, connection) {
      resolver.reverse(connection.remote.ip).then(
        (names) => next(constants.ok, names[0] ?? 'Unknown'),
        () => next(constants.ok, 'NXDOMAIN'),
      );
    },
    rcpt(next, connection, [rcpt]) {
      if (ourLocalPart(rcpt)) return next(constants.ok);
      const host = (rcpt.host ?? '').toLowerCase();
      const projectId = receiving.projectOf(host);
      const txn = connection.transaction;
      if (projectId && txn) {
        const mine = accepted.get(txn) ?? new Map<string, string>();
        const refusal = limits.atRcpt(host, mine.size);
        if (refusal) return refuse(next, refusal);
        mine.set(`${rcpt.user}@${host}`, projectId);
        accepted.set(txn, mine);
        return next(constants.ok);
      }
      next(constants.deny, `5.1.1 <${rcpt.user}@${rcpt.host}>: no such address here`);
    },
    queue(next, connection) {
      const txn = connection.transaction;
      if (!txn) return next(constants.denysoft, 'no transaction');
      txn.message_stream.get_data((raw) => {
        const from = txn.mail_from?.address ?? '';
        const mine = accepted.get(txn);
        if (mine?.size) {
          const tooBig = limits.atData(raw.length);
          if (tooBig) return refuse(next, tooBig);
        }
        const received = mine?.size ? receive(raw, from, mine, connection) : Promise.resolve([]);
        const reports = Promise.all(
          txn.rcpt_to.map(async (rcpt) => {
            const local = ourLocalPart(rcpt);
            if (!local) return [];
            const outcomes = await readInbound(raw, local, from);
            return outcomes.map((o): NewDeliveryEvent => {
              // The envelope address names the email; what the report body claims does not.
              const token = local;
              return {
                emailId: parseToken(token)!.emailId,
                type: o.type,
                recipient: o.recipient,
                atMs: clock.now(),
                mx: o.mx,
                response: o.response,
                attempt: 0,
                enhancedCode: o.enhancedCode,
                nextAttemptMs: 0,
                cause: o.type === 'deferred' || o.type === 'rejected' ? 'receiver' : '',
                token,
                source: o.source,
              };
            });
          }),
        );
        Promise.all([received, reports])
          .then(([inbound, lists]) => [...inbound, ...lists.flat()])
          .then(async (events) => {
            // Committed now (not at the end of this turn): the 250 below means the message is on disk.
            if (events.length) await rt.record(events, [], true);
            if (mine?.size) limits.count([...mine.keys()].map((a) => a.slice(a.lastIndexOf('@') + 1)));
            // Complaints and reported bounces count in the live state's windows.
            rt.queueState.observe(events.filter((e) => e.type !== 'received'));
            log.info(
              { from, rcpts: txn.rcpt_to.length, events: events.map((e) => `${e.type}:${e.emailId}`) },
              events.length ? 'inbound mail recorded' : 'inbound mail ignored',
            );
            const ids = events.filter((e) => e.type === 'received').map((e) => e.emailId);
            next(constants.ok, ids.length ? `2.0.0 received as ${ids.join(' ')}` : 'thanks');
          })
          .catch((err) => {
            // Not recorded: ask the sender to try again rather than lose the report.
            log.error({ err, from }, 'inbound report failed');
            next(constants.denysoft, '4.3.0 try again later');
          });
      });
    },
  };

  /** The 'received' events of a message for receiving domains: SPF, DKIM and DMARC judged once, one copy per project. */
  async function receive(raw: Buffer, from: string, mine: Map<string, string>, connection: InboundConnection) {
    const client = { ip: connection.remote.ip, helo: connection.hello?.host ?? '', mailFrom: from };
    const auth = await checkAuth(raw, client, resolver, config.mxHost);
    const byProject = new Map<string, string[]>();
    for (const [address, projectId] of mine) byProject.set(projectId, [...(byProject.get(projectId) ?? []), address]);
    return receivedEvents(raw, client, byProject, auth, clock.now());
  }
}
