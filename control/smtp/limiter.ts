// Emails per second per project on SMTP submission (config.smtpRate, default
// 300). The server only needs `take`, so the decision (plans, shared counters)
// can change without touching the server.
import { clock } from '../../core/clock.js';
import type { Counters } from '../limits/counters.js';
import type { Project } from '../store/store.js';

export interface SubmissionLimiter {
  /** Counts one email for the project; false when it is over its rate. */
  take(project: Project): boolean | Promise<boolean>;
}

/** One-second windows on the shared counters (own key prefix: the HTTP API rate is separate). */
export function countersLimiter(counters: Counters, perSecond: number): SubmissionLimiter {
  return { take: (project) => counters.hit(`smtp:${project.id}`, 1000, 1, clock.now()).count <= perSecond };
}
