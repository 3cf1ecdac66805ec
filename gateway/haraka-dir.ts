// Writes Haraka's install dir from our config at every start, so POSTGATE_* settings
// are the only thing an operator edits. Haraka reads <dir>/config and finds our
// folder plugins through <dir>/plugins, a link to the repo's plugins/.
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../core/config.js';
import type { GatewayPaths } from './paths.js';

/**
 * Our plugins, in hook order: postgate_rpc first, so the store is open before events flow;
 * postgate_pacing before postgate_events, so held mail gets no `sending` event.
 */
export const PLUGINS = ['postgate_rpc', 'postgate_pacing', 'postgate_mx', 'postgate_events', 'postgate_inbound'];

/** Haraka's log levels for pino's; Haraka's INFO is per-message chatter, so pino info maps to NOTICE. */
const harakaLevel: Record<string, string> = {
  trace: 'protocol',
  debug: 'debug',
  info: 'notice',
  warn: 'warn',
  error: 'error',
  fatal: 'crit',
  silent: 'emerg',
};

/**
 * Haraka's retry schedule. Its length decides when a message is given up (the
 * maxTempFailures-th temporary failure bounces), so it mirrors our settings; the
 * delays themselves come from postgate_events (Haraka refuses entries under 5 s).
 */
export function tempFailIntervals(retryDelays: number[], maxTempFailures: number): string {
  const n = maxTempFailures - 1;
  if (n < 1) return 'none';
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const d = retryDelays[Math.min(i, retryDelays.length - 1)] ?? 60;
    out.push(`${Math.max(5, Math.ceil(d))}s`);
  }
  return out.join(',');
}

function write(file: string, lines: string[]): void {
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
}

/** `listen` is the inbound listener (host:port) for bounces, complaints and unsubscribe mails. */
export function writeHarakaDir(config: Config, paths: GatewayPaths, pluginsDir: string, listen: string): string {
  const dir = paths.harakaDir;
  const cfg = path.join(dir, 'config');
  fs.mkdirSync(cfg, { recursive: true });
  fs.mkdirSync(paths.queueDir, { recursive: true });
  fs.mkdirSync(paths.spoolDir, { recursive: true });
  const header = '; written by gateway/main.ts at each start from POSTGATE_* settings; edits are lost';

  write(path.join(cfg, 'smtp.ini'), [
    header,
    // The inbound side (postgate_inbound): DSNs, complaints and unsubscribe mails for our return paths.
    `listen=${listen}`,
    // One process: outbound.send_email and our gRPC server must share it (no cluster workers).
    'nodes=0',
    // On SIGINT, Haraka calls our plugins' shutdown() so deliveries can drain.
    'graceful_shutdown=true',
    'force_shutdown_timeout=30',
    // A message past 1 MB goes to a file while Haraka writes its queue file, not all into memory
    // (attachments make messages of 50 MB); in our data dir, not /tmp (the enqueuer removes each file).
    `spool_dir=${paths.spoolDir}`,
    'spool_after=1048576',
  ]);
  write(path.join(cfg, 'plugins'), PLUGINS);
  write(path.join(cfg, 'outbound.ini'), [
    header,
    // Opportunistic STARTTLS when the remote offers it; plain SMTP otherwise.
    'enable_tls=true',
    `concurrency_max=${config.delivery.concurrency}`,
    `connect_timeout=${config.delivery.connectTimeout}`,
    `temp_fail_intervals=${tempFailIntervals(config.delivery.retryDelays, config.delivery.maxTempFailures)}`,
    // postgate_mx resolves MX hosts itself and refuses local addresses on port 25; this
    // setting only stops Haraka from repeating that check with a STUN lookup per message.
    'local_mx_ok=true',
    'received_header=postgate',
  ]);
  write(path.join(cfg, 'me'), [config.mxHost]);
  // The inbound listener's settings. Haraka reads this file instead of its own default
  // (no merge), so every section it uses is written.
  write(path.join(cfg, 'connection.ini'), [
    header,
    '[main]',
    'smtputf8=true',
    '[haproxy]',
    'hosts[] =',
    '[headers]',
    'add_received=true',
    'show_version=false',
    'clean_auth_results=true',
    'max_lines=1000',
    'max_received=100',
    // Reports carry at most the original message (10 MiB is plenty); received mail has its own
    // limit (inbound.maxMessageBytes), judged again per message by gateway/inbound/receive.ts.
    '[max]',
    `bytes=${Math.max(10485760, config.inbound.maxMessageBytes)}`,
    'mime_parts=1000',
    'line_length=512',
    'data_line_length=992',
    '[message]',
    'helo=postgate inbound',
    'close=closing connection',
    '[uuid]',
    'banner_chars=6',
    'deny_chars=0',
  ]);
  write(path.join(cfg, 'queue_dir'), [paths.queueDir]);
  write(path.join(cfg, 'log.ini'), [
    '[main]',
    `level=${harakaLevel[config.logLevel] ?? 'notice'}`,
    // JSON so gateway/haraka-log.ts can lift Haraka's fields into our pino lines.
    'format=json',
    'timestamps=false',
  ]);

  // Haraka's listener (inbound, later) serves STARTTLS with these when configured.
  if (config.tlsCert && config.tlsKey) {
    relink(path.resolve(config.tlsCert), path.join(cfg, 'tls_cert.pem'));
    relink(path.resolve(config.tlsKey), path.join(cfg, 'tls_key.pem'));
  }
  relink(pluginsDir, path.join(dir, 'plugins'));
  return dir;
}

/** Points link at target, replacing it atomically (a moved checkout is picked up at the next start). */
function relink(target: string, link: string): void {
  const tmp = `${link}.${process.pid}.tmp`;
  fs.rmSync(tmp, { force: true });
  fs.symlinkSync(target, tmp);
  fs.renameSync(tmp, link);
}
