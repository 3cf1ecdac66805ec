// NUL (U+0000) is in no id, slug, tag, address or text the API keeps, and PostgreSQL cannot
// store it at all (a text or jsonb value with one fails the whole statement). Every door
// refuses it before it reaches the store, so both backends answer it alike: 400 over HTTP,
// INVALID_ARGUMENT over gRPC.
import { ApiError } from './errors.js';

export const NUL_REFUSED = 'must not contain the NUL character (U+0000)';

/** Whether JSON text has a \u0000 escape in a string (JSON cannot carry a raw NUL), without parsing it. */
export function jsonHasNul(text: string): boolean {
  for (let i = text.indexOf('\\u0000'); i !== -1; i = text.indexOf('\\u0000', i + 1)) {
    // An escape only when the backslashes before it pair up: `\\u0000` is a backslash and "u0000".
    let before = 0;
    while (i - before - 1 >= 0 && text.charCodeAt(i - before - 1) === 0x5c) before++;
    if (before % 2 === 0) return true;
  }
  return false;
}

/** Whether any string in `value` (objects, arrays, maps of a decoded message; bytes are not text) has a NUL. */
export function hasNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (!value || typeof value !== 'object' || depth > 32 || ArrayBuffer.isView(value)) return false;
  if (Array.isArray(value)) return value.some((v) => hasNul(v, depth + 1));
  for (const [k, v] of Object.entries(value)) if (k.includes('\u0000') || hasNul(v, depth + 1)) return true;
  return false;
}

/** Throws 400 INVALID_REQUEST when `value` has a NUL anywhere. */
export function refuseNul(value: unknown, what = 'The request'): void {
  if (hasNul(value)) throw new ApiError('INVALID_REQUEST', `${what} ${NUL_REFUSED}`);
}
