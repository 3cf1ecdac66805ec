// The parts of Haraka's (untyped) objects that our plugins touch, as read in
// Haraka 3.3.4's outbound/hmail.js. Types only, so CommonJS plugins can import them.

/** A hook's callback: next(code?, msg?); msg is the delay in seconds for DENYSOFT in `deferred`. */
export type Next = (code?: number, msg?: unknown) => void;

export interface HarakaPlugin {
  name: string;
  register_hook(hook: string, method: string, priority?: number): void;
  haraka_require(module: string): unknown;
  logdebug(...args: unknown[]): void;
  loginfo(...args: unknown[]): void;
  lognotice(...args: unknown[]): void;
  logwarn(...args: unknown[]): void;
  logerror(...args: unknown[]): void;
  logcrit(...args: unknown[]): void;
}

/**
 * An envelope address (@haraka/email-address). Outbound adds the dsn_* fields
 * to a recipient when a remote server answers it (or a lookup fails for it).
 */
export interface HarakaAddress {
  readonly address: string;
  user: string;
  host: string;
  /** "550 5.1.1 text" of the last RCPT (or DATA) failure for this recipient. */
  reason?: string;
  dsn_smtp_code?: string;
  dsn_smtp_extc?: string;
  dsn_smtp_response?: string;
  dsn_remote_mta?: string;
  /** Enhanced status: the remote's, or Haraka's own (e.g. 5.1.2 after a failed MX lookup). */
  dsn_status?: string;
  dsn_code?: number;
  dsn_msg?: string;
}

/** What send_email notes carry into the queue file (todo.notes) and every hook. */
export interface PostgateNotes {
  email_id?: string;
  project_id?: string;
  bulk?: boolean;
  sender_domain?: string;
  /** The Enqueue idempotency key (email_id, or email_id/n for one recipient's bulk copy). */
  enqueue_key?: string;
  /** Day 1 of the project's warm-up, epoch ms. */
  warmup_start?: number;
  /** When control accepted the email, epoch ms (0: unknown, a file from before contract 4). */
  accepted_ms?: number;
  /** Set on a scheduled retry of rejected recipients: how many such retries so far. */
  reject_retries?: number;
  /** Attempts made before this queue item existed (a retry continues the count). */
  attempt_base?: number;
  /** A retry is not due before this (epoch ms, by our clock). */
  not_before?: number;
  /** The sender domain's `tls: "enforced"` (OutboundMessage.require_tls): only over verified TLS (gateway/tls). */
  require_tls?: boolean;
}

export interface HMailItem {
  filename: string;
  path: string;
  /** The stored message (after the todo header) as a stream. */
  data_stream(): NodeJS.ReadableStream;
  /** Temporary failures so far; incremented before the deferred hook runs. */
  num_failures: number;
  /** In-memory notes of this queue item (not persisted, shared with its split-offs). */
  notes: Record<string, unknown>;
  todo: {
    uuid: string;
    domain: string;
    queue_time: number;
    mail_from: HarakaAddress;
    rcpt_to: HarakaAddress[];
    notes: PostgateNotes & Record<string, unknown>;
  };
}

/** The HMailItem methods gateway/queue-memory.ts wraps (outbound/hmail.js, Haraka 3.3.4). */
export interface QueueItemProto {
  size_file(this: HMailItem): unknown;
  read_todo(this: HMailItem): unknown;
  _stream_bytes_from(this: HMailItem, file: string, opts: { start?: number; end?: number }): Promise<Buffer>;
  data_stream(this: HMailItem): NodeJS.ReadableStream;
  discard(this: HMailItem): unknown;
  deferred_respond(this: HMailItem, ...args: unknown[]): unknown;
}

/** A route returned from get_mx (net_utils.HarakaMx fields). */
export interface HarakaMx {
  exchange: string;
  port?: number;
  priority?: number;
  /** The MX host name when exchange is its resolved IP. */
  from_dns?: string;
  /** Our EHLO name. */
  bind_helo?: string;
}

/** `delivered` hook parameters, in Haraka's order. */
export type DeliveredParams = [
  host: string,
  ip: string,
  response: string,
  delay: number,
  port: number,
  mode: string,
  okRecips: HarakaAddress[],
  secured: boolean,
  authenticated: boolean,
];

/** `deferred` hook parameters. fail_recips/mx are set when only some recipients failed. */
export interface DeferredParams {
  delay: number;
  err: string;
  fail_recips?: HarakaAddress[];
  mx?: HarakaMx;
}

/** `bounce` hook error. bounced_rcpt/mx are set when specific recipients were refused. */
export interface BounceError extends Error {
  mx?: HarakaMx;
  bounced_rcpt?: HarakaAddress[];
  deferred_rcpt?: HarakaAddress[];
}

/** The outbound module (Haraka/outbound) as used to inject mail. */
export interface HarakaOutbound {
  send_email(
    from: string,
    to: string[],
    contents: string | NodeJS.ReadableStream,
    next: (code: number, msg: string) => void,
    options?: { notes?: unknown },
  ): void;
  init_queue(pid?: number): Promise<void>;
  /** Haraka's in-memory timers of delayed and temp-failed mail, keyed by queue file name. */
  temp_fail_queue: { discard(id: string): unknown; length(): number };
  delivery_queue: { push(hmail: HMailItem): void; length(): number };
  /** Queue file names (outbound/qfile.js). */
  qfile: { name(): string };
  /** A queue file's header (outbound/todo.js), from a transaction's mail_from, notes and uuid. */
  TODOItem: new (
    domain: string,
    rcpts: HarakaAddress[],
    transaction: { mail_from: HarakaAddress; notes: object; uuid: string },
  ) => { uuid: string; notes: object };
  /** A queued file as the delivery queue takes it; reads its todo back from the file. */
  HMailItem: (new (filename: string, path: string, notes: object) => HMailItem) & { prototype: QueueItemProto };
}
