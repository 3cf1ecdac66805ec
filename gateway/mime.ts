// Builds the RFC 5322 message of a stored email with nodemailer's composer (its tree and
// headers; the bytes written in one pass unless the message has attachments: serialize()).
// Done by the gateway at Enqueue, long after the 202, and deterministic in what
// matters: Message-ID and Date come from the stored email, so a rebuild is the same mail.
import type { Readable, Transform } from 'node:stream';
import MailComposer from 'nodemailer/lib/mail-composer';
import type MimeNode from 'nodemailer/lib/mime-node';
import * as qp from 'nodemailer/lib/qp';
import * as base64 from 'nodemailer/lib/base64';
import { encodeWord } from 'nodemailer/lib/mime-funcs';
import { domainOf, parseMailbox } from '../common/address.js';
import { writableName } from '../common/attachment-name.js';
import { encodeTextQp } from './quoted-printable.js';
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
  const root = composer(id, c, files).compile();
  const built = c.attachments?.length ? undefined : serialize(root);
  return built ? Promise.resolve(built) : root.build();
}

/** The message built in one synchronous pass; undefined when only nodemailer's stream can build it (attachments). */
export function buildMimeNow(id: string, c: MessageParts): Buffer | undefined {
  return c.attachments?.length ? undefined : serialize(composer(id, c, undefined).compile());
}

/**
 * nodemailer's tree written out in one synchronous pass, as its stream writes it: each node's
 * headers (its own buildHeaders), its string content through the same QP or base64 encoder, the
 * children between boundaries, and the final line break. Its streams (a PassThrough, an encoder
 * and a pipeline per node, a turn of the event loop per step) cost more than the message itself
 * (bench/deliverability/stages.ts: build). Undefined for a tree with anything else in it
 * (attachments, streams, transforms): that one is built by nodemailer's stream.
 */
function serialize(root: MimeNode): Buffer | undefined {
  const plain = (n: TreeNode): boolean => !n._raw && (n.content === undefined || typeof n.content === 'string') && (n.childNodes ?? []).every(plain);
  const r = root as unknown as TreeNode;
  if (r._transforms?.length || r._processFuncs?.length || r.newline || !plain(r)) return undefined;
  const out: string[] = [];
  const write = (n: TreeNode) => {
    // Decided once: nodemailer scans the whole content for it, and buildHeaders asks again.
    const encoding = transferEncoding(n);
    n.getTransferEncoding = () => encoding;
    out.push(`${n.buildHeaders()}\r\n\r\n`);
    if (n.content) {
      const text = /^text\//i.test(n.contentType ?? '');
      if (encoding === 'quoted-printable')
        out.push(text ? encodeTextQp(n.content) : encodeSync(new qp.Encoder({ binary: true } as qp.EncoderOptions), n.content));
      else if (encoding === 'base64') out.push(encodeSync(new base64.Encoder({}), n.content));
      else out.push(n.content);
    }
    if (n.multipart) {
      for (const [i, child] of n.childNodes.entries()) {
        out.push(`${i ? '\r\n' : ''}--${n.boundary}\r\n`);
        write(child);
      }
      out.push(`\r\n--${n.boundary}--\r\n`);
    }
  };
  write(r);
  const text = out.join('');
  // nodemailer's LastNewline: the message ends with a line break. Then every line break CRLF, as
  // nodemailer's SMTP transport sends it (its LeWindows) and the queue file must hold it anyway
  // (queue-file.ts dataForm): done once here, the signer and the queue find nothing to change.
  const ended = text.endsWith('\n') ? text : text.endsWith('\r') ? `${text}\n` : `${text}\r\n`;
  return Buffer.from(ended.replace(BARE_LF, '\r\n'), 'utf8');
}

/** A line feed without its carriage return (a text's own line breaks: QP and 8bit keep them). */
const BARE_LF = /(?<!\r)\n/g;

/**
 * nodemailer's getTransferEncoding() without its count of every char in the common case: a text
 * part that is plain ASCII (setContent checked it) but has lines over 76 characters. Its count of
 * letters against 8-bit and control chars then only asks whether there is a letter at all
 * (quoted-printable) or not (base64).
 */
function transferEncoding(n: TreeNode): string {
  // The cheap checks first: most parts (short lines, non-ASCII) go straight to nodemailer.
  if (typeof n.content === 'string' && n._isPlainText && n._hasLongLines && !n.textEncoding && !n.getHeader('Content-Transfer-Encoding')) {
    const type = String(n.getHeader('Content-Type') ?? '')
      .toLowerCase()
      .trim();
    if (/^text\//.test(type)) return /[A-Za-z]/.test(n.content) ? 'quoted-printable' : 'base64';
  }
  return n.getTransferEncoding();
}

/** What serialize() reads of a MimeNode (fields nodemailer's typings do not declare). */
interface TreeNode {
  _isPlainText?: boolean;
  _hasLongLines?: boolean;
  textEncoding?: string;
  getHeader(key: string): unknown;
  content?: string;
  contentType?: string;
  multipart?: string | false;
  boundary?: string;
  childNodes: TreeNode[];
  newline?: string;
  _raw?: unknown;
  _transforms?: unknown[];
  _processFuncs?: unknown[];
  getTransferEncoding(): string;
  buildHeaders(): string;
}

/** Runs one of nodemailer's encoder streams over one chunk, synchronously (its stream gets the content as one chunk too). */
function encodeSync(encoder: Transform, content: string): string {
  const parts: string[] = [];
  encoder.push = (chunk: unknown) => {
    if (chunk !== null && chunk !== undefined) parts.push(typeof chunk === 'string' ? chunk : (chunk as Buffer).toString('latin1'));
    return true;
  };
  const t = encoder as unknown as { _transform(c: Buffer, e: string, done: () => void): void; _flush(done: () => void): void };
  t._transform(Buffer.from(content, 'utf8'), 'buffer', () => {});
  t._flush(() => {});
  return parts.join('');
}

/** The same message as a stream: its attachments are encoded as it is read, never held whole in memory. */
export function buildMimeStream(id: string, c: MessageParts, files?: AttachmentData): Readable {
  return composer(id, c, files).compile().createReadStream();
}

/** The files of a message, their bytes looked up by ref (shared by every copy that names them, never copied). */
function attachmentsOf(c: MessageParts, files: AttachmentData | undefined) {
  return (c.attachments ?? []).map((a, i) => {
    const bytes = files?.[a.ref];
    if (!bytes) throw new Error(`attachment ${a.ref} is missing from the request`);
    return {
      // The name a client will show, never one control's rules refuse (a name stored before them,
      // e.g. `=?utf-8?B?ZXZpbC5leGU=?=`, shown as evil.exe): nodemailer then writes it as MIME
      // says (quoted, RFC 2231 filename*= and an encoded name= when not plain ASCII).
      filename: writableName(a.filename) ?? `attachment-${i + 1}`,
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
