// Where the gateway keeps its state under the data dir.
import path from 'node:path';
import type { Config } from '../core/config.js';
import { gatewayOutboxFile } from '../core/data-files.js';

export interface GatewayPaths {
  /** Haraka's install dir (process.env.HARAKA): config/ and a plugins link. */
  harakaDir: string;
  /** Haraka's outbound queue: one file per message and destination domain. */
  queueDir: string;
  /** The event outbox and enqueued ids (SQLite). */
  outboxFile: string;
  /** Messages with attachments, built here (not in memory) to be signed and queued, then removed. */
  buildDir: string;
  /** Haraka's spool_dir: the part of a message past spool_after while Haraka writes its queue file. */
  spoolDir: string;
  /** Recipient domains' MTA-STS policies (gateway/tls/sts-policies.ts), kept across restarts. */
  stsFile: string;
}

export function gatewayPaths(config: Config): GatewayPaths {
  const root = path.join(config.dataDir, 'gateway');
  return {
    harakaDir: path.join(root, 'haraka'),
    queueDir: path.join(root, 'queue'),
    outboxFile: gatewayOutboxFile(config.dataDir),
    buildDir: path.join(root, 'build'),
    spoolDir: path.join(root, 'spool'),
    stsFile: path.join(root, 'mta-sts.json'),
  };
}
