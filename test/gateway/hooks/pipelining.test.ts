// The outbound PIPELINING shim (gateway/hooks/pipelining.ts) between a client that speaks one command
// at a time, as Haraka's does, and the wire: what goes out in one write, which answer the client gets
// for each command it "sends", and what happens when it goes another way than the commands sent ahead.
// The real gateway against a real MX is in test/e2e/deliverability/pipelining.test.ts.
import { EventEmitter } from 'node:events';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { HarakaAddress, HMailItem } from '../../../gateway/haraka.js';
import type { HMailProto, OutboundSocket } from '../../../gateway/hooks/connection-reuse.js';
import { commandsAhead, installPipelining } from '../../../gateway/hooks/pipelining.js';

const harakaRequire = createRequire(createRequire(import.meta.url).resolve('Haraka/package.json'));
const { Address } = harakaRequire('@haraka/email-address') as { Address: new (a: string) => HarakaAddress };

class FakeSocket extends EventEmitter {
  wire: string[] = [];
  writable = true;
  destroyed = false;
  noDelay = false;
  targetsocket = { setNoDelay: (on: boolean) => void (this.noDelay = on) };
  write(data: string | Uint8Array, ..._rest: unknown[]): boolean {
    this.wire.push(String(data));
    return true;
  }
  end(): void {}
  destroy(): void {
    this.destroyed = true;
  }
  isSecure(): boolean {
    return false;
  }
}

const hmailTo = (...rcpts: string[]) => ({ todo: { rcpt_to: rcpts.map((r) => new Address(`<${r}>`)) } }) as unknown as HMailItem;
const tick = () => new Promise((r) => process.nextTick(r));

/** A socket after EHLO (with PIPELINING offered unless told), watched for `hmail`; `heard` is what the client gets. */
function session(hmail: HMailItem, offered = true) {
  const proto = { try_deliver_host_on_socket() {}, try_deliver: async () => {}, delivered() {} } as unknown as HMailProto;
  const stats = installPipelining(proto);
  const socket = new FakeSocket();
  const heard: string[] = [];
  socket.on('line', (l: string) => heard.push(l.trim()));
  proto.try_deliver_host_on_socket.call(hmail, { exchange: 'mx.test' }, 'mx.test', 25, socket as unknown as OutboundSocket);
  socket.write('EHLO postgate.test\r\n');
  for (const l of ['250-mx.test', offered ? '250-PIPELINING' : '250-8BITMIME', '250 SMTPUTF8']) socket.emit('line', `${l}\r\n`);
  heard.length = 0;
  socket.wire.length = 0;
  const answer = (...lines: string[]) => {
    for (const l of lines) socket.emit('line', `${l}\r\n`);
  };
  return { socket, stats, heard, answer };
}

describe('outbound pipelining', () => {
  it('sends RCPT TO and DATA with MAIL FROM, and gives each answer when the client sends its command', async () => {
    const { socket, heard, answer, stats } = session(hmailTo('a@x.test', 'b@x.test'));
    expect(socket.noDelay).toBe(true);
    socket.write('MAIL FROM:<s@y.test>\r\n');
    expect(socket.wire).toEqual(['MAIL FROM:<s@y.test>\r\nRCPT TO:<a@x.test>\r\nRCPT TO:<b@x.test>\r\nDATA\r\n']);
    expect(stats.pipelined).toBe(1);
    // Every answer arrives at once; the client has asked for the first only.
    answer('250 2.1.0 Ok', '550 5.1.1 No such user', '250-2.1.5 Ok', '250 2.1.5 Still ok', '354 Go ahead');
    expect(heard).toEqual(['250 2.1.0 Ok']);
    expect(socket.write('RCPT TO:<a@x.test>\r\n', 'utf8', () => {})).toBe(true);
    expect(heard).toHaveLength(1); // an answer comes after the write returns, as from the wire
    await tick();
    expect(heard.at(-1)).toBe('550 5.1.1 No such user');
    socket.write('RCPT TO:<b@x.test>\r\n');
    await tick();
    expect(heard.slice(-2)).toEqual(['250-2.1.5 Ok', '250 2.1.5 Still ok']);
    socket.write('DATA\r\n');
    await tick();
    expect(heard.at(-1)).toBe('354 Go ahead');
    // Nothing was written twice; what follows goes out as written.
    socket.write('.\r\n');
    expect(socket.wire).toHaveLength(2);
    answer('250 2.0.0 Queued');
    expect(heard.at(-1)).toBe('250 2.0.0 Queued');
  });

  it('an answer that comes after the client sent its command is handed over at once', () => {
    const { socket, heard, answer } = session(hmailTo('a@x.test'));
    socket.write('MAIL FROM:<s@y.test>\r\n');
    answer('250 Ok');
    socket.write('RCPT TO:<a@x.test>\r\n');
    answer('250 Ok');
    socket.write('DATA\r\n');
    answer('354 Go');
    expect(heard).toEqual(['250 Ok', '250 Ok', '354 Go']);
  });

  it('every recipient refused: the answer to the DATA sent ahead goes to nobody, the next command gets its own', async () => {
    const { socket, heard, answer } = session(hmailTo('a@x.test'));
    socket.write('MAIL FROM:<s@y.test>\r\n');
    answer('250 Ok', '550 No such user', '554 No valid recipients');
    socket.write('RCPT TO:<a@x.test>\r\n');
    await tick();
    socket.write('QUIT\r\n');
    expect(socket.wire.at(-1)).toBe('QUIT\r\n');
    answer('221 Bye');
    expect(heard).toEqual(['250 Ok', '550 No such user', '221 Bye']);
    socket.wire.length = 0;
    socket.write('MAIL FROM:<s@y.test>\r\n');
    expect(socket.wire).toHaveLength(1);
    expect(socket.wire[0]).toContain('RCPT TO:<a@x.test>');
  });

  it('a refused MAIL FROM: the RCPT and DATA answers go to nobody, also when they come after the next command', () => {
    const { socket, heard, answer } = session(hmailTo('a@x.test'));
    socket.write('MAIL FROM:<s@y.test>\r\n');
    answer('451 Try later');
    socket.write('RSET\r\n');
    answer('503 Bad sequence', '503 Bad sequence', '250 Reset');
    expect(heard).toEqual(['451 Try later', '250 Reset']);
    // Nothing is left over: the next transaction on the connection is pipelined again.
    socket.wire.length = 0;
    socket.write('MAIL FROM:<s@y.test>\r\n');
    expect(socket.wire).toEqual(['MAIL FROM:<s@y.test>\r\nRCPT TO:<a@x.test>\r\nDATA\r\n']);
  });

  it('a command other than the one sent ahead closes the connection', () => {
    const { socket, answer, stats } = session(hmailTo('a@x.test'));
    socket.write('MAIL FROM:<s@y.test>\r\n');
    answer('250 Ok');
    expect(socket.write('RCPT TO:<other@x.test>\r\n')).toBe(false);
    expect(socket.destroyed).toBe(true);
    expect(stats.mismatched).toBe(1);
  });

  it('a DATA nobody sends that the server takes anyway ends the connection', () => {
    const { socket, answer } = session(hmailTo('a@x.test'));
    socket.write('MAIL FROM:<s@y.test>\r\n');
    answer('451 Try later');
    socket.write('QUIT\r\n');
    answer('250 Ok');
    expect(socket.destroyed).toBe(false);
    answer('354 Go ahead');
    expect(socket.destroyed).toBe(true);
  });

  it('one command at a time to a server that does not offer PIPELINING, or for an envelope that depends on SMTPUTF8', () => {
    const plain = session(hmailTo('a@x.test'), false);
    plain.socket.write('MAIL FROM:<s@y.test>\r\n');
    expect(plain.socket.wire).toEqual(['MAIL FROM:<s@y.test>\r\n']);
    expect(commandsAhead(hmailTo('josé@exämple.test'))).toBeUndefined();
    const utf8 = session(hmailTo('a@x.test', 'josé@exämple.test'));
    utf8.socket.write('MAIL FROM:<s@y.test>\r\n');
    expect(utf8.socket.wire).toEqual(['MAIL FROM:<s@y.test>\r\n']);
  });

  it('a new EHLO forgets what the last one offered (after STARTTLS, the server says again)', () => {
    const { socket } = session(hmailTo('a@x.test'));
    socket.write('STARTTLS\r\n');
    socket.emit('line', '220 Go ahead\r\n');
    socket.write('EHLO postgate.test\r\n');
    socket.emit('line', '250 mx.test\r\n');
    socket.wire.length = 0;
    socket.write('MAIL FROM:<s@y.test>\r\n');
    expect(socket.wire).toEqual(['MAIL FROM:<s@y.test>\r\n']);
  });
});
