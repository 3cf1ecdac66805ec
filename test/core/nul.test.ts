// NUL detection at the doors (core/nul.ts): a \u0000 escape in JSON text is found without parsing,
// and an escaped backslash before "u0000" (the literal text \u0000) is not taken for one.
import { describe, expect, it } from 'vitest';
import { hasNul, jsonHasNul, refuseNul } from '../../core/nul.js';
import { ApiError } from '../../core/errors.js';

describe('jsonHasNul', () => {
  it.each([
    [{ a: 'x\u0000y' }, true],
    [{ a: '\u0000' }, true],
    [{ 'k\u0000': 1 }, true],
    [['a', ['b', '\\\u0000']], true],
    [{ a: '\\u0000' }, false],
    [{ a: '\\\\u0000' }, false],
    [{ a: 'u0000 \u0001 %00' }, false],
    [{}, false],
  ])('%j → %s, as JSON.parse reads it', (value, nul) => {
    const text = JSON.stringify(value);
    expect(jsonHasNul(text)).toBe(nul);
    expect(hasNul(JSON.parse(text))).toBe(nul);
  });
});

describe('refuseNul', () => {
  it('refuses a NUL anywhere in a decoded message with 400, and leaves bytes alone', () => {
    expect(() => refuseNul({ to: ['a@b.test'], tags: ['x\u0000'] }, 'The request')).toThrow(ApiError);
    expect(() => refuseNul({ content: new Uint8Array([0, 0, 0]), name: 'a.txt' })).not.toThrow();
    const thrown = (() => {
      try {
        refuseNul({ id: 'a\u0000b' });
      } catch (err) {
        return err;
      }
    })();
    expect(thrown).toBeInstanceOf(ApiError);
    expect(thrown).toMatchObject({ status: 400, code: 'INVALID_REQUEST', message: 'The request must not contain the NUL character (U+0000)' });
  });
});
