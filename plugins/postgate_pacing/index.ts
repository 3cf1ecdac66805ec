// Haraka plugin: warm-up, rate and connection limits before each attempt (gateway/hooks/pacing.ts).
// Listed before postgate_events, so mail it holds gets no `sending` event for an attempt that did not happen.
// CommonJS, as Haraka require()s folder plugins; the logic is ES modules loaded at init_master.
import constants = require('haraka-constants');
import type { HarakaOutbound, HarakaPlugin, HMailItem, Next } from '../../gateway/haraka.js';
import type { PacingHooks } from '../../gateway/hooks/pacing.js';
import type { ClientPool, HMailProto } from '../../gateway/hooks/connection-reuse.js';

let hooks: PacingHooks | undefined;

export function register(this: HarakaPlugin): void {
  this.register_hook('init_master', 'load');
  this.register_hook('send_email', 'on_send_email');
  this.register_hook('delivered', 'on_delivered');
  this.register_hook('deferred', 'on_deferred');
  this.register_hook('bounce', 'on_bounce');
}

export function load(this: HarakaPlugin, next: Next): void {
  const outbound = this.haraka_require('outbound') as HarakaOutbound;
  const reuse = {
    clientPool: this.haraka_require('outbound/client_pool') as ClientPool,
    HMailItem: this.haraka_require('outbound/hmail') as { prototype: HMailProto },
  };
  import('../../gateway/hooks/pacing.js')
    .then((m) => m.pacingHooks(outbound, reuse))
    .then(
      (h) => {
        hooks = h;
        next();
      },
      (err: unknown) => {
        this.logcrit('postgate_pacing failed to load', err);
        next(constants.deny, String(err));
      },
    );
}

export function on_send_email(this: HarakaPlugin, next: Next, hmail: HMailItem): void {
  if (!hooks) return next(constants.delay, 5);
  hooks.sendEmail(next, hmail);
}

// The other plugins still see these outcomes: answer CONT.
export function on_delivered(this: HarakaPlugin, next: Next, hmail: HMailItem): void {
  hooks?.attemptEnded(hmail, true);
  next();
}

export function on_deferred(this: HarakaPlugin, next: Next, hmail: HMailItem): void {
  hooks?.attemptEnded(hmail, false);
  next();
}

export function on_bounce(this: HarakaPlugin, next: Next, hmail: HMailItem): void {
  hooks?.attemptEnded(hmail, true);
  next();
}
