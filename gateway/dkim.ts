// DKIM signing at Enqueue, before Haraka writes its queue file: the signature travels
// in the stored message (a retry resends the same signed bytes) and the private key,
// which came with the message from control, is used in memory only.
//
// mailauth does the DKIM work: header parsing, canonicalization (relaxed/relaxed), the
// body hash and the DKIM-Signature header. Only its last step, the RSA (or Ed25519)
// signature, is made here instead, through crypto.sign with a callback: that runs on
// libuv's thread pool, so SMTP sessions under way are not stalled by it, without the
// ~23 MB a worker thread's own V8 isolate costs (measured in bench/deliverability.ts).
import crypto, { type KeyObject } from 'node:crypto';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

interface ParsedHeaders {
  parsed: unknown[];
}
interface SignatureData {
  signingDomain: string;
  selector: string;
  privateKey: string;
  maxBodyLength?: number;
}
interface DkimSignerBase {
  headers: ParsedHeaders;
  headerList: string;
  signTime: Date;
  expires?: Date;
  signatureData: SignatureData[];
  bodyHashes: Map<string, { hash: string }>;
  signatureHeaders: string[];
  errors: Array<{ err: Error }>;
  getCanonicalization(sd: SignatureData): { canonicalization: string; bodyCanon: string };
}

const tools = require('mailauth/lib/tools') as {
  getSigningHeaderLines(parsed: unknown[], headerList: string): unknown;
  formatSignatureHeaderLine(type: 'DKIM', opts: Record<string, unknown>, folded: boolean): string;
  writeToStream(stream: NodeJS.WritableStream, input: Buffer): Promise<void>;
};
const { DkimSigner } = require('mailauth/lib/dkim/dkim-signer') as { DkimSigner: new (options: object) => DkimSignerBase & NodeJS.WritableStream };
const { generateCanonicalizedHeader } = require('mailauth/lib/dkim/header') as {
  generateCanonicalizedHeader(type: 'DKIM', lines: unknown, opts: Record<string, unknown>): { canonicalizedHeader: Buffer; dkimHeaderOpts: Record<string, unknown> };
};

export interface DkimKey {
  domain: string;
  selector: string;
  privateKeyPem: string;
}

/**
 * What the signature covers. mailauth's default list lacks List-Unsubscribe-Post (an RFC 8058
 * trap: receivers offer one-click only when both List-Unsubscribe headers are signed) and
 * Feedback-ID (Gmail counts complaints only on a signed one). mailauth reads it colon-separated.
 */
export const SIGNED_HEADERS = [
  'From', 'Sender', 'Reply-To', 'Subject', 'Date', 'Message-ID', 'To', 'Cc',
  'MIME-Version', 'Content-Type', 'Content-Transfer-Encoding', 'Content-ID', 'Content-Description',
  'In-Reply-To', 'References', 'List-Id', 'List-Unsubscribe', 'List-Unsubscribe-Post', 'Feedback-ID',
].join(':');

export class DkimError extends Error {}

// Turning a PEM into a key object costs about as much as the RSA signature itself; a domain has one key.
const keys = new Map<string, KeyObject>();
const KEYS_KEPT = 10_000;
function keyOf(pem: string): KeyObject {
  let key = keys.get(pem);
  if (!key) {
    key = crypto.createPrivateKey(pem);
    if (keys.size >= KEYS_KEPT) keys.delete(keys.keys().next().value!);
    keys.set(pem, key);
  }
  return key;
}

const signOffThread = (algorithm: string | null, data: Buffer, key: KeyObject) =>
  new Promise<Buffer>((resolve, reject) => crypto.sign(algorithm, data, key, (err, sig) => (err ? reject(err) : resolve(sig))));

/** mailauth's DKIM signer, one DKIM signature per message, whose signing step runs on the thread pool. */
class ThreadPoolDkimSigner extends DkimSigner {
  async finalize(): Promise<void> {
    for (const sd of this.signatureData) {
      try {
        const key = keyOf(sd.privateKey);
        const keyType = key.asymmetricKeyType;
        if (keyType !== 'rsa' && keyType !== 'ed25519') throw new Error(`Unsupported key type: "${keyType}"`);
        const algorithm = `${keyType}-sha256`;
        const { canonicalization, bodyCanon } = this.getCanonicalization(sd);
        const bodyHash = this.bodyHashes.get(`${bodyCanon}:sha256:${sd.maxBodyLength}`)?.hash ?? null;
        const { canonicalizedHeader, dkimHeaderOpts } = generateCanonicalizedHeader('DKIM', tools.getSigningHeaderLines(this.headers.parsed, this.headerList), {
          ...sd, instance: false, algorithm, canonicalization, signTime: this.signTime, expires: this.expires, bodyHash,
        });
        // RSA signs the canonical header with SHA-256 itself; Ed25519 (RFC 8463) signs its SHA-256 digest.
        const data = keyType === 'rsa' ? canonicalizedHeader : crypto.createHash('sha256').update(canonicalizedHeader).digest();
        dkimHeaderOpts.b = (await signOffThread(keyType === 'rsa' ? algorithm : null, data, key)).toString('base64');
        this.signatureHeaders.push(tools.formatSignatureHeaderLine('DKIM', dkimHeaderOpts, true));
      } catch (err) {
        this.errors.push({ err: err as Error });
      }
    }
  }
}

/** Returns the message with its DKIM-Signature header prepended (relaxed/relaxed). */
export async function signMessage(raw: Buffer, key: DkimKey): Promise<Buffer> {
  const signer = new ThreadPoolDkimSigner({
    canonicalization: 'relaxed/relaxed',
    // Given explicitly: without it mailauth reads the clock twice, once for the header it signs
    // and once for the header it writes, and a second that ticks in between breaks the signature.
    signTime: new Date(),
    headerList: SIGNED_HEADERS,
    signatureData: [{ signingDomain: key.domain, selector: key.selector, privateKey: key.privateKeyPem }],
  });
  await tools.writeToStream(signer, raw);
  // Never echo the key: only which domain and selector failed, and why.
  const failed = signer.errors[0];
  if (failed || !signer.signatureHeaders.length) {
    throw new DkimError(`DKIM signing for ${key.domain} (${key.selector}) failed: ${failed ? failed.err.message : 'no signature'}`);
  }
  return Buffer.concat([Buffer.from(signer.signatureHeaders.join('\r\n') + '\r\n'), raw]);
}
