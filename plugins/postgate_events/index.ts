// Haraka plugin: records delivery events (sending, sent, deferred, bounced, rejected)
// in the outbox, sets our retry schedule and requeues rejected mail for its automatic
// retries (gateway/hooks/events.ts, gateway/retry.ts).
// CommonJS, as Haraka require()s folder plugins; the logic is ES modules loaded at init_master.
import constants = require('haraka-constants');
import type { BounceError, DeferredParams, DeliveredParams, HarakaOutbound, HarakaPlugin, HMailItem, Next } from '../../gateway/haraka.js';
import type { EventHooks } from '../../gateway/hooks/events.js';

let hooks: EventHooks | undefined;

export function register(this: HarakaPlugin): void {
  this.register_hook('init_master', 'load');
  this.register_hook('send_email', 'on_send_email');
  // First of every plugin's delivered hook (the lowest priority runs first): the remote 250 is recorded before any other work.
  this.register_hook('delivered', 'on_delivered', -100);
  this.register_hook('deferred', 'on_deferred');
  this.register_hook('bounce', 'on_bounce');
}

export function load(this: HarakaPlugin, next: Next): void {
  const outbound = this.haraka_require('outbound') as HarakaOutbound;
  import('../../gateway/hooks/events.js')
    .then((m) => m.eventHooks(outbound))
    .then(
      (h) => {
        hooks = h;
        next();
      },
      (err: unknown) => {
        this.logcrit('postgate_events failed to load', err);
        next(constants.deny, String(err));
      },
    );
}

// init_master completes before Haraka loads its queue, so hooks is set by the time these run.
export function on_send_email(this: HarakaPlugin, next: Next, hmail: HMailItem): void {
  if (!hooks) return next(constants.delay, 5);
  hooks.sending(next, hmail);
}

export function on_delivered(this: HarakaPlugin, next: Next, hmail: HMailItem, params: DeliveredParams): void {
  if (!hooks) return next();
  hooks.delivered(next, hmail, params);
}

export function on_deferred(this: HarakaPlugin, next: Next, hmail: HMailItem, params: DeferredParams): void {
  if (!hooks) return next();
  hooks.deferred(next, hmail, params);
}

export function on_bounce(this: HarakaPlugin, next: Next, hmail: HMailItem, err: BounceError): void {
  if (!hooks) return next(constants.ok);
  hooks.bounce(next, hmail, err);
}
