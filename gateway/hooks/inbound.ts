// Hook glue of the inbound plugin: Haraka's listener on POSTGATE_INBOUND_PORT takes
// mail for our return-path addresses only (b+… bounces and reports, u+… unsubscribes,
// at pg-bounces.<domain>), reads it (gateway/inbound/report.ts) and records what it
// reports in the outbox, as events of the email the address names. The address's MAC
// is checked by control, which alone holds the key; here only its shape is.
import constants from 'haraka-constants';
import { clock } from '../../core/clock.js';
import type { NewDeliveryEvent } from '../outbox/outbox.js';
import { parseToken } from '../../common/return-path.js';
import type { HarakaAddress, Next } from '../haraka.js';
import { readInbound } from '../inbound/report.js';
import { makeResolver } from '../../core/dns.js';
import { gatewayRuntime } from '../runtime.js';

/** The parts of Haraka's inbound connection these hooks use. */
export interface InboundConnection {
  remote: { ip: string };
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

export async function inboundHooks(): Promise<InboundHooks> {
  const rt = await gatewayRuntime();
  const { log, config } = rt;
  // The same resolver as MX lookups: POSTGATE_DNS_SERVERS when set (loopback in tests).
  const resolver = makeResolver(config.dnsServers);

  return {
    lookupRdns(next, connection) {
      resolver.reverse(connection.remote.ip).then(
        (names) => next(constants.ok, names[0] ?? 'Unknown'),
        () => next(constants.ok, 'NXDOMAIN'),
      );
    },
    rcpt(next, _connection, [rcpt]) {
      if (ourLocalPart(rcpt)) return next(constants.ok);
      next(constants.deny, `5.1.1 <${rcpt.user}@${rcpt.host}>: no such address here`);
    },
    queue(next, connection) {
      const txn = connection.transaction;
      if (!txn) return next(constants.denysoft, 'no transaction');
      txn.message_stream.get_data((raw) => {
        const from = txn.mail_from?.address ?? '';
        Promise.all(
          txn.rcpt_to.map(async (rcpt) => {
            const local = ourLocalPart(rcpt)!;
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
        )
          .then((lists) => lists.flat())
          .then(async (events) => {
            if (events.length) await rt.record(events);
            // Complaints and reported bounces count in the live state's windows.
            rt.queueState.observe(events);
            log.info(
              { from, rcpts: txn.rcpt_to.length, events: events.map((e) => `${e.type}:${e.emailId}`) },
              events.length ? 'inbound report recorded' : 'inbound mail ignored',
            );
            next(constants.ok, 'thanks');
          })
          .catch((err) => {
            // Not recorded: ask the sender to try again rather than lose the report.
            log.error({ err, from }, 'inbound report failed');
            next(constants.denysoft, '4.3.0 try again later');
          });
      });
    },
  };
}
