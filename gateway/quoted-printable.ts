// Quoted-printable for a text part, written exactly as nodemailer's QP encoder stream writes it
// (nodemailer/lib/qp: its byte encoder, then its soft line wrap at 76), in one synchronous pass.
// Text with lines over 76 characters is sent as QP, and nodemailer's wrap() cuts a substring and
// runs up to five regular expressions per output line: for a 20 kB body, encoding took a third
// of building the message. Here the line decisions are made on indexes into the encoded string;
// the rare windows that end inside an =XX escape take nodemailer's own steps. Same bytes:
// test/gateway/quoted-printable.test.ts compares both on random and typical texts.

const LINE = 76;

/**
 * Text QP writes as it is (RFC 2045 6.7: TAB, CR, LF, SP to ~ but '='), with no space or tab
 * before a line break or at the end (those are escaped): its encoding is itself.
 */
const NEEDS_ESCAPE = /[^\t\n\r\x20-\x3c\x3e-\x7e]|[ \t](?:[\r\n]|$)/;

/** nodemailer's encoder works in slices of this many bytes, wrapping each after what the last left. */
const SLICE = 64 * 1024;

/** 1 for every byte QP writes as is (TAB, LF, CR, SP to '<', '>' to '~'). */
const LITERAL = new Uint8Array(256);
for (const [from, to] of [
  [0x09, 0x0a],
  [0x0d, 0x0d],
  [0x20, 0x3c],
  [0x3e, 0x7e],
] as const)
  LITERAL.fill(1, from, to + 1);
const HEX = '0123456789ABCDEF';

/**
 * What nodemailer's `new qp.Encoder()` writes for `content` given as one chunk (a text/* part: CR
 * and LF are line breaks). Its steps: the whitespace the input ends with is held back and encoded
 * last; the rest is encoded and wrapped in 64 kB slices, each wrapped together with the last,
 * unfinished line of the one before.
 */
export function encodeTextQp(content: string): string {
  const out: string[] = [];
  let line = '';
  const add = (encoded: string) => {
    const wrapped = wrap(line + encoded);
    const lastLf = wrapped.lastIndexOf('\n');
    line = wrapped.substring(lastLf + 1);
    if (lastLf >= 0) out.push(wrapped.substring(0, lastLf + 1));
  };
  if (!NEEDS_ESCAPE.test(content)) {
    // ASCII that encodes as itself: chars are bytes, and nothing ends in whitespace.
    for (let start = 0; start < content.length; start += SLICE) add(content.slice(start, start + SLICE));
  } else {
    const buf = Buffer.from(content, 'utf8');
    let end = buf.length;
    while (end > 0 && (buf[end - 1] === 0x20 || buf[end - 1] === 0x09)) end--;
    if (buf.length - end > SLICE) end = buf.length;
    for (const [from, to] of [
      [0, end],
      [end, buf.length],
    ] as const) {
      for (let start = from; start < to; start += SLICE) {
        const stop = Math.min(start + SLICE, to);
        add(encodeBytes(buf, start, stop, stop < to ? buf[stop] : undefined));
      }
    }
  }
  out.push(line);
  return out.join('');
}

/** nodemailer's encodeBytes for text (not binary): bytes start..stop, `next` the byte after them if the input goes on. */
function encodeBytes(buf: Buffer, start: number, stop: number, next: number | undefined): string {
  let out = '';
  let from = start;
  for (let i = start; i < stop; i++) {
    const ord = buf[i]!;
    if (LITERAL[ord]) {
      if (ord !== 0x20 && ord !== 0x09) continue;
      const following = i + 1 < stop ? buf[i + 1] : next;
      if (following !== undefined && following !== 0x0a && following !== 0x0d) continue;
    }
    out += `${buf.toString('latin1', from, i)}=${HEX[ord >> 4]}${HEX[ord & 15]}`;
    from = i + 1;
  }
  return out + buf.toString('latin1', from, stop);
}

const isBreakChar = (c: number) => c === 0x20 || c === 0x09 || c === 0x2e || c === 0x2c || c === 0x21 || c === 0x3f; // space tab . , ! ?

/** nodemailer's qp.wrap(str, 76), step for step (see its source for the rules). */
export function wrap(str: string, lineLength = LINE): string {
  if (str.length <= lineLength) return str;
  const margin = Math.floor(lineLength / 3);
  const len = str.length;
  const out: string[] = [];
  let pos = 0;
  // The next CRLF at or after pos (found once, not per line: LF-only text has none).
  let crlf = str.indexOf('\r\n');
  while (pos < len) {
    const end = Math.min(pos + lineLength, len);
    if (crlf !== -1 && crlf < pos) crlf = str.indexOf('\r\n', pos);
    // A CRLF inside the window ends the line there.
    if (crlf !== -1 && crlf + 2 <= end) {
      out.push(str.slice(pos, crlf + 2));
      pos = crlf + 2;
      continue;
    }
    if (str.charCodeAt(end - 1) === 0x0a) {
      out.push(str.slice(pos, end));
      pos = end;
      continue;
    }
    const tailStart = Math.max(pos, end - margin);
    // A line break in the window's last third: the line ends after it (nodemailer's /\n.*?$/, whose
    // '.' stops at a CR too: a CR after the last LF means no match).
    let lf = -1;
    for (let i = end - 1; i >= tailStart; i--) {
      const c = str.charCodeAt(i);
      if (c === 0x0a) lf = i;
      if (c === 0x0a || c === 0x0d || c === 0x2028 || c === 0x2029) break;
    }
    if (lf !== -1) {
      out.push(str.slice(pos, lf + 1));
      pos = lf + 1;
      continue;
    }
    let lineEnd = end;
    let brk = -1;
    if (end - pos > lineLength - margin) {
      for (let i = end - 1; i >= tailStart; i--) {
        if (isBreakChar(str.charCodeAt(i))) {
          brk = i;
          break;
        }
      }
    }
    if (brk !== -1) lineEnd = brk + 1;
    else if (endsInEscape(str, pos, end)) lineEnd = pos + escapeTrimmed(str.slice(pos, end), len - pos).length;
    // The trimming emptied the line (an incomplete escape at the very end of the input): taken as is.
    if (lineEnd === pos) lineEnd = end;
    if (lineEnd < len && str.charCodeAt(lineEnd - 1) !== 0x0a) {
      if (lineEnd - pos === lineLength) lineEnd -= /[=][\da-f]{2}$/i.test(str.slice(pos, lineEnd)) ? 3 : 1;
      out.push(str.slice(pos, lineEnd), '=\r\n');
    } else {
      out.push(str.slice(pos, lineEnd));
    }
    pos = lineEnd;
  }
  return out.join('');
}

/** The window ends in '=', '=X' or '=XX' (nodemailer: /[=][\da-f]{0,2}$/i). */
function endsInEscape(str: string, pos: number, end: number): boolean {
  for (let i = end - 1; i >= Math.max(pos, end - 3); i--) {
    const c = str.charCodeAt(i);
    if (c === 0x3d) return true;
    if (!((c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66))) return false;
  }
  return false;
}

/** nodemailer's handling of a line that ends in an escape: incomplete ones and split UTF-8 sequences move to the next line. */
function escapeTrimmed(window: string, rest: number): string {
  let line = window;
  const partial = line.match(/[=][\da-f]{0,1}$/i);
  if (partial) line = line.substring(0, line.length - partial[0].length);
  let match: RegExpMatchArray | null;
  while (line.length > 3 && line.length < rest && !/^(?:=[\da-f]{2}){1,4}$/i.test(line) && (match = line.match(/[=][\da-f]{2}$/gi))) {
    const code = Number.parseInt(match[0].substring(1, 3), 16);
    if (code < 128) break;
    line = line.substring(0, line.length - 3);
    if (code >= 0xc0) break;
  }
  return line;
}
