// The public shape of an email (GET /v1/emails/:id and the gRPC GetEmail).
import type { Store } from '../store/index.js';

const iso = (ms: number) => new Date(ms).toISOString();

export type EmailView = Record<string, unknown> & { id: string; status: string; events: Array<Record<string, unknown> & { type: string; at: string }> };

export async function emailView(store: Store, projectId: string, id: string): Promise<EmailView | undefined> {
  const found = await store.emails.get(projectId, id);
  if (!found) return undefined;
  const { email, recipients, events } = found;
  const r = JSON.parse(email.request) as { to: string[]; cc: string[]; bcc: string[]; reply_to: string[]; tags: string[] };
  return {
    id: email.id,
    status: email.status,
    from: email.from,
    to: r.to,
    cc: r.cc,
    bcc: r.bcc,
    reply_to: r.reply_to,
    subject: email.subject,
    tags: r.tags,
    bulk: email.bulk,
    created_at: iso(email.createdAt),
    updated_at: iso(email.updatedAt),
    error: email.error ? { error: email.error, code: email.errorCode } : null,
    recipients: recipients.map((x) => ({ email: x.address, kind: x.kind, status: x.status, updated_at: iso(x.updatedAt) })),
    events: events.map((e) => ({
      type: e.type,
      at: iso(e.at),
      ...(e.recipient ? { recipient: e.recipient } : {}),
      ...(e.attempt ? { attempt: e.attempt } : {}),
      ...(e.details ?? {}),
    })),
  };
}
