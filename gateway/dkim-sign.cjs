// DKIM signing (relaxed/relaxed): our signer for messages in memory, mailauth for the rest.
// Shared by the gateway's main thread and its signing worker (gateway/dkim.ts starts it with
// this file). Plain CommonJS so the worker needs no TypeScript loader (a loader costs a thread of its own).
'use strict';
const { isMainThread, parentPort, workerData } = require('node:worker_threads');

// Key objects, memoized by PEM (a domain has one key): parsing a PEM costs about as much as
// the RSA signature itself.
const crypto = require('node:crypto');
const parsedKeys = new Map();
const KEYS_KEPT = 10000;
/** mailauth's parser (a PEM, or a raw 32-byte ed25519 key), memoized. */
function privateKeyOf(pem, parse) {
  const k = typeof pem === 'string' ? pem : pem.toString('latin1');
  let key = parsedKeys.get(k);
  if (!key) {
    key = parse(pem);
    if (!key) return key;
    if (parsedKeys.size >= KEYS_KEPT) parsedKeys.delete(parsedKeys.keys().next().value);
    parsedKeys.set(k, key);
  }
  return key;
}
/** The key of a PEM; null for anything else (mailauth also takes a raw ed25519 key). */
const pemKey = (pem) => {
  try {
    return crypto.createPrivateKey({ key: typeof pem === 'string' ? Buffer.from(pem) : pem, format: 'pem' });
  } catch {
    return null;
  }
};
// Over-signing: From, Subject and To are named once more in h= than they occur. A missing
// header counts as empty (RFC 6376 §5.4.2), so a header of that name added after signing (a
// second From that a receiver might display) breaks the signature.
const OVERSIGNED = ['From', 'Subject', 'To'];

// mailauth signs what our own signer does not (a message streamed from a file, a key other
// than RSA). It is loaded on that first use: it costs each thread that loads it about 10 MB
// of heap, and most gateways never need it.
let mailauthSign;
function mailauth() {
  if (mailauthSign) return mailauthSign;
  // Its signer takes these functions from its tools module when it loads, so they are replaced
  // first: the key parser memoized, and the h= list extended by the over-signed names (mailauth
  // lists only the headers present).
  const tools = require('mailauth/lib/tools');
  const parse = tools.getPrivateKey;
  tools.getPrivateKey = (pem) => privateKeyOf(pem, parse);
  const signingLines = tools.getSigningHeaderLines;
  tools.getSigningHeaderLines = (parsedHeaders, fieldNames, verify) => {
    const lines = signingLines(parsedHeaders, fieldNames, verify);
    if (verify) return lines;
    return { ...lines, keys: [lines.keys, ...OVERSIGNED].filter(Boolean).join(': ') };
  };
  mailauthSign = require('mailauth/lib/dkim/sign').dkimSign;
  return mailauthSign;
}
const { signRelaxed } = require('./dkim-relaxed.cjs');

// What the signature covers. mailauth's default list lacks List-Unsubscribe-Post (an RFC 8058
// trap: receivers offer one-click only when both List-Unsubscribe headers are signed) and
// Feedback-ID (Gmail counts complaints only on a signed one). mailauth reads it colon-separated.
const SIGNED_HEADERS = [
  'From',
  'Sender',
  'Reply-To',
  'Subject',
  'Date',
  'Message-ID',
  'To',
  'Cc',
  'MIME-Version',
  'Content-Type',
  'Content-Transfer-Encoding',
  'Content-ID',
  'Content-Description',
  'In-Reply-To',
  'References',
  'List-Id',
  'List-Unsubscribe',
  'List-Unsubscribe-Post',
  'Feedback-ID',
].join(':');

/**
 * @param {Buffer} raw
 * @param {{domain: string, selector: string, privateKeyPem: string}} key
 * @returns {Promise<{signatures: string} | {error: string}>}
 */
async function sign(raw, key) {
  // A message in memory: our own signer (dkim-relaxed.cjs): the same canonicalization without mailauth's stream parser.
  if (Buffer.isBuffer(raw)) {
    try {
      // Not a PEM, or not RSA: mailauth below.
      const privateKey = privateKeyOf(key.privateKeyPem, pemKey);
      if (privateKey?.asymmetricKeyType === 'rsa')
        return { signatures: signRelaxed(raw, { domain: key.domain, selector: key.selector, privateKey, headerList: SIGNED_HEADERS, overSign: OVERSIGNED }) };
    } catch (err) {
      return { error: `DKIM signing for ${key.domain} (${key.selector}) failed: ${String(err?.message || err)}` };
    }
  }
  const { signatures, errors } = await mailauth()(raw, {
    canonicalization: 'relaxed/relaxed',
    // Given explicitly: without it mailauth reads the clock twice, once for the header it signs
    // and once for the header it writes, and a second that ticks in between breaks the signature.
    signTime: new Date(),
    headerList: SIGNED_HEADERS,
    signatureData: [{ signingDomain: key.domain, selector: key.selector, privateKey: key.privateKeyPem }],
  });
  // Never echo the key: only which domain and selector failed, and why.
  if (errors.length) return { error: `DKIM signing for ${key.domain} (${key.selector}) failed: ${String(errors[0]?.err?.message || errors[0])}` };
  return { signatures };
}

if (!isMainThread && workerData && workerData.postgateDkim) {
  // Keys arrive once (with their first message) and are named by a number afterwards.
  const keys = new Map();
  parentPort.on('message', ({ id, raw, file, keyId, key }) => {
    if (key) keys.set(keyId, key);
    // A message in a file (one with attachments) is read here as a stream: never whole in memory.
    const input = file ? require('node:fs').createReadStream(file) : Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    sign(input, keys.get(keyId)).then(
      (res) => parentPort.postMessage({ id, ...res }),
      (err) => parentPort.postMessage({ id, error: `DKIM signing failed: ${String(err?.message)}` }),
    );
  });
}

module.exports = { sign, SIGNED_HEADERS };
