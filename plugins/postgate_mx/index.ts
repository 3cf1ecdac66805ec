// Haraka plugin: routes each recipient domain through our MX lookup (gateway/hooks/mx.ts).
// CommonJS, as Haraka require()s folder plugins; the logic is ES modules loaded at init_master.
import constants = require('haraka-constants');
import type { HarakaPlugin, HMailItem, Next } from '../../gateway/haraka.js';
import type { MxHook } from '../../gateway/hooks/mx.js';

let hook: MxHook | undefined;

export function register(this: HarakaPlugin): void {
  this.register_hook('init_master', 'load');
  this.register_hook('get_mx', 'get_mx');
}

export function load(this: HarakaPlugin, next: Next): void {
  import('../../gateway/hooks/mx.js').then(
    (m) => {
      hook = m.mxHook();
      next();
    },
    (err: unknown) => {
      this.logcrit('postgate_mx failed to load', err);
      next(constants.deny, String(err));
    },
  );
}

export function get_mx(this: HarakaPlugin, next: Next, hmail: HMailItem, domain: string): void {
  // Without our routes Haraka would use the system resolver and port 25: defer instead.
  if (!hook) return next(constants.denysoft, 'postgate_mx not loaded');
  hook(next, hmail, domain);
}
