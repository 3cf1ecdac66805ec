// The gateway process: `node --import tsx gateway/main.ts`, started by the supervisor
// with control's environment. Writes Haraka's install dir from our config, then runs
// Haraka in this process (as its bin/haraka does); our plugins, loaded by Haraka,
// serve the internal gRPC contract and record delivery events.
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { writeHarakaDir } from './haraka-dir.js';
import { routeConsole, routeHarakaLogs, type HarakaLogger } from './haraka-log.js';
import { gatewayContext } from './runtime.js';

const require = createRequire(import.meta.url);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const { config, paths, log } = gatewayContext();
const harakaDir = writeHarakaDir(config, paths, path.join(repoRoot, 'plugins'));

// Haraka reads its config dir from HARAKA when its modules load, so set it first.
process.env.HARAKA = harakaDir;
routeConsole(log);
routeHarakaLogs(require('Haraka/logger') as HarakaLogger, log, { listenerTls: !!(config.tlsCert && config.tlsKey) });
log.info({ harakaDir, queueDir: paths.queueDir, deliveryPort: config.deliveryPort }, 'starting Haraka');
require('Haraka');

// Haraka shuts down gracefully on SIGINT and handles SIGTERM only as PID 1. A
// process-group SIGTERM from the supervisor reaches us directly: treat it the same.
if (process.listenerCount('SIGTERM') === 0) {
  process.on('SIGTERM', () => process.emit('SIGINT', 'SIGINT'));
}
