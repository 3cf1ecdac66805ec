import fs from 'node:fs';
import net from 'node:net';

/**
 * The kernel's ephemeral range: every outgoing connection takes a local port from it, so a port
 * picked there and bound seconds later (a stack starting) can be taken meanwhile by any
 * connection of any test. Ports are picked below it instead.
 */
function ephemeralLow(): number {
  try {
    return Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}
const LOW = 10_000;
const HIGH = Math.max(LOW + 1000, ephemeralLow());

const listens = (port: number) =>
  new Promise<boolean>((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });

/** A port that was free a moment ago on 127.0.0.1 (never a fixed one: other servers run on this machine). */
export async function freePort(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (await listens(port)) return port;
  }
  throw new Error(`no free port found between ${LOW} and ${HIGH}`);
}
