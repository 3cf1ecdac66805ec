// Enforced TLS on Haraka's outbound (3.3.4, outbound/hmail.js and outbound/tls.js). A queue item whose
// notes say TLS is required (route.ts, at get_mx) becomes one of Haraka's force_tls items: it goes on only
// after STARTTLS, and Haraka defers it when the MX offers none or when its certificate does not verify.
// Three Haraka steps are wrapped for that, and for saying what happened:
//
// - get_force_tls: required items are forced (besides Haraka's own force_tls_hosts, unused here);
// - obtls.get_tls_options: the certificate is checked against the system roots plus tls.caFile;
// - try_deliver_host_on_socket: the session's socket. Its upgrade() runs with rejectUnauthorized off,
//   so a certificate that does not verify ends in Haraka's own "failed TLS verification" deferral (with
//   rejectUnauthorized on, the handshake error would be read as the MX failing, and the next MX tried,
//   ending in "Tried all MXs"); the result (version, verified) goes to hmail.notes for the events, and
//   for a required item why it was refused ("certificate for mx.x does not verify: ...", or "the MX
//   offers no STARTTLS", seen in its EHLO answer).
//
// Opportunistic mail is as before: STARTTLS when offered, any certificate accepted, its result reported.
import type tls from 'node:tls';
import type { HarakaMx, HMailItem } from '../haraka.js';
import type { OutboundSocket } from '../hooks/connection-reuse.js';
import { TLS_FAILURE, TLS_REQUIRED, TLS_STATE, type TlsFailure, type TlsPolicy, type TlsState } from './tls-info.js';

type UpgradeCallback = (
  authorized: boolean,
  verifyError: Error | string | null | undefined,
  cert: tls.PeerCertificate | undefined,
  cipher: { version?: string } | undefined,
) => void;

/** Haraka's outbound socket (tls_socket's pluggableStream) as used here. */
export interface TlsSocket extends OutboundSocket {
  upgrade(options: tls.ConnectionOptions, cb?: UpgradeCallback): void;
  isEncrypted(): boolean | undefined;
  cleartext?: tls.TLSSocket;
}

export interface TlsProto {
  get_force_tls(this: HMailItem, mx: HarakaMx): boolean;
  try_deliver_host_on_socket(this: HMailItem, mx: HarakaMx, host: string, port: number, socket: TlsSocket): void;
}

/** Haraka's outbound/tls singleton: the one call wrapped. */
export interface OutboundTls {
  get_tls_options(mx: HarakaMx): tls.ConnectionOptions;
}

/** Readable reasons for OpenSSL's verification codes (the code follows in brackets). */
const REASONS: Record<string, string> = {
  DEPTH_ZERO_SELF_SIGNED_CERT: 'it is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'its chain ends in a self-signed certificate that is not trusted',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'it is issued by an authority that is not trusted',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'it is issued by an authority that is not trusted',
  UNABLE_TO_GET_ISSUER_CERT: 'it is issued by an authority that is not trusted',
  CERT_HAS_EXPIRED: 'it has expired',
  CERT_NOT_YET_VALID: 'it is not valid yet',
  CERT_REVOKED: 'it is revoked',
  CERT_UNTRUSTED: 'it is not trusted',
};

/** Why a certificate did not verify for `host`, in words. */
export function verifyReason(host: string, error: Error | string | null | undefined, cert: tls.PeerCertificate | undefined): string {
  const code = typeof error === 'string' ? error : ((error as NodeJS.ErrnoException | undefined)?.code ?? error?.message ?? 'unknown');
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID' && cert) {
    const names = cert.subjectaltname || (cert.subject?.CN ? `CN=${cert.subject.CN}` : 'none');
    return `it names ${names.replace(/DNS:/g, '')}, not ${host}`;
  }
  return `${REASONS[code] ?? 'it is not valid'} (${code})`;
}

/** Installs the wrappers; `ca` is the trusted roots when the operator adds some (undefined: node's own). */
export function installTlsEnforcement(proto: TlsProto, obtls: OutboundTls, ca: string[] | undefined): void {
  if (ca) {
    const options = obtls.get_tls_options;
    obtls.get_tls_options = function (mx) {
      return { ...options.call(this, mx), ca };
    };
  }

  const force = proto.get_force_tls;
  proto.get_force_tls = function (mx) {
    return Boolean(this.notes[TLS_REQUIRED]) || force.call(this, mx);
  };

  /** The queue item each socket serves now (a kept connection serves one after another). */
  const owner = new WeakMap<TlsSocket, HMailItem>();
  const wrapped = new WeakSet<TlsSocket>();

  function wrapUpgrade(socket: TlsSocket): void {
    if (wrapped.has(socket)) return;
    wrapped.add(socket);
    const upgrade = socket.upgrade;
    socket.upgrade = (options, cb) => {
      const hmail = owner.get(socket);
      const host = options.servername ?? '';
      // Verified or not is read in the callback (Haraka defers a required item that is not); see the top.
      upgrade.call(socket, { ...options, rejectUnauthorized: false }, (authorized, verifyError, cert, cipher) => {
        if (hmail && owner.get(socket) === hmail) {
          hmail.notes[TLS_STATE] = { used: true, version: cipher?.version ?? '', verified: authorized } satisfies TlsState;
          if (!authorized && hmail.notes[TLS_REQUIRED])
            hmail.notes[TLS_FAILURE] = {
              reason: `TLS required (${hmail.notes[TLS_REQUIRED]}): certificate for ${host} does not verify: ${verifyReason(host, verifyError, cert)}`,
              enhancedCode: '4.7.5',
              mx: host,
            } satisfies TlsFailure;
        }
        cb?.(authorized, verifyError, cert, cipher);
      });
      // A handshake that fails outright (no common protocol, a reset) never reaches the callback.
      socket.cleartext?.once('error', (err: Error) => {
        if (hmail && owner.get(socket) === hmail && hmail.notes[TLS_REQUIRED] && !hmail.notes[TLS_FAILURE])
          hmail.notes[TLS_FAILURE] = {
            reason: `TLS required (${hmail.notes[TLS_REQUIRED]}): the TLS handshake with ${host} failed: ${err.message}`,
            enhancedCode: '4.7.5',
            mx: host,
          } satisfies TlsFailure;
      });
    };
  }

  /**
   * A required item whose MX refuses EHLO: Haraka falls back to HELO, which its force_tls guard then refuses to
   * send (a plain command on a forced socket), and leaves the item there, neither deferred nor done. Once Haraka has
   * had the line, the item is deferred here, with the reason.
   */
  function refusedEhlo(socket: TlsSocket, hmail: HMailItem & { temp_fail?(err: string): void }, host: string, line: string, onLine: (l: string) => void): void {
    socket.removeListener('line', onLine);
    const required = hmail.notes[TLS_REQUIRED] as TlsPolicy;
    const failure: TlsFailure = {
      reason: `TLS required (${required}): the MX ${host} refused EHLO (${line
        .replace(/\p{Cc}+/gu, ' ')
        .trim()
        .slice(0, 120)}), so it offers no STARTTLS`,
      enhancedCode: '4.7.10',
      mx: host,
    };
    hmail.notes[TLS_FAILURE] = failure;
    setImmediate(() => {
      // Released (release_client removes every listener) without an outcome: Haraka's guard stopped it.
      if (owner.get(socket) === hmail && hmail.notes[TLS_FAILURE] === failure && socket.listenerCount('line') === 0) {
        owner.delete(socket);
        hmail.temp_fail?.(failure.reason);
      }
    });
  }

  /** Until the EHLO answer of a new session: a required item whose MX offers no STARTTLS is deferred by Haraka; this says why. */
  function watchEhlo(socket: TlsSocket, hmail: HMailItem, host: string): void {
    let offered = false;
    let greeted = false;
    const onLine = (line: string) => {
      if (owner.get(socket) !== hmail) return socket.removeListener('line', onLine);
      // The greeting (220) first: a refusal before it is the server refusing the session, which Haraka handles.
      if (!greeted) {
        if (/^220 /.test(line)) greeted = true;
        return;
      }
      if (/^5\d\d /.test(line) && hmail.notes[TLS_REQUIRED]) return refusedEhlo(socket, hmail, host, line, onLine);
      if (!line.startsWith('250')) return;
      if (/^250[ -]STARTTLS\b/i.test(line)) offered = true;
      if (line[3] === '-') return;
      socket.removeListener('line', onLine);
      const required = hmail.notes[TLS_REQUIRED] as TlsPolicy | undefined;
      if (!offered && required && !socket.isEncrypted())
        hmail.notes[TLS_FAILURE] = {
          reason: `TLS required (${required}): the MX ${host} offers no STARTTLS`,
          enhancedCode: '4.7.10',
          mx: host,
        } satisfies TlsFailure;
    };
    // Before Haraka's own listener, which defers the item on this very line.
    socket.prependListener('line', onLine as (...args: unknown[]) => void);
  }

  const onSocket = proto.try_deliver_host_on_socket;
  proto.try_deliver_host_on_socket = function (mx, host, port, socket) {
    delete this.notes[TLS_FAILURE];
    owner.set(socket, this);
    const name = mx.from_dns ?? host;
    // A kept connection (gateway/hooks/connection-reuse.ts) is under TLS already, or never will be.
    this.notes[TLS_STATE] = (
      socket.isEncrypted()
        ? { used: true, version: socket.cleartext?.getProtocol() ?? '', verified: Boolean(socket.isSecure()) }
        : { used: false, version: '', verified: false }
    ) satisfies TlsState;
    if (typeof socket.upgrade === 'function') wrapUpgrade(socket);
    if (!socket.__fromPool && !socket.isEncrypted()) watchEhlo(socket, this, name);
    return onSocket.call(this, mx, host, port, socket);
  };
}
