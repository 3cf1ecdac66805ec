import { describe, expect, it } from 'vitest';
import { decodeEntities, rewriteHtml } from '../../../control/tracking/rewrite.js';

const seen: string[] = [];
const click = (url: string) => {
  seen.push(url);
  return `https://t.example/c/${encodeURIComponent(url)}`;
};
const track = (html: string) => {
  seen.length = 0;
  return rewriteHtml(html, { click });
};

describe('rewriteHtml', () => {
  it('rewrites http and https links, whatever the quotes and case', () => {
    const out = track(`<p><a href="https://a.example/x">A</a> <A HREF='http://b.example/'>B</A> <a class=c href=https://c.example/p?q=1>C</a></p>`);
    expect(seen).toEqual(['https://a.example/x', 'http://b.example/', 'https://c.example/p?q=1']);
    expect(out).toBe(
      `<p><a href="https://t.example/c/${encodeURIComponent('https://a.example/x')}">A</a> <A HREF="https://t.example/c/${encodeURIComponent('http://b.example/')}">B</A> <a class=c href="https://t.example/c/${encodeURIComponent('https://c.example/p?q=1')}">C</a></p>`,
    );
  });

  it('keeps the original URL exactly: entities decoded as a browser reads them, query strings intact', () => {
    track('<a href="https://a.example/p?x=1&amp;y=2&#38;z=%20&quot;">x</a>');
    expect(seen).toEqual(['https://a.example/p?x=1&y=2&z=%20"']);
  });

  it('escapes the tracked URL in the attribute', () => {
    const out = rewriteHtml('<a href="https://a.example/">x</a>', { click: () => 'https://t.example/?a=1&b="2"' });
    expect(out).toBe('<a href="https://t.example/?a=1&amp;b=&quot;2&quot;">x</a>');
  });

  it('leaves mailto, tel, anchors, relative links, javascript and empty hrefs alone', () => {
    const html =
      '<a href="mailto:a@b.example">m</a><a href="tel:+1">t</a><a href="#top">a</a><a href="/rel">r</a><a href="javascript:alert(1)">j</a><a href="">e</a><a name="x">n</a><a>bare</a>';
    expect(track(html)).toBe(html);
    expect(seen).toEqual([]);
  });

  it('leaves links the callback declines (already tracked) and other attributes', () => {
    const html =
      '<a data-href="https://x.example/" title="a > b" href="https://t.example/c/1">x</a><link href="https://css.example/a.css"><img src="https://i.example/a.png">';
    expect(rewriteHtml(html, { click: (u) => (u.startsWith('https://t.example/') ? undefined : 'X') })).toBe(
      '<a data-href="https://x.example/" title="a > b" href="https://t.example/c/1">x</a><link href="https://css.example/a.css"><img src="https://i.example/a.png">',
    );
  });

  it('finds href after an attribute whose quoted value holds > and skips comments', () => {
    const out = track(
      '<!-- <a href="https://hidden.example/"> --><a title="1 > 0" href="https://a.example/">x</a><area shape=rect href="https://area.example/">',
    );
    expect(seen).toEqual(['https://a.example/', 'https://area.example/']);
    expect(out.startsWith('<!-- <a href="https://hidden.example/"> -->')).toBe(true);
  });

  it('stops quietly at a tag that never ends', () => {
    const html = '<a href="https://a.example/">ok</a><a href="https://b.example/';
    const out = track(html);
    expect(seen).toEqual(['https://a.example/']);
    expect(out.endsWith('<a href="https://b.example/')).toBe(true);
  });

  it('adds the pixel before </body>, or at the end', () => {
    expect(rewriteHtml('<html><body><p>x</p></BODY></html>', { pixel: 'https://t.example/o/1.gif' })).toBe(
      '<html><body><p>x</p><img src="https://t.example/o/1.gif" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0;margin:0;padding:0"></BODY></html>',
    );
    expect(rewriteHtml('<p>x</p>', { pixel: 'P' })).toMatch(/^<p>x<\/p><img src="P"/);
  });

  it('rewrites a huge html in linear time', () => {
    const part = '<p>Hello &amp; welcome <a href="https://a.example/p?i=1&amp;j=2">link</a> <a href="mailto:x@y.example">m</a></p>\n';
    const html = `<html><body>${part.repeat(50_000)}</body></html>`; // ~5 MB, 100,000 links
    const started = performance.now();
    const out = rewriteHtml(html, { click: (u) => `https://t.example/${u.length}`, pixel: 'P' });
    const ms = performance.now() - started;
    expect(out.match(/https:\/\/t\.example\//g)?.length).toBe(50_000);
    expect(ms).toBeLessThan(3000);
    // Pathological: many unclosed tags cost no more than one pass.
    const broken = '<a href="x '.repeat(200_000);
    const t0 = performance.now();
    expect(rewriteHtml(broken, { click: () => 'X' })).toBe(broken);
    expect(performance.now() - t0).toBeLessThan(3000);
  });
});

describe('decodeEntities', () => {
  it('decodes named and numeric references and leaves unknown ones', () => {
    expect(decodeEntities('a&amp;b&#x41;&#66;&unknown;&')).toBe('a&bAB&unknown;&');
  });
});
