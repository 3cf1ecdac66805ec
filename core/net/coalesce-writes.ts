// Replies written in one turn of the event loop leave in one syscall. An SMTP client that
// pipelines (MAIL, RCPT, DATA in one packet) gets its three replies in one write instead of
// three; a write to a socket costs more CPU than the reply's own work (bench/send.ts, SMTP).
// The first write of a turn corks the socket and the next turn uncorks it; end() flushes
// at once as always.
import type net from 'node:net';

export function coalesceWrites(socket: net.Socket): void {
  const write = socket.write;
  let corked = false;
  const flush = () => {
    corked = false;
    if (!socket.destroyed) socket.uncork();
  };
  socket.write = function (this: net.Socket, ...args: Parameters<net.Socket['write']>) {
    if (!corked) {
      corked = true;
      this.cork();
      setImmediate(flush);
    }
    return write.apply(this, args);
  } as net.Socket['write'];
}
