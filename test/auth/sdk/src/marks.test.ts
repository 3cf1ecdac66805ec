// auth/sdk/src/marks.ts: the providers' marks as plain data, drawn alike by the React button and
// the hosted widget: every provider postgate knows has one, within the 24×24 grid, with no
// attribute that could run script; an unknown provider gets the generic mark under its own name.
import { expect, it } from 'vitest';
import { providers } from '../../../../auth/providers/index.js';
import { markOf, marks } from '../../../../auth/sdk/src/marks.js';

it('every OAuth provider postgate knows has a mark of its own, with a name', () => {
  for (const def of providers.values()) {
    if (!def.oauth) continue;
    expect(marks[def.id], def.id).toBeDefined();
    expect(marks[def.id]!.name).toBeTruthy();
  }
});

it('shapes are paths, circles and rects with drawing attributes only', () => {
  for (const [id, mark] of Object.entries(marks)) {
    expect(mark.shapes.length, id).toBeGreaterThan(0);
    for (const s of mark.shapes) {
      expect(['path', 'circle', 'rect']).toContain(s.tag);
      for (const [k, v] of Object.entries(s.attrs)) {
        expect(k, `${id}.${k}`).not.toMatch(/^on|href/i);
        expect(String(v), `${id}.${k}`).not.toMatch(/javascript:|<|>/i);
      }
    }
  }
});

it('an unknown provider: the generic mark, named as the provider', () => {
  const m = markOf('acme-sso');
  expect(m.name).toBe('acme-sso');
  expect(m.shapes).toEqual(marks.oidc!.shapes);
  expect(markOf('google')).toBe(marks.google);
});
