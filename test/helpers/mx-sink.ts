// A receiving MX for tests (smtp-server on 127.0.0.1, free port, no AUTH, STARTTLS
// only when asked) that records what it accepts and answers as scripted, per recipient
// and per attempt: refuse at RCPT TO (550 5.1.1, 550 5.7.1, 450...), temp-fail the
// first N attempts then accept, hold the final answer to DATA for a while, or hang up
// on a sender that starts a second message on one connection. It counts connections.
import type { Socket } from 'node:net';
import { SMTPServer, type SMTPServerAddress, type SMTPServerSession } from 'smtp-server';

export interface Reply {
  code: number;
  /** Text after the code, enhanced status first, e.g. "5.1.1 User unknown". */
  message: string;
}

export interface Behaviour {
  /** Answers to MAIL FROM (scripted on '*') for the sink's MAIL commands 1, 2, ...; null or past the end: accept. */
  mail?: Array<Reply | null>;
  /** Answers to RCPT TO for this recipient's attempts 1, 2, ...; null or past the end: accept. */
  rcpt?: Array<Reply | null>;
  /** Answers to the end of DATA for attempts 1, 2, ...; null or past the end: 250. */
  data?: Array<Reply | null>;
  /** Hold the answer to DATA this long (ms), e.g. to kill the sender mid-session. */
  dataDelayMs?: number;
  /** Close the connection, without an answer, on a MAIL FROM that is not the connection's first. */
  hangUpOnReuse?: boolean;
}

export const replies = {
  noSuchUser: { code: 550, message: '5.1.1 <rcpt>: Recipient address rejected: User unknown' },
  policy: { code: 550, message: '5.7.1 Message rejected as spam by content policy' },
  greylisted: { code: 450, message: '4.2.0 Greylisted, please try again later' },
  tryLater: { code: 451, message: '4.3.0 Temporary local problem, try again' },
  closing: { code: 421, message: '4.7.0 Too many connections, closing' },
} satisfies Record<string, Reply>;

/** `n` temporary failures, then acceptance. */
export const tempFailFirst = (n: number, reply: Reply = replies.greylisted): Array<Reply | null> => Array(n).fill(reply);

export interface ReceivedMessage {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  /** The value of the X-Email-Id header the tests put in messages, when present. */
  emailId?: string;
  /** When the message was accepted (the 250 is written right after). */
  receivedAt: number;
  /** The connection it came over (smtp-server's session id). */
  connection: string;
  /** That connection was under TLS (STARTTLS). */
  tls: boolean;
  /** MAIL FROM carried SMTPUTF8. */
  smtputf8: boolean;
}

/** The id in a received message's Message-ID (`<id@domain>`): the email id of mail our builder made. */
export const messageIdOf = (m: ReceivedMessage): string | undefined => /^Message-ID:\s*<([^@>]+)@/im.exec(m.raw.toString('latin1'))?.[1];

export interface SinkOptions {
  /** Offer STARTTLS (smtp-server's built-in test certificate). */
  starttls?: boolean;
  /** Do not offer PIPELINING (RFC 2920) in the EHLO answer. */
  noPipelining?: boolean;
  /** STARTTLS with this certificate instead of smtp-server's built-in one (implies starttls). */
  tls?: { key: string; cert: string };
  /** Listen here instead of 127.0.0.1 on a free port (several MXes on one delivery port: 127.0.0.2, ...). */
  host?: string;
  port?: number;
}

export interface ConnectionCounts {
  opened: number;
  open: number;
  /** The most open at one time. */
  maxOpen: number;
}

export interface MxSink {
  port: number;
  messages: ReceivedMessage[];
  /** RCPT TO commands seen, per recipient (each is one attempt at it). */
  attempts(rcpt: string): number;
  /** Scripts one recipient ('*': everyone without a script of their own). */
  setBehaviour(rcpt: string, behaviour: Behaviour): void;
  /** Resolves once at least n messages were accepted. */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedMessage[]>;
  connections(): ConnectionCounts;
  /** Hangs up on every open connection without a word, as a server whose idle timeout ran out. */
  dropConnections(): void;
  /** The commands of each read that held a MAIL FROM, as they came off the wire (connections without TLS). */
  mailPackets(): string[][];
  close(): Promise<void>;
}

const key = (addr: string) => addr.toLowerCase();

function smtpError(reply: Reply): Error {
  return Object.assign(new Error(reply.message), { responseCode: reply.code });
}

export async function startMxSink(opts: SinkOptions = {}): Promise<MxSink> {
  const behaviours = new Map<string, Behaviour>();
  const rcptAttempts = new Map<string, number>();
  const dataAttempts = new Map<string, number>();
  const messages: ReceivedMessage[] = [];
  let waiters: Array<() => void> = [];
  const counts: ConnectionCounts = { opened: 0, open: 0, maxOpen: 0 };
  /** smtp-server keeps its connections and their sockets private; tests hang up on them. */
  const open = () => [...(server as unknown as { connections: Set<{ id: string; _socket: Socket }> }).connections];
  const socketOf = (id: string): Socket | undefined => open().find((c) => c.id === id)?._socket;
  /** MAIL FROM commands per connection. */
  const transactions = new Map<string, number>();
  const packets: string[][] = [];
  let mails = 0;

  const behaviourOf = (rcpt: string) => behaviours.get(key(rcpt)) ?? behaviours.get('*') ?? {};
  const bump = (m: Map<string, number>, k: string) => {
    const n = (m.get(k) ?? 0) + 1;
    m.set(k, n);
    return n;
  };

  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: opts.starttls || opts.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(opts.tls ? { key: opts.tls.key, cert: opts.tls.cert } : {}),
    hidePIPELINING: opts.noPipelining === true,
    logger: false,
    onConnect(_session, cb) {
      counts.opened++;
      counts.maxOpen = Math.max(counts.maxOpen, ++counts.open);
      cb();
    },
    onClose(session) {
      counts.open--;
      transactions.delete(session.id);
    },
    onMailFrom(_address, session, cb) {
      const n = bump(transactions, session.id);
      if (n > 1 && behaviourOf('*').hangUpOnReuse) {
        socketOf(session.id)?.destroy();
        return;
      }
      const reply = behaviourOf('*').mail?.[mails++];
      cb(reply ? smtpError(reply) : undefined);
    },
    onRcptTo(address: SMTPServerAddress, _session: SMTPServerSession, cb: (err?: Error | null) => void) {
      const attempt = bump(rcptAttempts, key(address.address));
      const reply = behaviourOf(address.address).rcpt?.[attempt - 1];
      cb(reply ? smtpError(reply) : undefined);
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const rcptTo = session.envelope.rcptTo.map((a) => a.address);
        const scripts = rcptTo.map(behaviourOf);
        const attempt = bump(dataAttempts, rcptTo.map(key).join(','));
        const reply = scripts.map((b) => b.data?.[attempt - 1]).find(Boolean);
        const delay = Math.max(0, ...scripts.map((b) => b.dataDelayMs ?? 0));
        setTimeout(() => {
          if (reply) return cb(smtpError(reply));
          const raw = Buffer.concat(chunks);
          const emailId = /^X-Email-Id:\s*(\S+)/im.exec(raw.toString('utf8'))?.[1];
          const from = session.envelope.mailFrom;
          messages.push({
            mailFrom: from ? from.address : '',
            rcptTo,
            raw,
            emailId,
            receivedAt: Date.now(),
            connection: session.id,
            tls: session.secure,
            smtputf8: Boolean(from && (from.args as Record<string, unknown> | undefined)?.SMTPUTF8),
          });
          for (const wake of waiters) wake();
          cb(null);
        }, delay);
      });
    },
  });
  server.on('error', () => {}); // a sender killed mid-session is expected in tests
  // What each read of a plain connection carried, for the commands a client sends together.
  server.server.on('connection', (socket: Socket) => {
    socket.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      if (/^MAIL FROM:/im.test(text)) packets.push(text.split('\r\n').filter(Boolean));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as { port: number }).port;

  return {
    port,
    messages,
    attempts: (rcpt) => rcptAttempts.get(key(rcpt)) ?? 0,
    setBehaviour(rcpt, behaviour) {
      behaviours.set(rcpt === '*' ? '*' : key(rcpt), behaviour);
    },
    waitFor(n, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (messages.length < n) return;
          clearTimeout(timer);
          waiters = waiters.filter((w) => w !== check);
          resolve(messages);
        };
        const timer = setTimeout(() => {
          waiters = waiters.filter((w) => w !== check);
          reject(new Error(`sink got ${messages.length} of ${n} messages in ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.push(check);
        check();
      });
    },
    connections: () => ({ ...counts }),
    dropConnections() {
      for (const c of open()) c._socket.destroy();
    },
    mailPackets: () => packets.map((p) => [...p]),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
