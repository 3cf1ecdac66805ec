// DKIM signing with mailauth (dkimSign, relaxed/relaxed), shared by the gateway's main
// thread and its signing worker (gateway/dkim.ts starts it with this file). Plain
// CommonJS so the worker needs no TypeScript loader (a loader costs a thread of its own).
'use strict';
const { isMainThread, parentPort, workerData } = require('node:worker_threads');

// mailauth turns the PEM into a key object at every signature, which costs about as much
// as the RSA signature itself. Its signer takes the parser from its tools module when it
// loads, so the parser is memoized there first (by PEM; a domain has one key).
const tools = require('mailauth/lib/tools');
const parse = tools.getPrivateKey;
const parsed = new Map();
const KEYS_KEPT = 10000;
tools.getPrivateKey = (pem) => {
  const k = typeof pem === 'string' ? pem : pem.toString('latin1');
  let key = parsed.get(k);
  if (!key) {
    key = parse(pem);
    if (parsed.size >= KEYS_KEPT) parsed.delete(parsed.keys().next().value);
    parsed.set(k, key);
  }
  return key;
};
// Over-signing: From, Subject and To are named once more in h= than they occur. A missing
// header counts as empty (RFC 6376 §5.4.2), so a header of that name added after signing (a
// second From that a receiver might display) breaks the signature. mailauth lists only the
// headers present, so its list is extended here, before its signer takes the function.
const OVERSIGNED = ['From', 'Subject', 'To'];
const signingLines = tools.getSigningHeaderLines;
tools.getSigningHeaderLines = (parsedHeaders, fieldNames, verify) => {
  const lines = signingLines(parsedHeaders, fieldNames, verify);
  if (verify) return lines;
  return { ...lines, keys: [lines.keys, ...OVERSIGNED].filter(Boolean).join(': ') };
};
const { dkimSign } = require('mailauth/lib/dkim/sign');
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
      const privateKey = tools.getPrivateKey(key.privateKeyPem);
      if (privateKey.asymmetricKeyType === 'rsa')
        return { signatures: signRelaxed(raw, { domain: key.domain, selector: key.selector, privateKey, headerList: SIGNED_HEADERS, overSign: OVERSIGNED }) };
    } catch (err) {
      return { error: `DKIM signing for ${key.domain} (${key.selector}) failed: ${String(err?.message || err)}` };
    }
  }
  const { signatures, errors } = await dkimSign(raw, {
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
