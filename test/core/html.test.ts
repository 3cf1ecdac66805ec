// core/html.ts: the one HTML escaper, for text and attribute values.
import { expect, it } from 'vitest';
import { escapeHtml } from '../../core/html.js';

it('escapes the five characters that can end text or an attribute, and nothing else', () => {
  expect(escapeHtml(`<a href="x" title='y'>&amp;</a>`)).toBe('&#60;a href=&#34;x&#34; title=&#39;y&#39;&#62;&#38;amp;&#60;/a&#62;');
  expect(escapeHtml('Привет, мир ✓ 100%')).toBe('Привет, мир ✓ 100%');
  expect(escapeHtml('')).toBe('');
});

it('what it escapes reads back as the text itself', () => {
  const text = `"'<script>alert(1)</script>&`;
  const decoded = escapeHtml(text).replace(/&#(\d+);/g, (_m, n: string) => String.fromCharCode(Number(n)));
  expect(decoded).toBe(text);
});
