// The gateway process: `node --import tsx gateway/main.ts`, started by the supervisor
// with control's environment. Writes Haraka's install dir from our config, then runs
// Haraka in this process (as its bin/haraka does); our plugins, loaded by Haraka,
// serve the internal gRPC contract and record delivery events.
import net from 'node:net';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { writeHarakaDir } from './haraka-dir.js';
import { routeConsole, routeHarakaLogs, type HarakaLogger } from './haraka-log.js';
import { gatewayContext } from './runtime.js';
import { deferModule } from '../core/lazy-module.js';

const require = createRequire(import.meta.url);
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const { config, paths, log } = gatewayContext();

/**
 * The inbound listener's address. Haraka exits when it cannot listen, which would stop
 * outbound delivery too; so a taken port is reported loudly and the gateway keeps
 * sending, with inbound reports unreceived until the port is freed and it restarts.
 */
async function inboundListen(host: string, port: number): Promise<string> {
  const bracket = (h: string) => (net.isIPv6(h) ? `[${h}]` : h);
  if (port === 0) return `${bracket(host)}:0`;
  const free = await new Promise<boolean>((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
  if (free) return `${bracket(host)}:${port}`;
  log.error({ host, port }, 'POSTGATE_INBOUND_PORT is in use: bounces, complaints and unsubscribe mails will not be received');
  return `${bracket(host)}:0`;
}

const harakaDir = writeHarakaDir(config, paths, path.join(repoRoot, 'plugins'), await inboundListen(config.host, config.inboundPort));

// Haraka reads its config dir from HARAKA when its modules load, so set it first.
process.env.HARAKA = harakaDir;
// Loaded by Haraka's modules as they load, used only for what we never give them: a YAML config
// file (its config dir is written as plain files) and mail in Japanese charsets, which the gateway
// never decodes (it relays what control composed). About 2 MB of heap together.
const fromHaraka = createRequire(require.resolve('Haraka/outbound/tls.js'));
deferModule(fromHaraka.resolve('haraka-config/lib/readers/structured.js'), 'yaml');
deferModule(createRequire(fromHaraka.resolve('haraka-email-message')).resolve('libmime'), 'encoding-japanese');
routeConsole(log);
routeHarakaLogs(require('Haraka/logger') as HarakaLogger, log, { listenerTls: !!(config.tlsCert && config.tlsKey) });
log.info({ harakaDir, queueDir: paths.queueDir, deliveryPort: config.deliveryPort }, 'starting Haraka');
// Haraka's outbound TLS module requires its Redis plugin when it loads (a Redis client: about
// 4 MB of heap and 20 MB of resident code) for `disable_for_failed_hosts`, which we never set.
deferModule('Haraka/outbound/tls.js', 'haraka-plugin-redis');
require('Haraka');

// Haraka shuts down gracefully on SIGINT and handles SIGTERM only as PID 1. A
// process-group SIGTERM from the supervisor reaches us directly: treat it the same.
if (process.listenerCount('SIGTERM') === 0) {
  process.on('SIGTERM', () => process.emit('SIGINT', 'SIGINT'));
}
