// The template language, as Resend writes it: `{{{NAME}}}` puts a variable's value in as it is,
// `{{NAME}}` puts it in HTML-escaped when the text is the html part (in the subject and the plain
// text it is the value as it is: neither is HTML). Nothing else is syntax: no sections, no
// helpers, no expressions, nothing is evaluated. A text is cut once into literal pieces and
// places; rendering joins them with the values, so a value is never read for places again (a
// `{{{X}}}` inside a value stays those characters).
import { escapeHtml } from '../../core/html.js';

/** Resend's variable names: a letter or `_`, then letters, digits and `_`. */
export const VARIABLE_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const MAX_KEY_LENGTH = 100;
/** As Resend: at most 50 variables per template. */
export const MAX_VARIABLES = 50;
/** Names Resend keeps for its contacts and broadcasts; refused here too, so a template moves either way. */
export const RESERVED_KEYS = new Set(['FIRST_NAME', 'LAST_NAME', 'EMAIL', 'UNSUBSCRIBE_URL', 'contact', 'this']);

export type VariableType = 'string' | 'number';

export interface Declared {
  key: string;
  type: VariableType;
  fallback: string | number | null;
}

type Part = string | { key: string; escape: boolean };

/** A text cut into literal pieces and places, once per template version. */
export interface Compiled {
  parts: Part[];
  /** Every variable the text names. */
  keys: Set<string>;
  /** The literal characters (what the text is without its variables). */
  literal: number;
}

// Triple braces first: `{{{X}}}` is one raw place, not an escaped place inside braces.
const PLACE = /\{\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}\}|\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

/** `html`: the text is the html part, where `{{X}}` escapes. */
export function compile(source: string, html: boolean): Compiled {
  const parts: Part[] = [];
  const keys = new Set<string>();
  let literal = 0;
  let at = 0;
  for (const m of source.matchAll(PLACE)) {
    if (m.index > at) {
      parts.push(source.slice(at, m.index));
      literal += m.index - at;
    }
    const key = (m[1] ?? m[2])!;
    keys.add(key);
    parts.push({ key, escape: html && m[2] !== undefined });
    at = m.index + m[0].length;
  }
  if (at < source.length) {
    parts.push(source.slice(at));
    literal += source.length - at;
  }
  return { parts, keys, literal };
}

/** Why a template cannot be saved or rendered; the caller words it as an API error. */
export class TemplateProblem extends Error {}

/**
 * Joins the pieces with the values (every key the text names is in `values`: resolveValues checked).
 * Undefined past `stopAt` UTF-16 units: a short text with a place repeated and a large value would
 * otherwise grow without bound.
 */
export function render(c: Compiled, values: ReadonlyMap<string, string>, stopAt: number): string | undefined {
  let out = '';
  for (const p of c.parts) {
    out += typeof p === 'string' ? p : p.escape ? escapeHtml(values.get(p.key)!) : values.get(p.key)!;
    if (out.length > stopAt) return undefined;
  }
  return out;
}

/** Checks what a template declares against what its texts use (saving it, as Resend refuses at create). */
export function checkDeclarations(declared: readonly Declared[], texts: ReadonlyArray<Compiled | undefined>): void {
  if (declared.length > MAX_VARIABLES) throw new TemplateProblem(`a template declares at most ${MAX_VARIABLES} variables`);
  const seen = new Set<string>();
  for (const v of declared) {
    if (!VARIABLE_KEY.test(v.key) || v.key.length > MAX_KEY_LENGTH) {
      throw new TemplateProblem(
        `variable key ${JSON.stringify(v.key.slice(0, 100))} must be a letter or _ then letters, digits or _, at most ${MAX_KEY_LENGTH}`,
      );
    }
    if (RESERVED_KEYS.has(v.key)) throw new TemplateProblem(`variable key ${v.key} is reserved`);
    if (seen.has(v.key)) throw new TemplateProblem(`variable ${v.key} is declared twice`);
    seen.add(v.key);
    if (v.fallback !== null && typeof v.fallback !== v.type) throw new TemplateProblem(`variable ${v.key}: fallback_value must be a ${v.type}`);
    if (typeof v.fallback === 'number' && !Number.isFinite(v.fallback)) throw new TemplateProblem(`variable ${v.key}: fallback_value must be a finite number`);
  }
  for (const t of texts)
    for (const key of t?.keys ?? []) {
      if (!seen.has(key)) throw new TemplateProblem(`Variable '${key}' is used in the template but not defined in the variables list`);
    }
}

/**
 * The value of every declared variable for one send: the one given (of the declared type), else the
 * fallback; one without a fallback must be given. A given name the template does not declare is left
 * alone (an application may send a variable before the version that uses it is published). Checked
 * again at send time, as a published version could predate a rule.
 */
export function resolveValues(
  declared: readonly Declared[],
  given: Readonly<Record<string, unknown>> | undefined,
  used: Iterable<string>,
): Map<string, string> {
  const values = new Map<string, string>();
  for (const v of declared) {
    const g = given !== undefined && Object.hasOwn(given, v.key) ? given[v.key] : undefined;
    if (g === undefined || g === null) {
      if (v.fallback === null) throw new TemplateProblem(`variable ${v.key} has no fallback_value and was not given`);
      values.set(v.key, String(v.fallback));
    } else if (v.type === 'number') {
      if (typeof g !== 'number' || !Number.isFinite(g)) throw new TemplateProblem(`variable ${v.key} must be a number`);
      values.set(v.key, String(g));
    } else {
      if (typeof g !== 'string') throw new TemplateProblem(`variable ${v.key} must be a string`);
      values.set(v.key, g);
    }
  }
  for (const key of used) if (!values.has(key)) throw new TemplateProblem(`Variable '${key}' is used in the template but not defined in the variables list`);
  return values;
}

/** A value rendered into the subject cannot start a header: line breaks and other controls become spaces. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is replaced
export const oneLine = (s: string): string => s.replace(/[\u0000-\u0008\u000a-\u001f\u007f]+/g, ' ');
