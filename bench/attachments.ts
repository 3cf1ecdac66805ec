// `node --import tsx bench/attachments.ts`: the memory of a stack holding many large attachments.
// 100 emails, each with a 5 MB attachment (500 MB in all), are sent over HTTP to a stack whose
// receiving server turns every delivery away for now (451 at RCPT), so they all sit in the
// queue; then the receiver takes mail again and they are delivered. Prints the RSS and PSS of
// control and the gateway before, at the peak of and after queuing, and during and after the
// delivery, next to the attachment bytes queued. Figures only: nothing is asserted.
//
//   BENCH_EMAILS (100), BENCH_ATTACHMENT_MB (5), BENCH_CONCURRENCY (8) change the load.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import { build } from '../deploy/build.js';
import { startDnsServer } from '../test/helpers/dns-server.js';
import { Stack, sleep } from '../test/helpers/stack.js';

// Postgate runs as `npm start` runs it, from the compiled tree: built now, so it matches the sources.
build();

const EMAILS = Number(process.env.BENCH_EMAILS || 100);
const ATTACHMENT_BYTES = Number(process.env.BENCH_ATTACHMENT_MB || 5) * 1024 * 1024;
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY || 8);
const MB = 1024 * 1024;

interface Mem {
  rss: number;
  pss: number;
}

/** RSS and PSS of one process (smaps_rollup: shared pages split between the processes mapping them). */
function memOf(pid: number): Mem {
  try {
    const t = fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    const kB = (f: string) => Number(new RegExp(`^${f}:\\s+(\\d+) kB`, 'm').exec(t)?.[1] ?? 0) * 1024;
    return { rss: kB('Rss'), pss: kB('Pss') };
  } catch {
    return { rss: 0, pss: 0 };
  }
}

/** Samples control and the gateway every 100 ms, keeping each one's peak. */
function sampler(stack: Stack) {
  const peak = { control: { rss: 0, pss: 0 }, gateway: { rss: 0, pss: 0 } };
  const timer = setInterval(() => {
    for (const k of ['control', 'gateway'] as const) {
      const m = memOf(stack.pid(k));
      peak[k].rss = Math.max(peak[k].rss, m.rss);
      peak[k].pss = Math.max(peak[k].pss, m.pss);
    }
  }, 100);
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}

const now = (stack: Stack) => ({ control: memOf(stack.pid('control')), gateway: memOf(stack.pid('gateway')) });
const mb = (n: number) => (n / MB).toFixed(0).padStart(5);
const dirBytes = (dir: string): number =>
  fs.existsSync(dir)
    ? fs
        .readdirSync(dir, { withFileTypes: true })
        .reduce((n, e) => n + (e.isFile() ? fs.statSync(path.join(dir, e.name)).size : dirBytes(path.join(dir, e.name))), 0)
    : 0;

async function main(): Promise<void> {
  // The receiver: 451 at RCPT while paused (the messages stay queued, their files unread), then 250.
  let paused = true;
  let delivered = 0;
  const receiver = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    disableReverseLookup: true,
    logger: false,
    size: 100 * MB,
    onRcptTo(_a, _s, cb) {
      cb(paused ? Object.assign(new Error('4.3.0 Paused, try again later'), { responseCode: 451 }) : undefined);
    },
    onData(stream, _s, cb) {
      stream.on('data', () => {});
      stream.on('end', () => {
        delivered++;
        cb(null);
      });
    },
  });
  receiver.on('error', () => {});
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
  const receiverPort = (receiver.server.address() as { port: number }).port;
  const dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
  const stack = await Stack.start({
    env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(receiverPort), POSTGATE_LOG_LEVEL: 'warn' },
    // Quick retries, so delivery starts soon after the receiver takes mail again.
    config: { delivery: { retryDelays: [5], maxTempFailures: 50 } },
  });
  try {
    const p = await stack.createProject('attach-bench');
    await stack.setPlan('attach-bench', 'scale', { rate: 100000 });
    await stack.verifyDomain('attach-bench', 'acme.test');
    await sleep(2000);
    const before = now(stack);

    // Each email its own file: the bytes differ, so nothing could be shared by accident.
    const file = crypto.randomBytes(ATTACHMENT_BYTES);
    const peakQueue = sampler(stack);
    const t0 = performance.now();
    let next = 0;
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < EMAILS) {
          const i = next++;
          file.writeUInt32BE(i, 0);
          const r = await stack.api('POST', '/v1/emails', p.keys.live, {
            from: 'Acme <hello@acme.test>',
            to: `r${i}@inbox.test`,
            subject: `Report ${i}`,
            text: 'Attached.',
            attachments: [{ filename: `report-${i}.pdf`, content: file.toString('base64') }],
          });
          statuses.push(r.status);
        }
      }),
    );
    const acceptedMs = performance.now() - t0;
    const queueDir = path.join(stack.dataDir, 'gateway', 'queue');
    while (fs.readdirSync(queueDir).length < EMAILS) await sleep(100);
    const queuedMs = performance.now() - t0;
    const atQueue = peakQueue.stop();
    await sleep(5000);
    const afterQueue = now(stack);
    const storeBytes = fs
      .readdirSync(stack.dataDir)
      .filter((f) => f.startsWith('postgate.db'))
      .reduce((n, f) => n + fs.statSync(path.join(stack.dataDir, f)).size, 0);
    const queueBytes = dirBytes(queueDir);

    // The receiver takes mail again: Haraka reads each queued file as it sends it.
    paused = false;
    const peakDeliver = sampler(stack);
    const t1 = performance.now();
    while (delivered < EMAILS && performance.now() - t1 < 600_000) await sleep(200);
    const deliveredMs = performance.now() - t1;
    const atDeliver = peakDeliver.stop();
    await sleep(5000);
    const afterDeliver = now(stack);

    const accepted = statuses.filter((s) => s === 202).length;
    const total = EMAILS * ATTACHMENT_BYTES;
    console.log(
      `\n${EMAILS} emails × ${ATTACHMENT_BYTES / MB} MB attachment = ${total / MB} MB of attachments; ${accepted} accepted (202) in ${(acceptedMs / 1000).toFixed(1)} s, all in the gateway's queue after ${(queuedMs / 1000).toFixed(1)} s, delivered in ${(deliveredMs / 1000).toFixed(1)} s (${delivered} received)`,
    );
    console.log(`on disk: control's store ${mb(storeBytes)} MB, Haraka's queue ${mb(queueBytes)} MB (while queued)\n`);
    console.log('MB            control RSS  PSS   gateway RSS  PSS');
    const row = (name: string, m: { control: Mem; gateway: Mem }) =>
      console.log(`${name.padEnd(14)}${mb(m.control.rss)}      ${mb(m.control.pss)}  ${mb(m.gateway.rss)}      ${mb(m.gateway.pss)}`);
    row('before', before);
    row('peak queuing', atQueue);
    row('after queuing', afterQueue);
    row('peak delivery', atDeliver);
    row('after all', afterDeliver);
    console.log(
      JSON.stringify({
        bench: 'attachments',
        emails: EMAILS,
        attachmentMb: ATTACHMENT_BYTES / MB,
        totalMb: total / MB,
        accepted,
        acceptedS: +(acceptedMs / 1000).toFixed(1),
        queuedS: +(queuedMs / 1000).toFixed(1),
        deliveredS: +(deliveredMs / 1000).toFixed(1),
        storeMb: +(storeBytes / MB).toFixed(0),
        queueMb: +(queueBytes / MB).toFixed(0),
        memoryMb: Object.fromEntries(
          Object.entries({ before, peakQueuing: atQueue, afterQueuing: afterQueue, peakDelivery: atDeliver, afterAll: afterDeliver }).map(([k, v]) => [
            k,
            {
              control: { rss: Math.round(v.control.rss / MB), pss: Math.round(v.control.pss / MB) },
              gateway: { rss: Math.round(v.gateway.rss / MB), pss: Math.round(v.gateway.pss / MB) },
            },
          ]),
        ),
      }),
    );
  } finally {
    await stack.stop();
    await dns.close();
    await new Promise<void>((r) => receiver.close(() => r()));
  }
}

await main();
