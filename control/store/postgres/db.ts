// The PostgreSQL connection layer of the store: one pool, short transactions, and the
// one place that tells a lost database (answered 503, retried by clients) from a bug.
// Every statement is prepared once per connection (named by its text), so the hot
// paths pay no parse or plan per call.
import pg from 'pg';
import { StoreUnavailableError, UnstorableTextError } from '../../../core/errors.js';

export interface Rows<R> {
  rows: R[];
  rowCount: number;
}

/** What an intent runs its statements on: a pooled connection, or the one of its transaction. */
export interface Queryable {
  query<R = any>(sql: string, params?: unknown[]): Promise<Rows<R>>;
}

export interface Tx extends Queryable {
  /** Runs statements as they are, unprepared and without the statement timeout (schema steps: several statements, maybe long). */
  exec(sql: string): Promise<void>;
  /** Runs once the transaction has committed (cache invalidations: no node may reload the old rows after it). */
  afterCommit(fn: () => void): void;
}

// BIGINT (epoch ms, counters) and NUMERIC (sums) come back as numbers: every value the
// store keeps in them is far below 2^53.
const types = new pg.TypeOverrides();
types.setTypeParser(pg.types.builtins.INT8, Number);
types.setTypeParser(pg.types.builtins.NUMERIC, Number);

const names = new Map<string, string>();
const named = (text: string, values: unknown[] | undefined) => {
  let name = names.get(text);
  if (!name) names.set(text, (name = `pg${names.size}`));
  return { name, text, values };
};

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNABORTED',
]);
const UNAVAILABLE_TEXT = /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection error|not queryable|Client was closed/i;

/** The server cannot be reached or is going away: the caller should try again later. */
export function isUnavailable(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  if (!e || typeof e !== 'object') return false;
  if (e.code && UNAVAILABLE_CODES.has(e.code)) return true;
  // Class 08: connection exception; 57P01-03: shutting down or starting; class 53: out of connections, memory or disk.
  if (e.code && (/^08/.test(e.code) || /^57P0[123]$/.test(e.code) || /^53/.test(e.code))) return true;
  return typeof e.message === 'string' && UNAVAILABLE_TEXT.test(e.message);
}

/**
 * A statement this connection prepared before another node's migration changed its table's columns:
 * the connection (with its prepared statements) is dropped and the work runs again on a fresh one.
 */
const isStalePlan = (err: unknown) =>
  (err as { code?: string })?.code === '0A000' && /cached plan must not change result type/.test(String((err as Error).message));

/** Deadlock, serialization failure or a stale prepared statement: the whole transaction may simply run again. */
const isRetryable = (err: unknown) => ['40P01', '40001'].includes((err as { code?: string })?.code ?? '') || isStalePlan(err);

/** A NUL in a text value (22021, "invalid byte sequence for encoding") or a \u0000 in jsonb (22P05): UnstorableTextError. */
const isUnstorableText = (err: unknown) => ['22021', '22P05'].includes((err as { code?: string })?.code ?? '');

const wrap = (err: unknown): unknown => {
  if (isUnstorableText(err)) return new UnstorableTextError(err);
  return isUnavailable(err) && !(err instanceof StoreUnavailableError) ? new StoreUnavailableError(err) : err;
};

/** The URL as logs may show it: without its password. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'the configured URL';
  }
}

const POOL_SIZE = 10;

export class PgDb implements Queryable {
  readonly pool: pg.Pool;
  commits = 0;
  writes = 0;
  private closed = false;

  constructor(url: string) {
    this.pool = new pg.Pool({
      connectionString: url,
      types,
      max: POOL_SIZE,
      // A request waits at most this for a connection before it is answered 503.
      connectionTimeoutMillis: 5000,
      // A statement stuck on a dead connection fails instead of holding its request forever.
      query_timeout: 10_000,
      keepAlive: true,
      idleTimeoutMillis: 30_000,
      application_name: 'postgate',
    });
    // A pooled idle connection that breaks (server restart, network cut) is dropped by the pool;
    // without a listener its error would end the process.
    this.pool.on('error', () => {});
  }

  /** One statement on a pooled connection (its own transaction). */
  async query<R = any>(sql: string, params?: unknown[]): Promise<Rows<R>> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.connect();
      try {
        const r = await client.query(named(sql, params));
        client.release();
        return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
      } catch (err) {
        // Only a broken (or stale) connection is dropped; one that answered with an error (a constraint) is reused.
        client.release(isUnavailable(err) || isStalePlan(err) ? (err as Error) : undefined);
        // Every pooled connection may hold the stale statement: at most one try each.
        if (isStalePlan(err) && attempt <= POOL_SIZE) continue;
        throw wrap(err);
      }
    }
  }

  private async connect(): Promise<pg.PoolClient> {
    try {
      const client = await this.pool.connect();
      // An error on a checked-out connection between two statements would otherwise end the process.
      if (!client.listenerCount('error')) client.on('error', () => {});
      return client;
    } catch (err) {
      throw wrap(err);
    }
  }

  /**
   * Runs `fn` in one READ COMMITTED transaction and commits. A deadlock or serialization
   * failure runs it again from the start (fn must only write through the transaction);
   * a lost server is a StoreUnavailableError.
   */
  async tx<T>(fn: (tx: Tx) => Promise<T>, writes = 1): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const after: Array<() => void> = [];
      const client = await this.connect();
      const t: Tx = {
        query: async <R>(sql: string, params?: unknown[]) => {
          const r = await client.query(named(sql, params));
          return { rows: r.rows as R[], rowCount: r.rowCount ?? 0 };
        },
        exec: async (sql) => void (await client.query({ text: sql, query_timeout: 24 * 3_600_000 } as pg.QueryConfig)),
        afterCommit: (f) => void after.push(f),
      };
      let broken: unknown;
      try {
        await client.query('BEGIN');
        const value = await fn(t);
        await client.query('COMMIT');
        this.commits++;
        this.writes += writes;
        client.release();
        for (const f of after) f();
        return value;
      } catch (err) {
        if (isUnavailable(err) || isStalePlan(err)) broken = err;
        else await client.query('ROLLBACK').catch((e: unknown) => (broken = e));
        // A connection that failed mid-transaction is closed rather than reused.
        client.release(broken instanceof Error ? broken : broken === undefined ? undefined : new Error(String(broken)));
        if (isRetryable(err) && attempt <= POOL_SIZE) continue;
        throw wrap(err);
      }
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}
