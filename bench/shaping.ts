// `node --import tsx bench/shaping.ts`: how fast adaptive shaping reacts to a provider's pushback. A stack
// (SQLite, one gateway) sends BENCH_MESSAGES (300) emails to gmail.com (loopback DNS and MX) under a
// throttle of BENCH_RATE (1200) per minute; the loopback MX answers one recipient, about a third of the way
// in, with Gmail's `421-4.7.28 ... unusual rate of unsolicited mail`, which the default rule
// google-unsolicited-rate answers by halving Google's rate for an hour. Printed: the delivery rate the MX
// saw over the 3 s before the answer and from the answer on (until the last delivery), when the action was
// taken after the answer (the deferred event's time and the action's `since` in the live state, both the
// gateway's clock), and the spacing of the deliveries right after it against the new rate's.
// Bounded: 120 s for every message to arrive; loopback only. Figures go to bench/results.
import { prepare } from './lib/prepare.js';

await prepare();

const { Stack, sleep } = await import('../test/helpers/stack.js');
const { startDnsServer } = await import('../test/helpers/dns-server.js');
const { startMxSink, messageIdOf } = await import('../test/helpers/mx-sink.js');
const { writeResult } = await import('./lib/results.js');

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 300);
const RATE = Number(process.env.BENCH_RATE ?? 1200);
const PUSHBACK_AT = Math.floor(MESSAGES / 3);
const GMAIL_421 =
  '4.7.28 [127.0.0.1] Our system has detected an unusual rate of unsolicited mail originating from your IP address. To protect our users from spam, mail sent from your IP address has been temporarily rate limited. - gsmtp';

const sink = await startMxSink();
const dns = await startDnsServer([
  { type: 'MX', name: 'gmail.com', exchange: 'gmail-smtp-in.l.google.com', priority: 5 },
  { type: 'A', name: 'gmail-smtp-in.l.google.com', address: '127.0.0.1' },
]);
const stack = await Stack.start({
  env: { POSTGATE_DNS_SERVERS: dns.address, POSTGATE_DELIVERY_PORT: String(sink.port), POSTGATE_LOG_LEVEL: 'warn' },
  config: {
    delivery: { retryDelays: [3600], maxTempFailures: 5, connectTimeout: 5 },
    pacing: { providers: { google: { dailyNorm: 0, growth: 1, maxDailyNorm: 0, ratePerMinute: RATE, connections: 4 } } },
  },
});

try {
  const p = await stack.createProject('shaping');
  await stack.setPlan(p.slug, 'scale');
  await stack.verifyDomain(p.slug, 'acme.test');
  const pushed = `pushback@gmail.com`;
  sink.setBehaviour(pushed, { rcpt: [{ code: 421, message: GMAIL_421 }] });
  const to = Array.from({ length: MESSAGES }, (_, i) => (i === PUSHBACK_AT ? pushed : `u${i}@gmail.com`));
  const ids: string[] = [];
  for (let i = 0; i < to.length; i += 100) {
    const body = to.slice(i, i + 100).map((t) => ({ from: 'hello@acme.test', to: t, subject: 'receipt', text: 'Thanks for your order.' }));
    const r = await stack.api('POST', '/v1/emails/batch', p.keys.live, body);
    if (r.status >= 300) throw new Error(`batch: ${r.status} ${JSON.stringify(r.body)}`);
    ids.push(...r.body.data.map((d: { id: string }) => d.id));
  }
  const deadline = Date.now() + 120_000;
  while (sink.messages.length < MESSAGES - 1) {
    if (Date.now() > deadline) throw new Error(`only ${sink.messages.length} of ${MESSAGES - 1} delivered in 120 s`);
    await sleep(250);
  }

  const held = (await stack.api('GET', `/v1/emails/${ids[PUSHBACK_AT]}`, p.keys.live)).body;
  const answerAt = Date.parse(held.events.find((e: any) => e.type === 'deferred' && e.cause === 'receiver').at);
  const status = await stack.admin('GET', '/admin/v1/queue/status?provider=google');
  const act = status.providers[0].actions.find((a: any) => a.rule === 'google-unsolicited-rate');
  const times = sink.messages.filter((m) => messageIdOf(m)).map((m) => m.receivedAt);
  times.sort((a, b) => a - b);
  const before = times.filter((t) => t > answerAt - 3000 && t <= answerAt);
  const after = times.filter((t) => t > answerAt);
  const perS = (xs: number[], from: number, to: number) => +(xs.length / ((to - from) / 1000)).toFixed(1);
  const gaps = after.slice(1, 11).map((t, i) => t - after[i]!);
  const figures = {
    messages: MESSAGES,
    configured_per_minute: RATE,
    shaped_per_minute: act?.value ?? null,
    before_msgs_per_s: perS(before, answerAt - 3000, answerAt),
    after_msgs_per_s: after.length > 1 ? perS(after, answerAt, after.at(-1)!) : null,
    expected_after_msgs_per_s: act ? +(act.value / 60).toFixed(1) : null,
    action_taken_ms_after_answer: act ? Date.parse(act.since) - answerAt : null,
    first_delivery_ms_after_answer: after.length ? after[0]! - answerAt : null,
    median_gap_ms_next_10: gaps.length ? gaps.sort((a, b) => a - b)[Math.floor(gaps.length / 2)] : null,
    expected_gap_ms: act ? Math.round(60_000 / act.value) : null,
  };
  console.log(JSON.stringify(figures, null, 2));
  console.log(`[bench] figures in ${writeResult('shaping', figures)}`);
} finally {
  await stack.stop();
  await sink.close();
  await dns.close();
}
