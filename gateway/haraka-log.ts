// Haraka prints its own log lines; this routes them through our pino logger so the
// gateway's stdout is one JSON format. Haraka calls logger.log_respond() to print
// each line that no 'log' hook claimed, so replacing that one method is enough.
import { format } from 'node:util';
import type { Logger } from '../core/log.js';

interface HarakaLogItem {
  level: string;
  data: string;
}

export interface HarakaLogger {
  log_respond(retval: number, msg: unknown, item: HarakaLogItem): boolean;
}

type PinoLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal';

const levels: Record<string, PinoLevel> = {
  DATA: 'trace',
  PROTOCOL: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  NOTICE: 'info',
  WARN: 'warn',
  ERROR: 'error',
  CRIT: 'fatal',
  ALERT: 'fatal',
  EMERG: 'fatal',
};

/**
 * Haraka's inbound listener looks for tls_key.pem/tls_cert.pem at every start; the
 * gateway only sends (and uses STARTTLS as a client), so their absence is no error.
 */
const MISSING_LISTENER_TLS = /^tls (key|cert) .* could not be loaded/;

export function routeHarakaLogs(harakaLogger: HarakaLogger, log: Logger, opts: { listenerTls: boolean }): void {
  const haraka = log.child({ component: 'haraka' });
  harakaLogger.log_respond = (_retval, _msg, item) => {
    let level = levels[item.level] ?? 'info';
    let fields: Record<string, unknown>;
    try {
      // log.ini has format=json; a few early lines are plain text.
      fields = JSON.parse(item.data) as Record<string, unknown>;
    } catch {
      fields = { message: item.data };
    }
    const { message, level: _level, ...rest } = fields;
    const text = typeof message === 'string' ? message : String(message ?? '');
    if (!opts.listenerTls && MISSING_LISTENER_TLS.test(text)) level = 'debug';
    haraka[level](rest, text);
    return true;
  };
}

/** Haraka's dependencies print a few lines with console.*: keep stdout JSON. */
export function routeConsole(log: Logger): void {
  const out = log.child({ component: 'console' });
  console.log = console.info = (...args: unknown[]) => out.info(format(...args));
  console.warn = (...args: unknown[]) => out.warn(format(...args));
  console.error = (...args: unknown[]) => out.error(format(...args));
}
