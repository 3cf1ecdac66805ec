// Haraka plugin: routes each recipient domain through our MX lookup (gateway/hooks/mx.ts).
// CommonJS, as Haraka require()s folder plugins; the logic is ES modules loaded at init_master.
import constants = require('haraka-constants');
import type { HarakaPlugin, HMailItem, Next } from '../../gateway/haraka.js';
import type { MxHook } from '../../gateway/hooks/mx.js';
import type { OutboundTls, TlsProto } from '../../gateway/tls/enforce.js';

let hook: MxHook | undefined;

export function register(this: HarakaPlugin): void {
  this.register_hook('init_master', 'load');
  this.register_hook('get_mx', 'get_mx');
}

export function load(this: HarakaPlugin, next: Next): void {
  // Enforced TLS wraps Haraka's outbound (gateway/tls/enforce.ts) before the first delivery.
  const hmail = this.haraka_require('outbound/hmail') as { prototype: TlsProto };
  const obtls = this.haraka_require('outbound/tls') as OutboundTls;
  Promise.all([import('../../gateway/hooks/mx.js'), import('../../gateway/tls/routing.js')]).then(
    ([m, t]) => {
      t.installTls(hmail.prototype, obtls);
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
