// What mail arriving at the inbound port means, parsed with mailparser:
//
// - to a VERP address (b+…): an asynchronous delivery report (RFC 3464
//   multipart/report; report-type=delivery-status: failed → bounced or rejected,
//   delayed → deferred, delivered → delivered) or a complaint (RFC 5965 ARF,
//   report-type=feedback-report → complained);
// - to a List-Unsubscribe mailto address (u+…): an unsubscribe.
//
// Anything else addressed to a VERP address (auto-replies, non-standard bounces) is
// accepted and ignored: guessing from free text would suppress addresses wrongly.
import type { ParsedMail, SimpleParserOptions } from 'mailparser';
import { classifyPermanent } from '../outcome.js';

let mailparser: Promise<typeof import('mailparser')> | undefined;
/** mailparser's simpleParser, loaded with the first report: about 5 MB of heap that a gateway receiving none never spends. */
async function simpleParser(input: Buffer, options: SimpleParserOptions): Promise<ParsedMail> {
  mailparser ??= import('mailparser');
  return (await mailparser).simpleParser(input, options);
}

export type InboundType = 'bounced' | 'rejected' | 'deferred' | 'delivered' | 'complained' | 'unsubscribed';

export interface InboundOutcome {
  type: InboundType;
  /** The recipient the report is about; '' when it does not say (control then applies it to the email's recipients). */
  recipient: string;
  response: string;
  enhancedCode: string;
  /** The remote MTA the report names. */
  mx: string;
  source: 'dsn' | 'arf' | 'mailto';
}

type Fields = Map<string, string>;

/** RFC 3464/5965 bodies are header-like blocks separated by blank lines. */
export function parseFieldBlocks(text: string): Fields[] {
  const blocks: Fields[] = [];
  let current: Fields = new Map();
  let last = '';
  for (const line of text.replace(/\r\n/g, '\n').split('\n')) {
    if (!line.trim()) {
      if (current.size) blocks.push(current);
      current = new Map();
      last = '';
      continue;
    }
    if (/^[ \t]/.test(line) && last) {
      current.set(last, `${current.get(last)} ${line.trim()}`);
      continue;
    }
    const i = line.indexOf(':');
    if (i <= 0) continue;
    last = line.slice(0, i).trim().toLowerCase();
    const value = line.slice(i + 1).trim();
    // A repeated field (Original-Rcpt-To) keeps its first value.
    if (!current.has(last)) current.set(last, value);
  }
  if (current.size) blocks.push(current);
  return blocks;
}

/** "rfc822; ann@example.com" → "ann@example.com"; "<a@b>" → "a@b". */
const typedValue = (v: string | undefined): string =>
  (v ?? '')
    .replace(/^[a-z0-9-]+\s*;\s*/i, '')
    .replace(/^<|>$/g, '')
    .trim();

const attachment = (mail: ParsedMail, type: string) => mail.attachments.find((a) => a.contentType.toLowerCase() === type);

/**
 * The To addresses of the original message a report carries. mailparser keeps it as
 * an attachment (message/rfc822 with disposition attachment, text/rfc822-headers), or,
 * when it is inline, shows its From/Subject/To lines in the text.
 */
async function originalRecipients(mail: ParsedMail): Promise<string[]> {
  const part = attachment(mail, 'message/rfc822') ?? attachment(mail, 'text/rfc822-headers');
  if (!part) {
    const to = /^To: (.+)$/m.exec(mail.text ?? '')?.[1] ?? '';
    return [...to.matchAll(/[^\s<>,"]+@[^\s<>,"]+/g)].map((m) => m[0]);
  }
  const original = await simpleParser(part.content, { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true });
  return (Array.isArray(original.to) ? original.to : original.to ? [original.to] : []).flatMap((a) => a.value.map((v) => v.address ?? '')).filter(Boolean);
}

function dsnOutcomes(status: string): InboundOutcome[] {
  const [perMessage, ...perRecipient] = parseFieldBlocks(status);
  const reporting = typedValue(perMessage?.get('reporting-mta'));
  const out: InboundOutcome[] = [];
  for (const f of perRecipient) {
    const action = (f.get('action') ?? '').toLowerCase();
    const recipient = typedValue(f.get('final-recipient') ?? f.get('original-recipient')).toLowerCase();
    const code = /\d\.\d{1,3}\.\d{1,3}/.exec(f.get('status') ?? '')?.[0] ?? '';
    const response = typedValue(f.get('diagnostic-code')) || `${action} ${code}`.trim();
    const mx = typedValue(f.get('remote-mta')) || reporting;
    let type: InboundType;
    if (action === 'failed') type = code.startsWith('4') ? 'rejected' : classifyPermanent(code, response);
    else if (action === 'delayed') type = 'deferred';
    else if (action === 'delivered') type = 'delivered';
    else continue; // relayed / expanded: handed on, nothing confirmed
    out.push({ type, recipient, response, enhancedCode: code, mx, source: 'dsn' });
  }
  return out;
}

/** Feedback types that mean "this is spam" (RFC 5965, 6430). not-spam and auth-failure are not complaints. */
const COMPLAINTS = new Set(['abuse', 'fraud', 'virus', 'other']);

/**
 * Reads one inbound message sent to `rcptLocal` (b+… or u+…) by `mailFrom`.
 * Returns the outcomes it reports; [] when it reports nothing we act on.
 */
export async function readInbound(raw: Buffer, rcptLocal: string, mailFrom: string): Promise<InboundOutcome[]> {
  if (rcptLocal.toLowerCase().startsWith('u+')) {
    return [{ type: 'unsubscribed', recipient: '', response: `List-Unsubscribe mail from ${mailFrom || '<>'}`, enhancedCode: '', mx: '', source: 'mailto' }];
  }
  const mail = await simpleParser(raw, { keepDeliveryStatus: true, skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true });
  const ct = mail.headers.get('content-type') as { value?: string; params?: Record<string, string> } | undefined;
  if (ct?.value?.toLowerCase() !== 'multipart/report') return [];
  const reportType = (ct.params?.['report-type'] ?? '').toLowerCase();

  if (reportType === 'delivery-status') {
    const status = attachment(mail, 'message/delivery-status') ?? attachment(mail, 'message/global-delivery-status');
    return status ? dsnOutcomes(status.content.toString('utf8')) : [];
  }

  if (reportType === 'feedback-report') {
    const report = attachment(mail, 'message/feedback-report');
    if (!report) return [];
    const f = parseFieldBlocks(report.content.toString('utf8'))[0] ?? new Map<string, string>();
    const kind = (f.get('feedback-type') ?? '').toLowerCase();
    if (!COMPLAINTS.has(kind)) return [];
    const to = await originalRecipients(mail);
    // Providers often redact the recipient; then the email's own recipients are meant.
    const recipient = typedValue(f.get('original-rcpt-to')).toLowerCase() || (to.length === 1 ? to[0]!.toLowerCase() : '');
    return [
      {
        type: 'complained',
        recipient,
        response: `${kind} report from ${typedValue(f.get('user-agent')) || mailFrom || 'a receiver'}`,
        enhancedCode: '',
        mx: typedValue(f.get('reporting-mta')),
        source: 'arf',
      },
    ];
  }
  return [];
}
