// control/webhooks/sender.ts: each due message posted to its endpoint signed with the endpoint's
// opened secret; 2xx recorded delivered, anything else (redirects included) or a failure retried after
// the configured delays, given up past the maximum age; deleted or disabled endpoints fail the message
// without a request; a store outage logged once until the loop runs again; stop() ends polling.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { WebhookTargets } from '../../../control/webhooks/target.js';
import { WebhookSender } from '../../../control/webhooks/sender.js';
import { newWebhookSecret, verify } from '../../../control/webhooks/signature.js';
import type { Store, WebhookDelivery, WebhookRow } from '../../../control/store/index.js';
import type { WebhookSettings } from '../../../core/config.js';
import { sealer } from '../../../core/crypto.js';
import type { Logger } from '../../../core/log.js';

const T0 = Date.UTC(2026, 2, 1, 12, 0, 0);
const seal = sealer('test-master-secret', 'webhooks');
const SECRET = newWebhookSecret();
const settings: WebhookSettings = { retryDelays: [5, 60, 600], maxAgeSeconds: 3600, timeoutMs: 2500 } as WebhookSettings;

interface Post {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}
type Answer = number | Error;

let hooks: Record<string, WebhookRow>;
let queue: WebhookDelivery[];
let attempts: Array<{ id: string; status: string; attempt: number; next: number; error: string | null; deliveredAt: number | null }>;
let posts: Post[];
let answers: Answer[];
let logs: Array<{ level: string; obj: unknown; msg?: string }>;
let dueFails: number;
let sender: WebhookSender | undefined;

const hook = (id: string, o: Partial<WebhookRow> = {}): WebhookRow => ({
  id,
  projectId: 'prj_a',
  url: `https://hooks.example/${id}`,
  statuses: [],
  secret: seal.seal(SECRET),
  createdAt: T0,
  enabled: true,
  ...o,
});
const delivery = (id: string, o: Partial<WebhookDelivery> = {}): WebhookDelivery => ({
  id,
  webhookId: 'wh_1',
  projectId: 'prj_a',
  payload: JSON.stringify({ type: 'email.delivered', id }),
  attempt: 0,
  nextAttemptAt: T0,
  status: 'pending',
  lastError: null,
  createdAt: T0,
  deliveredAt: null,
  ...o,
});

const store = {
  webhooks: {
    async due() {
      if (dueFails > 0) {
        dueFails--;
        throw new Error('connection refused');
      }
      return queue.splice(0);
    },
    byId: async (id: string) => hooks[id],
    async recordAttempt(id: string, status: string, attempt: number, next: number, error: string | null, deliveredAt: number | null) {
      attempts.push({ id, status, attempt, next, error, deliveredAt });
    },
  },
} as unknown as Store;
const targets = {
  async post(url: string, headers: Record<string, string>, body: string, timeoutMs: number) {
    posts.push({ url, headers, body, timeoutMs });
    const a = answers.shift() ?? 204;
    if (a instanceof Error) throw a;
    return a;
  },
} as unknown as WebhookTargets;
const log = {
  // info is called with the message alone.
  info: (obj: unknown, msg?: string) => logs.push(typeof obj === 'string' ? { level: 'info', obj: {}, msg: obj } : { level: 'info', obj, msg }),
  warn: (obj: unknown, msg?: string) => logs.push({ level: 'warn', obj, msg }),
  error: (obj: unknown, msg?: string) => logs.push({ level: 'error', obj, msg }),
} as unknown as Logger;

/** Starts the sender and lets its first poll (and `more` ms of polls after it) run. */
async function run(more = 0): Promise<void> {
  sender = new WebhookSender(store, seal, settings, targets, log);
  sender.start();
  await vi.advanceTimersByTimeAsync(more);
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
  hooks = { wh_1: hook('wh_1') };
  queue = [];
  attempts = [];
  posts = [];
  answers = [];
  logs = [];
  dueFails = 0;
});
afterEach(() => {
  sender?.stop();
  vi.useRealTimers();
});

describe('WebhookSender', () => {
  it('posts a due message signed with the opened secret, and records a 2xx as delivered', async () => {
    const d = delivery('msg_1', { attempt: 2 });
    queue.push(d);
    answers.push(200);
    await run();
    expect(posts).toHaveLength(1);
    const p = posts[0]!;
    expect(p).toMatchObject({ url: 'https://hooks.example/wh_1', body: d.payload, timeoutMs: 2500 });
    expect(p.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'postgate-webhooks/1',
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(T0 / 1000),
    });
    // What a receiver holding the endpoint's secret checks.
    expect(verify(SECRET, p.headers, p.body, 300, T0 / 1000)).toBe(true);
    expect(verify(newWebhookSecret(), p.headers, p.body, 300, T0 / 1000)).toBe(false);
    expect(attempts).toEqual([{ id: 'msg_1', status: 'delivered', attempt: 3, next: T0, error: null, deliveredAt: T0 }]);
  });

  it('retries a non-2xx answer, a redirect included, after the delay of its attempt', async () => {
    queue.push(delivery('msg_1'), delivery('msg_2', { attempt: 1 }), delivery('msg_3', { attempt: 7 }));
    answers.push(500, 302, 404);
    await run();
    expect(attempts).toEqual([
      { id: 'msg_1', status: 'pending', attempt: 1, next: T0 + 5_000, error: 'HTTP 500', deliveredAt: null },
      { id: 'msg_2', status: 'pending', attempt: 2, next: T0 + 60_000, error: 'HTTP 302', deliveredAt: null },
      // Past the list, the last delay repeats.
      { id: 'msg_3', status: 'pending', attempt: 8, next: T0 + 600_000, error: 'HTTP 404', deliveredAt: null },
    ]);
    expect(logs.filter((l) => l.level === 'warn')).toHaveLength(3);
  });

  it("records a failure's class for the project and keeps the detail for the operator's log", async () => {
    queue.push(delivery('msg_1'));
    answers.push(new Error('connect ECONNREFUSED 203.0.113.9:443'));
    await run();
    expect(attempts).toEqual([{ id: 'msg_1', status: 'pending', attempt: 1, next: T0 + 5_000, error: 'connection_failed', deliveredAt: null }]);
    expect(logs).toEqual([
      {
        level: 'warn',
        obj: { webhook: 'wh_1', delivery: 'msg_1', attempt: 1, error: 'connection_failed', detail: 'connect ECONNREFUSED 203.0.113.9:443', giveUp: false },
        msg: 'webhook delivery failed',
      },
    ]);
  });

  it('gives up when the next attempt would be past the maximum age', async () => {
    // Created 59 min 56 s ago: a retry in 5 s lands past the hour.
    queue.push(delivery('msg_old', { createdAt: T0 - 3_596_000 }), delivery('msg_young', { createdAt: T0 - 3_594_000 }));
    answers.push(503, 503);
    await run();
    expect(attempts.map((a) => [a.id, a.status])).toEqual([
      ['msg_old', 'failed'],
      ['msg_young', 'pending'],
    ]);
  });

  it('fails the messages of a deleted or disabled endpoint without posting them', async () => {
    hooks.wh_off = hook('wh_off', { enabled: false });
    queue.push(delivery('msg_1', { webhookId: 'wh_gone', attempt: 1 }), delivery('msg_2', { webhookId: 'wh_off' }));
    await run();
    expect(posts).toEqual([]);
    expect(attempts).toEqual([
      { id: 'msg_1', status: 'failed', attempt: 1, next: T0, error: 'endpoint deleted', deliveredAt: null },
      { id: 'msg_2', status: 'failed', attempt: 0, next: T0, error: 'endpoint disabled', deliveredAt: null },
    ]);
  });

  it('polls again every 500 ms and picks up messages queued since', async () => {
    await run();
    expect(posts).toHaveLength(0);
    queue.push(delivery('msg_1'));
    await vi.advanceTimersByTimeAsync(499);
    expect(posts).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(posts).toHaveLength(1);
  });

  it('logs a store outage once, keeps polling, and says when the loop runs again', async () => {
    dueFails = 3;
    await run(1500);
    expect(logs.map((l) => [l.level, l.msg])).toEqual([
      ['error', 'webhook delivery loop failed; retrying'],
      ['info', 'webhook delivery loop running again'],
    ]);
  });

  it('stops polling once stopped', async () => {
    await run();
    sender!.stop();
    queue.push(delivery('msg_1'));
    await vi.advanceTimersByTimeAsync(5000);
    expect(posts).toEqual([]);
  });
});
