// `npm run bench:console`: the operator console's two budgets (issue 39).
//
// (a) Page weight: what the overview's first load fetches, the files the built index.html names
//     (its module script, stylesheets, modulepreload links) and the static imports of those modules,
//     compressed as control serves them (gzip and brotli), against 200 kB of JavaScript and CSS.
// (b) Data calls: for SQLite and for PostgreSQL (a database created and dropped here), a store with
//     BENCH_EMAILS (1,000,000) emails, each with its recipient and its events, spread over 30 days and
//     BENCH_PROJECTS (100) projects, BENCH_SUPPRESSIONS (10,000) suppressions and BENCH_AUTH_EVENTS
//     (100,000) sign-in events of the project whose pages are read, seeded straight into
//     the tables (bench/console-seed.ts clones a delivered and a bounced email a real stack sent first).
//     Then control and a gateway start on that store and every page's data calls (the admin API the
//     console uses) run BENCH_CALLS (50) times each, one after another, with the admin token: control's
//     CPU per call (/proc utime + stime of the control process before and after, divided by the calls:
//     anything else control does meanwhile counts too) and p50/p95 wall time, against 20 ms of CPU.
//
// Bounded: at most BENCH_CALL_SECONDS (20) s per endpoint, 120 s for the template emails; loopback only.
// BENCH_BACKENDS=sqlite (or postgres) runs one, BENCH_BACKENDS= none (the page weight only). Figures go to bench/results/console-<time>.json.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { prepare, root } from './lib/prepare.js';

await prepare();
// The front end too (Vite), into the same tree: the server's build empties it first.
await (await import('../deploy/build-console.js')).buildConsole((await import('../deploy/build.js')).dist);

const { Stack, sleep } = await import('../test/helpers/stack.js');
const { startDnsServer } = await import('../test/helpers/dns-server.js');
const { startMxSink } = await import('../test/helpers/mx-sink.js');
const { dist } = await import('../deploy/build.js');
const { cpuOf } = await import('./lib/proc.js');
const { writeResult } = await import('./lib/results.js');
const { seedSqlite, seedPostgres } = await import('./console-seed.js');

const EMAILS = Number(process.env.BENCH_EMAILS ?? 1_000_000);
const PROJECTS = Number(process.env.BENCH_PROJECTS ?? 100);
const SUPPRESSIONS = Number(process.env.BENCH_SUPPRESSIONS ?? 10_000);
const AUTH_EVENTS = Number(process.env.BENCH_AUTH_EVENTS ?? 100_000);
const CALLS = Number(process.env.BENCH_CALLS ?? 50);
const CALL_SECONDS = Number(process.env.BENCH_CALL_SECONDS ?? 20);
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'sqlite,postgres').split(',').filter(Boolean);
const PG_URL = process.env.POSTGATE_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const WEIGHT_BUDGET = 200 * 1024;
const CPU_BUDGET_MS = 20;
const log = (msg: string) => process.stderr.write(`[console] ${msg}\n`);
const round = (n: number, d = 2) => Math.round(n * 10 ** d) / 10 ** d;
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? 0;

// ------------------------------------------------------------------------------------- (a) weight

interface Asset {
  file: string;
  bytes: number;
  gzip: number;
  brotli: number;
}

/** The JS and CSS the overview's first load fetches: what index.html names, and their static imports. */
function firstLoad(): { assets: Asset[]; total: { bytes: number; gzip: number; brotli: number } } | { missing: string } {
  const dir = path.join(dist, 'console');
  const index = path.join(dir, 'index.html');
  if (!fs.existsSync(index)) return { missing: `${path.relative(root, index)} (the console is not built)` };
  const html = fs.readFileSync(index, 'utf8');
  // Under base /console/: a URL of the page maps to a file of the console directory.
  const fileOf = (url: string) =>
    path.join(
      dir,
      url
        .replace(/^\/console\//, '')
        .replace(/^\.\//, '')
        .split(/[?#]/)[0]!,
    );
  const queue: string[] = [];
  for (const m of html.matchAll(/<script\b[^>]*\bsrc="([^"]+)"/g)) queue.push(fileOf(m[1]!));
  for (const m of html.matchAll(/<link\b[^>]*>/g)) {
    const tag = m[0];
    const href = /\bhref="([^"]+)"/.exec(tag)?.[1];
    if (href && /\brel="(stylesheet|modulepreload)"/.test(tag)) queue.push(fileOf(href));
  }
  const seen = new Set<string>();
  const assets: Asset[] = [];
  while (queue.length) {
    const file = queue.shift()!;
    if (seen.has(file) || !fs.existsSync(file)) continue;
    seen.add(file);
    const body = fs.readFileSync(file);
    assets.push({
      file: path.relative(dir, file),
      bytes: body.length,
      gzip: zlib.gzipSync(body, { level: 9 }).length,
      brotli: zlib.brotliCompressSync(body, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
    });
    if (file.endsWith('.js')) {
      // Static imports only (`import … from "./x.js"`, `import "./x.js"`): a dynamic import() loads later.
      const text = body.toString('utf8');
      for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*)["'](\.{1,2}\/[^"']+)["']/g)) queue.push(path.resolve(path.dirname(file), m[1]!));
    }
  }
  const sum = (k: 'bytes' | 'gzip' | 'brotli') => assets.reduce((n, a) => n + a[k], 0);
  return { assets, total: { bytes: sum('bytes'), gzip: sum('gzip'), brotli: sum('brotli') } };
}

const weight = firstLoad();
if ('missing' in weight) log(`page weight: ${weight.missing}`);
else {
  console.log('\nOverview first load (JavaScript and CSS), budget 200 kB compressed');
  console.table(
    weight.assets.map((a) => ({ file: a.file, raw_kB: round(a.bytes / 1024, 1), gzip_kB: round(a.gzip / 1024, 1), brotli_kB: round(a.brotli / 1024, 1) })),
  );
  const t = weight.total;
  console.log(
    `total: ${round(t.bytes / 1024, 1)} kB raw, ${round(t.gzip / 1024, 1)} kB gzip, ${round(t.brotli / 1024, 1)} kB brotli: ${t.gzip <= WEIGHT_BUDGET ? 'within' : 'OVER'} the budget`,
  );
}

// ------------------------------------------------------------------------------------- (b) data calls

const DOMAINS = ['gmail.com', 'outlook.com', 'yahoo.com', 'icloud.com', 'gmx.de', 'mail.ru', 'proton.me', 'example-corp.com'];

interface CallRow {
  backend: string;
  call: string;
  status: number;
  /** Items in the answer's `data` (a list or search), null for a single object. */
  found: number | null;
  calls: number;
  control_cpu_ms: number;
  p50_ms: number;
  p95_ms: number;
  within: boolean;
}

async function createDatabase(name: string): Promise<string> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS ${name}`);
    await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  const u = new URL(PG_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

async function dropDatabase(name: string): Promise<void> {
  const { default: pg } = await import('pg');
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await c.end();
  }
}

async function runBackend(backend: string): Promise<{ rows: CallRow[]; seed: unknown }> {
  const dbName = `postgate_bench_console_${process.pid}`;
  const databaseUrl = backend === 'postgres' ? await createDatabase(dbName) : undefined;
  const sink = await startMxSink();
  const dns = await startDnsServer(
    DOMAINS.flatMap((d) => [
      { type: 'MX' as const, name: d, exchange: `mx.${d}`, priority: 10 },
      { type: 'A' as const, name: `mx.${d}`, address: '127.0.0.1' },
    ]),
  );
  const stack = await Stack.start({
    env: {
      POSTGATE_DNS_SERVERS: dns.address,
      POSTGATE_DELIVERY_PORT: String(sink.port),
      POSTGATE_LOG_LEVEL: 'warn',
      ...(databaseUrl ? { POSTGATE_DATABASE_URL: databaseUrl, POSTGATE_SECRET: crypto.randomBytes(32).toString('hex') } : {}),
    },
    config: { delivery: { retryDelays: [1], maxTempFailures: 3, connectTimeout: 5 } },
  });
  try {
    // Projects (the admin API), two real emails to clone, and webhooks whose deliveries get seeded.
    const t0 = Date.now();
    const projects: Array<{ id: string; slug: string; key: string }> = [];
    for (let i = 0; i < PROJECTS; i++) {
      const p = await stack.createProject(`shop${String(i).padStart(3, '0')}`, `Shop ${i}`);
      projects.push({ id: p.id, slug: p.slug, key: p.keys.live });
    }
    const first = projects[0]!;
    await stack.setPlan(first.slug, 'scale');
    await stack.verifyDomain(first.slug, `${first.slug}.test`);
    const webhooks: Array<{ id: string; projectId: string }> = [];
    for (const p of projects.slice(0, 5)) {
      // A name nobody resolves may be registered (it is checked at each delivery): nothing leaves the machine.
      const r = await stack.api('POST', '/v1/webhooks', p.key, { url: `https://hooks.${p.slug}.invalid/postgate` });
      if (r.status !== 201) throw new Error(`webhook: ${r.status} ${JSON.stringify(r.body)}`);
      webhooks.push({ id: r.body.id, projectId: p.id });
    }
    const send = async (to: string) => {
      const r = await stack.api('POST', '/v1/emails', first.key, {
        from: `hello@${first.slug}.test`,
        to,
        subject: 'Your receipt #1000',
        text: 'Thanks for your order.',
      });
      if (r.status !== 202) throw new Error(`send: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.id as string;
    };
    sink.setBehaviour('nobody@gmail.com', { rcpt: [{ code: 550, message: '5.1.1 The email account that you tried to reach does not exist.' }] });
    const delivered = await send('ann@gmail.com');
    const bounced = await send('nobody@gmail.com');
    await stack.waitEmail(first.key, delivered, (e) => e.status === 'sent' || e.status === 'delivered', 120_000);
    await stack.waitEmail(first.key, bounced, (e) => e.status === 'bounced', 120_000);
    log(`${backend}: ${PROJECTS} projects and two template emails in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    // Seed with control stopped (SQLite: one writer; both: no cache holds the old counts).
    await stack.stop();
    const plan = {
      emails: EMAILS,
      suppressions: SUPPRESSIONS,
      authEvents: AUTH_EVENTS,
      days: 30,
      projects,
      templates: { delivered, bounced },
      webhooks,
      now: Date.now(),
    };
    const seed = databaseUrl ? await seedPostgres(databaseUrl, plan) : await seedSqlite(stack.dataDir, plan);
    log(`${backend}: seeded ${seed.emails} emails, ${seed.events} events, ${seed.suppressions} suppressions in ${seed.seconds} s`);
    await stack.boot();
    await sleep(3000); // control's start-up work (caches, the gateway's first report) is not a call's

    const token = fs.readFileSync(path.join(stack.dataDir, 'admin-token'), 'utf8').trim();
    const control = stack.pid('control');
    const since = new Date(plan.now - 7 * 86_400_000).toISOString();
    const calls: Array<[string, string]> = [
      ['overview', '/admin/v1/overview'],
      ['queue status', '/admin/v1/queue/status'],
      ['throttles', '/admin/v1/throttles'],
      ['projects', '/admin/v1/projects'],
      ['one project', `/admin/v1/projects/${first.slug}`],
      ['emails (newest)', '/admin/v1/emails'],
      ['emails by recipient', `/admin/v1/emails?to=${encodeURIComponent(seed.probes.to)}`],
      ['emails by subject word', '/admin/v1/emails?subject=receipt'],
      // A subject of one email a fortnight back: the walk goes to its bound (5,000 rows) and hands back a cursor.
      ['emails by rare subject', `/admin/v1/emails?subject=${encodeURIComponent(seed.probes.subject)}`],
      ['emails by status', '/admin/v1/emails?status=bounced'],
      ['emails of a project, 7 days', `/admin/v1/emails?project=${first.slug}&since=${encodeURIComponent(since)}`],
      ['emails by id', `/admin/v1/emails?id=${seed.probes.id}`],
      ['one email', `/admin/v1/emails/${seed.probes.id}`],
      ['suppressions', '/admin/v1/suppressions'],
      ['suppressions search', `/admin/v1/suppressions?q=${encodeURIComponent(seed.probes.suppressed)}`],
      ['suppressions of a project', `/admin/v1/suppressions?project=${first.slug}`],
      ['webhooks', '/admin/v1/webhooks'],
      ['deliveries', `/admin/v1/webhooks/${webhooks[0]!.id}/deliveries`],
      ['failed deliveries', `/admin/v1/webhooks/${webhooks[0]!.id}/deliveries?status=failed`],
      ['sign-in activity', `/admin/v1/projects/${first.slug}/auth/activity?period=week`],
      ['project audit', `/admin/v1/projects/${first.slug}/audit`],
      ['operator audit', '/admin/v1/audit'],
    ];
    const rows: CallRow[] = [];
    for (const [name, url] of calls) {
      const get = async () => {
        const r = await fetch(stack.adminUrl + url, { headers: { authorization: `Bearer ${token}` } });
        await r.arrayBuffer();
        return r.status;
      };
      // Warm (the first call pays for compiling its route's code), and what it found: a search that
      // finds nothing would be cheap for the wrong reason.
      const warm = await fetch(stack.adminUrl + url, { headers: { authorization: `Bearer ${token}` } });
      const status = warm.status;
      const body = (await warm.json().catch(() => ({}))) as { data?: unknown[] };
      const found = Array.isArray(body.data) ? body.data.length : null;
      const wall: number[] = [];
      const until = Date.now() + CALL_SECONDS * 1000;
      const c0 = cpuOf(control).self;
      while (wall.length < CALLS && Date.now() < until) {
        const t = performance.now();
        await get();
        wall.push(performance.now() - t);
      }
      const cpu = (cpuOf(control).self - c0) / wall.length;
      const row = {
        backend,
        call: `${name}: GET ${url.length > 70 ? `${url.slice(0, 67)}...` : url}`,
        status,
        found,
        calls: wall.length,
        control_cpu_ms: round(cpu),
        p50_ms: round(pct(wall, 50)),
        p95_ms: round(pct(wall, 95)),
        within: status === 200 && cpu <= CPU_BUDGET_MS,
      };
      log(`${backend}: ${name} ${status} found ${found ?? '-'} cpu ${row.control_cpu_ms} ms p50 ${row.p50_ms} ms`);
      rows.push(row);
    }
    return { rows, seed };
  } finally {
    await stack.stop();
    await sink.close();
    await dns.close();
    if (databaseUrl) await dropDatabase(dbName).catch((err) => log(`could not drop ${dbName}: ${err}`));
    fs.rmSync(stack.dataDir, { recursive: true, force: true });
  }
}

const results: Record<string, unknown> = {};
const all: CallRow[] = [];
for (const backend of BACKENDS) {
  const r = await runBackend(backend);
  results[backend] = r;
  all.push(...r.rows);
}
if (all.length) console.log(`\nData calls, ${EMAILS} emails and ${SUPPRESSIONS} suppressions, control CPU per call against ${CPU_BUDGET_MS} ms`);
if (all.length)
  console.table(
    all.map((r) => ({
      backend: r.backend,
      call: r.call,
      status: r.status,
      found: r.found ?? '',
      n: r.calls,
      'cpu ms/call': r.control_cpu_ms,
      'p50 ms': r.p50_ms,
      'p95 ms': r.p95_ms,
      budget: r.status !== 200 ? 'not 200' : r.within ? 'ok' : 'OVER',
    })),
  );
const file = writeResult('console', {
  emails: EMAILS,
  projects: PROJECTS,
  suppressions: SUPPRESSIONS,
  calls_per_endpoint: CALLS,
  weight: 'missing' in weight ? weight : { ...weight, budget: WEIGHT_BUDGET },
  cpu_budget_ms: CPU_BUDGET_MS,
  ...results,
});
console.log(`[console] figures in ${file}`);
