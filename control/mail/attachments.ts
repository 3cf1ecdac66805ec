// Attachments of a send request (docs/mail-api.md, Attachments), the same for every door:
// HTTP and gRPC give them as JSON (`content` in base64), SMTP as the MIME parts of the
// message, mapped to the same shape. Pure: checked here (count, size after decoding,
// names, refused types, inline content ids) before anything is stored; the bytes are
// then stored once per email (control/store), apart from the request JSON, which keeps
// only what describes them.
import { randomUUID } from 'node:crypto';
import { detectExtension, detectMimeType } from 'nodemailer/lib/mime-funcs/mime-types';
import { decodeEncodedWords, nameProblem, refusedExtension } from '../../common/attachment-name.js';
import type { Limits } from '../../core/config.js';
import { invalid } from '../../core/errors.js';
import type { AttachmentMeta } from './vocabulary.js';

/** One attachment as the API takes it (Resend's SDK sends exactly these snake_case fields). */
export interface AttachmentInput {
  /** false or absent: named after its type (`attachment-1.png`). The SDK's type allows false. */
  filename?: string | false;
  /** The file, in base64. */
  content?: string;
  content_type?: string;
  /** Set: an inline part the HTML shows as `<img src="cid:…">`. */
  content_id?: string;
  /** A URL to fetch the file from (Resend): refused, the service never fetches remote files. */
  path?: string;
}

/** What the stored request keeps of an attachment: everything but its bytes (control/mail/vocabulary.ts). */
export type { AttachmentMeta };

export type AttachmentLimits = Pick<Limits, 'maxAttachments' | 'maxAttachmentBytes'>;

/** The programs common/attachment-name.ts refuses by extension (REFUSED_EXTENSIONS), named by type. */
const REFUSED_TYPES: ReadonlySet<string> = new Set([
  'application/x-msdownload',
  'application/x-msdos-program',
  'application/x-dosexec',
  'application/x-ms-installer',
  'application/x-msi',
  'application/vnd.microsoft.portable-executable',
  'application/java-archive',
  'application/x-java-archive',
  'application/x-ms-shortcut',
  'application/hta',
  'application/x-bat',
  'application/x-sh',
]);

const MB = 1024 * 1024;
/** Room in a request for one attachment's JSON besides its content (names, types, quotes). */
const JSON_ROOM_PER_ATTACHMENT = 2048;

/** base64 length of n bytes. */
const base64Length = (n: number): number => Math.ceil(n / 3) * 4;

/** Request body bytes the attachments of one request may take (base64 and their JSON): added to the send routes' limit. */
export const attachmentBodyBytes = (l: AttachmentLimits): number =>
  // Zero when a caller's config has no attachment limits (a partial config in tests).
  base64Length(l.maxAttachmentBytes ?? 0) + (l.maxAttachments ?? 0) * JSON_ROOM_PER_ATTACHMENT;

/** Message bytes the attachments of one SMTP submission may take: base64 in lines of 76 and a header block per part. */
export const attachmentMessageBytes = (l: AttachmentLimits): number =>
  Math.ceil((base64Length(l.maxAttachmentBytes ?? 0) * 78) / 76) + (l.maxAttachments ?? 0) * JSON_ROOM_PER_ATTACHMENT;

const megabytes = (n: number) => `${Math.round((n / MB) * 10) / 10} MB`;
const tooBig = (what: string, bytes: number, l: AttachmentLimits) =>
  invalid(`${what} ${bytes} bytes of attachments after decoding; at most ${l.maxAttachmentBytes} (${megabytes(l.maxAttachmentBytes)})`);

// Anything outside standard or URL-safe base64 (line breaks allowed, as MIME writes them).
const NOT_BASE64 = /[^A-Za-z0-9+/\-_=\r\n]/;
const HAS_LINE_BREAK = /[\r\n]/;
const LINE_BREAKS = /[\r\n]+/g;
const withoutLineBreaks = (s: string) => (HAS_LINE_BREAK.test(s) ? s.replace(LINE_BREAKS, '') : s);
// type/subtype with optional parameters (RFC 2045 tokens); no line breaks, so no header injection.
const TOKEN = '[A-Za-z0-9!#$&^_.+-]+';
const CONTENT_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(\\s*;\\s*${TOKEN}=(${TOKEN}|"[^"\\\\\\r\\n]*"))*\\s*$`);
// RFC 2392 content ids are msg-ids; the characters mail clients match in `cid:` references.
const CONTENT_ID = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.@-]{1,200}$/;

/**
 * Checks a base64 string (the right alphabet, padding only at its end, a length that decodes)
 * and returns its decoded size, without decoding it. Node's decoder skips what it does not
 * know, so a bad character would otherwise be silently dropped from the file.
 */
function base64Size(content: string, where: string): number {
  if (NOT_BASE64.test(content)) throw invalid(`${where}.content is not valid base64: send the file's bytes base64-encoded`);
  const body = withoutLineBreaks(content);
  const pad = body.indexOf('=');
  const end = pad === -1 ? body.length : pad;
  if (pad !== -1 && (pad < body.length - 2 || /[^=]/.test(body.slice(pad)))) throw invalid(`${where}.content is not valid base64: '=' may only pad its end`);
  if (end % 4 === 1) throw invalid(`${where}.content is not valid base64: its length cannot be decoded`);
  return Math.floor((end * 3) / 4);
}

const baseType = (contentType: string) => contentType.split(';')[0]!.trim().toLowerCase();

/**
 * Checks the attachments of one request and returns what the stored request keeps of them.
 * Every refusal is a 400 INVALID_REQUEST naming the attachment and what is wrong with it;
 * sizes are counted from the base64 length, before anything is decoded.
 */
export function checkAttachments(list: AttachmentInput[] | undefined, limits: AttachmentLimits): AttachmentMeta[] {
  if (list === undefined) return [];
  if (!Array.isArray(list)) throw invalid('attachments must be an array');
  if (list.length > limits.maxAttachments) throw invalid(`attachments: at most ${limits.maxAttachments} per email (got ${list.length})`);
  const out: AttachmentMeta[] = [];
  const contentIds = new Set<string>();
  let total = 0;
  list.forEach((a, i) => {
    const where = `attachments[${i}]`;
    if (typeof a !== 'object' || a === null || Array.isArray(a)) throw invalid(`${where} must be an object`);
    if (a.path !== undefined)
      throw invalid(
        `${where}.path: files are not fetched from URLs (the service never makes requests to addresses it is given); send the file in content, base64-encoded`,
      );
    if (typeof a.content !== 'string') throw invalid(`${where}.content is required: the file, base64-encoded`);
    const size = base64Size(a.content, where);
    total += size;
    if (total > limits.maxAttachmentBytes) throw tooBig('the email has at least', total, limits);

    if (a.content_type !== undefined && (typeof a.content_type !== 'string' || a.content_type.length > 200 || !CONTENT_TYPE.test(a.content_type)))
      throw invalid(`${where}.content_type is not a MIME type (type/subtype, e.g. application/pdf)`);
    const raw = a.filename === false || a.filename === undefined ? undefined : a.filename;
    if (raw !== undefined) {
      if (typeof raw !== 'string' || !raw.trim()) throw invalid(`${where}.filename must be a non-empty string`);
      if (raw.length > 255) throw invalid(`${where}.filename is longer than 255 characters`);
    }
    // Judged, kept and written as a client shows it: encoded words decoded (`=?utf-8?B?…?=`).
    const given = raw === undefined ? undefined : decodeEncodedWords(raw);
    const problem = given === undefined ? undefined : nameProblem(given);
    if (problem) throw invalid(`${where}.filename ${problem}`);
    const contentType = a.content_type?.trim() ?? (given ? detectMimeType(given) : 'application/octet-stream');
    const type = baseType(contentType);
    if (type.startsWith('multipart/')) throw invalid(`${where}.content_type: a multipart type cannot be an attachment`);
    const ext = detectExtension(type);
    const filename = given ?? `attachment-${i + 1}${ext && ext !== 'bin' ? `.${ext}` : ''}`;
    const extension = refusedExtension(filename);
    if (extension !== undefined)
      throw invalid(
        `${where}: .${extension} files are refused (programs and scripts; see docs/mail-api.md, Attachments); send them in an archive or as a link`,
      );
    if (REFUSED_TYPES.has(type)) throw invalid(`${where}: ${type} files are refused (programs and scripts; see docs/mail-api.md, Attachments)`);

    const meta: AttachmentMeta = { id: randomUUID(), filename, content_type: contentType, size };
    if (a.content_id !== undefined) {
      const cid = typeof a.content_id === 'string' ? a.content_id.trim().replace(/^<(.*)>$/, '$1') : '';
      if (!CONTENT_ID.test(cid))
        throw invalid(`${where}.content_id must be 1 to 200 characters without spaces or <>, e.g. logo@acme (the HTML shows it as cid:logo@acme)`);
      if (contentIds.has(cid)) throw invalid(`${where}.content_id ${cid} is given twice`);
      contentIds.add(cid);
      meta.content_id = cid;
    }
    out.push(meta);
  });
  return out;
}

/** The bytes of attachments checkAttachments accepted, in order. */
export function attachmentContents(list: AttachmentInput[] | undefined): Buffer[] {
  return (list ?? []).map((a) => Buffer.from(a.content!, 'base64'));
}

/**
 * One batch request carries at most maxAttachmentBytes of attachments over all its emails,
 * like a single send: what one request makes control hold stays bounded. Estimated from the
 * base64 lengths (each item is checked exactly later); the message says what to do instead.
 */
export function checkBatchAttachments(items: unknown[], limits: AttachmentLimits): void {
  let total = 0;
  for (const item of items) {
    const list = (item as { attachments?: unknown } | null)?.attachments;
    if (!Array.isArray(list)) continue;
    for (const a of list) {
      const content = (a as { content?: unknown } | null)?.content;
      if (typeof content === 'string') total += Math.floor((content.length * 3) / 4);
    }
  }
  if (total > limits.maxAttachmentBytes)
    throw invalid(
      `the batch carries about ${total} bytes of attachments after decoding; a batch carries at most ${limits.maxAttachmentBytes} (${megabytes(limits.maxAttachmentBytes)}) in total: send large attachments in emails of their own`,
    );
}

/** The JSON schema of `attachments` (types only; checkAttachments says precisely what is wrong). */
export function attachmentsSchema(limits: AttachmentLimits) {
  return {
    type: 'array',
    maxItems: limits.maxAttachments,
    description: `Files: at most ${limits.maxAttachments}, ${megabytes(limits.maxAttachmentBytes)} in total after decoding. Programs and scripts (.exe, .bat, .js…) are refused; so is \`path\` (no file is fetched from a URL).`,
    items: {
      type: 'object',
      additionalProperties: false,
      properties: {
        filename: { anyOf: [{ type: 'string' }, { type: 'boolean', enum: [false] }], description: 'Shown to the recipient; absent: named after its type.' },
        content: { type: 'string', description: 'The file, base64-encoded.' },
        content_type: { type: 'string', description: 'MIME type; absent: from the filename.' },
        content_id: { type: 'string', description: 'Makes it an inline part the HTML shows as `cid:<content_id>`.' },
        path: { type: 'string', description: 'Refused: files are not fetched from URLs.' },
      },
    },
  } as const;
}
