// Connection reuse (gateway/hooks/connection-reuse.ts) over fake sockets: a delivered session says RSET
// instead of QUIT and its connection waits idle for the next message to the same route; what refuses
// reuse (a failed session, a refused RSET, a gate over its limit, SMTPUTF8, force_tls, AUTH/LMTP routes);
// a reused socket lost before its first answer puts the MX back. The pool itself is test/gateway/reuse.
import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { HarakaMx, HMailItem } from '../../../gateway/haraka.js';
import {
  type ClientPool,
  type ConnectionReuse,
  type HMailProto,
  installConnectionReuse,
  type OutboundSocket,
  routeOf,
} from '../../../gateway/hooks/connection-reuse.js';

class FakeSocket extends EventEmitter {
  wire: string[] = [];
  writable = true;
  destroyed = false;
  ended = false;
  secure = false;
  __fromPool?: boolean;
  constructor() {
    super();
    // Haraka's own listener (the line splitter): must survive a session's listeners being stripped.
    this.on('data', () => {});
  }
  write(data: string | Uint8Array, ..._rest: unknown[]): boolean {
    this.wire.push(String(data));
    return true;
  }
  end(data?: string): void {
    if (data) this.wire.push(data);
    this.ended = true;
    this.writable = false;
  }
  destroy(): void {
    this.destroyed = true;
    this.writable = false;
  }
  isSecure(): boolean {
    return this.secure;
  }
}

type Item = HMailItem & { mxlist: HarakaMx[]; force_tls?: boolean };

// force_tls is set by Haraka's try_deliver before it asks for a connection; false unless told.
const mxA = (): HarakaMx => ({ exchange: '192.0.2.1', port: 25, bind_helo: 'out.postgate.test' });
const item = (mx: HarakaMx, rcpt = 'a@x.test', from = 's@postgate.test') =>
  ({ todo: { mail_from: { address: from }, rcpt_to: [{ address: rcpt }] }, mxlist: [mx], force_tls: false }) as unknown as Item;
const tick = () => new Promise((r) => process.nextTick(r));

let reuse: ConnectionReuse | undefined;
afterEach(() => {
  reuse?.close();
  reuse = undefined;
  vi.restoreAllMocks();
});

function setup(room: { gate: string; free: number } = { gate: 'g', free: 1 }, idleMs = 60_000) {
  const opened: FakeSocket[] = [];
  const underlying = vi.fn((_mx: HarakaMx, cb: (err: string | null, s: OutboundSocket | null) => void) => {
    const s = new FakeSocket();
    opened.push(s);
    cb(null, s as unknown as OutboundSocket);
  });
  const pool: ClientPool = { get_client: underlying };
  const sessions: Array<{ hmail: Item; socket: FakeSocket }> = [];
  const delivered = vi.fn();
  const proto: HMailProto = {
    try_deliver: async () => {},
    try_deliver_host_on_socket(this: HMailItem, _mx, _host, _port, socket) {
      sessions.push({ hmail: this as Item, socket: socket as unknown as FakeSocket });
    },
    delivered,
  };
  const roomFn = vi.fn(() => room);
  reuse = installConnectionReuse(pool, proto, { idleMs, room: roomFn });
  /** Runs an item up to its socket, as Haraka does: try_deliver, get_client, then the session on the socket. */
  const connect = async (hmail: Item) => {
    await proto.try_deliver.call(hmail);
    const mx = hmail.mxlist[0]!;
    const socket = await new Promise<FakeSocket>((resolve, reject) =>
      pool.get_client(mx, (err, s) => (err || !s ? reject(new Error(String(err))) : resolve(s as unknown as FakeSocket))),
    );
    proto.try_deliver_host_on_socket.call(hmail, mx, mx.exchange, mx.port ?? 25, socket as unknown as OutboundSocket);
    return socket;
  };
  return { reuse: reuse!, pool, proto, connect, opened, underlying, delivered, roomFn };
}

/** A delivered session that ends with QUIT, the RSET answered with `answer`. */
async function deliverAndQuit(t: ReturnType<typeof setup>, hmail: Item, answer = '250 2.0.0 Ok') {
  const socket = await t.connect(hmail);
  t.proto.delivered.call(hmail);
  const after = vi.fn();
  t.reuse.afterSession(hmail, after);
  const wrote = socket.write('QUIT\r\n');
  const waitedForRset = after.mock.calls.length === 0;
  socket.emit('line', answer);
  return { socket, after, wrote, waitedForRset };
}

describe('routeOf', () => {
  it('names the route by address, port (25 by default), our address and EHLO name', () => {
    expect(routeOf({ exchange: '192.0.2.1', port: 2525, bind: '10.0.0.1', bind_helo: 'h.test' } as HarakaMx)).toBe('192.0.2.1|2525|10.0.0.1|h.test');
    expect(routeOf({ exchange: '192.0.2.1' })).toBe('192.0.2.1|25||');
    expect(routeOf({ exchange: '192.0.2.1', port: 25 })).toBe(routeOf({ exchange: '192.0.2.1' }));
    // A connection verified (TLS) for one MX name never serves another name at the same address.
    expect(routeOf({ exchange: '192.0.2.1', from_dns: 'mx.a.test' })).not.toBe(routeOf({ exchange: '192.0.2.1', from_dns: 'mx.b.test' }));
  });

  it('never reuses AUTH, LMTP or unix-socket routes', () => {
    expect(routeOf({ exchange: 'x', auth_user: 'u' } as HarakaMx)).toBeUndefined();
    expect(routeOf({ exchange: 'x', using_lmtp: true } as HarakaMx)).toBeUndefined();
    expect(routeOf({ exchange: 'x', path: '/run/lmtp.sock' } as HarakaMx)).toBeUndefined();
  });
});

describe('connection reuse', () => {
  it('turns a delivered session’s QUIT into RSET, parks the connection on 250 and hands it to the next message', async () => {
    const t = setup();
    const { socket, after, wrote, waitedForRset } = await deliverAndQuit(t, item(mxA()));
    expect(wrote).toBe(true);
    expect(socket.wire).toEqual(['RSET\r\n']);
    expect(waitedForRset).toBe(true); // the slot is handed on only once the connection is parked
    expect(after).toHaveBeenCalledOnce();
    expect(t.reuse.stats()).toEqual({ opened: 1, reused: 0, idle: 1 });

    const next = await t.connect(item(mxA(), 'b@x.test'));
    expect(next).toBe(socket);
    expect(next.__fromPool).toBe(true);
    expect(t.underlying).toHaveBeenCalledOnce();
    expect(t.reuse.stats()).toEqual({ opened: 1, reused: 1, idle: 0 });
    // Haraka's own listener is kept; the idle watchers are gone.
    expect(next.listenerCount('data')).toBe(1);
    expect(next.listenerCount('end')).toBe(0);
  });

  it('a session that did not deliver says QUIT and frees its slot at once', async () => {
    const t = setup();
    const hmail = item(mxA());
    const socket = await t.connect(hmail);
    const after = vi.fn();
    t.reuse.afterSession(hmail, after);
    expect(after).toHaveBeenCalledOnce();
    socket.write('QUIT\r\n');
    expect(socket.wire).toEqual(['QUIT\r\n']);
    expect(t.reuse.stats().idle).toBe(0);
  });

  it('a refused RSET ends with QUIT, parks nothing and frees the slot', async () => {
    const t = setup();
    const { socket, after } = await deliverAndQuit(t, item(mxA()), '421 4.3.2 Going down');
    expect(socket.wire).toEqual(['RSET\r\n', 'QUIT\r\n']);
    expect(socket.ended).toBe(true);
    expect(after).toHaveBeenCalledOnce();
    expect(t.reuse.stats().idle).toBe(0);
  });

  it('waits for the last line of a multi-line RSET answer', async () => {
    const t = setup();
    const hmail = item(mxA());
    const socket = await t.connect(hmail);
    t.proto.delivered.call(hmail);
    socket.write('QUIT\r\n');
    socket.emit('line', '250-still');
    expect(t.reuse.stats().idle).toBe(0);
    socket.emit('line', '250 done');
    expect(t.reuse.stats().idle).toBe(1);
  });

  it('does not park while the gate is over its connection limit', async () => {
    const t = setup({ gate: 'g', free: -1 });
    const hmail = item(mxA());
    const socket = await t.connect(hmail);
    t.proto.delivered.call(hmail);
    const after = vi.fn();
    t.reuse.afterSession(hmail, after);
    socket.write('QUIT\r\n');
    expect(socket.wire).toEqual(['QUIT\r\n']);
    expect(after).toHaveBeenCalledOnce();
    expect(t.reuse.stats().idle).toBe(0);
  });

  it('an idle connection the server speaks on or closes is dropped, and the next message opens a new one', async () => {
    const t = setup();
    const { socket } = await deliverAndQuit(t, item(mxA()));
    expect(t.reuse.stats().idle).toBe(1);
    socket.emit('line', '421 4.4.2 Idle timeout');
    expect(socket.destroyed).toBe(true);
    expect(t.reuse.stats().idle).toBe(0);
    const next = await t.connect(item(mxA()));
    expect(next).not.toBe(socket);
    expect(t.reuse.stats()).toMatchObject({ opened: 2, reused: 0 });
  });

  it('does not reuse across routes (another EHLO name is another route)', async () => {
    const t = setup();
    await deliverAndQuit(t, item(mxA()));
    const other = await t.connect(item({ ...mxA(), bind_helo: 'other.test' }));
    expect(t.opened).toHaveLength(2);
    expect(other).toBe(t.opened[1]);
    expect(t.reuse.stats().idle).toBe(1);
  });

  it('AUTH routes go straight to Haraka and are never parked', async () => {
    const t = setup();
    const hmail = item({ ...mxA(), auth_user: 'u' } as HarakaMx);
    const socket = await t.connect(hmail);
    t.proto.delivered.call(hmail);
    socket.write('QUIT\r\n');
    expect(socket.wire).toEqual(['QUIT\r\n']);
    expect(t.reuse.stats()).toEqual({ opened: 0, reused: 0, idle: 0 });
  });

  it('mail needing SMTPUTF8 does not take a connection whose server offered it (a reused session skips EHLO)', async () => {
    const t = setup();
    const hmail = item(mxA());
    const socket = await t.connect(hmail);
    socket.emit('line', '250-mx.test');
    socket.emit('line', '250 SMTPUTF8');
    t.proto.delivered.call(hmail);
    socket.write('QUIT\r\n');
    socket.emit('line', '250 Ok');
    expect(t.reuse.stats().idle).toBe(1);

    const utf8 = await t.connect(item(mxA(), 'josé@x.test'));
    expect(utf8).not.toBe(socket);
    // ASCII mail may take it.
    const ascii = await t.connect(item(mxA(), 'b@x.test'));
    expect(ascii).toBe(socket);
  });

  it('mail under force_tls takes only a connection that is under verified TLS', async () => {
    const t = setup();
    const { socket } = await deliverAndQuit(t, item(mxA()));
    const tls = { ...item(mxA()), force_tls: true } as Item;
    expect(await t.connect(tls)).not.toBe(socket);
    socket.secure = true;
    expect(await t.connect({ ...item(mxA()), force_tls: true } as Item)).toBe(socket);
  });

  it('a reused connection lost before its first answer puts the MX back in front, not counted as failing', async () => {
    const t = setup();
    const mx = mxA();
    await deliverAndQuit(t, item(mx));
    const hmail = item(mx);
    const socket = await t.connect(hmail);
    expect(socket.__fromPool).toBe(true);
    hmail.mxlist.shift(); // Haraka took the MX off the list for this attempt
    socket.emit('close');
    expect(hmail.mxlist).toEqual([mx]);
  });

  it('a reused connection that answered is not retried when it closes later', async () => {
    const t = setup();
    const mx = mxA();
    await deliverAndQuit(t, item(mx));
    const hmail = item(mx);
    const socket = await t.connect(hmail);
    hmail.mxlist.shift();
    socket.emit('line', '250 2.1.0 Ok');
    socket.emit('close');
    expect(hmail.mxlist).toEqual([]);
  });

  it('a new connection trims the gate’s idle ones to its free room', async () => {
    const room = { gate: 'g', free: 1 };
    const t = setup(room);
    const { socket } = await deliverAndQuit(t, item(mxA()));
    room.free = 0;
    await t.connect(item({ exchange: '192.0.2.9', port: 25 }));
    expect(socket.wire.at(-1)).toBe('QUIT\r\n');
    expect(t.reuse.stats().idle).toBe(0);
  });

  it('retires a connection after five minutes', async () => {
    const t = setup();
    const start = Date.now();
    const now = vi.spyOn(Date, 'now').mockReturnValue(start);
    const hmail = item(mxA());
    const socket = await t.connect(hmail);
    t.proto.delivered.call(hmail);
    now.mockReturnValue(start + 300_000);
    socket.write('QUIT\r\n');
    expect(socket.wire).toEqual(['QUIT\r\n']);
  });

  it('a connection that closes while waiting for RSET frees the slot', async () => {
    const t = setup();
    const hmail = item(mxA());
    const socket = await t.connect(hmail);
    t.proto.delivered.call(hmail);
    const after = vi.fn();
    t.reuse.afterSession(hmail, after);
    socket.write('QUIT\r\n');
    expect(after).not.toHaveBeenCalled();
    socket.emit('close');
    expect(after).toHaveBeenCalledOnce();
    expect(t.reuse.stats().idle).toBe(0);
  });

  it('close() says QUIT on every idle connection', async () => {
    const t = setup();
    const { socket } = await deliverAndQuit(t, item(mxA()));
    t.reuse.close();
    expect(socket.wire.at(-1)).toBe('QUIT\r\n');
    expect(t.reuse.stats().idle).toBe(0);
  });

  it('an idle connection is given up after delivery.connectionIdleSeconds', async () => {
    const t = setup({ gate: 'g', free: 1 }, 20);
    const { socket } = await deliverAndQuit(t, item(mxA()));
    expect(t.reuse.stats().idle).toBe(1);
    await new Promise((r) => setTimeout(r, 40));
    expect(t.reuse.stats().idle).toBe(0);
    expect(socket.wire.at(-1)).toBe('QUIT\r\n');
  });

  it('a parked connection that dies before it is handed over is passed by', async () => {
    const t = setup();
    const { socket } = await deliverAndQuit(t, item(mxA()));
    const hmail = item(mxA());
    await t.proto.try_deliver.call(hmail);
    const got = new Promise<OutboundSocket | null>((r) => t.pool.get_client(hmail.mxlist[0]!, (_e, s) => r(s)));
    socket.writable = false; // dies between take and the next tick
    const s = await got;
    expect(s).not.toBe(socket);
    expect(t.reuse.stats()).toMatchObject({ opened: 2, reused: 0 });
    await tick();
  });
});
