// Hook glue of the pacing plugin: before each attempt (send_email) it finds the
// recipient domain's provider and asks the Pacer (gateway/pacing/pacer.ts) whether the
// mail may go now; held mail answers DELAY, so Haraka keeps it in memory without
// counting a failure. A hold until another day is reported as a `deferred` event whose
// cause is our pacing and whose next_attempt_at is when it will be tried.
import constants from 'haraka-constants';
import { clock } from '../../core/clock.js';
import type { HarakaOutbound, HMailItem, Next } from '../haraka.js';
import { cachedLookupMx } from './mx.js';
import { attemptOf, PROVIDER } from '../outcome.js';
import { classify, OTHER, providerOfDomain } from '../../common/providers.js';
import { LIMIT_RECHECK_MS, type PaceDecision, type PaceRequest } from '../pacing/pacer.js';
import { gatewayRuntime } from '../runtime.js';
import { gatewayControls } from '../controls/controls.js';
import { holdCause } from '../metrics.js';
import { holdState } from '../state/tracker.js';
import { type ClientPool, type HMailProto, installConnectionReuse } from './connection-reuse.js';
import { installPipelining } from './pipelining.js';

export interface PacingHooks {
  sendEmail(next: Next, hmail: HMailItem): void;
  /** delivered, deferred and bounce: the attempt is over, its connection slot frees. */
  attemptEnded(hmail: HMailItem, final: boolean): void;
}

const CACHE_MS = 10 * 60_000;
const CACHE_FAILED_MS = 60_000;
const CACHE_MAX = 100_000;

/** Haraka's modules that connection reuse wraps (outbound/client_pool, outbound/hmail). */
export interface ReuseTargets {
  clientPool: ClientPool;
  HMailItem: { prototype: HMailProto };
}

export async function pacingHooks(outbound: HarakaOutbound, reuse?: ReuseTargets): Promise<PacingHooks> {
  const rt = await gatewayRuntime();
  const { pacer, log } = rt;
  // The operator's persisted controls are in force before the first attempt.
  const controls = await gatewayControls();
  controls.attach(outbound);
  // Idle connections count against the connection limits decided here, so reuse is set up here.
  const idleSeconds = rt.config.delivery.connectionIdleSeconds;
  if (reuse && idleSeconds > 0) {
    // The provider is the one sendEmail below found for the attempt.
    const room = (hmail: HMailItem) => pacer.connectionRoom(String(hmail.notes[PROVIDER] ?? OTHER), hmail.todo.domain);
    rt.connections = installConnectionReuse(reuse.clientPool, reuse.HMailItem.prototype, { idleMs: idleSeconds * 1000, room });
  }
  // After reuse: its write wrapper (QUIT to RSET) must see a command only once pipelining has passed it on.
  if (reuse) rt.pipelining = installPipelining(reuse.HMailItem.prototype);
  // The same lookup (and cache) as get_mx: a domain's MX is asked once for both.
  const lookup = cachedLookupMx();
  const providers = new Map<string, { provider: string; until: number }>();

  /** The provider of a domain: its own name first, else its MX hosts (cached; a failed lookup says `other` for a minute). */
  async function providerOf(domain: string): Promise<string> {
    const d = domain.toLowerCase();
    const known = providerOfDomain(d);
    if (known) return known;
    const hit = providers.get(d);
    if (hit && hit.until > Date.now()) return hit.provider;
    let provider: string;
    let ttl = CACHE_MS;
    try {
      const l = await lookup(d);
      if (l.kind !== 'routes') throw new Error(l.reason);
      provider = classify(d, [...new Set(l.routes.map((r) => r.host))]);
    } catch {
      // No route yet: get_mx reports why; meanwhile the domain counts as its own.
      provider = classify(d, []);
      ttl = CACHE_FAILED_MS;
    }
    if (providers.size >= CACHE_MAX) providers.delete(providers.keys().next().value!);
    providers.set(d, { provider, until: Date.now() + ttl });
    return provider;
  }

  /**
   * Puts a DELAYed item back on Haraka's delivery queue at once. When it is not there, it is
   * either on its way already, or still recording why it is held: the flag makes that hook
   * decide again instead of starting the hold.
   */
  const WAKE_PENDING = 'postgate_wake_pending';
  const wakeOf = (hmail: HMailItem) => () => {
    try {
      outbound.temp_fail_queue.discard(hmail.filename);
    } catch {
      hmail.notes[WAKE_PENDING] = true;
      return;
    }
    outbound.delivery_queue.push(hmail);
  };

  const pacingEvents = (hmail: HMailItem, d: PaceDecision & { kind: 'hold' }, provider: string, response: string, cause = 'pacing', rule = '') =>
    hmail.todo.rcpt_to.map((r) => ({
      emailId: String(hmail.todo.notes.email_id ?? ''),
      type: 'deferred' as const,
      recipient: r.address,
      atMs: clock.now(),
      mx: '',
      response,
      attempt: attemptOf(hmail),
      enhancedCode: '',
      nextAttemptMs: rule ? (d.holdUntilMs ?? d.untilMs) : d.untilMs,
      cause,
      rule,
      provider,
    }));
  const WAIT_REPORTED = 'postgate_wait_reported';
  /** The suspension (rule@since) an item has reported holding it: once per item per action. */
  const HOLD_REPORTED = 'postgate_hold_reported';
  const until = (ms: number | undefined) => (ms ? `until ${new Date(ms).toISOString()}` : 'until resumed');

  /** Which holds are worth an event: a next-day hold always, a wait for a slot once it lasted a while. */
  function report(hmail: HMailItem, d: PaceDecision & { kind: 'hold' }, provider: string): ReturnType<typeof pacingEvents> | undefined {
    if (d.hold === 'warmup') {
      return pacingEvents(
        hmail,
        d,
        provider,
        `postgate pacing: this project's warm-up norm at ${provider} for today (${d.norm} messages) is reached (${d.used} sent); bulk mail continues on the next day`,
      );
    }
    if (d.hold === 'shaping' || d.hold === 'suspended') {
      const seen = `${d.rule}@${d.sinceMs ?? 0}`;
      if (hmail.notes[HOLD_REPORTED] === seen) return undefined;
      hmail.notes[HOLD_REPORTED] = seen;
      const project = rt.holds.check(provider, String(hmail.todo.notes.project_id ?? ''))?.projectId ? ' for this project' : '';
      const text =
        d.hold === 'shaping'
          ? `postgate shaping: rule ${d.rule} holds delivery to ${provider}${project} ${until(d.holdUntilMs)}, after the provider's pushback`
          : `postgate: delivery to ${provider}${project} is suspended by the operator (${d.rule}) ${until(d.holdUntilMs)}`;
      return pacingEvents(hmail, d, provider, text, d.hold, d.rule ?? '');
    }
    if (d.hold === 'limit' && (d.waitedMs ?? 0) >= LIMIT_RECHECK_MS && !hmail.notes[WAIT_REPORTED]) {
      hmail.notes[WAIT_REPORTED] = true;
      return pacingEvents(
        hmail,
        d,
        provider,
        `postgate pacing: waiting for a free connection or the rate limit at ${provider} (${Math.round(d.waitedMs! / 1000)} s so far)`,
      );
    }
    return undefined;
  }

  const hooks: PacingHooks = {
    sendEmail(next, hmail) {
      const notes = hmail.todo.notes;
      delete hmail.notes[WAKE_PENDING];
      let answered = false;
      const answer: typeof next = (...args) => {
        answered = true;
        next(...args);
      };
      // Canceled mail is dropped unsent; after a restart, mail queued before it waits for control's controls.
      const verdict = controls.verdict(hmail);
      if (verdict !== 'go') {
        answer(constants.delay, controls.parkedSec);
        if (verdict === 'wait') rt.queueState.deferred(hmail, 'pacing');
        return verdict === 'drop' ? controls.drop(hmail) : controls.park(hmail);
      }
      providerOf(hmail.todo.domain)
        .then(async (provider) => {
          hmail.notes[PROVIDER] = provider;
          const req: PaceRequest = {
            key: hmail.todo.uuid,
            projectId: String(notes.project_id ?? ''),
            bulk: notes.bulk === true,
            domain: hmail.todo.domain,
            provider,
            recipients: hmail.todo.rcpt_to.length,
            warmupStartMs: Number(notes.warmup_start) || 0,
            notBeforeMs: Number(notes.not_before) || 0,
          };
          // With gateways sharing counts (Redis): bulk mail under a norm takes its place there first, and a gate's first message of a minute reads the others' rate count.
          await pacer.prepare(req);
          // An order may have come while the provider was looked up.
          if (controls.verdict(hmail) === 'drop') {
            answer(constants.delay, controls.parkedSec);
            return controls.drop(hmail);
          }
          const d = pacer.decide(req, wakeOf(hmail));
          if (d.kind === 'go') {
            rt.queueState.decided(hmail, provider);
            return answer();
          }
          rt.queueState.deferred(hmail, holdState(d.hold), provider);
          const events = report(hmail, d, provider);
          if (!events) return answer(constants.delay, d.delaySec);
          rt.metrics.deferral(provider, holdCause(events[0]?.cause, d.hold), events.length);
          // Recorded before the hold starts, so the reason is never lost to a crash.
          const hold = () => (hmail.notes[WAKE_PENDING] ? hooks.sendEmail(next, hmail) : answer(constants.delay, d.delaySec));
          return rt.record(events).then(hold, (err) => {
            log.error({ err, emailId: notes.email_id }, 'could not record a pacing deferral');
            hold();
          });
        })
        .catch((err) => {
          log.error({ err, emailId: notes.email_id }, 'pacing failed; sending without it');
          if (!answered) next();
        });
    },
    attemptEnded(hmail, final) {
      const key = hmail.todo.uuid;
      const free = () => (final ? pacer.done(key) : pacer.release(key));
      // A delivered session's slot passes on once its connection is idle (or closing), so the next message can reuse it.
      if (rt.connections) rt.connections.afterSession(hmail, free);
      else free();
    },
  };
  return hooks;
}
