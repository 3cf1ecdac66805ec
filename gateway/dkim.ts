// DKIM signing at Enqueue, before Haraka writes its queue file: the signature travels
// in the stored message (a retry resends the same signed bytes) and the private key,
// which came with the message from control, is used in memory only.
import { createRequire } from 'node:module';
import type { KeyObject } from 'node:crypto';

const require = createRequire(import.meta.url);

/**
 * mailauth turns the PEM into a key object at every signature, which costs about as much
 * as the RSA signature itself. Its signer takes the parser from its tools module when it
 * loads, so the parser is memoized there first (by PEM; a domain has one key).
 */
const tools = require('mailauth/lib/tools') as { getPrivateKey(pem: string | Buffer): KeyObject };
const parse = tools.getPrivateKey;
const parsed = new Map<string, KeyObject>();
const KEYS_KEPT = 10_000;
tools.getPrivateKey = (pem) => {
  const k = typeof pem === 'string' ? pem : pem.toString('latin1');
  let key = parsed.get(k);
  if (!key) {
    key = parse(pem);
    if (parsed.size >= KEYS_KEPT) parsed.delete(parsed.keys().next().value!);
    parsed.set(k, key);
  }
  return key;
};
const { dkimSign } = require('mailauth/lib/dkim/sign') as typeof import('mailauth/lib/dkim/sign.js');

export interface DkimKey {
  domain: string;
  selector: string;
  privateKeyPem: string;
}

/**
 * What the signature covers. mailauth's default list lacks List-Unsubscribe-Post (an
 * RFC 8058 trap: receivers offer one-click only when both List-Unsubscribe headers are
 * signed) and Feedback-ID (Gmail counts complaints only on a signed one).
 */
export const SIGNED_HEADERS = [
  'From', 'Sender', 'Reply-To', 'Subject', 'Date', 'Message-ID', 'To', 'Cc',
  'MIME-Version', 'Content-Type', 'Content-Transfer-Encoding', 'Content-ID', 'Content-Description',
  'In-Reply-To', 'References', 'List-Id', 'List-Unsubscribe', 'List-Unsubscribe-Post', 'Feedback-ID',
].join(':');

export class DkimError extends Error {}

/** Returns the message with its DKIM-Signature header prepended (relaxed/relaxed, rsa-sha256 or ed25519). */
export async function signMessage(raw: Buffer, key: DkimKey): Promise<Buffer> {
  const { signatures, errors } = await dkimSign(raw, {
    canonicalization: 'relaxed/relaxed',
    // mailauth reads the list as a colon-separated string (its typings say string[]).
    headerList: SIGNED_HEADERS as unknown as string[],
    signatureData: [{ signingDomain: key.domain, selector: key.selector, privateKey: key.privateKeyPem }],
  } as unknown as Parameters<typeof dkimSign>[1]);
  // Never echo the key: only which domain and selector failed, and why.
  if (errors.length) throw new DkimError(`DKIM signing for ${key.domain} (${key.selector}) failed: ${String((errors[0] as { err?: Error }).err?.message ?? errors[0])}`);
  return Buffer.concat([Buffer.from(signatures), raw]);
}
