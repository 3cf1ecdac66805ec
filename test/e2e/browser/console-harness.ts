// The operator console's stack for the browser test (console.test.ts): postgate with a loopback MX
// (loopback DNS names gmail.com, outlook.com, yahoo.com and inbox.test after it), a loopback webhook
// receiver, and data like a small live service's: three
// projects on a paid plan with verified domains, a couple of hundred emails over the providers, two
// hard bounces (suppressed), sign-ins, and a webhook endpoint that fails a third of its deliveries. The console is served by control on the
// admin listener at /console/ (the compiled tree's console/ directory, built with the rest).
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { startDnsServer, type DnsServer } from '../../helpers/dns-server.js';
import { replies, startMxSink, type MxSink } from '../../helpers/mx-sink.js';
import { Stack, sleep, type Project } from '../../helpers/stack.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
/**
 * Where the screenshots go: docs/console/ only when asked (POSTGATE_SCREENSHOTS=1, a run made to
 * refresh the documentation), test-results/console/ otherwise, so a CI run never touches docs/.
 */
export const SHOTS = process.env.POSTGATE_SCREENSHOTS === '1' ? path.join(root, 'docs', 'console') : path.join(root, 'test-results', 'console');

export const DOMAINS = ['gmail.com', 'outlook.com', 'yahoo.com', 'inbox.test'];

/** Gmail's answer when it rate-limits an IP for unwanted mail (common/shaping.ts's google-unsolicited-rate example). */
export const GMAIL_RATE_LIMITED = {
  code: 421,
  message:
    '4.7.28 [203.0.113.42] Our system has detected an unusual rate of unsolicited mail originating from your IP address. To protect our users from spam, mail sent from your IP address has been temporarily rate limited. Please visit https://support.google.com/mail/?p=UnsolicitedRateLimitError to review our Bulk Email Senders Guidelines. - gsmtp',
};

export interface ConsoleEnv {
  stack: Stack;
  sink: MxSink;
  dns: DnsServer;
  hooks: http.Server;
  token: string;
  /** The console's base URL: the admin listener's origin + /console/. */
  consoleUrl: string;
  origin: string;
  projects: Record<'acme' | 'northwind' | 'globex', Project>;
  close(): Promise<void>;
}

const PROJECTS = [
  ['acme', 'Acme Shop'],
  ['northwind', 'Northwind Traders'],
  ['globex', 'Globex Newsletters'],
] as const;

const FIRST = ['ann', 'bob', 'carla', 'dmitri', 'eve', 'farid', 'grace', 'hiro', 'ines', 'jon', 'kate', 'li', 'maria', 'noor', 'oleg', 'pia'];
const SUBJECTS = ['Your receipt #', 'Your order has shipped #', 'Reset your password', 'Welcome to ', 'Weekly digest, week ', 'Invoice available #'];

export async function startConsoleEnv(): Promise<ConsoleEnv> {
  const sink = await startMxSink();
  const dns = await startDnsServer(
    DOMAINS.flatMap((d) => [
      { type: 'MX' as const, name: d, exchange: `mx.${d}`, priority: 10 },
      { type: 'A' as const, name: `mx.${d}`, address: '127.0.0.1' },
    ]),
  );
  // /ok answers 200; /flaky answers 500 to every third message (given up at once: see webhooks below).
  let flaky = 0;
  const hooks = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(req.url?.startsWith('/flaky') && ++flaky % 3 === 0 ? 500 : 200).end());
  });
  await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
  const hookPort = (hooks.address() as AddressInfo).port;
  const fast = { dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: 6000, connections: 20 };
  let stack: Stack | undefined;
  try {
    stack = await Stack.start({
      env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port), POSTGATE_LOG_LEVEL: 'warn' },
      config: {
        // A deferral is tried again a second later: held mail shows at once, resumed mail leaves at once.
        delivery: { retryDelays: [1], maxTempFailures: 60, connectTimeout: 5 },
        pacing: { providers: { google: fast, microsoft: fast, yahoo: fast, other: fast } },
        // A failing endpoint is given up after its first answer (the retry would fall past the
        // message's age limit): failed deliveries to show.
        webhooks: { allowCidrs: ['127.0.0.0/8'], retryDelays: [2], maxAgeSeconds: 1 },
      },
    });
    const projects = {} as ConsoleEnv['projects'];
    for (const [slug, name] of PROJECTS) {
      const p = await stack.createProject(slug, name);
      await stack.setPlan(slug, slug === 'globex' ? 'scale' : 'pro');
      await stack.verifyDomain(slug, `${slug}.test`);
      projects[slug] = p;
    }
    const hook = async (p: Project, url: string) => {
      const r = await stack!.api('POST', '/v1/webhooks', p.keys.live, { url });
      if (r.status !== 201) throw new Error(`webhook: ${r.status} ${JSON.stringify(r.body)}`);
    };
    await hook(projects.acme, `http://127.0.0.1:${hookPort}/ok/postgate`);
    await hook(projects.northwind, `http://127.0.0.1:${hookPort}/flaky/postgate`);

    // Some history: 240 emails in batches over the projects and the providers, two hard bounces among them.
    for (const addr of ['old.account@yahoo.com', 'typo@outlook.com']) sink.setBehaviour(addr, { rcpt: [replies.noSuchUser] });
    // Batches of 20 taken from the projects in turn, so the newest mail is a mix of them.
    const perProject: Array<Array<{ p: Project; body: unknown[] }>> = [];
    let n = 0;
    for (const [slug, name] of PROJECTS) {
      const p = projects[slug];
      const count = slug === 'acme' ? 120 : slug === 'northwind' ? 80 : 40;
      const body = Array.from({ length: count }, (_, i) => {
        const s = SUBJECTS[(n + i) % SUBJECTS.length]!;
        return {
          from: `hello@${slug}.test`,
          to:
            i === 5 && slug === 'acme'
              ? 'old.account@yahoo.com'
              : i === 9 && slug === 'northwind'
                ? 'typo@outlook.com'
                : `${FIRST[(n + i) % FIRST.length]}.${n + i}@${DOMAINS[(n + i) % DOMAINS.length]}`,
          subject: s.endsWith('#') ? `${s}${1040 + n + i}` : s.endsWith(' ') ? `${s}${s.startsWith('Weekly') ? 48 : name}` : s,
          text: 'Thanks for your order.',
          tags: [{ name: 'category', value: s.startsWith('Reset') ? 'security' : s.startsWith('Weekly') ? 'newsletter' : 'transactional' }],
        };
      });
      n += count;
      perProject.push(Array.from({ length: Math.ceil(count / 20) }, (_, k) => ({ p, body: body.slice(k * 20, k * 20 + 20) })));
    }
    const rounds = Math.max(...perProject.map((l) => l.length));
    // Every project's last batch goes in the last round: the newest page of mail shows all of them.
    const batches = Array.from({ length: rounds }, (_, k) => perProject.flatMap((l) => l[k - (rounds - l.length)] ?? [])).flat();
    for (const b of batches) {
      const r = await stack.api('POST', '/v1/emails/batch', b.p.keys.live, b.body);
      if (r.status >= 300) throw new Error(`batch: ${r.status} ${JSON.stringify(r.body)}`);
    }
    // Sign-ins with email codes (the test environment hands its codes to the test key), a few failed.
    for (let i = 0; i < 14; i++) {
      const h = { 'x-service-key': projects.acme.keys.test, 'x-service-client-ip': `203.0.113.${10 + i}` };
      const email = `${FIRST[i % FIRST.length]}@customer${i}.test`;
      const auth = (p: string, body?: unknown) => stack!.api(body === undefined ? 'GET' : 'POST', `/api/v1/auth${p}`, undefined, body, h);
      await auth('/sign-in/email-otp/send', { email });
      const code = i % 4 === 3 ? '000000' : (await auth(`/test/code?email=${encodeURIComponent(email)}`)).body.code;
      await auth('/sign-in/email-otp/verify', { email, code });
    }
    const until = Date.now() + 30_000;
    while (sink.messages.length < n - 2 && Date.now() < until) await sleep(200);
    const token = fs.readFileSync(path.join(stack.dataDir, 'admin-token'), 'utf8').trim();
    const origin = stack.adminUrl;
    const started = stack;
    return {
      stack,
      sink,
      dns,
      hooks,
      token,
      origin,
      consoleUrl: `${origin}/console/`,
      projects,
      async close() {
        await started.stop();
        await Promise.all([sink.close(), dns.close(), new Promise((r) => hooks.close(r))]);
      },
    };
  } catch (err) {
    await stack?.stop();
    await Promise.all([sink.close(), dns.close(), new Promise((r) => hooks.close(r))]);
    throw err;
  }
}

/** A screenshot of the page as it is (charts drawn, fonts settled) into SHOTS. */
export async function shot(page: Page, name: string, maxHeight = 1400): Promise<string> {
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const file = path.join(SHOTS, `${name}.png`);
  // The whole page down to maxHeight: a long list (fifty deliveries, eleven providers) is cut, not shrunk.
  const { width, height } = await page.evaluate(() => ({ width: document.documentElement.clientWidth, height: document.documentElement.scrollHeight }));
  await page.screenshot({ path: file, fullPage: true, clip: { x: 0, y: 0, width, height: Math.min(height, maxHeight) } });
  return file;
}
