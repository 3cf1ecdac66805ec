// `npm run bench:tracking`: open and click tracking's request path, the pixel (GET /o/…gif) and the
// click redirect (GET /c/…) that control's public listener answers by Host (control/tracking), next to
// the hello-world and control's own /healthz measured in the same run with the same generator.
//
// The URLs are real: a loopback DNS server holds acme.test's records and its tracking CNAME
// (links.acme.test → the operator's tracking host), a project's domain with open and click tracking
// on is verified, one email with an html link goes through the gateway to a loopback MX, and the
// pixel and the link are read from the delivered message. Each is then loaded with the tracking host
// in Host and a browser's user agent (so each hit counts as a person's); a link with a scanner's user
// agent, and a tampered link (its MAC changed: a 404) briefly. Rows, in order: hello-world, /healthz,
// pixel, click, click (scanner), tampered, /healthz, hello-world; the ratios are to the mean of the
// two runs of each anchor.
//
// Per row: requests/s, p50/p99, control's CPU µs per request (user + system from /proc) while the
// load runs and until the hits are recorded (the recorder writes them off the request path, in
// batches), the fetches the generator completed (warm-up included) against the hits recorded (the
// email's counts in GET /v1/emails/:id; an answer in flight when the generator stops may be recorded
// and not counted), and how long after the load the last hit was written. Control's and the stack's
// peak memory over the tracking rows, and the recorder's metrics (recorded, dropped).
//
// SQLite, loopback only, bounded: BENCH_SECONDS (5) per row after a 1 s warm-up, half that for the
// scanner and tampered rows; BENCH_CONNECTIONS (32). Writes bench/results/tracking-<time>.json.
import { fileURLToPath } from 'node:url';
import http from 'node:http';
import { prepare } from './lib/prepare.js';

await prepare();

const { simpleParser } = await import('mailparser');
const { startHello, stopChild } = await import('./lib/baseline.js');
const { Stack, sleep } = await import('../test/helpers/stack.js');
const { startDnsServer } = await import('../test/helpers/dns-server.js');
const { startMxSink, messageIdOf } = await import('../test/helpers/mx-sink.js');
const { httpGenerator, httpLoad, describeGenerator } = await import('./lib/http-load.js');
const { cpuMs, cpuOf, sampleMemory } = await import('./lib/proc.js');
const { writeResult } = await import('./lib/results.js');
type HttpRun = import('./lib/http-load.js').HttpRun;
type HttpRequest = import('./lib/http-load.js').HttpRequest;

const SECONDS = Number(process.env.BENCH_SECONDS || 5);
const SHORT = Math.max(1, Math.round(SECONDS / 2));
const WARMUP = 1;
const CONNECTIONS = Math.min(4096, Math.max(1, Number(process.env.BENCH_CONNECTIONS) || 32));
/** Longest wait for the hits of a row to be written. */
const SETTLE_MS = 20_000;
const HOST = 'links.acme.test';
const CHROME = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36';
const SCANNER = 'Mozilla/5.0 (compatible; Mimecast URL Protect)';
const LINK = 'https://shop.example/p?a=1&b=2#top';
const HTML = `<html><body><p>Hi, <a href="https://shop.example/p?a=1&amp;b=2#top">the shop</a>.</p></body></html>`;

const log = (msg: string) => process.stderr.write(`[tracking] ${msg}\n`);
const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;
const gen = httpGenerator();

interface Row {
  name: string;
  status: string;
  rps: number;
  p50: number;
  p99: number;
  /** Control's CPU µs per request while the load ran (the hello-world's own for its rows). */
  cpuUs: number;
  /** The same, until the row's hits were recorded. */
  cpuRecordedUs?: number;
  fetched?: number;
  recorded?: number;
  bots?: number;
  /** Seconds from the load's end until the last of its hits was written. */
  lagS?: number;
  non2xx: number;
  errors: number;
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  const hello = async () => {
    const h = await startHello();
    try {
      await httpLoad(gen, { url: `${h.url}/` }, CONNECTIONS, WARMUP);
      const c0 = cpuMs([h.proc.pid!]);
      const run = await httpLoad(gen, { url: `${h.url}/` }, CONNECTIONS, SECONDS);
      const row = { name: 'hello-world GET /', status: '200', ...figures(run), cpuUs: ((cpuMs([h.proc.pid!]) - c0) * 1000) / run.requests };
      rows.push(row);
      log(`hello-world: ${round(run.rps, 0)} req/s, ${round(row.cpuUs)} µs CPU/req`);
    } finally {
      await stopChild(h.proc);
    }
  };
  await hello();

  const sink = await startMxSink();
  const dns = await startDnsServer([
    { type: 'MX', name: 'inbox.test', exchange: 'mx.inbox.test', priority: 10 },
    { type: 'A', name: 'mx.inbox.test', address: '127.0.0.1' },
  ]);
  const stack = await Stack.start({
    env: {
      POSTGATE_DNS_SERVERS: dns.address,
      POSTGATE_DELIVERY_PORT: String(sink.port),
      POSTGATE_SENDING_IPS: '127.0.0.1',
      POSTGATE_TRACKING_HOST: 'track.postgate.test',
      POSTGATE_TRACKING_HTTPS: 'false',
      POSTGATE_LOG_LEVEL: 'warn',
      // BENCH_PROFILE=<dir>: CPU profiles of the stack's processes, written when they stop (bench/lib/profile-top.ts reads them).
      ...(process.env.BENCH_PROFILE ? { NODE_OPTIONS: `--require ${fileURLToPath(new URL('./lib/profile-preload.cjs', import.meta.url))}` } : {}),
    },
  });
  try {
    // A domain with open and click tracking on, its records (the tracking CNAME too) published and verified.
    const p = await stack.createProject('tracked', 'Tracked');
    await stack.setPlan('tracked', 'scale', { rate: 100_000 }); // the polls of GET /v1/emails/:id are not limited
    const key = p.keys.live;
    const created = await stack.api('POST', '/v1/domains', key, { name: 'acme.test', open_tracking: true, click_tracking: true });
    if (created.status !== 201) throw new Error(`POST /v1/domains: ${created.status} ${JSON.stringify(created.body)}`);
    for (const r of created.body.records as Array<{ type: string; name: string; value: string; priority?: number }>) {
      if (r.type === 'MX') dns.add({ type: 'MX', name: r.name, exchange: r.value, priority: r.priority ?? 10 });
      else if (r.type === 'CNAME') dns.add({ type: 'CNAME', name: r.name, target: r.value });
      else dns.add({ type: 'TXT', name: r.name, value: r.value });
    }
    const verified = (await stack.api('POST', `/v1/domains/${created.body.id}/verify`, key)).body;
    const cname = verified.records?.find((r: { purpose?: string }) => r.purpose === 'tracking');
    if (verified.status !== 'verified' || cname?.status !== 'verified' || cname.name !== HOST)
      throw new Error(`domain or its tracking CNAME not verified: ${JSON.stringify(verified)}`);

    // One email; its pixel and link as the recipient's client sees them.
    const sent = await stack.api('POST', '/v1/emails', key, { from: 'Acme <hello@acme.test>', to: 'ann@inbox.test', subject: 'Tracked', html: HTML });
    if (sent.status !== 202) throw new Error(`POST /v1/emails: ${sent.status} ${JSON.stringify(sent.body)}`);
    const emailId = sent.body.id as string;
    const until = Date.now() + 30_000;
    let raw: Buffer | undefined;
    while (!raw && Date.now() < until) {
      raw = sink.messages.find((m) => messageIdOf(m) === emailId)?.raw;
      if (!raw) await sleep(100);
    }
    if (!raw) throw new Error(`email ${emailId} never reached the MX; see ${stack.logFile}`);
    const html = String((await simpleParser(raw)).html);
    const tracked = [...html.matchAll(/(?:href|src)=(["'])(.*?)\1/g)].map((m) => m[2]!.replace(/&amp;/g, '&')).filter((u) => u.startsWith(`http://${HOST}/`));
    const pixel = new URL(tracked.find((u) => u.endsWith('.gif')) ?? '').pathname;
    const click = new URL(tracked.find((u) => u.includes('/c/')) ?? '').pathname;
    const [, , , t, mac, enc] = click.split('/');
    const tampered = `/c/${emailId}/${t}/${mac![0] === 'A' ? 'B' : 'A'}${mac!.slice(1)}/${enc}`;
    const sentAt = Number.parseInt(t!, 36) * 1000;
    log(`pixel ${pixel}\n[tracking] link  ${click}`);

    const control = stack.pid('control');
    const gateway = stack.pid('gateway');
    const view = async () => (await stack.api('GET', `/v1/emails/${emailId}`, key)).body;
    /** The email's counts of one kind: every hit, and those judged a machine. */
    const counts = async (kind: 'opens' | 'clicks') => {
      const v = await view();
      return { count: Number(v.tracking?.[kind]?.count ?? 0), bots: Number(v.tracking?.[kind]?.bots ?? 0) };
    };
    /** Waits until the counts stop moving (the recorder writes every 200 ms): the last change's time. */
    const settle = async (kind: 'opens' | 'clicks', want: number) => {
      let last = await counts(kind);
      let changedAt = performance.now();
      const end = performance.now() + SETTLE_MS;
      while (performance.now() < end && performance.now() - changedAt < 1500) {
        await sleep(50);
        const now = await counts(kind);
        if (now.count !== last.count) changedAt = performance.now();
        last = now;
        if (last.count >= want && performance.now() - changedAt > 600) break;
      }
      return { ...last, changedAt };
    };

    const load = async (name: string, req: HttpRequest, seconds: number, kind?: 'opens' | 'clicks') => {
      // What the row's request gets (a redirect goes where the html pointed, nowhere else), before the
      // counts are read: a lone hit is written FLUSH_MS (200 ms) later.
      const got = await statusOf(req);
      if (got.location !== undefined && got.location !== LINK) throw new Error(`${name}: redirected to ${got.location}, not ${LINK}`);
      if (kind) await sleep(500);
      const before = kind ? await counts(kind) : undefined;
      const warm = await httpLoad(gen, req, CONNECTIONS, WARMUP);
      if (kind) await settle(kind, before!.count + warm.requests);
      const c0 = cpuOf(control).self;
      const run = await httpLoad(gen, req, CONNECTIONS, seconds);
      const ended = performance.now();
      const cLoad = cpuOf(control).self;
      const row: Row = { name, status: String(got.status), ...figures(run), cpuUs: ((cLoad - c0) * 1000) / run.requests };
      if (kind) {
        const after = await settle(kind, before!.count + warm.requests + run.requests);
        row.cpuRecordedUs = ((cpuOf(control).self - c0) * 1000) / run.requests;
        row.fetched = warm.requests + run.requests;
        row.recorded = after.count - before!.count;
        row.bots = after.bots - before!.bots;
        row.lagS = Math.max(0, (after.changedAt - ended) / 1000);
      }
      rows.push(row);
      log(
        `${name}: ${round(run.rps, 0)} req/s, p99 ${round(run.p99)} ms, ${round(row.cpuUs)} µs CPU/req` +
          (kind ? `, fetched ${row.fetched} recorded ${row.recorded} (bots ${row.bots}), last written ${round(row.lagS!, 2)} s after` : ''),
      );
    };
    const healthz = () => load('control GET /healthz', { url: `${stack.url}/healthz` }, SECONDS);
    const as = (path: string, ua: string): HttpRequest => ({ url: stack.url + path, headers: { Host: HOST, 'User-Agent': ua } });

    await sleep(1000); // control's start-up and the send's work are not a row's
    await healthz();
    const mem = sampleMemory(
      () => [stack.proc!.pid!],
      200,
      (pid) => (pid === control ? 'control' : pid === gateway ? 'gateway' : 'supervisor'),
    );
    await load('pixel GET /o/…gif (browser)', as(pixel, CHROME), SECONDS, 'opens');
    // A click within 10 s of the message leaving is a scanner's (control/tracking/bots.ts).
    await sleep(Math.max(0, sentAt + 11_000 - Date.now()));
    await load('click GET /c/… (browser)', as(click, CHROME), SECONDS, 'clicks');
    await load('click GET /c/… (scanner UA)', as(click, SCANNER), SHORT, 'clicks');
    await load('tampered link (404)', as(tampered, CHROME), SHORT);
    const peak = mem.stop();
    await healthz();

    const final = await view();
    const events = (final.events as Array<{ type: string }>).filter((e) => e.type === 'opened' || e.type === 'clicked');
    const metric = async (name: string) => {
      for (const base of [stack.url, stack.adminUrl]) {
        const r = await fetch(`${base}/metrics`).catch(() => undefined);
        if (!r?.ok) continue;
        const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(await r.text());
        if (m) return Number(m[1]);
      }
      return undefined;
    };
    const recorder = { recorded: await metric('postgate_tracking_hits_recorded_total'), dropped: await metric('postgate_tracking_hits_dropped_total') };
    const memory = {
      control_pss_mb: round((peak.byName.control ?? 0) / 2 ** 20),
      stack_pss_mb: round(peak.pss / 2 ** 20),
      stack_rss_sum_mb: round(peak.rssSum / 2 ** 20),
    };
    await stack.stop();
    await hello();
    report(rows, { emailId, events: events.length, recorder, memory, tracking: final.tracking });
  } finally {
    await stack.stop();
    await sink.close();
    await dns.close();
  }
}

/** The status one request of the row gets (node:http: fetch would not send our Host). */
function statusOf(req: HttpRequest): Promise<{ status: number; location?: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(req.url, { headers: req.headers }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location }));
      })
      .on('error', reject);
  });
}

function figures(run: HttpRun) {
  return { rps: run.rps, p50: run.p50, p99: run.p99, non2xx: run.non2xx, errors: run.errors };
}

function report(rows: Row[], extra: Record<string, unknown> & { memory: Record<string, number>; recorder: Record<string, unknown>; events: number }): void {
  const mean = (prefix: string) => {
    const a = rows.filter((r) => r.name.startsWith(prefix));
    return a.reduce((n, r) => n + r.rps, 0) / a.length;
  };
  const hello = mean('hello-world');
  const healthz = mean('control GET /healthz');
  console.log(
    `\nOpen and click tracking, ${describeGenerator(gen)}, ${CONNECTIONS} connections, ${SECONDS} s per row (${SHORT} s scanner and tampered), SQLite`,
  );
  console.table(
    rows.map((r) => ({
      measurement: r.name,
      status: r.status,
      'req/s': round(r.rps, 0),
      'p50 ms': round(r.p50, 2),
      'p99 ms': round(r.p99, 2),
      '× hello': round(r.rps / hello, 2),
      '× healthz': round(r.rps / healthz, 2),
      'CPU µs/req': round(r.cpuUs),
      'incl. recording': r.cpuRecordedUs === undefined ? '' : round(r.cpuRecordedUs),
      fetched: r.fetched ?? '',
      recorded: r.recorded ?? '',
      bots: r.bots ?? '',
      'lag s': r.lagS === undefined ? '' : round(r.lagS, 2),
      non2xx: r.non2xx,
      errors: r.errors,
    })),
  );
  console.log(
    `CPU µs/req: control's user + system time over the load (the hello-world's own on its rows); "incl. recording": until the row's hits were written.\n` +
      `fetched: requests the generator completed, warm-up included; recorded: the email's counts in GET /v1/emails/:id (bots: judged a machine).\n` +
      `events (opened and clicked) in the email's log: ${extra.events}; recorder metrics: ${JSON.stringify(extra.recorder)}.\n` +
      `peak memory over the tracking rows: control ${extra.memory.control_pss_mb} MB PSS; the stack ${extra.memory.stack_pss_mb} MB PSS, ${extra.memory.stack_rss_sum_mb} MB RSS summed.`,
  );
  const file = writeResult('tracking', {
    generator: gen,
    connections: CONNECTIONS,
    seconds: SECONDS,
    rows: rows.map((r) => ({ ...r, ratioHello: r.rps / hello, ratioHealthz: r.rps / healthz })),
    ...extra,
  });
  console.log(`figures written to ${file}`);
}

await main();
