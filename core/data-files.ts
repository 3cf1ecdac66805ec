// The SQLite files under the data dir, named once: the store and the gateway open them, and
// the supervisor checkpoints them (core/sqlite/checkpointer.ts) without loading either.
import path from 'node:path';

/** Control's store (SQLite backend). */
export const controlDbFile = (dataDir: string): string => path.join(dataDir, 'postgate.db');

/** The gateway's event outbox and enqueued ids. */
export const gatewayOutboxFile = (dataDir: string): string => path.join(dataDir, 'gateway', 'outbox.db');
