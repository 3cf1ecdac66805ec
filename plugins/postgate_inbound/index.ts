// Haraka plugin: the inbound side on POSTGATE_INBOUND_PORT. Accepts mail for our
// return-path addresses only and turns DSNs, ARF complaints and List-Unsubscribe mails
// into events (gateway/hooks/inbound.ts). Its reverse-DNS lookups use our resolver, so
// they follow POSTGATE_DNS_SERVERS (loopback in tests) like every other lookup.
// CommonJS, as Haraka require()s folder plugins; the logic is ES modules loaded at init_master.
import constants = require('haraka-constants');
import type { HarakaAddress, HarakaPlugin, Next } from '../../gateway/haraka.js';
import type { InboundConnection, InboundHooks } from '../../gateway/hooks/inbound.js';

let hooks: InboundHooks | undefined;

export function register(this: HarakaPlugin): void {
  this.register_hook('init_master', 'load');
  this.register_hook('lookup_rdns', 'on_lookup_rdns');
  this.register_hook('rcpt', 'on_rcpt');
  this.register_hook('queue', 'on_queue');
}

export function load(this: HarakaPlugin, next: Next): void {
  import('../../gateway/hooks/inbound.js')
    .then((m) => m.inboundHooks())
    .then(
      (h) => {
        hooks = h;
        next();
      },
      (err: unknown) => {
        this.logcrit('postgate_inbound failed to load', err);
        next(constants.deny, String(err));
      },
    );
}

export function on_lookup_rdns(this: HarakaPlugin, next: Next, connection: InboundConnection): void {
  if (!hooks) return next(constants.ok, 'Unknown');
  hooks.lookupRdns(next, connection);
}

export function on_rcpt(this: HarakaPlugin, next: Next, connection: InboundConnection, params: [HarakaAddress]): void {
  if (!hooks) return next(constants.denysoft, 'not ready');
  hooks.rcpt(next, connection, params);
}

export function on_queue(this: HarakaPlugin, next: Next, connection: InboundConnection): void {
  if (!hooks) return next(constants.denysoft, 'not ready');
  hooks.queue(next, connection);
}
