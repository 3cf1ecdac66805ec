// Redis for tests. The shared server is POSTGATE_TEST_REDIS_URL (CI sets it); without it a
// test file starts its own redis-server on a free port. Tests that stop Redis always start
// their own. Every test uses a random key prefix and deletes its keys at the end.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { createLogger } from '../../core/log.js';
import { freePort } from './ports.js';

export const quietLog = createLogger('test', 'silent');

/** A prefix no other run or stack uses. */
export const randomPrefix = (): string => `pgtest:${crypto.randomBytes(6).toString('hex')}:`;

export interface OwnRedis {
  url: string;
  port: number;
  /** Kills the server (SIGKILL: like a crash); its data is gone (no persistence). */
  kill(): Promise<void>;
  /** Starts it again on the same port. */
  start(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of running) p.kill('SIGKILL');
});

async function waitForPing(url: string, up: boolean): Promise<void> {
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    const c = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 500 });
    c.on('error', () => {});
    const ok = await c
      .connect()
      .then(() => c.ping())
      .then(
        () => true,
        () => false,
      );
    c.disconnect();
    if (ok === up) return;
    await sleep(50);
  }
  throw new Error(`redis at ${url} did not ${up ? 'start' : 'stop'} within 10 s`);
}

/** Until something accepts connections on the port (a PING may need a password). */
async function waitForPort(port: number): Promise<void> {
  const until = Date.now() + 10_000;
  while (Date.now() < until) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(25);
  }
  throw new Error(`redis-server on port ${port} did not start within 10 s`);
}

/** A redis-server of this test's own (no persistence), on a free port; `args` are more redis-server options. */
export async function startOwnRedis(args: string[] = []): Promise<OwnRedis> {
  if (spawnSync('redis-server', ['--version']).status !== 0) {
    throw new Error('redis-server is not on PATH: install Redis 7 (apt-get install redis-server) or set POSTGATE_TEST_REDIS_URL');
  }
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  let proc: ChildProcess | undefined;
  const own: OwnRedis = {
    url,
    port,
    async start() {
      proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...args], { stdio: 'ignore' });
      running.add(proc);
      await waitForPort(port);
    },
    async kill() {
      if (!proc) return;
      const p = proc;
      proc = undefined;
      const exited = new Promise((resolve) => p.once('exit', resolve));
      p.kill('SIGKILL');
      await exited;
      running.delete(p);
    },
  };
  await own.start();
  return own;
}

let ownShared: Promise<OwnRedis> | undefined;

/** The Redis tests share: POSTGATE_TEST_REDIS_URL, else one server of this test file's own. */
export async function testRedisUrl(): Promise<string> {
  const url = process.env.POSTGATE_TEST_REDIS_URL;
  if (url) {
    await waitForPing(url, true).catch(() => {
      throw new Error(`POSTGATE_TEST_REDIS_URL=${url} does not answer PING`);
    });
    return url;
  }
  ownShared ??= startOwnRedis();
  return (await ownShared).url;
}

/** Stops the server testRedisUrl() started, if it did. */
export async function stopTestRedis(): Promise<void> {
  if (ownShared) await (await ownShared).kill();
  ownShared = undefined;
}

/** Deletes every key under `prefix`; answers how many there were. */
export async function dropKeys(url: string, prefix: string): Promise<number> {
  const c = new Redis(url, { maxRetriesPerRequest: 0 });
  try {
    let n = 0;
    let cursor = '0';
    do {
      const [next, keys] = await c.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) n += await c.del(...keys);
    } while (cursor !== '0');
    return n;
  } finally {
    c.disconnect();
  }
}

export { until } from './until.js';

/** For one describe block: the shared test Redis, a key prefix of its own, and its keys dropped at the end. */
export function sharedRedis(): { readonly url: string; readonly prefix: string } {
  const ctx = { url: '', prefix: randomPrefix() };
  beforeAll(async () => {
    ctx.url = await testRedisUrl();
  });
  afterAll(async () => {
    await dropKeys(ctx.url, ctx.prefix);
    await stopTestRedis();
  });
  return ctx;
}
