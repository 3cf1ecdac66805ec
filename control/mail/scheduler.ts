// Scheduled sends: an email accepted with scheduled_at waits in the store as
// 'scheduled'; once its time has come this loop releases it, and only then are the
// project's quota and bulk rules judged and counted (the day it leaves is the day that
// counts), and the dispatcher (with pacing) takes it as any queued email. Several
// control nodes may run the loop on one database: release() locks the row, so each
// email leaves once.
import type { Logger } from '../../core/log.js';
import { clock } from '../../core/clock.js';
import type { Store } from '../store/index.js';
import type { Dispatch, MailPipeline } from './pipeline.js';

/** How often due emails are looked for: a scheduled email leaves within about a second of its time. */
const TICK_MS = 1000;
const BATCH = 200;

export class Scheduler {
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(
    private readonly store: Store,
    private readonly pipeline: Pick<MailPipeline, 'guardsOf'>,
    private readonly dispatcher: Dispatch,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Releases every due email; returns how many became queued. */
  async tick(): Promise<number> {
    if (this.running) return 0;
    this.running = true;
    let queued = 0;
    try {
      for (;;) {
        const now = clock.now();
        const due = await this.store.emails.due(now, BATCH);
        for (const { id, projectId } of due) {
          const project = await this.store.projects.byId(projectId);
          if (!project) continue;
          const outcome = await this.store.emails.release(id, this.pipeline.guardsOf(project), now);
          if (outcome.kind === 'accepted') queued++;
          else if (outcome.kind !== 'gone') this.log.info({ email: id, project: projectId, refusal: outcome.kind }, 'scheduled email refused when it was due');
        }
        if (queued) this.dispatcher.wake();
        if (due.length < BATCH) break;
      }
    } catch (err) {
      // A store outage: the emails stay scheduled and the next tick tries again.
      this.log.warn({ err: String(err) }, 'releasing scheduled emails failed; retrying');
    } finally {
      this.running = false;
    }
    return queued;
  }
}
