// common/shaping.ts: matching an answer against the rules (provider, enhanced code prefix, basic
// code, text across Haraka's folded lines), the default rule set (each rule matches its own
// example and no other default's), and merging the operator's rules with the defaults.
import { describe, expect, it } from 'vitest';
import { basicCode, compileRules, DEFAULT_RULES, enhancedCodeIn, matchRules, mergeRules, type ShapingRule } from '../../common/shaping.js';
import { PROVIDERS } from '../../common/providers.js';

const rule = (over: Partial<ShapingRule>): ShapingRule => ({
  name: 'r',
  match: { codes: [421] },
  action: { kind: 'rate', factor: 0.5 },
  durationSeconds: 60,
  ...over,
});
const names = (rules: ShapingRule[], a: Parameters<typeof matchRules>[1]) => matchRules(compileRules(rules), a).map((r) => r.name);

describe('shaping rules', () => {
  it('reads the basic and enhanced codes of an answer', () => {
    expect(basicCode('421-4.7.28 [1.2.3.4] Our system')).toBe(421);
    expect(basicCode('451 4.7.650 The mail server')).toBe(451);
    expect(basicCode('Upstream error')).toBe(0);
    expect(enhancedCodeIn('421-4.7.28 [1.2.3.4] Our system')).toBe('4.7.28');
    expect(enhancedCodeIn('no code')).toBe('');
  });

  it('matches every field a rule gives: provider, enhanced code prefix, basic code and text', () => {
    const rules = [
      rule({ name: 'code', providers: ['google'], match: { enhancedCodes: ['4.7.2'] } }),
      rule({ name: 'exact', match: { enhancedCodes: ['4.7.28'], codes: [421] } }),
      rule({ name: 'text', match: { pattern: 'UNUSUAL rate' } }),
      rule({ name: 'both', match: { codes: [450], pattern: 'unusual' } }),
      rule({ name: 'yahoo', providers: ['yahoo'], match: { codes: [421] } }),
    ];
    const answer = { provider: 'google', response: '421-4.7.28 Our system has detected an unusual rate of unsolicited mail', enhancedCode: '4.7.28' };
    expect(names(rules, answer)).toEqual(['code', 'exact', 'text']);
    // The enhanced code is read from the text when the event has none; the basic code may be given.
    expect(names(rules, { provider: 'other', response: '450 4.7.28 unusual things', code: 450 })).toEqual(['both']);
    expect(names(rules, { provider: 'yahoo', response: '421 4.7.0 [TSS04] deferred' })).toEqual(['yahoo']);
  });

  it("reads a text across Haraka's folded lines (each with its code prefix)", () => {
    const folded = '421-4.7.28 Our system has detected an unusual rate of 421-4.7.28 unsolicited mail originating from your IP address.';
    expect(names([rule({ name: 'fold', match: { pattern: 'unusual rate of unsolicited mail' } })], { provider: 'google', response: folded })).toEqual(['fold']);
  });

  it('a rule without a match field matches nothing', () => {
    expect(names([rule({ match: {} })], { provider: 'google', response: '421 4.7.0 x' })).toEqual([]);
  });

  it("each default rule names known providers, cites a source and matches its own example, and no other default's", () => {
    const known = new Set([...PROVIDERS.map((p) => p.name), 'other']);
    const seen = new Set<string>();
    for (const r of DEFAULT_RULES) {
      expect(seen.has(r.name), r.name).toBe(false);
      seen.add(r.name);
      expect(r.source, r.name).toMatch(/^https:\/\//);
      expect(r.example, r.name).toBeTruthy();
      for (const p of r.providers ?? []) expect(known.has(p), `${r.name}: ${p}`).toBe(true);
      expect(names(DEFAULT_RULES, { provider: r.providers![0]!, response: r.example! }), r.name).toEqual([r.name]);
      // Another provider's answer never draws a provider's rule.
      expect(names([r], { provider: 'zoho', response: r.example! })).toEqual([]);
    }
    // The large providers have rules.
    for (const p of ['google', 'yahoo', 'microsoft'])
      expect(
        DEFAULT_RULES.some((r) => r.providers?.includes(p)),
        p,
      ).toBe(true);
  });

  it("adds the operator's rules to the defaults, replaces a default of the same name in its place, or drops the defaults", () => {
    const mine = rule({ name: 'google-unsolicited-rate', durationSeconds: 5 });
    const extra = rule({ name: 'mine' });
    const merged = mergeRules([mine, extra], false);
    expect(merged).toHaveLength(DEFAULT_RULES.length + 1);
    expect(merged[DEFAULT_RULES.findIndex((r) => r.name === mine.name)]).toBe(mine);
    expect(merged.at(-1)).toBe(extra);
    expect(mergeRules([extra], true)).toEqual([extra]);
    expect(mergeRules([], false)).toEqual(DEFAULT_RULES);
  });
});
