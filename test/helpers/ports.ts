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
const FIRST = 10_000;
const END = Math.max(FIRST + 2000, ephemeralLow());
/**
 * Test files run in two workers at once (vitest.config.ts), each starting stacks whose six
 * ports are picked and bound moments apart: each worker picks from a half of its own
 * (VITEST_POOL_ID 1 or 2), so two files never pick the same port, and a process never hands
 * out the same port twice (a stack's ports are picked together). Seen once in CI: two picks of
 * one port, control exiting on EADDRINUSE while a test was already calling it. Benchmarks and
 * other processes outside vitest pick from the whole range.
 */
const POOL = Number(process.env.VITEST_POOL_ID);
const HALF = Math.floor((END - FIRST) / 2);
const [LOW, HIGH] = POOL === 1 ? [FIRST, FIRST + HALF] : POOL === 2 ? [FIRST + HALF, END] : [FIRST, END];
const handedOut = new Set<number>();

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
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    if (await listens(port)) return port;
  }
  throw new Error(`no free port found between ${LOW} and ${HIGH}`);
}
