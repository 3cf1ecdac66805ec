// SMTP submission load: N authenticated sessions on loopback, each sending
// messages back to back for a fixed time, with MAIL/RCPT/DATA pipelined
// (RFC 2920) so a message costs two round trips. Raw sockets keep the client
// cheap: on two cores a heavy client would steal the server's CPU.
import net from 'node:net';

export interface SmtpLoadOptions {
  port: number;
  key: string;
  connections: number;
  durationMs: number;
  from: string;
  to: string;
}

export interface SmtpLoadResult {
  accepted: number;
  refused: number;
  errors: number;
  seconds: number;
  /** Milliseconds from MAIL to the reply to the end of DATA. */
  latencies: number[];
  firstRefusal?: string;
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

function message(from: string, to: string, n: number): string {
  return [
    `From: Bench <${from}>`,
    `To: ${to}`,
    `Subject: Benchmark message ${n}`,
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'Hello from the benchmark. This is a short transactional message body.',
    '.',
    '',
  ].join('\r\n');
}

async function open(port: number, key: string): Promise<Session> {
  const sock = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => sock.once('connect', resolve).once('error', reject));
  const s = new Session(sock);
  const greeting = await s.reply();
  if (!greeting.startsWith('220')) throw new Error(greeting);
  await s.command('EHLO bench.local', '250');
  await s.command(`AUTH PLAIN ${Buffer.from(`\0bench\0${key}`).toString('base64')}`, '235');
  return s;
}

export async function smtpLoad(o: SmtpLoadOptions): Promise<SmtpLoadResult> {
  const result: SmtpLoadResult = { accepted: 0, refused: 0, errors: 0, seconds: 0, latencies: [] };
  const sessions = await Promise.all(Array.from({ length: o.connections }, () => open(o.port, o.key)));
  const started = performance.now();
  const deadline = started + o.durationMs;
  let n = 0;
  await Promise.all(
    sessions.map(async (s) => {
      while (performance.now() < deadline) {
        const t0 = performance.now();
        try {
          s.sock.write(`MAIL FROM:<${o.from}>\r\nRCPT TO:<${o.to}>\r\nDATA\r\n`);
          const [mail, rcpt, data] = [await s.reply(), await s.reply(), await s.reply()];
          if (!data.startsWith('354')) {
            result.refused++;
            result.firstRefusal ??= `${mail} | ${rcpt} | ${data}`;
            continue;
          }
          s.sock.write(message(o.from, o.to, n++));
          const end = await s.reply();
          if (end.startsWith('250')) {
            result.accepted++;
            result.latencies.push(performance.now() - t0);
          } else {
            result.refused++;
            result.firstRefusal ??= end;
          }
        } catch {
          result.errors++;
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
