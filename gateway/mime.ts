// Builds the RFC 5322 message of a stored email with nodemailer's composer.
// Done by the gateway at Enqueue, long after the 202, and deterministic in what
// matters: Message-ID and Date come from the stored email, so a rebuild is the same mail.
import MailComposer from 'nodemailer/lib/mail-composer';
import { domainOf, parseMailbox } from '../control/mail/address.js';
import type { NormalizedRequest } from '../control/mail/pipeline.js';

/**
 * `extra` are the service's own headers (Feedback-ID, List-Unsubscribe…), written as
 * given (already valid header values) so what DKIM signs is exactly what was meant.
 */
export function buildMime(id: string, createdAt: number, r: NormalizedRequest, extra: Record<string, string> = {}): Promise<Buffer> {
  const from = parseMailbox(r.from)!;
  const headers: Record<string, string | { prepared: true; value: string }> = { ...r.headers };
  for (const [name, value] of Object.entries(extra)) headers[name] = { prepared: true, value };
  const composer = new MailComposer({
    from: r.from,
    to: r.to.length ? r.to : undefined,
    cc: r.cc.length ? r.cc : undefined,
    replyTo: r.reply_to.length ? r.reply_to : undefined,
    subject: r.subject,
    text: r.text,
    html: r.html,
    headers: headers as Record<string, string>,
    messageId: `<${id}@${domainOf(from.address)}>`,
    date: new Date(createdAt),
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  return composer.compile().build();
}
