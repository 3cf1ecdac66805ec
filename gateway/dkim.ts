// DKIM signing at Enqueue, before Haraka writes its queue file: the signature travels
// in the stored message (a retry resends the same signed bytes) and the private key,
// which came with the message from control, is used in memory only.
import { dkimSign } from 'mailauth/lib/dkim/sign.js';

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
