// Rewrites an email's html for tracking: each http(s) href of an <a> or <area> goes through the
// tracking host, and the open pixel goes before </body> (or at the end). A single linear scan, not a
// regular expression over the whole document, so a huge or broken html costs its length and no more.
// Left as they are: mailto:, tel:, anchors, relative links, links already on the tracking host,
// links in comments, and every byte outside the rewritten href values.
import { isWebUrl } from './links.js';

export interface RewriteOptions {
  /** The tracked URL of a link (the decoded href: what a browser would follow); undefined leaves it. */
  click?: (url: string) => string | undefined;
  /** The pixel's URL; undefined adds none. */
  pixel?: string;
}

const NAMED: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** An attribute value as a browser reads it: character references decoded. */
export function decodeEntities(s: string): string {
  if (!s.includes('&')) return s;
  return s.replace(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[a-zA-Z]{2,6});?/g, (m, ref: string) => {
    if (ref[0] === '#') {
      const code = ref[1] === 'x' || ref[1] === 'X' ? Number.parseInt(ref.slice(2), 16) : Number.parseInt(ref.slice(1), 10);
      return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : m;
    }
    return NAMED[ref.toLowerCase()] ?? m;
  });
}

const escapeAttr = (s: string): string => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;

/** Where the tag that starts at `lt` ends (the index after its `>`), honouring quoted values; -1 when it never ends. */
function tagEnd(html: string, from: number): number {
  let quote = 0;
  for (let i = from; i < html.length; i++) {
    const c = html.charCodeAt(i);
    if (quote) {
      if (c === quote) quote = 0;
    } else if (c === 0x22 || c === 0x27) quote = c;
    else if (c === 0x3e) return i + 1;
  }
  return -1;
}

/** The tag with its href rewritten, or the tag unchanged. */
function rewriteTag(tag: string, click: (url: string) => string | undefined): string {
  // Attributes: name, then optionally = and a value (quoted or not). Only `href` is touched.
  let i = tag.search(/[\s/>]/);
  while (i > 0 && i < tag.length) {
    while (i < tag.length && (isSpace(tag.charCodeAt(i)) || tag[i] === '/')) i++;
    const nameStart = i;
    while (i < tag.length && !isSpace(tag.charCodeAt(i)) && tag[i] !== '=' && tag[i] !== '>' && tag[i] !== '/') i++;
    const name = tag.slice(nameStart, i).toLowerCase();
    if (!name) return tag;
    let j = i;
    while (j < tag.length && isSpace(tag.charCodeAt(j))) j++;
    if (tag[j] !== '=') {
      i = j;
      continue;
    }
    j++;
    while (j < tag.length && isSpace(tag.charCodeAt(j))) j++;
    let valueStart = j;
    let valueEnd: number;
    let next: number;
    const q = tag[j];
    if (q === '"' || q === "'") {
      valueStart = j + 1;
      valueEnd = tag.indexOf(q, valueStart);
      if (valueEnd < 0) return tag;
      next = valueEnd + 1;
    } else {
      valueEnd = j;
      while (valueEnd < tag.length && !isSpace(tag.charCodeAt(valueEnd)) && tag[valueEnd] !== '>') valueEnd++;
      next = valueEnd;
    }
    if (name === 'href') {
      const url = decodeEntities(tag.slice(valueStart, valueEnd)).trim();
      const tracked = isWebUrl(url) ? click(url) : undefined;
      if (tracked === undefined) return tag;
      // The whole value, quotes included, becomes one double-quoted value.
      const from = q === '"' || q === "'" ? valueStart - 1 : valueStart;
      return `${tag.slice(0, from)}"${escapeAttr(tracked)}"${tag.slice(next)}`;
    }
    i = next;
  }
  return tag;
}

/** The html with its links and the pixel as `options` say; unchanged when neither applies. */
export function rewriteHtml(html: string, options: RewriteOptions): string {
  let out = html;
  if (options.click) {
    const click = options.click;
    const parts: string[] = [];
    let copied = 0;
    let at = 0;
    while (at < html.length) {
      const lt = html.indexOf('<', at);
      if (lt < 0) break;
      // A comment is skipped whole: what is in it is not a link.
      if (html.startsWith('<!--', lt)) {
        const end = html.indexOf('-->', lt + 4);
        if (end < 0) break;
        at = end + 3;
        continue;
      }
      const m = /^<(a|area)[\s/>]/i.exec(html.slice(lt, lt + 6));
      if (!m) {
        at = lt + 1;
        continue;
      }
      const end = tagEnd(html, lt + 1 + m[1]!.length);
      if (end < 0) break;
      const tag = html.slice(lt, end);
      const rewritten = rewriteTag(tag, click);
      if (rewritten !== tag) {
        parts.push(html.slice(copied, lt), rewritten);
        copied = end;
      }
      at = end;
    }
    if (parts.length) {
      parts.push(html.slice(copied));
      out = parts.join('');
    }
  }
  if (options.pixel !== undefined) {
    const img = `<img src="${escapeAttr(options.pixel)}" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0">`;
    const body = out.toLowerCase().lastIndexOf('</body');
    out = body < 0 ? out + img : out.slice(0, body) + img + out.slice(body);
  }
  return out;
}
