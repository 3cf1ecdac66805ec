import { describe, expect, it } from 'vitest';
import { parseMailbox } from '../../common/address.js';

const cases: Array<[string, { name?: string; address: string } | undefined]> = [
  ['a@b.test', { address: 'a@b.test' }],
  ['  Ann <ann@acme.test> ', { name: 'Ann', address: 'ann@acme.test' }],
  ['"Doe, Jane" <jane@acme.test>', { name: 'Doe, Jane', address: 'jane@acme.test' }],
  ['Doe, Jane <jane@acme.test>', undefined],
  ['ceo@bank.test, <me@ours.test>', undefined],
  ['x@y.test\r\nBcc: z@w.test', undefined],
  ['no-at-sign', undefined],
  ['a@localhost', { address: 'a@localhost' }],
  ['a@123', undefined],
];

describe('parseMailbox', () => {
  it('answers the same for a string it parsed before, valid or not, also once many others were parsed', () => {
    for (let round = 0; round < 3; round++) {
      for (const [input, want] of cases) expect(parseMailbox(input), `${input} (round ${round})`).toEqual(want);
      // More distinct strings than the memo keeps: it starts over without changing an answer.
      for (let i = 0; i < 1500; i++) expect(parseMailbox(`u${round}-${i}@example.test`)).toEqual({ address: `u${round}-${i}@example.test` });
    }
  });

  it('hands out answers no caller can change for the next one', () => {
    const m = parseMailbox('Ann <ann@acme.test>')!;
    expect(Object.isFrozen(m)).toBe(true);
    expect(() => {
      (m as { address: string }).address = 'evil@attacker.test';
    }).toThrow(TypeError);
    expect(parseMailbox('Ann <ann@acme.test>')).toEqual({ name: 'Ann', address: 'ann@acme.test' });
  });
});
