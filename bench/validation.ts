// `node --import tsx bench/validation.ts`: CPU µs to validate one send request (the schema of
// POST /v1/emails, also used for SMTP and gRPC submissions) with text and html bodies of 300 B to
// 1 MB each, with Ajv's own code-point count for maxLength (ucs2length, a loop over every char)
// and then with core/ajv-length.ts in its place, in one run. Figures only; nothing is asserted.
import { Ajv } from 'ajv';
import { sendRequestSchema } from '../control/mail/schema.js';
import { loadConfig } from '../core/config.js';

const SIZES = [300, 20_000, 1_000_000];
// The default limits (no POSTGATE_CONFIG): bodies up to 5 MB.
const { limits } = loadConfig({});

function measure(label: string): void {
  const validate = new Ajv({ allErrors: false, coerceTypes: false, removeAdditional: false }).compile(sendRequestSchema(limits));
  for (const size of SIZES) {
    const req = { from: 'a@b.test', to: 'c@d.test', subject: 'Hi', text: 'x'.repeat(size), html: `<p>${'y'.repeat(size)}</p>` };
    const n = size > 100_000 ? 50 : 3000;
    for (let i = 0; i < 100; i++) validate(req);
    const t = process.cpuUsage();
    for (let i = 0; i < n; i++) if (!validate(req)) throw new Error(JSON.stringify(validate.errors));
    const used = process.cpuUsage(t);
    console.log(
      `${label.padEnd(34)} text + html of ${String(size).padStart(9)} chars each: ${((used.user + used.system) / n).toFixed(1).padStart(8)} µs CPU per validation`,
    );
  }
}

measure("Ajv's ucs2length");
await import('../core/ajv-length.js');
measure('core/ajv-length.ts (codePoints)');
