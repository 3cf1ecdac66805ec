// Haraka plugin: serves the internal gRPC contract from inside Haraka (outbound.send_email
// only works in Haraka's process). Starts at init_master, stops at Haraka's shutdown.
// CommonJS, as Haraka require()s folder plugins; the logic is ES modules (gateway/lifecycle.ts).
import constants = require('haraka-constants');
import type { HarakaOutbound, HarakaPlugin, Next } from '../../gateway/haraka.js';
import type { GatewayServiceHandle, SendEmail } from '../../gateway/lifecycle.js';
import type { HarakaQueueModule } from '../../gateway/state/haraka-queue.js';

let service: GatewayServiceHandle | undefined;

export function register(this: HarakaPlugin): void {
  this.register_hook('init_master', 'start');
}

/** Resolves after Haraka's next init_queue(), which it runs once init_master is answered. */
function whenQueueLoaded(outbound: HarakaOutbound): Promise<void> {
  return new Promise((resolve) => {
    const original = outbound.init_queue;
    outbound.init_queue = async function (this: unknown, ...args: [number?]) {
      try {
        return await original.apply(this, args);
      } finally {
        outbound.init_queue = original;
        resolve();
      }
    };
  });
}

/**
 * outbound.send_email, resolved with Haraka's answer once the queue file is fsynced (its "queued"
 * callback): for what gateway/queue-file.ts does not write itself.
 */
function queueWith(outbound: HarakaOutbound): SendEmail {
  return (msg) =>
    new Promise<string>((resolve, reject) => {
      let raw = Buffer.from(msg.raw).toString('utf8');
      // Haraka drops a last line that has no line ending.
      if (!raw.endsWith('\n')) raw += '\r\n';
      outbound.send_email(
        msg.mailFrom,
        [...msg.rcptTo],
        raw,
        (code, text) => (code === constants.ok ? resolve(text) : reject(new Error(text || `not queued (${code})`))),
        { notes: msg.notes },
      );
    });
}

export function start(this: HarakaPlugin, next: Next): void {
  const outbound = this.haraka_require('outbound') as HarakaOutbound;
  const queueLoaded = whenQueueLoaded(outbound);
  import('../../gateway/lifecycle.js')
    .then((m) =>
      m.startGatewayService({ outbound, sendEmail: queueWith(outbound), queueLoaded, queueModule: this.haraka_require('outbound/queue') as HarakaQueueModule }),
    )
    .then(
      (s) => {
        service = s;
        next();
      },
      (err: unknown) => {
        this.logcrit('postgate_rpc failed to start', err);
        next(constants.deny, String(err));
      },
    );
}

/** Haraka's graceful shutdown (SIGINT, or SIGTERM via gateway/main.ts) calls this. */
export function shutdown(this: HarakaPlugin): void {
  // No new attempts start; queued mail stays on disk for the next start.
  (this.haraka_require('outbound/config') as { cfg: { disabled: boolean } }).cfg.disabled = true;
  const done = service ? service.shutdown() : Promise.resolve();
  done.then(
    () => process.exit(0),
    (err: unknown) => {
      this.logerror('shutdown failed', err);
      process.exit(1);
    },
  );
}
