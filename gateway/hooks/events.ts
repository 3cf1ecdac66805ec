// Outbound hooks that turn delivery progress into outbox events. Each hook writes
// its events durably before it lets Haraka go on (and, for delivered, before Haraka
// deletes the queue file), so an event is never lost to a crash. A delivered or bounced
// queue file is recorded as finished in the same transaction: a crash before Haraka
// deletes it cannot send it again (removeFinished at start).
import constants from 'haraka-constants';
import { clock } from '../../core/clock.js';
import type { BounceError, DeferredParams, DeliveredParams, HarakaOutbound, HMailItem, Next } from '../haraka.js';
import { bounceEvents, deferredEvents, retryDelay, sendingEvents, sentEvents } from '../outcome.js';
import { rejectRetryDelay, requeueRejected } from '../retry.js';
import { gatewayRuntime } from '../runtime.js';
import { OTHER } from '../../common/providers.js';
import type { NewDeliveryEvent } from '../outbox/outbox.js';

/** Wait before retrying an attempt whose 'sending' event could not be written. */
const RECORD_RETRY_SECONDS = 30;

export interface EventHooks {
  sending(next: Next, hmail: HMailItem): void;
  delivered(next: Next, hmail: HMailItem, params: DeliveredParams): void;
  deferred(next: Next, hmail: HMailItem, params: DeferredParams): void;
  bounce(next: Next, hmail: HMailItem, err: BounceError): void;
}

export async function eventHooks(outbound: HarakaOutbound): Promise<EventHooks> {
  const rt = await gatewayRuntime();
  const { log } = rt;
  const { retryDelays, rejectRetryDelays } = rt.config.delivery;

  /** Records, logging (not throwing) a failure: the outcome already happened. */
  const record = (hmail: HMailItem, events: Parameters<typeof rt.record>[0], closesFile = false, now = false) =>
    rt.record(events, closesFile ? [hmail.filename] : [], now).then(
      () => undefined,
      (err) => log.error({ err, emailId: hmail.todo.notes.email_id, types: [...new Set(events.map((e) => e.type))] }, 'could not record events'),
    );
  /** The remote's answers feed adaptive shaping (gateway/shaping): a provider's pushback lowers or stops our sending before the next attempt. */
  const shape = (hmail: HMailItem, events: readonly NewDeliveryEvent[]) => {
    const seen = new Set<string>();
    for (const e of events) {
      if (e.cause !== 'receiver' || !e.response || seen.has(e.response)) continue;
      seen.add(e.response);
      rt.shaper.observe({
        provider: e.provider || OTHER,
        projectId: String(hmail.todo.notes.project_id ?? ''),
        response: e.response,
        enhancedCode: e.enhancedCode,
      });
    }
  };
  const finished = (hmail: HMailItem) => {
    rt.attempts.delete(hmail.todo.uuid);
    rt.metrics.attemptEnded(hmail);
  };

  return {
    // Fires before every attempt, retries included.
    sending(next, hmail) {
      rt.record(sendingEvents(hmail, clock.now())).then(
        () => {
          rt.attempts.add(hmail.todo.uuid);
          rt.metrics.attemptStarted(hmail);
          rt.queueState.sending(hmail);
          next();
        },
        (err) => {
          // Without its event an attempt could go unreported: try again later instead.
          log.error({ err, emailId: hmail.todo.notes.email_id }, 'could not record sending; delaying');
          next(constants.delay, RECORD_RETRY_SECONDS);
        },
      );
    },
    delivered(next, hmail, params) {
      // Recipients that failed were split off into a file of their own, which may not be written yet:
      // this file is finished only when every recipient in it was accepted.
      const all = params[6].length >= hmail.todo.rcpt_to.length;
      // The remote server has the message: committed now, before anything else runs (the other plugins'
      // delivered hooks, the QUIT or RSET, other connections' work), so a kill -9 from here on cannot
      // send it again. Haraka deletes the file once the commit is fsynced (next).
      const events = sentEvents(hmail, params, clock.now());
      rt.metrics.outcome(hmail, events);
      // Recipients that failed went to a file of their own, counted by its own hook.
      rt.queueState.observe(events, hmail);
      rt.queueState.forget(hmail);
      void record(hmail, events, all, true).finally(() => {
        finished(hmail);
        next();
      });
    },
    deferred(next, hmail, params) {
      // Our schedule, not Haraka's: its intervals cannot go under 5 s.
      const delay = retryDelay(retryDelays, hmail.num_failures);
      const events = deferredEvents(hmail, params, delay, clock.now());
      rt.metrics.outcome(hmail, events);
      rt.queueState.observe(events, hmail);
      rt.queueState.deferred(hmail, events[0]?.cause === 'network' ? 'network' : 'receiver');
      shape(hmail, events);
      void record(hmail, events).finally(() => {
        finished(hmail);
        next(constants.denysoft, delay);
      });
    },
    bounce(next, hmail, err) {
      const now = clock.now();
      const events = bounceEvents(hmail, err, now);
      rt.metrics.outcome(hmail, events);
      // Rejected recipients retried later are a new queue item, counted as it is queued.
      rt.queueState.observe(events, hmail);
      rt.queueState.forget(hmail);
      // Giving up repeats the last deferral, which shaping saw when it came.
      if (!/^Too many failures/.test(err.message)) shape(hmail, events);
      // A refusal (not a missing mailbox) is tried again later, a few times, growing apart.
      const rejected = events.filter((e) => e.type === 'rejected');
      const delay = rejectRetryDelay(rejectRetryDelays, (Number(hmail.todo.notes.reject_retries) || 0) + 1);
      let requeued: Promise<unknown> = Promise.resolve();
      if (rejected.length && delay !== undefined) {
        const due = now + delay * 1000;
        requeued = requeueRejected(
          outbound,
          rt.paths.queueDir,
          hmail,
          rejected.map((e) => e.recipient),
          due,
          rejected[0]!.attempt,
        ).then(
          () => {
            for (const e of rejected) e.nextAttemptMs = due;
          },
          (e) => log.error({ err: e, emailId: hmail.todo.notes.email_id }, 'could not schedule the retry of a rejected message'),
        );
      }
      // Haraka deletes this file once we answer (its recipients are bounced, or requeued just above).
      void requeued
        .then(() => record(hmail, events, true))
        .finally(() => {
          finished(hmail);
          // OK: no DSN to the sender; control reports bounces through events and webhooks.
          next(constants.ok);
        });
    },
  };
}
