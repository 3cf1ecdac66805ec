// DKIM signing at Enqueue, before Haraka writes its queue file: the signature travels
// in the stored message (a retry resends the same signed bytes) and the private key,
// which came with the message from control, is used in memory only. A message of up to
// 64 kB is signed on the gateway's own thread; a larger one (and one streamed from a file)
// on a worker thread, so that canonicalizing and hashing megabytes does not stall the SMTP
// sessions under way.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const require = createRequire(import.meta.url);
const WORKER_FILE = require.resolve('./dkim-sign.cjs');
const core = require(WORKER_FILE) as {
  sign(raw: Buffer | NodeJS.ReadableStream, key: DkimKey): Promise<{ signatures: string } | { error: string }>;
  SIGNED_HEADERS: string;
};

export interface DkimKey {
  domain: string;
  selector: string;
  privateKeyPem: string;
}

export const SIGNED_HEADERS = core.SIGNED_HEADERS;

export class DkimError extends Error {}

const prepend = (res: { signatures: string } | { error: string }, raw: Buffer): Buffer => {
  if ('error' in res) throw new DkimError(res.error);
  return Buffer.concat([Buffer.from(res.signatures), raw]);
};

/** Returns the message with its DKIM-Signature header prepended (relaxed/relaxed), on this thread. */
export async function signMessage(raw: Buffer, key: DkimKey): Promise<Buffer> {
  return prepend(await core.sign(raw, key), raw);
}

/** The DKIM-Signature header of the message in `file`, read as a stream (a message too large to hold), on this thread. */
export async function signFile(file: string, key: DkimKey): Promise<Buffer> {
  return prepend(await core.sign(fs.createReadStream(file), key), Buffer.alloc(0));
}

/**
 * Up to this size a message is signed on this thread. The RSA signature of a receipt costs about
 * 0.3 ms, a 20 kB message's canonicalization and body hash little more, while handing either to
 * the worker and back cost more CPU than the signature itself, and the worker's isolate holds
 * 9-13 MB. In alternating bench:deliverability runs (receipts and 20 kB, via SMTP and the API)
 * signing here spent less CPU per delivered message, delivered as many or more msgs/s, and the
 * gateway's peak was 7-11 MB lower (the worker never starts while no message is larger).
 */
export const INLINE_SIGN_BYTES = 64 * 1024;

/** Signs small messages on this thread, large ones on a worker thread (started on first need); if the worker cannot run, on this one. */
export class Signer {
  private worker: Worker | undefined;
  /** `file`: the message is in that file, and only its signature header is answered. */
  private readonly pending = new Map<number, { raw: Buffer; file?: string; key: DkimKey; resolve: (b: Buffer) => void; reject: (e: Error) => void }>();
  private next = 0;
  private broken = false;
  private failures = 0;
  private readonly keyIds = new Map<string, number>();

  /** `inlineBytes`: the largest message signed on this thread (0: every message on the worker). */
  constructor(private readonly inlineBytes = INLINE_SIGN_BYTES) {}

  /** Whether a signing worker is running. */
  get threaded(): boolean {
    return this.worker !== undefined;
  }

  private start(): Worker | undefined {
    if (this.broken) return undefined;
    if (this.worker) return this.worker;
    // No execArgv: the worker is plain CommonJS and needs no TypeScript loader. Its heap only
    // ever holds the message in hand, so it is kept small (V8 would otherwise let garbage grow).
    const w = new Worker(WORKER_FILE, {
      workerData: { postgateDkim: true },
      execArgv: [],
      // The old generation still fits the largest message the API accepts, with its copies.
      resourceLimits: { maxYoungGenerationSizeMb: 4, maxOldGenerationSizeMb: 96, codeRangeSizeMb: 16 },
    });
    w.unref();
    w.on('message', (m: { id: number; signatures?: string; error?: string }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      try {
        p.resolve(prepend(m.error !== undefined ? { error: m.error } : { signatures: m.signatures! }, p.raw));
      } catch (err) {
        p.reject(err as Error);
      }
    });
    const fail = () => {
      if (this.worker !== w) return;
      // Whatever was in flight is signed here instead. A new worker starts for later messages,
      // unless they keep failing: then this thread signs from now on.
      this.worker = undefined;
      this.keyIds.clear(); // the next worker has been given no key yet
      this.broken = ++this.failures >= 3;
      const left = [...this.pending.values()];
      this.pending.clear();
      for (const p of left) (p.file ? signFile(p.file, p.key) : signMessage(p.raw, p.key)).then(p.resolve, p.reject);
    };
    w.on('error', fail);
    w.on('exit', fail);
    this.worker = w;
    return w;
  }

  sign(raw: Buffer, key: DkimKey): Promise<Buffer> {
    if (raw.length <= this.inlineBytes) return signMessage(raw, key);
    const w = this.start();
    if (!w) return signMessage(raw, key);
    return this.post(w, { raw, key });
  }

  /** The DKIM-Signature header of the message in `file`; the worker reads the file itself, so the message never crosses threads. */
  signFile(file: string, key: DkimKey): Promise<Buffer> {
    const w = this.start();
    if (!w) return signFile(file, key);
    return this.post(w, { raw: Buffer.alloc(0), file, key });
  }

  private post(w: Worker, { raw, file, key }: { raw: Buffer; file?: string; key: DkimKey }): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const id = this.next++;
      this.pending.set(id, { raw, ...(file ? { file } : {}), key, resolve, reject });
      // The worker keeps each key it was given: later messages name it by number only.
      const k = `${key.domain}\n${key.selector}\n${key.privateKeyPem}`;
      let keyId = this.keyIds.get(k);
      if (keyId === undefined) {
        keyId = this.keyIds.size;
        this.keyIds.set(k, keyId);
        w.postMessage({ id, raw, file, keyId, key });
      } else {
        w.postMessage({ id, raw, file, keyId });
      }
    });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.broken = true;
    await w?.terminate();
  }
}
