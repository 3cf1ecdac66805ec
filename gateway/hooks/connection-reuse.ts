// Connection reuse for Haraka's outbound, as Postfix's connection cache and KumoMTA do: after a
// delivery the connection answers RSET instead of QUIT and waits, idle, for the next message to
// the same MX (same address, port, our address and EHLO name). Haraka 3.3.4 opens a socket per
// message, but hmail.js still serves a socket marked __fromPool (MAIL FROM at once, TLS read from
// the socket), so only its client_pool and three HMailItem steps are wrapped here:
//
// - try_deliver: which queue item each route belongs to (get_client is given only the route);
// - try_deliver_host_on_socket: which socket an item uses; a reused socket that closes before its
//   first answer is retried on the same MX with a new one, not counted as that MX failing;
// - delivered: the session ended well, so its QUIT may become RSET.
//
// What reuse must not change:
// - A connection limit (pacing) counts open connections. An attempt's slot is handed on only
//   once its connection is parked or closed (afterSession), so the next message of a backlog
//   finds it idle. Only a new connection adds to a gate's connections, and it trims the gate's idle
//   ones to fit beside its attempts: that keeps the limit. Parking adds none, so it is refused only
//   while the gate is over its limit (the limit was lowered).
// - A reused session skips EHLO, so Haraka does not know the server's extensions: mail whose
//   envelope needs SMTPUTF8 only takes a connection whose server did not offer it (then a new
//   session would not use it either). AUTH and LMTP routes are never reused.
// - A connection is used for at most MAX_MESSAGES messages and MAX_AGE_MS, and kept idle for
//   delivery.connectionIdleSeconds (0: no reuse).
import type { HarakaMx, HMailItem } from '../haraka.js';
import { IdlePool } from '../reuse/idle-pool.js';

const MAX_MESSAGES = 1000;
const MAX_AGE_MS = 300_000;
/** How long a server may take to answer RSET before the connection is dropped. */
const RSET_TIMEOUT_MS = 10_000;

/** Haraka's outbound socket (tls_socket's pluggableStream) as used here. */
export interface OutboundSocket extends NodeJS.EventEmitter {
  writable: boolean;
  destroyed?: boolean;
  __fromPool?: boolean;
  write(data: string | Uint8Array, encoding?: unknown, cb?: unknown): boolean;
  end(data?: string): void;
  destroy(): void;
  /** Under TLS with a certificate that verified (what Haraka's force_tls requires). */
  isSecure(): boolean | undefined;
}

type Listener = (...args: unknown[]) => void;
type Callback = (err: string | null, socket: OutboundSocket | null) => void;

/** Haraka's outbound/client_pool: the one call wrapped. */
export interface ClientPool {
  get_client(mx: HarakaMx, cb: Callback): void;
}

export interface HMailProto {
  try_deliver(this: HMailItem): Promise<void>;
  try_deliver_host_on_socket(this: HMailItem, mx: HarakaMx, host: string, port: number, socket: OutboundSocket): void;
  delivered(this: HMailItem, ...args: unknown[]): void;
}

export interface ReuseOptions {
  idleMs: number;
  /** The pacing gate of a queue item's destination and its free connections (Pacer.connectionRoom). */
  room(hmail: HMailItem): { gate: string; free: number };
}

export interface ReuseStats {
  opened: number;
  reused: number;
  idle: number;
}

export interface ConnectionReuse {
  stats(): ReuseStats;
  /** Idle connections per pacing gate (gateway/metrics.ts). */
  idleByGate(): Iterable<[gate: string, idle: number]>;
  /** Runs `fn` once the queue item's connection is parked for reuse or on its way out (at once when there is nothing to wait for). */
  afterSession(hmail: HMailItem, fn: () => void): void;
  /** Says QUIT on every idle connection (shutdown). */
  close(): void;
}

interface Conn {
  route: string;
  born: number;
  messages: number;
  /** Listeners Haraka's socket carries for itself (the line splitter): kept when a session's are stripped. */
  base: Map<string | symbol, Listener[]>;
  /** The server offered SMTPUTF8 in its EHLO answer. */
  utf8: boolean;
  hmail?: HMailItem;
  /** The current session delivered: its QUIT may become RSET. */
  clean: boolean;
  parking: boolean;
  /** afterSession callbacks of the current session. */
  waiting: Array<() => void>;
}

type Mx = HarakaMx & { path?: string; auth_user?: string; using_lmtp?: boolean; bind?: string };

/** The route a connection serves, or undefined when it is never reused. */
export function routeOf(mx: Mx): string | undefined {
  if (mx.path || mx.auth_user || mx.using_lmtp) return undefined;
  // The MX name too: a connection's TLS was verified for (and its SNI named) that name, so one MX name's
  // connection never carries mail for another name at the same address (gateway/tls: enforced TLS).
  return `${mx.exchange}|${mx.port ?? 25}|${mx.bind ?? ''}|${mx.bind_helo ?? ''}${mx.from_dns ? `|${mx.from_dns}` : ''}`;
}

const nonAscii = (s: string) => /[\u0080-\uffff]/.test(s);
const needsUtf8 = (hmail: HMailItem) => nonAscii(hmail.todo.mail_from.address ?? '') || hmail.todo.rcpt_to.some((r) => nonAscii(r.address));

/**
 * Whether a kept connection may carry this queue item: one that needs SMTPUTF8 only where the server
 * did not offer it, and one that must go under verified TLS (Haraka's force_tls) only over such a connection. Unknown
 * item: only what suits any.
 */
function suits(socket: OutboundSocket, conn: Conn, hmail: (HMailItem & { force_tls?: boolean }) | undefined): boolean {
  if (conn.utf8 && (!hmail || needsUtf8(hmail))) return false;
  return !(hmail?.force_tls ?? true) || Boolean(socket.isSecure());
}

export function installConnectionReuse(clientPool: ClientPool, proto: HMailProto, opts: ReuseOptions): ConnectionReuse {
  const conns = new WeakMap<OutboundSocket, Conn>();
  const owners = new WeakMap<HarakaMx, HMailItem>();
  const sockets = new WeakMap<HMailItem, OutboundSocket>();
  const stats = { opened: 0, reused: 0 };

  const quit = (socket: OutboundSocket) => {
    socket.removeAllListeners('line');
    try {
      socket.end('QUIT\r\n');
    } finally {
      setTimeout(() => socket.destroy(), 1000).unref();
    }
  };
  const pool = new IdlePool<OutboundSocket>(opts.idleMs, quit);

  /** Removes every listener a session or the pool added, keeping Haraka's own. */
  const strip = (socket: OutboundSocket, conn: Conn) => {
    for (const name of socket.eventNames()) {
      const keep = conn.base.get(name) ?? [];
      for (const l of socket.listeners(name) as Listener[]) if (!keep.includes(l)) socket.removeListener(name, l);
    }
  };

  const alive = (socket: OutboundSocket) => socket.writable && !socket.destroyed;

  /** The session is over for pacing: its connection is parked or closing. */
  const ended = (conn: Conn) => {
    conn.hmail = undefined;
    conn.clean = false;
    conn.parking = false;
    const waiting = conn.waiting;
    conn.waiting = [];
    for (const fn of waiting) fn();
  };

  function park(socket: OutboundSocket, conn: Conn, gate: string): void {
    strip(socket, conn);
    const gone = () => {
      pool.remove(socket);
      socket.destroy();
    };
    // Anything the server says while we are idle (a 421 before it hangs up) ends the connection.
    for (const ev of ['line', 'end', 'close', 'error', 'timeout']) socket.once(ev, gone);
    pool.put(socket, conn.route, gate);
    ended(conn);
  }

  /** Instead of QUIT after a delivery: RSET, and park the connection once the server answers 250. */
  function rset(socket: OutboundSocket, conn: Conn, write: OutboundSocket['write']): boolean {
    const hmail = conn.hmail!;
    const { gate, free } = opts.room(hmail);
    // The connection exists already: parked, it is the next message's instead of a new one. (Parking
    // only while the gate's idle connections fit beside its attempts, as before, counted an attempt
    // that was about to take an idle connection twice: under a steady load at the limit most sessions
    // then said QUIT and the next message opened a new connection, 2,117 opened for 3,300 messages.)
    if (free < 0) return false;
    conn.parking = true;
    const timer = setTimeout(() => socket.destroy(), RSET_TIMEOUT_MS);
    timer.unref();
    const onLine = (line: string) => {
      if (line[3] === '-') return;
      clearTimeout(timer);
      socket.removeListener('line', onLine);
      if (line.startsWith('250') && alive(socket)) return park(socket, conn, gate);
      write.call(socket, 'QUIT\r\n');
      socket.end();
      ended(conn);
    };
    socket.on('line', onLine);
    socket.once('close', () => {
      clearTimeout(timer);
      if (conn.parking) ended(conn);
    });
    return write.call(socket, 'RSET\r\n');
  }

  function track(socket: OutboundSocket, route: string): void {
    const base = new Map<string | symbol, Listener[]>();
    for (const name of socket.eventNames()) base.set(name, socket.listeners(name) as Listener[]);
    const conn: Conn = { route, born: Date.now(), messages: 0, base, utf8: false, clean: false, parking: false, waiting: [] };
    conns.set(socket, conn);
    // Until the first session ends: note whether the server offers SMTPUTF8 (stripped when parked).
    socket.on('line', (line: string) => {
      if (/^250[ -]SMTPUTF8\s*$/i.test(line)) conn.utf8 = true;
    });
    const write = socket.write;
    socket.write = function (this: OutboundSocket, data: string | Uint8Array, ...rest: unknown[]) {
      if (data !== 'QUIT\r\n' || conn.parking) return write.call(this, data, ...rest);
      if (conn.clean && conn.messages < MAX_MESSAGES && Date.now() - conn.born < MAX_AGE_MS && alive(socket) && rset(socket, conn, write)) return true;
      ended(conn);
      return write.call(this, data, ...rest);
    } as OutboundSocket['write'];
  }

  const getClient = clientPool.get_client;
  clientPool.get_client = function getPooled(mx, cb) {
    const route = routeOf(mx);
    const hmail = owners.get(mx);
    if (!route) return getClient(mx, cb);
    const socket = pool.take(route, (s) => alive(s) && suits(s, conns.get(s)!, hmail));
    if (socket) {
      // Handed over on the next tick, as a new socket would be; the idle listeners watch it until then.
      process.nextTick(() => {
        if (!alive(socket)) return getPooled(mx, cb);
        strip(socket, conns.get(socket)!);
        socket.__fromPool = true;
        stats.reused++;
        cb(null, socket);
      });
      return;
    }
    getClient(mx, (err, s) => {
      if (err || !s) return cb(err, s);
      stats.opened++;
      track(s, route);
      // Within a connection limit, a new connection makes room among the gate's idle ones.
      if (hmail && pool.size) {
        const { gate, free } = opts.room(hmail);
        for (const old of pool.trim(gate, free)) quit(old);
      }
      cb(null, s);
    });
  };

  const tryDeliver = proto.try_deliver;
  proto.try_deliver = function (this: HMailItem & { mxlist?: HarakaMx[] }) {
    const mx = this.mxlist?.[0];
    if (mx) owners.set(mx, this);
    return tryDeliver.call(this);
  };

  const onSocket = proto.try_deliver_host_on_socket;
  proto.try_deliver_host_on_socket = function (this: HMailItem & { mxlist: HarakaMx[] }, mx, host, port, socket) {
    const conn = conns.get(socket);
    if (conn) {
      conn.hmail = this;
      conn.clean = false;
      conn.parking = false;
      conn.messages++;
      sockets.set(this, socket);
    }
    onSocket.call(this, mx, host, port, socket);
    if (!conn) return;
    // However the session ends, a closed connection frees its slot.
    socket.once('close', () => conn.hmail === this && ended(conn));
    if (!socket.__fromPool) return;
    // The server may have hung up on the idle connection just as we took it: try the MX again
    // on a new connection instead of counting it as the MX failing.
    const answered = () => off();
    const lost = () => {
      off();
      this.mxlist.unshift(mx);
    };
    const off = () => {
      socket.removeListener('line', answered);
      socket.removeListener('close', lost);
      socket.removeListener('error', lost);
    };
    socket.once('line', answered);
    socket.prependOnceListener('close', lost);
    socket.prependOnceListener('error', lost);
  };

  const delivered = proto.delivered;
  proto.delivered = function (this: HMailItem, ...args: unknown[]) {
    const socket = sockets.get(this);
    const conn = socket && conns.get(socket);
    if (conn?.hmail === this) conn.clean = true;
    return delivered.apply(this, args);
  };

  return {
    stats: () => ({ ...stats, idle: pool.size }),
    idleByGate: () => pool.idleByGate(),
    afterSession(hmail, fn) {
      const socket = sockets.get(hmail);
      const conn = socket && conns.get(socket);
      // Only a delivered session may still become an idle connection; any other closes.
      if (!conn || conn.hmail !== hmail || !conn.clean) return fn();
      conn.waiting.push(fn);
    },
    close: () => {
      for (const s of pool.clear()) quit(s);
    },
  };
}
