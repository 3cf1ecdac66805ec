// `node --import tsx bench/lib/api-load.ts '<options as JSON>'`: HTTP load on postgate's API in a
// process of its own: `count` emails as POST /v1/emails/batch requests of `batch` each,
// `concurrency` requests in flight (keep-alive connections, undici's fetch), every email the
// same `email` (as smtp-source sends one message again and again). Prints
// "start <epoch ms>" just before the first request, then one JSON line: queued, refused, seconds.
interface Options {
  url: string;
  key: string;
  count: number;
  batch: number;
  concurrency: number;
  email: { from: string; to: string; subject: string; text: string };
}

const o = JSON.parse(process.argv[2] ?? '{}') as Options;
const headers = { authorization: `Bearer ${o.key}`, 'content-type': 'application/json' };
let next = 0;
let queued = 0;
let refused = 0;
let firstRefusal: string | undefined;
// One request first, outside the timing: it opens the connection pool's first socket.
await fetch(`${o.url}/healthz`).then((r) => r.text());
process.stdout.write(`start ${Date.now()}\n`);
const t0 = performance.now();
await Promise.all(
  Array.from({ length: o.concurrency }, async () => {
    while (next < o.count) {
      const size = Math.min(o.batch, o.count - next);
      next += size;
      const body = JSON.stringify(Array.from({ length: size }, () => o.email));
      const r = await fetch(`${o.url}/v1/emails/batch`, { method: 'POST', headers, body });
      const text = await r.text();
      const ok = r.status === 202 ? text.split('"status":"queued"').length - 1 : 0;
      queued += ok;
      refused += size - ok;
      if (ok < size) firstRefusal ??= `${r.status} ${text.slice(0, 300)}`;
    }
  }),
);
process.stdout.write(`${JSON.stringify({ queued, refused, firstRefusal, seconds: (performance.now() - t0) / 1000 })}\n`);
