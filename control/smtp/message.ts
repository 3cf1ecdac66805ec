// A submitted RFC 5322 message → the send request of POST /v1/emails, so the
// one pipeline judges it. Addresses, subject and bodies come from the parsed
// headers; bcc are the envelope recipients that To and Cc do not name; tags
// and bulk come from X-Postgate-* headers, which are not passed on; the other
// MIME parts are its attachments (name, type, inline Content-ID kept).
import type { AddressObject, EmailAddress, ParsedMail } from 'mailparser';
import { invalid } from '../../core/errors.js';
import { canonical } from '../../common/address.js';
import { decodeWords, parseSimpleMessage } from './simple-message.js';

/** Parsing options: no conversions between text and html (the request keeps what was sent). */
export const PARSE = { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true, skipTextLinks: true } as const;

/**
 * The parsed message: a single text part without mailparser's streams (simple-message.ts), anything
 * else by mailparser. A message mailparser cannot read is the sender's fault (550), not a temporary failure.
 */
export function parseMessage(raw: Buffer): Promise<ParsedMail> {
  let simple: ParsedMail | undefined;
  try {
    simple = parseSimpleMessage(raw, PARSE);
  } catch {
    // mailparser decides, and words the refusal.
  }
  if (simple) return Promise.resolve(simple);
  return import('mailparser')
    .then(({ simpleParser }) => simpleParser(raw, PARSE))
    .catch((err: unknown) => {
      throw invalid(`the message could not be parsed: ${(err as Error).message}`);
    });
}

const TAGS = 'x-postgate-tags';
const BULK = 'x-postgate-bulk';
// A template (control/templates) by id or alias, and its variables as a JSON object.
const TEMPLATE = 'x-postgate-template';
const TEMPLATE_VARIABLES = 'x-postgate-template-variables';
// Open and click tracking for this email: `open=true, click=false` (either may be left out; control/tracking).
const TRACKING = 'x-postgate-tracking';
// Passed through besides X-* headers: replies thread through them.
const THREADING = new Set(['in-reply-to', 'references']);

/** X-Postgate-Tracking: `open=true, click=false` (`;` also separates; on/off and yes/no also say it). */
export function trackingHeader(value: string): { open?: boolean; click?: boolean } {
  const out: { open?: boolean; click?: boolean } = {};
  for (const part of value.split(/[,;]/)) {
    if (!part.trim()) continue;
    const m = /^\s*(open|click)\s*=\s*(true|false|on|off|yes|no)\s*$/i.exec(part);
    if (!m) throw invalid('X-Postgate-Tracking must be like "open=true, click=false"');
    out[m[1]!.toLowerCase() as 'open' | 'click'] = /^(true|on|yes)$/i.test(m[2]!);
  }
  return out;
}

function mailboxes(v: AddressObject | AddressObject[] | undefined): EmailAddress[] {
  const flat = (list: EmailAddress[]): EmailAddress[] => list.flatMap((a) => (a.group ? flat(a.group) : a.address ? [a] : []));
  return (v === undefined ? [] : Array.isArray(v) ? v : [v]).flatMap((o) => flat(o.value));
}

/** `Name <a@b>` as the API takes it; names with specials are quoted, and quote characters dropped. */
function format(m: EmailAddress): string {
  const name = m.name.replace(/["\\<>\r\n]/g, '').trim();
  if (!name) return m.address!;
  return /[()[\]:;@,.]/.test(name) ? `"${name}" <${m.address}>` : `${name} <${m.address}>`;
}

/** The unfolded raw value of a header line (encoded words kept as sent; the composer passes them on). */
const headerValue = (line: string): string =>
  line
    .slice(line.indexOf(':') + 1)
    .replace(/\r?\n[ \t]+/g, ' ')
    .trim();

export function toSendRequest(mail: ParsedMail, envelopeRecipients: string[]): Record<string, unknown> {
  // One From line naming one mailbox: a list or a group in From is shown by receivers as
  // someone else, and DMARC is undefined for it.
  const fromLines = mail.headerLines.filter((h) => h.key === 'from').length;
  const hasGroup = [mail.from ?? []].flat().some((o) => o.value.some((a) => a.group));
  const from = mailboxes(mail.from);
  if (fromLines !== 1 || hasGroup || from.length !== 1) throw invalid('From must name exactly one mailbox');
  const to = mailboxes(mail.to);
  if (!to.length) throw invalid('To must name at least one recipient');
  const cc = mailboxes(mail.cc);
  const replyTo = mailboxes(mail.replyTo);

  // The envelope decides who gets the mail; the pipeline mails everyone in To and Cc,
  // so a header recipient the client did not RCPT to would be mailed against its will.
  const envelope = new Map(envelopeRecipients.map((a) => [canonical(a), a] as const));
  const named = new Set<string>();
  for (const m of [...to, ...cc]) {
    const key = canonical(m.address!);
    if (!envelope.has(key)) throw invalid(`${m.address} is named in To/Cc but is not an envelope recipient (RCPT TO)`);
    named.add(key);
  }
  const bcc = [...envelope].filter(([key]) => !named.has(key)).map(([, a]) => a);

  const headers: Record<string, string> = {};
  const seen = new Set<string>();
  const tags: string[] = [];
  let bulk: boolean | undefined;
  let template: string | undefined;
  let variables: unknown;
  let tracking: { open?: boolean; click?: boolean } | undefined;
  for (const { key, line } of mail.headerLines) {
    const value = headerValue(line);
    if (key === TAGS) {
      tags.push(
        ...value
          .split(',')
          .map((t) => t.trim())
          .filter(Boolean),
      );
    } else if (key === BULK) {
      if (!/^(true|false)$/i.test(value)) throw invalid('X-Postgate-Bulk must be true or false');
      bulk = value.toLowerCase() === 'true';
    } else if (key === TEMPLATE) {
      if (template !== undefined) throw invalid('X-Postgate-Template is given twice');
      template = decodeWords(value);
    } else if (key === TEMPLATE_VARIABLES) {
      if (variables !== undefined) throw invalid('X-Postgate-Template-Variables is given twice');
      variables = templateVariables(decodeWords(value));
    } else if (key === TRACKING) {
      tracking = trackingHeader(value);
    } else if ((key.startsWith('x-') && !key.startsWith('x-postgate-')) || THREADING.has(key)) {
      if (seen.has(key)) continue; // the first of repeated headers
      seen.add(key);
      headers[line.slice(0, line.indexOf(':')).trim()] = value;
    }
  }

  const req: Record<string, unknown> = { from: format(from[0]!), to: to.map(format) };
  if (mail.subject !== undefined) req.subject = mail.subject;
  if (cc.length) req.cc = cc.map(format);
  if (bcc.length) req.bcc = bcc;
  if (replyTo.length) req.reply_to = replyTo.length === 1 ? format(replyTo[0]!) : replyTo.map(format);
  if (template !== undefined) {
    // The template gives the html and text: the message's own body is not sent.
    req.template = variables === undefined ? { id: template } : { id: template, variables };
  } else if (variables !== undefined) {
    throw invalid('X-Postgate-Template-Variables needs X-Postgate-Template');
  } else {
    if (mail.html) req.html = mail.html;
    // An html-only message yields text ''; an empty plain message is still a (text) message.
    if (mail.text || !mail.html) req.text = mail.text ?? '';
  }
  if (tags.length) req.tags = tags;
  if (bulk !== undefined) req.bulk = bulk;
  if (tracking) req.tracking = tracking;
  if (Object.keys(headers).length) req.headers = headers;
  // The message's other MIME parts, as the API takes attachments: the pipeline checks them as it does any.
  if (mail.attachments.length) req.attachments = mail.attachments.map(attachmentOf);
  return req;
}

/** X-Postgate-Template-Variables: a JSON object (encoded words decoded first); its values are checked as REST's. */
function templateVariables(value: string): unknown {
  let v: unknown;
  try {
    v = JSON.parse(value);
  } catch {
    throw invalid('X-Postgate-Template-Variables must be a JSON object');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw invalid('X-Postgate-Template-Variables must be a JSON object');
  return v;
}

/** One MIME part kept as an attachment: its bytes, name and type; an inline part (next to the HTML) keeps its Content-ID. */
function attachmentOf(a: ParsedMail['attachments'][number]): Record<string, unknown> {
  const out: Record<string, unknown> = { content: a.content.toString('base64'), content_type: a.contentType };
  if (a.filename) out.filename = a.filename;
  if (a.cid && (a.related || a.contentDisposition === 'inline')) out.content_id = a.cid;
  return out;
}

// The submission's idempotency key (Resend's name over SMTP, or the HTTP header's). Like every
// header that is not X-* or threading, it is never passed on to the composed message.
const IDEMPOTENCY_KEYS = new Set(['idempotency-key', 'resend-idempotency-key']);

/** The raw value of the message's idempotency key header, if it has one; two different values are refused. */
export function idempotencyKeyOf(mail: ParsedMail): string | undefined {
  const values = new Set(mail.headerLines.filter((h) => IDEMPOTENCY_KEYS.has(h.key)).map((h) => headerValue(h.line)));
  if (values.size > 1) throw invalid('the message carries two different idempotency keys');
  return [...values][0];
}
