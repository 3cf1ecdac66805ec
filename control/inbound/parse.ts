// A received message (the gateway's InboundMail) as control stores and shows it: mailparser's reading
// of the raw message in Resend's receiving fields, the attachments with ids and safe file names, and
// the email.received webhook message. Pure but for the parse.
import crypto from 'node:crypto';
import type { AddressObject, ParsedMail } from 'mailparser';
import type { InboundAttachmentRow, NewInboundEmail } from '../store/index.js';

/** What the gateway sent (DeliveryEvent with its InboundMail), in plain fields. */
export interface ReceivedMessage {
  id: string;
  atMs: number;
  projectId: string;
  mailFrom: string;
  rcptTo: string[];
  raw: Uint8Array;
  remoteIp: string;
  helo: string;
  spf: string;
  dkim: string;
  dmarc: string;
  authenticationResults: string;
  authJson: string;
}

let mailparser: Promise<typeof import('mailparser')> | undefined;

const addresses = (a: AddressObject | AddressObject[] | undefined): string[] =>
  (Array.isArray(a) ? a : a ? [a] : [])
    .flatMap((o) => o.value)
    .flatMap((v) => (v.group ? v.group : [v]))
    .filter((v) => v.address)
    .map((v) => (v.name ? `${v.name.replace(/[\s"<>]+/g, ' ').trim()} <${v.address}>` : v.address!));

/**
 * A file name that is only a name: no directories (a `../../x` name written to disk by the receiving
 * application must not climb), no control characters (CR/LF could split a header that quotes it), at
 * most 255 characters; null when nothing is left.
 */
export function safeFilename(name: string | undefined): string | null {
  if (!name) return null;
  const clean = [...name]
    .filter((c) => c.charCodeAt(0) > 0x1f && c !== '\u007f')
    .join('')
    .split(/[/\\]/)
    .pop()!
    .trim()
    .slice(0, 255);
  return clean && clean !== '.' && clean !== '..' ? clean : null;
}

/** Each header once, by lower-case name, unfolded; a repeated header's values joined by newlines (Received…). */
export function headerRecord(lines: ReadonlyArray<{ key: string; line: string }>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { key, line } of lines) {
    const value = line
      .slice(line.indexOf(':') + 1)
      .replace(/\r?\n[ \t]+/g, ' ')
      .trim();
    out[key] = key in out ? `${out[key]}\n${value}` : value;
  }
  return out;
}

/** The stored email: parsed once here, at the event, not at each read. */
export async function parseReceived(m: ReceivedMessage): Promise<NewInboundEmail> {
  mailparser ??= import('mailparser');
  const mail: ParsedMail = await (await mailparser).simpleParser(Buffer.from(m.raw), { skipImageLinks: true, skipTextToHtml: true });
  const attachments: InboundAttachmentRow[] = [];
  const contents: Uint8Array[] = [];
  for (const a of mail.attachments) {
    attachments.push({
      id: crypto.randomUUID(),
      filename: safeFilename(a.filename),
      contentType: (a.contentType || 'application/octet-stream').toLowerCase().slice(0, 255),
      contentDisposition: a.contentDisposition === 'inline' || (a.related && a.contentDisposition !== 'attachment') ? 'inline' : 'attachment',
      contentId: a.contentId ? a.contentId.replace(/^<|>$/g, '').slice(0, 255) : null,
      size: a.size ?? a.content.length,
    });
    contents.push(a.content);
  }
  return {
    id: m.id,
    projectId: m.projectId,
    createdAt: m.atMs,
    mailFrom: m.mailFrom,
    rcptTo: m.rcptTo,
    from: addresses(mail.from)[0] ?? m.mailFrom,
    to: addresses(mail.to),
    cc: addresses(mail.cc),
    bcc: addresses(mail.bcc),
    replyTo: addresses(mail.replyTo),
    subject: mail.subject ?? '',
    messageId: mail.messageId ?? '',
    text: mail.text ?? null,
    html: typeof mail.html === 'string' ? mail.html : null,
    headers: headerRecord(mail.headerLines),
    auth: { spf: m.spf, dkim: m.dkim, dmarc: m.dmarc, header: m.authenticationResults, details: m.authJson },
    remoteIp: m.remoteIp,
    helo: m.helo,
    size: m.raw.byteLength,
    attachments,
    raw: m.raw,
    contents,
  };
}

/**
 * The email when its message cannot be parsed at all: the envelope, the checks and the raw message (downloadable),
 * nothing read from it. Storing it beats retrying it: a message that never parses would hold the gateway's
 * event stream, and every delivery event behind it, forever.
 */
export function unparsedReceived(m: ReceivedMessage): NewInboundEmail {
  return {
    id: m.id,
    projectId: m.projectId,
    createdAt: m.atMs,
    mailFrom: m.mailFrom,
    rcptTo: m.rcptTo,
    from: m.mailFrom,
    to: [],
    cc: [],
    bcc: [],
    replyTo: [],
    subject: '',
    messageId: '',
    text: null,
    html: null,
    headers: {},
    auth: { spf: m.spf, dkim: m.dkim, dmarc: m.dmarc, header: m.authenticationResults, details: m.authJson },
    remoteIp: m.remoteIp,
    helo: m.helo,
    size: m.raw.byteLength,
    attachments: [],
    raw: m.raw,
    contents: [],
  };
}

/** The email.received webhook message's `data`, as Resend's (ReceivedEmailEventData), with the checks added. */
export function receivedEventData(e: NewInboundEmail): Record<string, unknown> {
  return {
    email_id: e.id,
    created_at: new Date(e.createdAt).toISOString(),
    from: e.from,
    to: e.to,
    bcc: e.bcc,
    cc: e.cc,
    received_for: e.rcptTo,
    message_id: e.messageId,
    subject: e.subject,
    attachments: e.attachments.map((a) => ({
      id: a.id,
      filename: a.filename,
      content_type: a.contentType,
      content_disposition: a.contentDisposition,
      content_id: a.contentId,
    })),
    authentication: { spf: e.auth.spf, dkim: e.auth.dkim, dmarc: e.auth.dmarc },
  };
}
