// Ajv checks maxLength and minLength in code points, with ajv/dist/runtime/ucs2length: a loop over
// every char of the string, about 67 µs for a 20 kB body on the development machine, paid for the
// html and the text of every email (100 of them per batch request) on the HTTP, SMTP and gRPC paths.
// This gives Ajv the same count from the string's length less its surrogate pairs, found by a regex
// that V8 answers at once for a string of one-byte chars (0.2 µs) and scans natively otherwise.
// Imported for its effect by every module that compiles schemas, before they compile any.
import { createRequire } from 'node:module';

const PAIR = /[\uD800-\uDBFF][\uDC00-\uDFFF]/g;

/** Code points of `s`, as ucs2length counts them (a lone surrogate is one). */
export function codePoints(s: string): number {
  PAIR.lastIndex = 0;
  let pairs = 0;
  while (PAIR.exec(s)) pairs++;
  return s.length - pairs;
}

type LengthFn = ((s: string) => number) & { code?: string };
const runtime = createRequire(import.meta.url)('ajv/dist/runtime/ucs2length') as { default: LengthFn };
// Ajv reads the function from this export each time it compiles a length keyword; `code` names it in standalone code.
(codePoints as LengthFn).code = runtime.default.code;
runtime.default = codePoints;
