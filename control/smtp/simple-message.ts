// The common submitted message, one text/plain or text/html part in UTF-8 or ASCII, read
// without mailparser's streams: the same header parsing (mailsplit's MimeNode and
// mailparser's own processHeaders) and the same body decoding (libqp, base64) in one
// synchronous pass. mailparser spent 250 µs on a receipt and 740 µs on a 20 kB text,
// mostly in its stream machinery (a splitter, decoders and a node per message, a turn of
// the event loop per step), about a third of what control spends on such a message. Anything
// else (multipart, attachments, other charsets, format=flowed, an mbox From line, no blank
// line) returns undefined and goes to mailparser. Same result for what the SMTP door reads (the
// bodies, headerLines, subject and addresses): test/control/smtp/simple-message.test.ts maps
// messages both ways and compares.
import { createRequire } from 'node:module';
import type { ParsedMail } from 'mailparser';
import { configureLater, deferModule } from '../../core/lazy-module.js';

// mailparser's own parts, each resolved from where mailparser itself loads it (so at the versions it
// runs with): its header processing, mailsplit's node, whose header parsing decides the content
// type, charset and encoding, and the libmime and libqp those use.
const fromMailparser = createRequire(createRequire(import.meta.url).resolve('mailparser'));
// What mailparser loads for conversions the SMTP door turns off (PARSE: HTML to text, entities,
// links in text) and for Japanese charsets, loaded only when first used: about 4.3 MB of
// control's heap, which the old generation's growth step doubles at peak.
const mailParserFile = fromMailparser.resolve('./lib/mail-parser.js');
deferModule(mailParserFile, 'html-to-text', ['htmlToText']);
deferModule(mailParserFile, 'encoding-japanese');
// `he` (0.6 MB): mailparser renders every address it reads as HTML with he.encode's defaults,
// which encodeHtml answers without it; anything else of he is the real package's.
deferModule(mailParserFile, 'he', (load) => {
  const encode = (text: string, options?: object) => (options === undefined ? encodeHtml(text) : load().encode(text, options));
  return new Proxy({}, { get: (_t, p) => (p === 'encode' ? encode : load()[p]) });
});
// linkify-it with every TLD (1.1 MB of regular expressions), made and configured as mailparser
// loads, used only for links in text (skipTextLinks): see configureLater.
deferModule(mailParserFile, 'linkify-it', (load) => configureLater(load, ['tlds', 'add', 'set']));
deferModule(fromMailparser.resolve('libmime'), 'encoding-japanese');
const fromMailsplit = createRequire(fromMailparser.resolve('@zone-eu/mailsplit'));
const { MimeNode } = fromMailparser('@zone-eu/mailsplit') as { MimeNode: new (parent: false, config: object) => SplitNode };
const MailParser = fromMailparser('./lib/mail-parser.js') as { prototype: object };
const libmime = fromMailparser('libmime') as { Libmime: new (options: object) => unknown; decodeWords(value: string): string };
const libqp = fromMailsplit('libqp') as { decode(b: Buffer): Buffer };

/** A header value with its RFC 2047 encoded words decoded (clients encode a value that is not ASCII). */
export const decodeWords = (value: string): string => libmime.decodeWords(value);

/** he.encode(text) with he's default options: `"&'<>\`` and everything outside printable ASCII as hexadecimal references. */
export function encodeHtml(text: string): string {
  const hex = (codePoint: number) => `&#x${codePoint.toString(16).toUpperCase()};`;
  const bmp = (symbol: string) => hex(symbol.charCodeAt(0));
  return (
    text
      .replace(/["&'<>`]/g, bmp)
      .replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, (pair) => hex((pair.charCodeAt(0) - 0xd800) * 0x400 + pair.charCodeAt(1) - 0xdc00 + 0x10000))
      // biome-ignore lint/suspicious/noControlCharactersInRegex: he's own list of what it escapes (regexBmpWhitelist)
      .replace(/[\x01-\t\x0B\f\x0E-\x1F\x7F\x81\x8D\x8F\x90\x9D\xA0-\uFFFF]/g, bmp)
  );
}

interface SplitNode {
  addHeaderChunk(line: Buffer): void;
  parseHeaders(): void;
  multipart: string | false;
  contentType: string | false;
  charset: string | false;
  encoding: string;
  disposition: string | false;
  flowed: boolean;
  headers: { lines: ParsedMail['headerLines']; getList(): unknown[] };
}

interface HeaderProcessor {
  options: object;
  libmime: unknown;
  processHeaders(lines: unknown[]): Map<string, unknown>;
}

/** Headers longer than this go to mailparser (its own limit is 1 MB). */
const MAX_HEAD = 64 * 1024;
/**
 * The header fields the SMTP door reads of the parsed mail (toSendRequest; the rest it reads from
 * headerLines), and their property names. Only these go through mailparser's header processing,
 * which renders every address as HTML and text and decodes every field: the parsed mail made here
 * has no date, messageId, references or other structured fields.
 */
const MAIL_FIELDS = new Map([
  ['subject', 'subject'],
  ['from', 'from'],
  ['to', 'to'],
  ['cc', 'cc'],
  ['reply-to', 'replyTo'],
]);
/** The charsets mailparser reads as UTF-8 without a conversion (after dropping all but letters and digits). */
const UTF8 = new Set(['ascii', 'usascii', 'utf8']);
/** Base64 with padding only at its end: decoded alike however the splitter chunks it. */
const PLAIN_BASE64 = /^[A-Za-z0-9+/\r\n]*(?:=[\r\n]*){0,2}$/;

/** What simpleParser would give for `raw` with `options`, when it is a single text part; else undefined. */
export function parseSimpleMessage(raw: Buffer, options: object): ParsedMail | undefined {
  const bodyStart = headerEnd(raw);
  if (bodyStart < 0 || bodyStart > MAX_HEAD) return undefined;
  // An mbox "From " line before the headers: mailsplit keeps it aside.
  if (raw.subarray(0, 5).toString('latin1') === 'From ') return undefined;
  const node = new MimeNode(false, options);
  node.addHeaderChunk(raw.subarray(0, bodyStart));
  node.parseHeaders();
  const type = node.contentType || 'text/plain';
  if (node.multipart || node.disposition || node.flowed || (type !== 'text/plain' && type !== 'text/html')) return undefined;
  if (
    !UTF8.has(
      String(node.charset || 'utf-8')
        .toLowerCase()
        .replace(/[^a-z0-9]+/g, ''),
    )
  )
    return undefined;
  const body = raw.subarray(bodyStart);
  let bytes: Buffer;
  switch (node.encoding) {
    case '':
    case '7bit':
    case '8bit':
    case 'binary':
      bytes = body;
      break;
    case 'quoted-printable':
      bytes = libqp.decode(body);
      break;
    case 'base64': {
      const b64 = body.toString('latin1');
      if (!PLAIN_BASE64.test(b64)) return undefined;
      bytes = Buffer.from(b64.replace(/[\r\n]/g, ''), 'base64');
      break;
    }
    default:
      return undefined;
  }
  const content = bytes.toString().replace(/\r?\n/g, '\n');
  const lines = node.headers.getList() as Array<{ key: string }>;
  const headers = headerProcessor(options).processHeaders(lines.filter((l) => MAIL_FIELDS.has(l.key)));
  const mail: Record<string, unknown> = { attachments: [], headers, headerLines: node.headers.lines, html: false };
  // mailparser: an empty part is no text; an HTML-only message has text '' (skipHtmlToText).
  if (content && type === 'text/plain') mail.text = content;
  if (content && type === 'text/html') {
    mail.text = '';
    mail.html = content;
  }
  for (const [key, field] of MAIL_FIELDS) if (headers.has(key)) mail[field] = headers.get(key);
  return mail as unknown as ParsedMail;
}

/** Where the body starts: after the first empty line (CRLF or LF), or -1 without one. */
function headerEnd(raw: Buffer): number {
  if (raw[0] === 0x0a) return -1;
  if (raw[0] === 0x0d && raw[1] === 0x0a) return -1;
  for (let i = raw.indexOf(0x0a); i >= 0 && i + 1 < raw.length; i = raw.indexOf(0x0a, i + 1)) {
    if (raw[i + 1] === 0x0a) return i + 2;
    if (raw[i + 1] === 0x0d && raw[i + 2] === 0x0a) return i + 3;
  }
  return -1;
}

let processor: HeaderProcessor | undefined;

/** mailparser's header processing (decoded words, addresses, message ids) without a parser stream around it. */
function headerProcessor(options: object): HeaderProcessor {
  if (!processor) {
    processor = Object.create(MailParser.prototype) as HeaderProcessor;
    processor.libmime = new libmime.Libmime({});
  }
  processor.options = options;
  return processor;
}
