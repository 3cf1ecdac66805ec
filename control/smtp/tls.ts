// The STARTTLS key pair: the operator's (POSTGATE_TLS_CERT/KEY, file paths or
// PEM text) or a self-signed pair generated once into <dataDir>/tls/, so
// submission is encrypted out of the box (clients must accept the cert).
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Config } from '../../core/config.js';

export interface TlsPair {
  key: string;
  cert: string;
  selfSigned: boolean;
}

const pem = (v: string) => (v.trimStart().startsWith('-----BEGIN') ? v : fs.readFileSync(v, 'utf8'));

export async function loadTls(config: Config): Promise<TlsPair> {
  if (config.tlsCert || config.tlsKey) {
    if (!config.tlsCert || !config.tlsKey) throw new Error('POSTGATE_TLS_CERT and POSTGATE_TLS_KEY must be set together');
    return { cert: pem(config.tlsCert), key: pem(config.tlsKey), selfSigned: false };
  }
  const dir = path.join(config.dataDir, 'tls');
  const certFile = path.join(dir, 'cert.pem');
  const keyFile = path.join(dir, 'key.pem');
  try {
    return { cert: fs.readFileSync(certFile, 'utf8'), key: fs.readFileSync(keyFile, 'utf8'), selfSigned: true };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const names = [...new Set([config.mxHost, 'localhost'])];
  const altNames = [
    ...names.filter((n) => !net.isIP(n)).map((value) => ({ type: 2 as const, value })),
    ...[...new Set([...names.filter((n) => net.isIP(n)), '127.0.0.1'])].map((ip) => ({ type: 7 as const, ip })),
  ];
  const notBeforeDate = new Date(Date.now() - 60_000);
  const notAfterDate = new Date(Date.now() + 10 * 365 * 24 * 3600_000);
  const pair = await generateSelfSigned([{ name: 'commonName', value: names[0]! }], {
    keySize: 2048,
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate,
    extensions: [
      { name: 'subjectAltName', altNames },
      { name: 'extKeyUsage', serverAuth: true },
    ],
  });
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Written under temporary names and renamed, key first: a crash never leaves half a pair that is read later.
  for (const [file, body] of [
    [keyFile, pair.key],
    [certFile, pair.cert],
  ] as const) {
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, body, { mode: 0o600 });
    fs.renameSync(tmp, file);
  }
  return { cert: pair.cert, key: pair.key, selfSigned: true };
}

/** selfsigned's generate, run on a worker thread (self-signed.cjs says why). */
function generateSelfSigned(attributes: object[], options: object): Promise<{ key: string; cert: string }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./self-signed.cjs', import.meta.url), { workerData: { attributes, options }, execArgv: [] });
    worker.once('message', (m: { key: string; cert: string } | { error: string }) => {
      if ('error' in m) reject(new Error(`generating the self-signed STARTTLS certificate failed: ${m.error}`));
      else resolve(m);
      void worker.terminate();
    });
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`the certificate worker exited (${code}) without an answer`)));
  });
}
