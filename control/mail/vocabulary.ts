// The email vocabulary: what the pipeline, the store interface, the lifecycle and the
// rules say about an email, as types (and the one reader of the stored request's JSON).
// It imports no module of control, so every one of them can import it.
import type { DeliveryEventType, EmailStatus } from '../../common/status.js';

// The statuses and event types are common/status.ts's (the gateway speaks them too).
export type { DeliveryEventType, EmailEventType, EmailStatus, RecipientStatus } from '../../common/status.js';

export type RecipientKind = 'to' | 'cc' | 'bcc';

/** Which mail a suppressed address gets none of: all of it, or the project's bulk mail (an unsubscribe). */
export type SuppressionScope = 'all' | 'bulk';

/** What describes an attachment in the stored request; its bytes are stored apart (NewEmail.attachments). */
export interface AttachmentMeta {
  id: string;
  filename: string;
  content_type: string;
  content_id?: string;
  /** Bytes, decoded. */
  size: number;
}

/** The send request as it is stored with the email (JSON): every list a list, every address checked. */
export interface StoredRequest {
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  reply_to: string[];
  subject: string;
  html?: string;
  text?: string;
  tags: string[];
  headers: Record<string, string>;
  bulk: boolean;
  attachments?: AttachmentMeta[];
  /** The platform's own mail (sign-in codes): never shown, its body dropped once a gateway holds it. */
  system?: boolean;
  /** Open and click tracking for this email, over its domain's settings (absent: the domain's). */
  tracking?: { open?: boolean; click?: boolean };
}

/** The one reader of a stored request's JSON (the pipeline wrote it; nothing else parses it by hand). */
export const readRequest = (json: string): StoredRequest => JSON.parse(json) as StoredRequest;

export interface Quota {
  daily: number;
  monthly: number;
}

/** Ingestion rules for bulk email, judged in the same transaction as the insert. */
export interface BulkRules {
  /** Bulk recipients with one subject per project per UTC day. */
  subjectLimit: number;
  /** A spike is bulk volume above max(floor, factor × the average of the previous `days` days). */
  spike: { factor: number; floor: number; days: number };
}

/** What the store knows of the project's bulk mail today, read in the insert's transaction. */
export interface BulkCounts {
  /** Bulk recipients of this email (refused recipients left out). */
  recipients: number;
  /** Bulk recipients already accepted today with the same subject (subjectHash). */
  sameSubjectToday: number;
  /** Bulk recipients already accepted today. */
  today: number;
  /** Bulk recipients per day over the previous `spike.days` days. */
  average: number;
  /** Bulk volume announced or approved for today (0 when none). */
  allowance: number;
}

/** Why a store refused an email; nothing of it was recorded. */
export type Refusal = { kind: 'quota'; period: 'daily' | 'monthly'; limit: number } | { kind: 'bulk-subject'; limit: number; sentToday: number };

export interface NewEmail {
  id: string;
  projectId: string;
  /**
   * 'queued'; 'scheduled' (with scheduledAt: no quota or bulk rule is judged until
   * release); or 'failed' for an email refused at ingestion (recorded all the same).
   */
  status: 'queued' | 'scheduled' | 'failed';
  scheduledAt?: number;
  from: string;
  subject: string;
  bulk: boolean;
  /** The StoredRequest, as JSON. */
  request: string;
  /** The platform's own mail (sign-in codes): its body is dropped once a gateway holds it. */
  system?: boolean;
  error?: string;
  errorCode?: string;
  createdAt: number;
  /**
   * In envelope order: a recipient's position is what unsubscribe and VERP tokens name.
   * status/reason set for a recipient refused at ingestion (suppressed, unsubscribed).
   */
  recipients: Array<{ address: string; kind: RecipientKind; status?: 'failed'; reason?: string }>;
  /**
   * Attachment bytes, in the order the request's `attachments` describe them: written once, in the
   * email's own transaction (a 202 means they are durable), and not at all for a refused email.
   */
  attachments?: Buffer[];
}

/** What emails.accept checks in the insert's transaction; absent = not checked (system mail, refused mail). */
export interface AcceptGuards {
  /**
   * Each recipient against the project's suppression list (control/mail/rules.ts judgeSuppressions),
   * before the quota: judged inside the insert's transaction, a lookup costs no transaction of its own.
   */
  suppressions?: boolean;
  quota?: Quota;
  bulk?: BulkRules;
}

/**
 * An email recorded (held: why control keeps it from the gateways, a bulk volume spike), recorded as
 * failed because every recipient is suppressed, or refused with nothing recorded.
 */
export type Acceptance = { kind: 'accepted'; held?: string } | { kind: 'suppressed' } | Refusal;

/** What reschedule and cancel found: done, no such email, or an email that is not scheduled (its status). */
export type ScheduleChange = { kind: 'done' } | { kind: 'not_found' } | { kind: 'not_scheduled'; status: EmailStatus };

/** One delivery event from a gateway, as it arrives from the stream. */
export interface GatewayEvent {
  seq: number;
  emailId: string;
  type: DeliveryEventType;
  recipient: string;
  at: number;
  attempt: number;
  details: Record<string, unknown>;
  /** Tells apart events of one attempt that are not repeats (pacing deferrals to different days). */
  dedupe?: string;
  /** A report names its recipient by position in the email (control/unsubscribe/mail-tokens.ts). */
  recipientIndex?: number;
  /** Apply only when the email has exactly one recipient (a report to a pre-VERP-per-recipient return path). */
  soleRecipient?: boolean;
}

/** An open or a click the tracking host saw (control/tracking), as recorded: the address already truncated. */
export interface TrackingHit {
  emailId: string;
  kind: 'open' | 'click';
  /** The original URL of a click; '' for an open. */
  link: string;
  at: number;
  userAgent: string;
  /** Truncated: the /24 of an IPv4 address, the /48 of an IPv6 one. */
  ip: string;
  /** A person, a mail provider's proxy (Gmail's images: usually a person behind it), or a machine (control/tracking/bots.ts). */
  agent: 'person' | 'proxy' | 'scanner';
  /** Why it is not a person. */
  reason?: string;
}

/** An event that changed something, with the email's status after it. */
export type AppliedEvent = GatewayEvent & { emailStatus: EmailStatus; projectId: string };

/** What hits add to the counts of one email, kind and link ('' for opens). */
export interface TrackingCount {
  emailId: string;
  kind: 'open' | 'click';
  link: string;
  count: number;
  /** Of them, by machines (scanners, Apple's prefetch). */
  bots: number;
  firstAt: number;
  lastAt: number;
}
