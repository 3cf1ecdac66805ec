// A lingering close for answers given before the request's body has all arrived (a 413 on the
// Content-Length, a 503 from the body budget): Node closes such a connection (Connection: close)
// as soon as the answer is written, while the client is still sending. The client's next bytes
// then meet a closed socket, the kernel answers them with a reset, and the reset discards the
// answer the client has not read yet: it sees EPIPE or ECONNRESET instead of the 413.
//
// Instead the answer is followed by our FIN, and what the client still sends is read and thrown
// away (Node's HTTP parser drops the body of an answered request) until it stops sending or
// closes, for a bounded time and size, as Apache and nginx do (lingering_close).
import type { Socket } from 'node:net';

/** Closed when nothing more arrived for this long: the client is done sending, or is not sending at all. */
export const LINGER_IDLE_MS = 500;
/** Closed after this long whatever the client does. */
export const LINGER_MAX_MS = 5000;
/** Closed after throwing this much away. */
export const LINGER_MAX_BYTES = 64 * 1024 * 1024;

/** Makes Node's close of `socket` after the answer (it calls destroySoon) a lingering one. */
export function lingerOnClose(socket: Socket | null | undefined): void {
  if (!socket || socket.destroyed) return;
  socket.destroySoon = function lingeringClose(this: Socket) {
    if (this.destroyed) return;
    this.end(); // the answer, then our FIN: the client may read it and close its side (Node then destroys the socket)
    const start = Date.now();
    const firstByte = this.bytesRead;
    let last = firstByte;
    const timer = setInterval(() => {
      const read = this.bytesRead;
      if (read === last || read - firstByte > LINGER_MAX_BYTES || Date.now() - start >= LINGER_MAX_MS) this.destroy();
      last = read;
    }, LINGER_IDLE_MS);
    timer.unref();
    this.once('close', () => clearInterval(timer));
  };
}
