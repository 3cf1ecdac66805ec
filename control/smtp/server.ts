// SMTP submission (POSTGATE_SMTP_PORT): apps authenticate with AUTH PLAIN or
// LOGIN (any user name, password = a live API key) and submit messages that
// go through the same pipeline as POST /v1/emails. The reply to DATA carries
// the email id: `250 2.0.0 Ok: queued as <id>`. Clients on trusted networks (config
// `smtpTrusted`, off by default) may skip AUTH and send as the configured key.
import type net from 'node:net';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../../core/config.js';
import type { Logger } from '../../core/log.js';
import { ApiError } from '../../core/errors.js';
import { MAIL_KEYS, type KeyAuthenticator, type Caller } from '../api-keys/authenticate.js';
import type { MailPipeline } from '../mail/pipeline.js';
import { isAddress } from '../../common/address.js';
import { RateLimiter } from '../limits/rate-limit.js';
import { loadTls } from './tls.js';
import { idempotencyKeyOf, parseMessage, toSendRequest } from './message.js';
import { refuseNul } from '../../core/nul.js';
import { checkKey, type Idempotency } from '../mail/idempotency.js';
import { badRecipient, smtpError, smtpReply } from './replies.js';
import { trustedNetworks } from './trusted.js';
import { attachmentMessageBytes } from '../mail/attachments.js';
import { coalesceWrites } from '../../core/net/coalesce-writes.js';

/** MAIL FROM parameters of the extensions we offer (SIZE, 8BITMIME, SMTPUTF8). */
const MAIL_PARAMETERS = new Set(['SIZE', 'BODY', 'SMTPUTF8']);

export interface SmtpSubmissionDeps {
  config: Config;
  log: Logger;
  access: KeyAuthenticator;
  pipeline: Pick<MailPipeline, 'submit'>;
  /** Counts config.smtpRate (POSTGATE_CONFIG `smtpRate`, 300) emails per second per project; default: its own in-memory counters. */
  limiter?: RateLimiter;
  /** Idempotency keys of submitted messages (an Idempotency-Key or Resend-Idempotency-Key header); without it the header is ignored. */
  idempotency?: Idempotency;
}

export interface SmtpSubmission {
  port: number;
  close(): Promise<void>;
}

interface Conn {
  /** The key given at AUTH; resolved again at each MAIL so a revoked key or paused project applies at once. */
  plainKey: string;
  caller?: Caller;
}

const isLoopback = (ip: string | undefined) => !!ip && (ip.startsWith('127.') || ip === '::1' || ip.startsWith('::ffff:127.'));

const overRate = () => 'More than the SMTP rate of this project; try again in a second';

export async function startSmtpSubmission({
  config,
  log,
  access,
  pipeline,
  limiter = new RateLimiter(),
  idempotency,
}: SmtpSubmissionDeps): Promise<SmtpSubmission> {
  // Both bodies and the attachments at their limits, base64-encoded, plus room for headers; 552 above it.
  const maxMessageBytes = Math.ceil((config.limits.maxBodyBytes * 2 * 4) / 3) + 1024 * 1024 + attachmentMessageBytes(config.limits);
  const tls = await loadTls(config);
  const conns = new WeakMap<SMTPServerSession, Conn>();
  // Sessions per client address: one address cannot take the listener's 1,000 for itself.
  const perIp = new Map<string, number>();
  const counted = new WeakSet<SMTPServerSession>();
  // Trusted networks (config smtpTrusted, off by default): their sessions send as the configured key, without AUTH.
  const trusted = config.smtpTrusted;
  const isTrusted = trusted ? trustedNetworks(trusted.networks) : () => false;

  const server = new SMTPServer({
    name: config.mxHost,
    banner: 'postgate submission',
    key: tls.key,
    cert: tls.cert,
    authMethods: ['PLAIN', 'LOGIN'],
    // AUTH is offered before STARTTLS; onAuth refuses it in clear text except on loopback.
    allowInsecureAuth: true,
    // With trusted networks, MAIL without AUTH reaches onMailFrom, which answers 530 unless the session is trusted.
    authOptional: !!trusted,
    size: maxMessageBytes,
    // Enhanced codes are written by us (e.g. 451 4.7.1); smtp-server would derive them from the reply code alone.
    hideENHANCEDSTATUSCODES: true,
    hideDSN: true,
    disableReverseLookup: true,
    logger: false,
    closeTimeout: 3000,
    // An idle or stalled client is dropped after 30 s (smtp-server's default is 60 s), and the
    // listener takes at most 1,000 sessions at once: idle connections cannot pile up.
    socketTimeout: 30_000,
    maxClients: 1000,

    onConnect(session, callback) {
      const ip = session.remoteAddress ?? '';
      const n = perIp.get(ip) ?? 0;
      if (n >= config.smtpConnectionsPerIp) {
        log.warn({ remote: ip, sessions: n }, 'smtp: too many sessions from one address');
        return callback(smtpReply(421, '4.7.0', `Too many connections from your address (at most ${config.smtpConnectionsPerIp})`));
      }
      perIp.set(ip, n + 1);
      counted.add(session);
      if (trusted && isTrusted(ip)) conns.set(session, { plainKey: trusted.key });
      callback();
    },

    onClose(session) {
      if (!counted.delete(session)) return;
      const ip = session.remoteAddress ?? '';
      const n = (perIp.get(ip) ?? 1) - 1;
      if (n > 0) perIp.set(ip, n);
      else perIp.delete(ip);
    },

    onAuth(auth, session, callback) {
      if (!session.secure && !isLoopback(session.remoteAddress)) {
        return callback(smtpReply(538, '5.7.11', 'Encryption required: issue STARTTLS before AUTH'));
      }
      const plainKey = auth.password ?? '';
      access.resolve(plainKey, MAIL_KEYS).then(
        (caller) => {
          conns.set(session, { plainKey, caller });
          callback(null, { user: caller.project.id });
        },
        (err: unknown) => {
          if (!(err instanceof ApiError)) log.error({ err }, 'smtp auth lookup failed');
          log.info({ remote: session.remoteAddress, method: auth.method }, 'smtp auth refused');
          // A key that could not be looked up (the store unreachable) is not a wrong key: 454, try again (RFC 4954).
          if (err instanceof ApiError && err.code === 'STORE_UNAVAILABLE') return callback(smtpReply(454, '4.7.0', `STORE_UNAVAILABLE: ${err.message}`));
          callback(err instanceof ApiError ? smtpReply(535, '5.7.8', 'INVALID_API_KEY: Authentication credentials invalid') : smtpError(err));
        },
      );
    },

    onMailFrom(address, session, callback) {
      // RFC 5321 §4.1.1.11: a parameter we do not offer is refused, not ignored.
      const unknown = Object.keys(address.args || {}).find((k) => !MAIL_PARAMETERS.has(k.toUpperCase()));
      if (unknown) return callback(smtpReply(555, '5.5.4', `MAIL FROM parameter ${unknown} not recognized`));
      const conn = conns.get(session);
      if (!conn) return callback(smtpReply(530, '5.7.0', 'Authentication required'));
      access
        .resolve(conn.plainKey, MAIL_KEYS)
        .then((caller) => {
          conn.caller = caller;
          // Its own key: the HTTP API's request rate is counted apart.
          limiter.take(`smtp:${caller.project.id}`, config.smtpRate, 1000, overRate);
        })
        .then(
          () => callback(),
          (err: unknown) => callback(smtpError(err)),
        );
    },

    onRcptTo(address, session, callback) {
      if (!isAddress(address.address)) return callback(badRecipient(address.address));
      if (session.envelope.rcptTo.length >= config.limits.maxRecipients) {
        return callback(smtpReply(550, '5.5.3', `INVALID_REQUEST: Too many recipients (at most ${config.limits.maxRecipients} per email)`));
      }
      callback();
    },

    onData(stream: SMTPServerDataStream, session, callback) {
      const conn = conns.get(session);
      const recipients = session.envelope.rcptTo.map((r) => r.address);
      const chunks: Buffer[] = [];
      let bytes = 0;
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes <= maxMessageBytes) chunks.push(chunk); // the rest is only counted, then refused
      });
      stream.on('end', () => {
        if (stream.sizeExceeded || bytes > maxMessageBytes) {
          return callback(smtpError(new ApiError('PAYLOAD_TOO_LARGE', `Message exceeds the size limit of ${maxMessageBytes} bytes`)));
        }
        if (!conn?.caller) return callback(smtpReply(503, '5.5.1', 'MAIL first'));
        const caller = conn.caller;
        conn.caller = undefined;
        parseMessage(Buffer.concat(chunks, bytes))
          .then((mail) => {
            const request = toSendRequest(mail, recipients);
            refuseNul(request, 'The message'); // as HTTP does (core/nul.ts): no NUL reaches the store
            const key = checkKey(idempotencyKeyOf(mail));
            if (key === undefined || !idempotency) return pipeline.submit(caller, request);
            // The same key and message within 24 h: the first answer again, nothing new sent.
            return idempotency.submit(caller.project.id, key, request, (id) => pipeline.submit(caller, request, { id }));
          })
          .then(
            (accepted) => {
              log.debug({ projectId: caller.project.id, emailId: accepted.id }, 'smtp message queued');
              callback(null, `2.0.0 Ok: queued as ${accepted.id}`);
            },
            (err: unknown) => {
              if (!(err instanceof ApiError)) log.error({ err, projectId: caller.project.id }, 'smtp submission failed');
              callback(smtpError(err));
            },
          );
      });
    },
  });

  // A pipelining client's replies leave together (core/net/coalesce-writes.ts).
  server.server.on('connection', coalesceWrites);
  // Socket-level errors of one client (resets, bad TLS) must not take the process down.
  server.on('error', (err: Error) => log.debug({ err: err.message }, 'smtp connection error'));

  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(err);
    server.server.once('error', onError);
    server.listen(config.smtpPort, config.host, () => {
      server.server.off('error', onError);
      resolve();
    });
  });
  const port = (server.server.address() as net.AddressInfo).port;
  log.info({ smtp: `${config.host}:${port}`, tls: tls.selfSigned ? 'self-signed' : 'configured', ratePerSecond: config.smtpRate }, 'smtp submission ready');

  return {
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
