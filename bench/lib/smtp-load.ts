// SMTP load from Node, for where Postfix's smtp-source does not fit: N sessions on loopback,
// each sending messages back to back until a count or a time is reached; AUTH PLAIN with an
// API key when given; MAIL/RCPT/DATA pipelined (RFC 2920) when asked, so a message costs two
// round trips, else one command at a time as smtp-source does. Raw sockets keep the client
// cheap. Run through bench/lib/smtp-load-cli.ts, in a process of its own.
import net from 'node:net';

export interface SmtpLoadOptions {
  port: number;
  /** AUTH PLAIN with this password (an API key); none when absent. */
  key?: string;
  connections: number;
  /** Stop after this many messages in all… */
  count?: number;
  /** …or after this long (whichever comes first). */
  durationMs?: number;
  pipelining: boolean;
  from: string;
  to: string;
  /** The message (headers and body, CRLF or LF line ends); a small text message when absent. */
  message?: string;
}

export interface SmtpLoadResult {
  accepted: number;
  refused: number;
  errors: number;
  seconds: number;
  /** Milliseconds from MAIL to the reply to the end of DATA. */
  latencies: number[];
  firstRefusal?: string;
  firstError?: string;
}

/** A session that hands out complete replies (the last line of each) in order. */
class Session {
  private buf = '';
  private waiting: Array<{ resolve: (line: string) => void; reject: (err: Error) => void }> = [];
  private ready: string[] = [];
  private closed = false;

  constructor(readonly sock: net.Socket) {
    sock.setEncoding('utf8');
    sock.setNoDelay(true);
    sock.on('data', (chunk: string) => {
      this.buf += chunk;
      let i: number;
      while ((i = this.buf.indexOf('\r\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 2);
        if (!/^\d{3} /.test(line)) continue; // a continuation line of a multi-line reply
        const w = this.waiting.shift();
        if (w) w.resolve(line);
        else this.ready.push(line);
      }
    });
    sock.on('error', () => {}); // 'close' follows
    sock.on('close', () => {
      this.closed = true;
      for (const w of this.waiting.splice(0)) w.reject(new Error('connection closed'));
    });
  }

  reply(): Promise<string> {
    const r = this.ready.shift();
    if (r !== undefined) return Promise.resolve(r);
    if (this.closed) return Promise.reject(new Error('connection closed'));
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  async command(line: string, expect: string): Promise<string> {
    this.sock.write(`${line}\r\n`);
    const r = await this.reply();
    if (!r.startsWith(expect)) throw new Error(`${line.split(' ')[0]}: ${r}`);
    return r;
  }
}

/** The DATA payload: CRLF line ends, leading dots doubled, the final dot. */
export function dataOf(message: string): string {
  const lines = message.replace(/\r?\n$/, '').split(/\r?\n/);
  return `${lines.map((l) => (l.startsWith('.') ? `.${l}` : l)).join('\r\n')}\r\n.\r\n`;
}

export function defaultMessage(from: string, to: string): string {
  return [
    `From: Bench <${from}>`,
    `To: ${to}`,
    'Subject: Benchmark message',
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Hello from the benchmark. This is a short transactional message body.',
  ].join('\r\n');
}

async function open(port: number, key: string | undefined): Promise<Session> {
  const sock = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => sock.once('connect', resolve).once('error', reject));
  const s = new Session(sock);
  const greeting = await s.reply();
  if (!greeting.startsWith('220')) throw new Error(greeting);
  await s.command('EHLO bench.local', '250');
  if (key) await s.command(`AUTH PLAIN ${Buffer.from(`\0bench\0${key}`).toString('base64')}`, '235');
  return s;
}

export async function smtpLoad(o: SmtpLoadOptions, onStart?: () => void): Promise<SmtpLoadResult> {
  const result: SmtpLoadResult = { accepted: 0, refused: 0, errors: 0, seconds: 0, latencies: [] };
  const data = dataOf(o.message ?? defaultMessage(o.from, o.to));
  const sessions = await Promise.all(Array.from({ length: o.connections }, () => open(o.port, o.key)));
  onStart?.();
  const started = performance.now();
  const deadline = started + (o.durationMs ?? Infinity);
  let taken = 0;
  const more = () => performance.now() < deadline && (o.count === undefined || taken++ < o.count);
  await Promise.all(
    sessions.map(async (s) => {
      while (more()) {
        const t0 = performance.now();
        try {
          let mail: string, rcpt: string, dataReply: string;
          if (o.pipelining) {
            s.sock.write(`MAIL FROM:<${o.from}>\r\nRCPT TO:<${o.to}>\r\nDATA\r\n`);
            [mail, rcpt, dataReply] = [await s.reply(), await s.reply(), await s.reply()];
          } else {
            s.sock.write(`MAIL FROM:<${o.from}>\r\n`);
            mail = await s.reply();
            s.sock.write(`RCPT TO:<${o.to}>\r\n`);
            rcpt = await s.reply();
            s.sock.write('DATA\r\n');
            dataReply = await s.reply();
          }
          if (!dataReply.startsWith('354')) {
            result.refused++;
            result.firstRefusal ??= `${mail} | ${rcpt} | ${dataReply}`;
            // Whatever part of the transaction was taken is reset before the next one.
            s.sock.write('RSET\r\n');
            await s.reply();
            continue;
          }
          s.sock.write(data);
          const end = await s.reply();
          if (end.startsWith('250')) {
            result.accepted++;
            result.latencies.push(performance.now() - t0);
          } else {
            result.refused++;
            result.firstRefusal ??= end;
          }
        } catch (err) {
          result.errors++;
          result.firstError ??= (err as Error).message;
          return;
        }
      }
    }),
  );
  result.seconds = (performance.now() - started) / 1000;
  for (const s of sessions) {
    s.sock.end('QUIT\r\n');
    s.sock.destroy();
  }
  return result;
}
