// The name of an attachment as a mail client shows it, and the rules it is judged by. Both
// processes use it: control refuses a name at the door (control/mail/attachments.ts), the
// gateway never writes one these rules refuse (gateway/mime.ts). Clients decode RFC 2047
// encoded words inside a name parameter (non-standard, but Outlook, Thunderbird, Gmail and
// mailparser all do), so `=?utf-8?B?ZXZpbC5leGU=?=` is shown as `evil.exe`: what is judged is the
// decoded name, and the decoded name is what is kept and written (RFC 2231 when non-ASCII).

/**
 * Types mail providers refuse to carry, as Gmail does (support.google.com/mail/answer/6590):
 * programs and scripts Windows or a browser would run when opened.
 */
export const REFUSED_EXTENSIONS: ReadonlySet<string> = new Set(
  (
    'ade adp apk appx appxbundle bat cab chm cmd com cpl dll diagcab diagcfg diagpack dmg ex ex_ exe hta img ins iso isp jar jnlp js jse lib lnk ' +
    'mde mjs msc msi msix msixbundle msp mst nsh pif ps1 scr sct shb sys vb vbe vbs vhd vxd wsc wsf wsh xll'
  ).split(' '),
);

// An RFC 2047 encoded word as lenient decoders take it (libmime's shape: spaces allowed in the text).
const ENCODED_WORD = /=\?([^?\s]+)\?([bq])\?([^?]*)\?=/gi;
// What is left shaped like one after decoding: a word in a charset nobody here reads, or one
// nested inside another (a client that decodes twice, as mailparser does for RFC 2231 values).
const LEFT_ENCODED = /=\?[^?]*\?[bq]\?[^?]*\?=/i;
// C0 controls and DEL: a name with them could break the header it is written in.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// Explicit bidi embeddings, overrides and isolates: they reorder what follows them, so
// `\u202Eexe.doc` is shown as `cod.exe`. Names in right-to-left scripts need none of them.
const BIDI_CONTROL = /[\u202a-\u202e\u2066-\u2069]/;
// Characters nothing shows (zero-width spaces and joiners, direction marks, BOM, soft hyphen…).
const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;
const PATH = /[/\\]/;

/** The bytes of one encoded word's text. */
function wordBytes(encoding: string, text: string): Buffer {
  if (encoding === 'b' || encoding === 'B') return Buffer.from(text, 'base64');
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    const hex = c === '=' ? text.slice(i + 1, i + 3) : '';
    if (/^[0-9a-f]{2}$/i.test(hex)) {
      out.push(Number.parseInt(hex, 16));
      i += 2;
    } else if (c === '_') out.push(0x20);
    else out.push(...Buffer.from(c, 'utf8'));
  }
  return Buffer.from(out);
}

/** A decoder for an encoded word's charset (`utf-8*en`: its language dropped), or undefined when none reads it. */
function decoderFor(charset: string): TextDecoder | undefined {
  try {
    return new TextDecoder(charset.split('*')[0]!.trim());
  } catch {
    return undefined;
  }
}

/**
 * The string with its encoded words decoded, once, as a mail client decodes a name parameter:
 * white space between two encoded words dropped, adjacent words in one charset decoded together
 * (a character may be split between them), a word in a charset no decoder reads left as it is.
 */
export function decodeEncodedWords(s: string): string {
  if (!s.includes('=?')) return s;
  let out = '';
  let last = 0;
  // Bytes of the run of adjacent words being collected, and their charset.
  let run: { charset: string; decoder: TextDecoder; bytes: Buffer[] } | undefined;
  const flush = () => {
    if (run) out += run.decoder.decode(Buffer.concat(run.bytes));
    run = undefined;
  };
  for (const m of s.matchAll(ENCODED_WORD)) {
    const [word, charset, encoding, text] = m as unknown as [string, string, string, string];
    const start = m.index;
    const gap = s.slice(last, start);
    const adjacent = run !== undefined && /^[ \t\r\n]*$/.test(gap);
    const decoder = decoderFor(charset);
    if (!adjacent) {
      flush();
      out += gap;
    } else if (!decoder || run!.charset !== charset.toLowerCase()) flush();
    last = start + word.length;
    if (!decoder) {
      out += word;
      continue;
    }
    if (!run) run = { charset: charset.toLowerCase(), decoder, bytes: [] };
    run.bytes.push(wordBytes(encoding, text));
  }
  flush();
  return out + s.slice(last);
}

/**
 * Why a decoded name cannot be shown as it is, or undefined: control characters, a path, an
 * encoded word left over, or bidi controls that make it display as another name.
 */
export function nameProblem(shown: string): string | undefined {
  if (CONTROL.test(shown)) return 'contains control characters';
  if (LEFT_ENCODED.test(shown))
    return 'contains a MIME encoded word (=?charset?B|Q?…?=) that does not decode to a plain name: send the name itself, in Unicode';
  if (BIDI_CONTROL.test(shown)) return 'contains bidi override characters (U+202A-U+202E, U+2066-U+2069), which make a name display as another';
  const compared = comparable(shown);
  if (!compared.trim()) return 'must be a non-empty string';
  if (PATH.test(compared)) return 'must be a file name, not a path';
  return undefined;
}

/** The name as it is compared: compatibility forms folded (NFKC: `．ｅｘｅ` is `.exe`), invisible characters dropped, lower case. */
const comparable = (name: string): string => name.normalize('NFKC').replace(INVISIBLE, '').toLowerCase();

/** The last extension of a name, ignoring the trailing dots and spaces Windows drops. */
function extensionOf(name: string): string {
  const trimmed = name.replace(/[.\s]+$/u, '');
  const dot = trimmed.lastIndexOf('.');
  return dot === -1 ? '' : trimmed.slice(dot + 1);
}

/**
 * The refused extension a decoded name carries, or undefined. Judged on the name compared as
 * above, and on the part before an NTFS stream (`a.exe::$DATA` and `a.exe:x` are saved as `a.exe`).
 */
export function refusedExtension(shown: string): string | undefined {
  const name = comparable(shown);
  const colon = name.indexOf(':');
  for (const form of colon === -1 ? [name] : [name, name.slice(0, colon)]) {
    const ext = extensionOf(form);
    if (REFUSED_EXTENSIONS.has(ext)) return ext;
  }
  return undefined;
}

/**
 * The name to write for a stored one: decoded as a client would show it, or undefined when
 * that shown name breaks a rule above (a name stored before the rules, never one accepted since).
 */
export function writableName(stored: string): string | undefined {
  const shown = decodeEncodedWords(stored);
  return nameProblem(shown) === undefined && refusedExtension(shown) === undefined ? shown : undefined;
}
