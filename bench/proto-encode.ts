// `node --import tsx bench/proto-encode.ts`: CPU µs to encode what control sends the gateway
// (an Enqueue of 50 emails of 20 kB, of 100 receipts) and what the gateway answers (100 results)
// with protobuf-es's toBinary, framed as grpc-js frames a message (one more copy), under glibc
// malloc settings in turn: the ones the supervisor gives control and the gateway
// (control/supervisor.ts MALLOC_ENV), the 128 kB mmap threshold it gave them before, and glibc's
// defaults. Each runs in a child process of its own (malloc reads them at start). toBinary grows
// one buffer by doubling and copies it out at the end, so a 1 MB message allocates several
// megabyte-sized blocks; what each costs depends on whether malloc takes it from its heap or maps
// fresh pages from the kernel. Figures only; nothing is asserted.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const SETTINGS: Record<string, Record<string, string>> = {
  "the supervisor's (1 MB mmap, 2 MB trim)": { MALLOC_MMAP_THRESHOLD_: '1048576', MALLOC_TRIM_THRESHOLD_: '2097152' },
  'mmap threshold 128 kB (before)': { MALLOC_MMAP_THRESHOLD_: '131072' },
  "glibc's defaults": {},
};

if (!process.env.BENCH_MALLOC) {
  for (const [name, env] of Object.entries(SETTINGS)) {
    console.log(`malloc: ${name}`);
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MALLOC_')));
    const r = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
      stdio: 'inherit',
      env: { ...clean, ...env, BENCH_MALLOC: name },
    });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
  process.exit(0);
}

const { create, toBinary } = await import('@bufbuild/protobuf');
const { prepare } = await import('./lib/prepare.js');
await prepare();
const pb = await import('../proto/gen/postgate/gateway/v1/gateway_pb.js');

const body = (bytes: number) => 'A line of a transactional message, repeated to the size asked.\r\n'.repeat(Math.ceil(bytes / 64)).slice(0, bytes);

function enqueue(emails: number, bytes: number) {
  const text = body(bytes);
  return create(pb.EnqueueRequestSchema, {
    contract: 7,
    messages: Array.from({ length: emails }, (_, i) => ({
      emailId: `019a7c2e-0000-7000-8000-${String(i).padStart(12, '0')}`,
      projectId: 'proj',
      key: `019a7c2e-0000-7000-8000-${String(i).padStart(12, '0')}/0`,
      mailFrom: `b+${i}@bounce.example.test`,
      rcptTo: ['someone@example.test'],
      senderDomain: 'example.test',
      compose: { from: 'Acme <hello@example.test>', to: ['someone@example.test'], subject: 'Your receipt', text, createdAtMs: 1n },
    })),
  });
}

const cases = [
  { name: 'Enqueue, 50 emails of 20 kB', schema: pb.EnqueueRequestSchema, msg: enqueue(50, 20_000), units: 50, rounds: 200 },
  { name: 'Enqueue, 100 receipts', schema: pb.EnqueueRequestSchema, msg: enqueue(100, 100), units: 100, rounds: 2000 },
  {
    name: 'EnqueueResponse, 100 results',
    schema: pb.EnqueueResponseSchema,
    msg: create(pb.EnqueueResponseSchema, { contract: 7, results: Array.from({ length: 100 }, (_, i) => ({ emailId: `e${i}`, key: `e${i}/0` })) }),
    units: 100,
    rounds: 2000,
  },
];

const framed = (b: Uint8Array) => {
  const out = Buffer.allocUnsafe(b.byteLength + 5);
  out.set(b, 5);
  return out;
};
for (const c of cases) {
  const encode = () => framed(toBinary(c.schema, c.msg as never));
  const { rounds } = c;
  for (let i = 0; i < rounds / 10; i++) encode();
  const t = process.cpuUsage();
  for (let i = 0; i < rounds; i++) encode();
  const used = process.cpuUsage(t);
  const perCall = (used.user + used.system) / rounds;
  console.log(`  ${c.name.padEnd(30)} ${perCall.toFixed(0).padStart(7)} µs CPU per call, ${(perCall / c.units).toFixed(1).padStart(6)} per item`);
}
