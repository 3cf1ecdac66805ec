// Builds the RFC 5322 message of a stored email with nodemailer's composer.
// Done by the gateway at Enqueue, long after the 202, and deterministic in what
// matters: Message-ID and Date come from the stored email, so a rebuild is the same mail.
import type { Readable } from 'node:stream';
import MailComposer from 'nodemailer/lib/mail-composer';
import { encodeWord } from 'nodemailer/lib/mime-funcs';
import { domainOf, parseMailbox } from '../common/address.js';
import type { Composition } from '../proto/gen/postgate/gateway/v1/gateway_pb.js';

/** The message as control describes it (proto Composition). */
export type MessageParts = Omit<Composition, '$typeName' | 'attachments'> & { attachments?: Composition['attachments'] };

/** Attachment bytes by ref (EnqueueRequest.attachments). */
export type AttachmentData = { readonly [ref: string]: Uint8Array };

/**
 * The service's own headers (Feedback-ID, List-Unsubscribe…) are written as given
 * (already valid header values) so what DKIM signs is exactly what was meant.
 */
export function buildMime(id: string, c: MessageParts, files?: AttachmentData): Promise<Buffer> {
  return composer(id, c, files).compile().build();
}

/** The same message as a stream: its attachments are encoded as it is read, never held whole in memory. */
export function buildMimeStream(id: string, c: MessageParts, files?: AttachmentData): Readable {
  return composer(id, c, files).compile().createReadStream();
}

/** The files of a message, their bytes looked up by ref (shared by every copy that names them, never copied). */
function attachmentsOf(c: MessageParts, files: AttachmentData | undefined) {
  return (c.attachments ?? []).map((a) => {
    const bytes = files?.[a.ref];
    if (!bytes) throw new Error(`attachment ${a.ref} is missing from the request`);
    return {
      filename: a.filename,
      content: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
      contentType: a.contentType,
      // An inline part goes next to the HTML (multipart/related) under the id its cid: link names.
      ...(a.contentId ? { cid: a.contentId, contentDisposition: 'inline' as const } : { contentDisposition: 'attachment' as const }),
    };
  });
}

function composer(id: string, c: MessageParts, files: AttachmentData | undefined): MailComposer {
  const from = mailbox(c.from);
  const headers: Record<string, string | { prepared: true; value: string }> = {};
  for (const [name, value] of Object.entries(c.headers)) headers[name] = foldable(value);
  for (const [name, value] of Object.entries(c.serviceHeaders)) headers[name] = { prepared: true, value };
  // Addresses go to the composer parsed: it then quotes or encodes each display name itself,
  // and a stored string can never be read back as more (or other) mailboxes than were checked.
  const list = (a: string[]) => (a.length ? a.map(mailbox) : undefined);
  return new MailComposer({
    from,
    to: list(c.to),
    cc: list(c.cc),
    replyTo: list(c.replyTo),
    subject: foldable(c.subject),
    // Empty means no such part, as an absent one did.
    text: c.text || undefined,
    html: c.html || undefined,
    headers: headers as Record<string, string>,
    attachments: attachmentsOf(c, files),
    messageId: `<${id}@${domainOf(from.address)}>`,
    date: new Date(Number(c.createdAtMs)),
    disableFileAccess: true,
    disableUrlAccess: true,
  });
}

function mailbox(s: string): { name: string; address: string } {
  const m = parseMailbox(s)!;
  return { name: m.name ?? '', address: m.address };
}

/**
 * RFC 5322 caps a line at 998 octets; the composer folds at spaces, so a run of
 * non-space text longer than a line can hold is sent as encoded words, which split anywhere.
 */
function foldable(value: string): string {
  return /\S{900}/.test(value) ? encodeWord(value, 'Q', 52) : value;
}
