// `node --import tsx bench/fs-requests.ts`: what a small file's life costs (create, write, close,
// read back, unlink: a queue file's, about 1.5 kB) through fs's callbacks, each call a request to
// libuv's thread pool, against the same calls made synchronously on the event loop. One file at a
// time and 20 at once, alternating. The difference is the pool's hand-off and wake-ups, which on a
// small virtual machine can cost more CPU than the file system work itself; it is why the gateway
// does not read back the queue files it has just written (gateway/queue-memory.ts). Figures only.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { writeResult } from './lib/results.js';

const FILES = Number(process.env.BENCH_FILES || 5000);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postgate-fsreq-'));
const buf = Buffer.alloc(1500, 0x61);
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const call = <T>(f: (cb: (err: Error | null, v: T) => void) => void) => new Promise<T>((resolve, reject) => f((err, v) => (err ? reject(err) : resolve(v))));
const turn = () => new Promise((r) => setImmediate(r));

async function pooled(file: string) {
  const fd = await call<number>((cb) => fs.open(file, 'w', cb));
  await call<number>((cb) => fs.write(fd, buf, cb));
  await call<void>((cb) => fs.close(fd, (err) => cb(err, undefined)));
  await call<Buffer>((cb) => fs.readFile(file, cb));
  await call<void>((cb) => fs.unlink(file, (err) => cb(err, undefined)));
}

async function direct(file: string) {
  const fd = fs.openSync(file, 'w');
  fs.writeSync(fd, buf);
  fs.closeSync(fd);
  await turn();
  fs.readFileSync(file);
  await turn();
  fs.unlinkSync(file);
}

async function measure(name: string, one: (file: string) => Promise<void>, parallel: number) {
  let next = 0;
  const c0 = cpuMs();
  const t0 = performance.now();
  const loop0 = performance.eventLoopUtilization();
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < FILES) await one(path.join(dir, `${name}-${next++}`));
    }),
  );
  const loop = performance.eventLoopUtilization(loop0);
  return {
    cpuUs: ((cpuMs() - c0) * 1000) / FILES,
    wallUs: ((performance.now() - t0) * 1000) / FILES,
    loopUs: (loop.active * 1000) / FILES,
  };
}

const rows: Array<{ way: string; parallel: number; cpuUs: number; wallUs: number; loopUs: number }> = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    for (const parallel of [1, 20]) {
      for (const [way, fn] of [
        ['thread pool (fs callbacks)', pooled],
        ['synchronous', direct],
      ] as const) {
        rows.push({ way, parallel, ...(await measure(`${round}-${parallel}-${way.length}`, fn, parallel)) });
      }
    }
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}

const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;
console.log(`\nA 1.5 kB file's life (open, write, close, readFile, unlink), ${FILES} files per measurement, ${ROUNDS} alternating rounds (median)\n`);
console.log('| way | files at once | CPU µs per file | event loop busy µs per file | wall µs per file |');
console.log('|---|---|---|---|---|');
const summary: Record<string, unknown>[] = [];
for (const parallel of [1, 20]) {
  for (const way of ['thread pool (fs callbacks)', 'synchronous']) {
    const mine = rows.filter((r) => r.way === way && r.parallel === parallel);
    const s = { way, parallel, cpuUs: median(mine.map((r) => r.cpuUs)), loopUs: median(mine.map((r) => r.loopUs)), wallUs: median(mine.map((r) => r.wallUs)) };
    summary.push(s);
    console.log(`| ${way} | ${parallel} | ${s.cpuUs.toFixed(1)} | ${s.loopUs.toFixed(1)} | ${s.wallUs.toFixed(1)} |`);
  }
}
console.log(`\nfigures written to ${writeResult('fs-requests', { files: FILES, rounds: ROUNDS, rows: summary })}`);
