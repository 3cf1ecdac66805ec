// Two of postgate's stages measured alone, in the benchmark's process, one message at a time:
// building the MIME message (nodemailer, as the gateway does) and signing it (DKIM as the gateway signs, gateway/dkim-relaxed.cjs,
// RSA-2048, relaxed/relaxed). Imported once the generated code exists (bench/lib/prepare.ts).
// dkim.ts first: it tunes mailauth's key parsing before anything else loads mailauth.
import { signMessage } from '../../gateway/dkim.js';
import { buildMime, type MessageParts } from '../../gateway/mime.js';
import { newDkimKey } from '../../control/domains/records.js';

export async function stageCosts(body: string): Promise<{ buildMs: number; signMs: number }> {
  const key = newDkimKey();
  const cpuPer = async (n: number, fn: (i: number) => Promise<unknown>) => {
    for (let i = 0; i < 50; i++) await fn(i);
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) await fn(i);
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / 1000 / n;
  };
  const parts = (): MessageParts => ({
    createdAtMs: BigInt(Date.now()),
    serviceHeaders: { 'Feedback-ID': 'p:transactional:postgate' },
    from: 'Acme <hello@acme.test>',
    to: ['r@bench.test'],
    cc: [],
    replyTo: [],
    subject: 'Your receipt',
    text: body,
    html: '',
    headers: {},
  });
  const sample = await buildMime('00000000-0000-4000-8000-000000000000', parts());
  const buildMs = await cpuPer(500, (i) => buildMime(`00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, parts()));
  const signMs = await cpuPer(500, () => signMessage(sample, { domain: 'acme.test', selector: 'pg202601', privateKeyPem: key.privatePem }));
  return { buildMs, signMs };
}
