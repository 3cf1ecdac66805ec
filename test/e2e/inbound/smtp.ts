// A plain SMTP dialogue with the inbound listener, step by step, for what nodemailer hides: each
// RCPT's own answer and the answer after DATA.
import net from 'node:net';

export interface Dialogue {
  mailFrom: string;
  rcpts: string[];
  /** The whole message; omitted: stop after the RCPTs. */
  data?: string | Buffer;
  helo?: string;
}

export interface Answers {
  greeting: string;
  mail: string;
  rcpts: string[];
  data?: string;
  /** After the final dot. */
  end?: string;
}

export async function smtpDialogue(port: number, d: Dialogue): Promise<Answers> {
  const socket = net.connect(port, '127.0.0.1');
  socket.setEncoding('utf8');
  let buffer = '';
  const waiting: Array<(line: string) => void> = [];
  socket.on('data', (chunk: string) => {
    buffer += chunk;
    for (;;) {
      // A reply ends with a line "NNN text" (no dash after the code).
      const m = /^(?:\d{3}-.*\r\n)*\d{3}(?: .*)?\r\n/.exec(buffer);
      if (!m) break;
      buffer = buffer.slice(m[0].length);
      waiting.shift()?.(m[0].trimEnd());
    }
  });
  let failed: Error | undefined;
  const failures: Array<(err: Error) => void> = [];
  socket.on('error', (err) => {
    failed = err;
    for (const f of failures.splice(0)) f(err);
  });
  const reply = () =>
    new Promise<string>((resolve, reject) => {
      if (failed) return reject(failed);
      waiting.push(resolve);
      failures.push(reject);
    });
  const send = (line: string) => {
    const r = reply();
    socket.write(`${line}\r\n`);
    return r;
  };
  try {
    const greeting = await reply();
    await send(`EHLO ${d.helo ?? 'client.test'}`);
    const mail = await send(`MAIL FROM:<${d.mailFrom}>`);
    const rcpts: string[] = [];
    for (const r of d.rcpts) rcpts.push(await send(`RCPT TO:<${r}>`));
    const out: Answers = { greeting, mail, rcpts };
    if (d.data !== undefined && rcpts.some((r) => r.startsWith('250'))) {
      out.data = await send('DATA');
      const body = Buffer.isBuffer(d.data) ? d.data.toString('utf8') : d.data;
      const r = reply();
      socket.write(`${body.replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..')}\r\n.\r\n`);
      out.end = await r;
    }
    await send('QUIT').catch(() => '');
    return out;
  } finally {
    socket.destroy();
  }
}
