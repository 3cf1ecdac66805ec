// Several postgate nodes on one PostgreSQL database and one Redis, as an operator runs
// them: each node a supervisor of its own (data dir, ports, gateway queue), every control
// sending through every gateway, all sharing the master secret.
import crypto from 'node:crypto';
import pg from 'pg';
import { Stack, type StackOptions } from './stack.js';
import { freePort } from './ports.js';
import { dropKeys, testRedisUrl } from './redis.js';

/** The PostgreSQL server the tests create databases on (CI sets it; a local default otherwise); never skipped. */
export const testDatabaseUrl = (): string => process.env.POSTGATE_TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A fresh database on the test server, dropped by drop(). */
export async function createTestDatabase(prefix = 'pgcluster'): Promise<TestDatabase> {
  const admin = new URL(testDatabaseUrl());
  const name = `${prefix}_${crypto.randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: 5000 });
  await client.connect().catch((err: Error) => {
    throw new Error(
      `PostgreSQL at ${admin.host} does not answer (${err.message}): set POSTGATE_TEST_DATABASE_URL to a server where tests may create databases`,
    );
  });
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin.toString());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: admin.toString() });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export interface Cluster {
  nodes: Stack[];
  db: TestDatabase;
  redisPrefix: string;
  stop(): Promise<void>;
}

/**
 * Starts `count` nodes (control + gateway each) at once on one fresh database and one Redis
 * key prefix. Every control knows every gateway (POSTGATE_GATEWAYS), so an email goes to the
 * gateway its id hashes to, whichever control accepted it.
 */
export async function startCluster(count: number, opts: StackOptions & { redis?: string | false } = {}): Promise<Cluster> {
  const db = await createTestDatabase();
  const redisPrefix = `pgtest:${crypto.randomBytes(4).toString('hex')}:`;
  const secret = crypto.randomBytes(32).toString('hex');
  const gatewayPorts = await Promise.all(Array.from({ length: count }, () => freePort()));
  const gateways = gatewayPorts.map((p) => `127.0.0.1:${p}`).join(',');
  const redisUrl = opts.redis === false ? undefined : (opts.redis ?? (await testRedisUrl()));
  const redis: Record<string, string> = redisUrl ? { POSTGATE_REDIS_URL: redisUrl, POSTGATE_REDIS_PREFIX: redisPrefix } : {};
  const started = await Promise.allSettled(
    gatewayPorts.map((port) =>
      Stack.start({
        ...opts,
        env: {
          POSTGATE_DATABASE_URL: db.url,
          POSTGATE_SECRET: secret,
          POSTGATE_GATEWAY_PORT: String(port),
          POSTGATE_GATEWAYS: gateways,
          ...redis,
          ...opts.env,
        },
      }),
    ),
  );
  const nodes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    await Promise.all(nodes.map((n) => n.stop()));
    await db.drop();
    throw failed.reason;
  }
  return {
    nodes,
    db,
    redisPrefix,
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
      await db.drop();
      if (redisUrl) await dropKeys(redisUrl, redisPrefix).catch(() => undefined);
    },
  };
}
