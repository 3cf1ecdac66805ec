// What a webhook message says about an email's change (Standard Webhooks envelope
// {type, timestamp, data}), and which endpoints want it. Pure: the store queues the
// result in the same transaction as the change.

/** The email as its webhook messages describe it. */
export interface PayloadEmail {
  id: string;
  from: string;
  to: string[];
  subject: string;
  tags: string[];
  createdAt: number;
}

/** An endpoint with no statuses wants everything; otherwise the event's type or the email's new status. */
export const wantsEvent = (statuses: readonly string[], status: string, event: Record<string, unknown>): boolean =>
  !statuses.length || statuses.includes(String(event.type)) || statuses.includes(status);

/** The message body for an email that reached `status` at `at` through `event` (its `at` in ms). */
export function webhookPayload(email: PayloadEmail, status: string, at: number, event: Record<string, unknown>): string {
  const data = {
    email_id: email.id,
    status,
    from: email.from,
    to: email.to,
    subject: email.subject,
    tags: email.tags,
    created_at: new Date(email.createdAt).toISOString(),
    event: { ...event, at: new Date(Number(event.at)).toISOString() },
  };
  return JSON.stringify({ type: `email.${event.type === 'deferred' ? 'deferred' : status}`, timestamp: new Date(at).toISOString(), data });
}
