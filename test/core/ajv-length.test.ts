// core/ajv-length.ts: Ajv's maxLength/minLength keep counting code points, by a faster count.
import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { codePoints } from '../../core/ajv-length.js';

const require = createRequire(import.meta.url);
// Ajv's own count, kept here as the reference (the module's export is replaced).
function ucs2length(str: string): number {
  let length = 0;
  let pos = 0;
  while (pos < str.length) {
    length++;
    const value = str.charCodeAt(pos++);
    if (value >= 0xd800 && value <= 0xdbff && pos < str.length && (str.charCodeAt(pos) & 0xfc00) === 0xdc00) pos++;
  }
  return length;
}

describe('code points for Ajv', () => {
  it('counts as ucs2length does: pairs once, lone and reversed surrogates each, any mix', () => {
    const units = ['a', 'é', '東', '\uD83D', '\uDE00', '😀', '\r', ' '];
    let seed = 7;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let i = 0; i < 5000; i++) {
      const s = Array.from({ length: rnd(40) }, () => units[rnd(units.length)]).join('');
      expect(codePoints(s), JSON.stringify(s)).toBe(ucs2length(s));
    }
    expect(codePoints('x'.repeat(20000))).toBe(20000);
    expect(codePoints('\uD800\uD800\uDC00')).toBe(2);
    expect(codePoints('\uDC00\uD800')).toBe(2);
  });

  it('is what Ajv uses, and maxLength still means code points', () => {
    expect(require('ajv/dist/runtime/ucs2length').default).toBe(codePoints);
    const v = new Ajv().compile({ type: 'string', maxLength: 3 });
    expect(v('😀😀😀')).toBe(true); // 6 UTF-16 units, 3 code points
    expect(v('😀😀😀a')).toBe(false);
    expect(v('abcd')).toBe(false);
  });
});
