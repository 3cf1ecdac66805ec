// The receiving MX of the benchmarks, in a process of its own so that it takes no CPU from
// the benchmark's bookkeeping and none is charged to a contender: Postfix's smtp-sink when
// installed (it accepts and discards; `-c` prints running counters), else a small Node sink
// (bench/lib/sink-process.ts) that prints the same counter. Either way the benchmark reads
// "mesg=<n>" from its output: messages received so far.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root } from './prepare.js';
import { freePort } from '../../test/helpers/ports.js';

export const SMTP_SINK = '/usr/sbin/smtp-sink';

export interface Receiver {
  kind: 'smtp-sink' | 'node sink' | 'node sink with STARTTLS';
  port: number;
  pid: number;
  /** Messages received so far. */
  count(): number;
  /** Resolves once count() reaches n, or rejects after timeoutMs; resolves to performance.now() at that moment. */
  waitFor(n: number, timeoutMs: number): Promise<number>;
  close(): Promise<void>;
}

/** Connections the receiver serves at once: above every contender's pool (postgate's gateway 500, Haraka's 1000). */
const MAX_CONNECTIONS = 2048;

/** `starttls`: the receiver offers STARTTLS, as real MXs do (smtp-sink cannot: the Node sink then). */
export async function startReceiver(prefer: 'smtp-sink' | 'node' = 'smtp-sink', opts: { starttls?: boolean } = {}): Promise<Receiver> {
  const port = await freePort();
  const useSink = prefer === 'smtp-sink' && !opts.starttls && fs.existsSync(SMTP_SINK);
  let proc: ChildProcess;
  if (useSink) {
    // As root it must drop privileges (-u) once the socket is open.
    const user = process.getuid?.() === 0 ? ['-u', 'nobody'] : [];
    proc = spawn(SMTP_SINK, ['-c', ...user, '-m', String(MAX_CONNECTIONS), `127.0.0.1:${port}`, String(MAX_CONNECTIONS)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } else {
    const args = [path.join(root, 'bench/lib/sink-process.ts'), String(port), ...(opts.starttls ? ['--starttls'] : [])];
    proc = spawn(process.execPath, ['--import', 'tsx', ...args], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }
  let received = 0;
  let tail = '';
  let err = '';
  const waiters: Array<{ n: number; resolve: (t: number) => void }> = [];
  proc.stdout!.setEncoding('latin1');
  proc.stdout!.on('data', (chunk: string) => {
    const text = tail + chunk;
    const cut = Math.max(text.lastIndexOf('\r'), text.lastIndexOf('\n'));
    tail = text.slice(cut + 1);
    const all = [...text.slice(0, cut + 1).matchAll(/mesg=(\d+)/g)];
    if (all.length) received = Number(all[all.length - 1]![1]);
    for (let i = waiters.length - 1; i >= 0; i--) {
      if (received >= waiters[i]!.n) waiters.splice(i, 1)[0]!.resolve(performance.now());
    }
  });
  proc.stderr!.setEncoding('utf8');
  proc.stderr!.on('data', (c: string) => (err = (err + c).slice(-2000)));
  // Listening once a connection is answered.
  const until = Date.now() + 15_000;
  const net = await import('node:net');
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`receiver exited (${proc.exitCode}): ${err}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('data', () => {
        s.end('QUIT\r\n');
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) break;
    if (Date.now() > until) throw new Error(`receiver did not listen: ${err}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    kind: useSink ? 'smtp-sink' : opts.starttls ? 'node sink with STARTTLS' : 'node sink',
    port,
    pid: proc.pid!,
    count: () => received,
    waitFor(n, timeoutMs) {
      if (received >= n) return Promise.resolve(performance.now());
      return new Promise((resolve, reject) => {
        const w = {
          n,
          resolve: (t: number) => {
            clearTimeout(timer);
            resolve(t);
          },
        };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`only ${received} of ${n} received in ${timeoutMs / 1000} s`));
        }, timeoutMs);
        waiters.push(w);
      });
    },
    async close() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      await exited;
    },
  };
}
