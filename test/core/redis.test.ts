// The one Redis client: never fatal, fails fast while Redis is away, reconnects by itself,
// and says so in one line each way.
import { afterAll, describe, expect, it } from 'vitest';
import type { Logger } from '../../core/log.js';
import { connectRedis, redisTarget } from '../../core/redis.js';
import { freePort } from '../helpers/ports.js';
import { dropKeys, randomPrefix, startOwnRedis, until, type OwnRedis } from '../helpers/redis.js';

interface Line {
  level: string;
  msg: string;
  fields: Record<string, unknown>;
}

/** A logger that keeps its lines. */
function recorder(): { log: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const at =
    (level: string) =>
    (a: unknown, b?: unknown): void => {
      if (typeof a === 'string') lines.push({ level, msg: a, fields: {} });
      else lines.push({ level, msg: String(b ?? ''), fields: (a ?? {}) as Record<string, unknown> });
    };
  const log = { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') } as unknown as Logger;
  return { log, lines };
}

const servers: OwnRedis[] = [];
afterAll(async () => {
  for (const s of servers) await s.kill();
});

describe('core/redis.ts', () => {
  it('an unreachable server at start is one warning, not an error, and commands fail at once', async () => {
    const port = await freePort();
    const { log, lines } = recorder();
    const link = connectRedis({ redisUrl: `redis://127.0.0.1:${port}`, redisPrefix: randomPrefix() }, log);
    try {
      await until(() => lines.length > 0, 3000, 'the start-up warning');
      expect(link.up).toBe(false);
      const t0 = Date.now();
      await expect(link.client.incr(link.key('x'))).rejects.toThrow();
      expect(Date.now() - t0).toBeLessThan(100);
      // Several reconnection attempts later, still the one line.
      await new Promise((r) => setTimeout(r, 700));
      expect(lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
        'warn redis unreachable at start: running on per-node limit shares and short-lived caches until it answers',
      ]);
      expect(String(lines[0]!.fields.reason)).toMatch(/ECONNREFUSED/);
    } finally {
      await link.close();
    }
  });

  it('a wrong password is the same single warning, naming the reason; the password is never logged', async () => {
    const own = await startOwnRedis(['--requirepass', 'right-one']);
    servers.push(own);
    const { log, lines } = recorder();
    const url = `redis://:wrong-one@127.0.0.1:${own.port}`;
    const link = connectRedis({ redisUrl: url, redisPrefix: randomPrefix() }, log);
    try {
      await until(() => lines.length > 0, 3000, 'the start-up warning');
      await new Promise((r) => setTimeout(r, 500));
      expect(lines).toHaveLength(1);
      expect(String(lines[0]!.fields.reason)).toMatch(/WRONGPASS|NOAUTH|invalid/i);
      expect(JSON.stringify(lines)).not.toContain('wrong-one');
      expect(redisTarget(url)).toBe(`redis://127.0.0.1:${own.port}`);
      await expect(link.client.get(link.key('x'))).rejects.toThrow();
    } finally {
      await link.close();
    }
  });

  it('a server that dies and comes back: one line each way, and commands work again', async () => {
    const own = await startOwnRedis();
    servers.push(own);
    const { log, lines } = recorder();
    const prefix = randomPrefix();
    const link = connectRedis({ redisUrl: own.url, redisPrefix: prefix }, log);
    const changes: boolean[] = [];
    link.onChange((up) => changes.push(up));
    try {
      await until(() => link.up, 3000, 'connected');
      expect(await link.client.incr(link.key('n'))).toBe(1);
      await own.kill();
      await until(() => !link.up, 2000, 'noticed the loss');
      const t0 = Date.now();
      await expect(link.client.incr(link.key('n'))).rejects.toThrow();
      expect(Date.now() - t0).toBeLessThan(100);
      await new Promise((r) => setTimeout(r, 800));
      await own.start();
      await until(() => link.up, 5000, 'reconnected');
      expect(await link.client.incr(link.key('n'))).toBe(1);
      expect(changes).toEqual([true, false, true]);
      expect(lines.map((l) => `${l.level} ${l.msg}`)).toEqual([
        'info redis connected',
        'warn redis went away: running on per-node limit shares and short-lived caches until it is back',
        'info redis is back: shared counters and invalidations resume',
      ]);
    } finally {
      await link.close();
      await dropKeys(own.url, prefix);
    }
  });
});
