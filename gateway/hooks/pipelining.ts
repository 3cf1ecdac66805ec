// RFC 2920 PIPELINING for Haraka's outbound client, as Postfix's smtp client uses it. Haraka 3.3.4
// sends MAIL FROM, each RCPT TO and DATA one at a time and waits for each answer: three round trips
// where one does, each as long as the gateway's event loop takes to come back to the socket under
// load. With a connection limit (pacing), that latency is what bounds a destination's rate.
//
// When the server offered PIPELINING, the RCPT commands and DATA go out in MAIL FROM's write. Haraka
// still sends them one by one, as before: each such write must be exactly the command sent ahead, and
// is dropped; the answer the server gave to it is handed to Haraka then (answers come in the order of
// the commands). A command sent ahead that Haraka does not send after all (RCPT after a refused MAIL,
// DATA after every RCPT was refused) has its answer dropped, so the next command Haraka sends gets its
// own. Haraka's own logic decides everything as before; only the waiting goes.
//
// Not on LMTP routes (an answer per recipient after the data), and only for envelopes whose
// recipients read the same with and without SMTPUTF8 (Haraka writes them by the server's EHLO answer).
import type { HarakaAddress, HarakaMx, HMailItem } from '../haraka.js';
import type { HMailProto, OutboundSocket } from './connection-reuse.js';

type Mx = HarakaMx & { using_lmtp?: boolean };
type Address = HarakaAddress & { format(punycode: boolean): string };

/**
 * A command on the wire whose answer Haraka has not had yet. `ahead`: sent with MAIL FROM, not
 * yet written by Haraka; `asked`: Haraka has written it; `dropped`: Haraka went another way, the
 * answer is nobody's; `handed`: Haraka has its answer.
 */
interface Pending {
  command: string;
  state: 'ahead' | 'asked' | 'dropped' | 'handed';
  /** The answer's lines so far; `answered` once its last line came. */
  lines: string[];
  answered: boolean;
}

interface SocketState {
  /** The server's last EHLO answer offered PIPELINING. */
  offered: boolean;
  /** The queue item of the current session. */
  hmail?: HMailItem;
  /** Commands in the order sent, from the MAIL FROM that carried others until all answers are handed over. */
  pending: Pending[];
}

export interface PipeliningStats {
  /** Sessions whose RCPT and DATA went with MAIL FROM. */
  pipelined: number;
  /** Haraka wrote another command than the one sent ahead: the connection was closed. */
  mismatched: number;
}

const OFFERS = /^250[ -]PIPELINING\s*$/i;
const isLast = (line: string) => line.length < 4 || line[3] !== '-';

/** The RCPT lines Haraka will write for this item, and DATA; undefined when they may depend on SMTPUTF8. */
export function commandsAhead(hmail: HMailItem): string[] | undefined {
  const out: string[] = [];
  for (const r of hmail.todo.rcpt_to as Address[]) {
    const ascii = r.format(true);
    if (ascii !== r.format(false)) return undefined;
    out.push(`RCPT TO:${ascii}\r\n`);
  }
  return out.length ? [...out, 'DATA\r\n'] : undefined;
}

export function installPipelining(proto: HMailProto): PipeliningStats {
  const states = new WeakMap<OutboundSocket, SocketState>();
  const stats: PipeliningStats = { pipelined: 0, mismatched: 0 };

  function watch(socket: OutboundSocket): SocketState {
    const known = states.get(socket);
    if (known) return known;
    const s: SocketState = { offered: false, pending: [] };
    states.set(socket, s);
    const write = socket.write;
    const emit = socket.emit;

    /** Hands an answer to Haraka (and the socket's other listeners), then forgets what is settled. */
    const hand = (p: Pending) => {
      p.state = 'handed';
      for (const line of p.lines) emit.call(socket, 'line', line);
      settle();
    };
    /** Answered commands that are handed over or nobody's leave the front of the line. */
    const settle = () => {
      while (s.pending[0]?.answered && (s.pending[0].state === 'handed' || s.pending[0].state === 'dropped')) s.pending.shift();
    };

    socket.write = function (this: OutboundSocket, data: string | Uint8Array, ...rest: unknown[]) {
      if (typeof data !== 'string') return write.call(this, data, ...rest);
      const ahead = s.pending.find((p) => p.state === 'ahead');
      if (ahead) {
        if (data === ahead.command) {
          // Sent already: Haraka gets its write callback, and the answer if it came, as if from the wire.
          ahead.state = 'asked';
          const cb = rest.find((r): r is (err?: Error | null) => void => typeof r === 'function');
          if (cb) process.nextTick(cb);
          if (ahead.answered) process.nextTick(() => hand(ahead));
          return true;
        }
        for (const p of s.pending) if (p.state === 'ahead') p.state = 'dropped';
        settle();
        if (/^(RCPT|DATA)\b/i.test(data)) {
          // A command other than the one on the wire: the server holds an envelope Haraka did not mean.
          stats.mismatched++;
          socket.destroy();
          return false;
        }
      }
      if (/^(EHLO|HELO|LHLO)\b/i.test(data)) s.offered = false;
      if (s.offered && s.hmail && !s.pending.length && /^MAIL FROM:/i.test(data)) {
        const more = commandsAhead(s.hmail);
        if (more) {
          stats.pipelined++;
          s.pending = [data, ...more].map((command, i) => ({ command, state: i ? 'ahead' : 'asked', lines: [], answered: false }));
          return write.call(this, data + more.join(''), ...rest);
        }
      }
      return write.call(this, data, ...rest);
    } as OutboundSocket['write'];

    socket.emit = function (this: OutboundSocket, event: string | symbol, ...args: unknown[]) {
      if (event !== 'line') return emit.call(this, event, ...args);
      const line = String(args[0]);
      const p = s.pending.find((x) => !x.answered);
      if (!p) {
        if (OFFERS.test(line)) s.offered = true;
        return emit.call(this, event, ...args);
      }
      p.lines.push(line);
      if (!isLast(line)) return true;
      p.answered = true;
      if (p.state === 'asked') hand(p);
      else if (p.state === 'dropped') {
        // A DATA nobody sends that the server took anyway (it should not, without recipients): end the session.
        if (p.command === 'DATA\r\n' && line.startsWith('354')) socket.destroy();
        settle();
      }
      return true;
    };
    return s;
  }

  const onSocket = proto.try_deliver_host_on_socket;
  proto.try_deliver_host_on_socket = function (this: HMailItem, mx: Mx, host: string, port: number, socket: OutboundSocket) {
    // Haraka's socket wrapper ignores setNoDelay, so Nagle's algorithm stayed on: the end of the data
    // (".\r\n", written after the body) waited for the ACK of the body, which the receiver delays
    // (40 ms on Linux), on every message. That bounded each connection to about 20 messages a second.
    (socket as { targetsocket?: { setNoDelay?(on: boolean): void } }).targetsocket?.setNoDelay?.(true);
    if (!mx.using_lmtp) watch(socket).hmail = this;
    return onSocket.call(this, mx, host, port, socket);
  };
  return stats;
}
