// Hand typings of the admin API in openapi-typescript's `paths` shape, used until `npm run gen`
// writes src/gen/admin-api.d.ts (the generated ones replace these; the calls stay the same).
type Json<T> = { headers: { [name: string]: unknown }; content: { 'application/json': T } };
export interface ErrorBody {
  error: string;
  code: string;
}
type Errors = { 400: Json<ErrorBody>; 401: Json<ErrorBody>; 404: Json<ErrorBody> };
type Params<Q, P> = { query?: Q; header?: never; cookie?: never } & ([P] extends [never] ? { path?: never } : { path: P });
type Body<B> = [B] extends [never] ? { requestBody?: never } : { requestBody: { content: { 'application/json': B } } };
type Op<Res, Q = never, P = never, B = never, S extends number = 200> = {
  parameters: Params<Q, P>;
  responses: { [K in S]: Json<Res> } & Errors;
} & Body<B>;
type Methods = {
  get?: never;
  put?: never;
  post?: never;
  delete?: never;
  options?: never;
  head?: never;
  patch?: never;
  trace?: never;
};
type Path<M> = { parameters: { query?: never; header?: never; path?: never; cookie?: never } } & Omit<Methods, keyof M> & M;

type Counts = { delivered: number; deferred: number; bounced: number; complained: number };
type Deferred = { receiver: number; network: number; pacing: number; volume: number; shaping: number; suspended: number };
type Span = { start: string; step_s: number; accepted: number[]; delivered: number[]; deferred: number[]; bounced: number[]; complained: number[] };
type Action = { rule: string; action: string; value: number; project: string | null; since: string | null; until: string | null; trigger: string };
type Suspension = { id: string; provider: string | null; project: string | null; until: string | null; reason: string; created_at: string };
type Overview = {
  at: string;
  nodes: string[];
  unreachable: string[];
  series: { minute: Span; hour: Span };
  queue: { ready: number; in_flight: number; deferred: Deferred; held: number; scheduled: number; oldest_at: string | null };
  providers: {
    provider: string;
    suspended: boolean;
    shaped: boolean;
    actions: Action[];
    suspensions: { id: string; provider: string | null; project: string | null; reason: string; until: string | null }[];
  }[];
  alerts: {
    kind: 'bounce_rate' | 'complaint_rate' | 'queue_age' | 'gateway_unreachable';
    severity: 'warning' | 'critical';
    project: string | null;
    provider: string | null;
    value: number;
    threshold: number;
    message: string;
  }[];
};
type Windows = { last_5m: Counts; last_hour: Counts; last_day: Counts };
type Queue = { ready: number; in_flight: number; deferred: Deferred };
type QueueStatus = {
  at: string;
  nodes: string[];
  unreachable: string[];
  held: { emails: number; projects: { project: string | null; emails: number }[] };
  providers: {
    provider: string;
    queue: Queue;
    connections: { open: number; limit: number | null };
    rate: { per_minute: number; configured: number | null; effective: number | null };
    warmup: { project: string | null; used: number; norm: number | null }[];
    answers: { enhanced_code: string; count: number; sample: string; last_at: string | null }[];
    windows: Windows;
    actions: Action[];
    projects: { project: string | null; queue: Queue; windows: Windows }[];
  }[];
};
type Throttle = {
  provider: string;
  daily_norm: number;
  growth: number;
  max_daily_norm: number;
  rate_per_minute: number;
  connections: number;
  source: 'config' | 'operator';
  updated_at: string | null;
};
type ThrottleBody = { daily_norm?: number; growth?: number; max_daily_norm?: number; rate_per_minute?: number; connections?: number };
type Project = { id: string; slug: string; name: string; status: 'active' | 'paused'; plan: string; created_at: string };
type Key = { id: string; kind: 'live' | 'test'; scope: 'all' | 'auth'; prefix: string; created_at: string; revoked_at: string | null };
type DnsRecord = {
  purpose?: string;
  type: string;
  name: string;
  value: string;
  priority?: number;
  status: 'pending' | 'verified' | 'failed';
  problem?: string;
};
type ProjectDetail = Project & {
  limits: { daily_quota: number; monthly_quota: number; rate: number };
  usage: { day: number; month: number };
  rates: {
    window_days: number;
    sent: number;
    delivered: number;
    bounced: number;
    complained: number;
    bounce_rate: number | null;
    complaint_rate: number | null;
  };
  keys: Key[];
  domains: {
    id: string;
    name: string;
    status: 'pending' | 'verified';
    records: DnsRecord[];
    created_at: string;
    checked_at: string | null;
    verified_at: string | null;
  }[];
};
type EmailStatus = 'queued' | 'sending' | 'sent' | 'delivered' | 'bounced' | 'rejected' | 'complained' | 'failed' | 'scheduled' | 'canceled';
type EmailSearch = {
  project?: string;
  id?: string;
  to?: string;
  from?: string;
  subject?: string;
  status?: EmailStatus;
  tag?: string;
  since?: string;
  until?: string;
  limit?: string;
  after?: string;
};
type Tag = { name: string; value: string };
type EmailList = {
  data: { id: string; project: string; from: string; to: string[]; subject: string; status: EmailStatus; created_at: string; tags: Tag[] }[];
  has_more: boolean;
  next: string | null;
  scanned_until: string | null;
};
type EmailDetail = {
  id: string;
  project: { slug: string; name: string };
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  reply_to: string[];
  subject: string;
  status: EmailStatus;
  created_at: string;
  scheduled_at: string | null;
  tags: Tag[];
  bulk: boolean;
  html_size: number;
  text_size: number;
  recipients: { address: string; kind: 'to' | 'cc' | 'bcc'; status: string; updated_at: string }[];
  events: {
    type: string;
    recipient: string | null;
    attempt: number | null;
    at: string;
    provider: string | null;
    mx: string | null;
    code: number | null;
    enhanced_code: string | null;
    response: string | null;
    cause: string | null;
    rule: string | null;
  }[];
};
type SuppressionList = {
  data: { project: string; address: string; reason: string; scope: string; email_id: string | null; created_at: string }[];
  has_more: boolean;
  next: string | null;
};
type Webhooks = {
  data: {
    id: string;
    project: string;
    url: string;
    events: string[];
    enabled: boolean;
    created_at: string;
    recent: { pending: number; delivered: number; failed: number };
  }[];
};
type Deliveries = {
  data: {
    id: string;
    event_type: string | null;
    status: 'pending' | 'delivered' | 'failed';
    attempt: number;
    last_error: string | null;
    answer_code: number | null;
    created_at: string;
    next_attempt_at: string | null;
    delivered_at: string | null;
  }[];
};
type Counts2 = { signed_in: number; failed: number };
type Activity = {
  period: string;
  step_s: number;
  start: string;
  buckets: ({ at: string } & Counts2)[];
  by_method: ({ method: string } & Counts2)[];
  by_provider: ({ provider: string | null } & Counts2)[];
};
type AuthAudit = {
  object: 'list';
  has_more: boolean;
  data: {
    id: string;
    type: string;
    env: 'live' | 'test';
    user_id: string | null;
    session_id: string | null;
    email: string | null;
    phone: string | null;
    provider: string | null;
    reason: string | null;
    suppressed: number;
    ip: string | null;
    user_agent: string | null;
    at: string;
  }[];
};
type Slug = { slug: string };

export type paths = {
  '/admin/v1/overview': Path<{ get: Op<Overview> }>;
  '/admin/v1/queue/status': Path<{ get: Op<QueueStatus> }>;
  '/admin/v1/throttles': Path<{ get: Op<{ data: Throttle[] }> }>;
  '/admin/v1/throttles/{provider}': Path<{ post: Op<Throttle, never, { provider: string }, ThrottleBody> }>;
  '/admin/v1/queue/suspensions': Path<{
    get: Op<{ object: 'list'; data: Suspension[] }>;
    post: Op<Suspension, never, never, { provider?: string; project?: string; until?: string; reason?: string }, 201>;
  }>;
  '/admin/v1/queue/suspensions/{id}': Path<{ delete: Op<Suspension & { resumed: boolean }, never, { id: string }> }>;
  '/admin/v1/queue/send-now': Path<{ post: Op<{ woken: number }, never, never, { provider?: string; project?: string }> }>;
  '/admin/v1/projects': Path<{ get: Op<{ data: Project[] }> }>;
  '/admin/v1/projects/{slug}': Path<{ get: Op<ProjectDetail, never, Slug> }>;
  '/admin/v1/projects/{slug}/pause': Path<{ post: Op<Project, never, Slug> }>;
  '/admin/v1/projects/{slug}/resume': Path<{ post: Op<Project, never, Slug> }>;
  '/admin/v1/projects/{slug}/cancel-queued': Path<{ post: Op<{ canceled: number; dropped: number }, never, Slug> }>;
  '/admin/v1/projects/{slug}/keys': Path<{
    post: Op<
      { id: string; key: string; kind: 'live' | 'test'; scope: 'all' | 'auth'; hint: string },
      never,
      Slug,
      { kind: 'live' | 'test'; scope?: 'all' | 'auth' },
      201
    >;
  }>;
  '/admin/v1/projects/{slug}/keys/{id}': Path<{ delete: Op<{ id: string; revoked: boolean }, never, { slug: string; id: string }> }>;
  '/admin/v1/projects/{slug}/audit': Path<{ get: Op<AuthAudit, { limit?: string; after?: string; before?: string; type?: string }, Slug> }>;
  '/admin/v1/projects/{slug}/auth/activity': Path<{ get: Op<Activity, { period?: 'day' | 'week' }, Slug> }>;
  '/admin/v1/projects/{slug}/suppressions/{address}': Path<{ delete: Op<never, never, { slug: string; address: string }, never, 204> }>;
  '/admin/v1/emails': Path<{ get: Op<EmailList, EmailSearch> }>;
  '/admin/v1/emails/{id}': Path<{ get: Op<EmailDetail, never, { id: string }> }>;
  '/admin/v1/suppressions': Path<{ get: Op<SuppressionList, { project?: string; q?: string; limit?: string; after?: string }> }>;
  '/admin/v1/webhooks': Path<{ get: Op<Webhooks, { project?: string }> }>;
  '/admin/v1/webhooks/{id}/deliveries': Path<{ get: Op<Deliveries, { status?: 'pending' | 'delivered' | 'failed'; limit?: string }, { id: string }> }>;
  '/admin/v1/webhooks/deliveries/{id}/retry': Path<{
    post: Op<{ id: string; status: string; next_attempt_at: string | null }, never, { id: string }, never, 202>;
  }>;
};
