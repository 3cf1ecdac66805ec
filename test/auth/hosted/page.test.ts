// auth/hosted/page.ts: the widget page rendered on the server. What a project or a request puts in
// it (name, logo URL, redirect) cannot become markup or close the script's data block early.
import { expect, it } from 'vitest';
import { markSvg, providerName, renderPage, type PageInput, type WidgetConfig } from '../../../auth/hosted/page.js';

const config = (o: Partial<WidgetConfig> = {}): WidgetConfig => ({
  slug: 'acme',
  name: 'Acme',
  lang: 'en',
  redirectUri: 'https://app.example.com/cb',
  codeChallenge: null,
  parentOrigin: null,
  providers: [
    { id: 'google', name: 'Google', methods: ['oauth'] },
    { id: 'email', name: 'Email', methods: ['otp'] },
  ],
  email: true,
  codeLength: 6,
  resendAfterSeconds: 60,
  ...o,
});
const page = (o: Partial<PageInput> = {}, c: Partial<WidgetConfig> = {}) =>
  renderPage({ config: config(c), logoUrl: null, assets: { css: 'c1', js: 'j1' }, ...o });
const dataBlock = (html: string) => /<script type="application\/json" id="pg-config">([\s\S]*?)<\/script>/.exec(html)![1]!;

it('renders the title, a button per OAuth provider, the email forms and the versioned assets', () => {
  const html = page();
  expect(html).toContain('<title>Sign in to Acme</title>');
  expect(html).toContain('data-provider="google"');
  expect(html).not.toContain('data-provider="email"');
  expect(html).toContain('id="pg-email-form"');
  expect(html).toContain('maxlength="6"');
  expect(html).toContain('widget.css?v=c1');
  expect(html).toContain('widget.js?v=j1');
  expect(html).toContain('<meta name="referrer" content="no-referrer">');
  expect(JSON.parse(dataBlock(html))).toEqual(config());
});

it('in Russian, with the provider’s Russian name when it has one', () => {
  const html = page({}, { lang: 'ru', providers: [{ id: 'yandex', name: 'Yandex', nameRu: 'Яндекс', methods: ['oauth'] }] });
  expect(html).toContain('<html lang="ru">');
  expect(html).toContain('Войти через Яндекс');
  expect(providerName({ name: 'Yandex' }, 'ru')).toBe('Yandex');
});

it('a project name with markup is text, in the page and in its data block', () => {
  const name = '</script><script>alert(1)</script><img src=x onerror=alert(2)>';
  const html = page({}, { name });
  expect(html).not.toContain('<img src=x');
  expect(html).not.toContain('<script>alert(1)');
  const block = dataBlock(html);
  expect(block).not.toContain('</script');
  expect(JSON.parse(block).name).toBe(name);
});

it('line and paragraph separators cannot break the data block either', () => {
  const block = dataBlock(page({}, { name: 'a\u2028b\u2029c' }));
  expect(block).not.toMatch(/[\u2028\u2029]/);
  expect(JSON.parse(block).name).toBe('a\u2028b\u2029c');
});

it('a logo URL is an attribute value, never markup; without one, a monogram', () => {
  expect(page({ logoUrl: 'https://x.test/l.png" onload="alert(1)' })).not.toContain('" onload="');
  expect(page({}, { name: ' zeta' })).toContain('aria-hidden="true">Z</span>');
});

it('a refusal replaces the form; no providers says so', () => {
  const refused = page({ error: 'errRedirect' });
  expect(refused).toContain('This site is not allowed to use sign-in for Acme.');
  expect(refused).not.toContain('pg-email-form');
  expect(page({}, { providers: [] })).toContain('No sign-in methods are enabled for this project.');
  // Passkeys alone are a method: the page leaves room for the button its script adds.
  const passkeysOnly = page({}, { providers: [], passkeys: true });
  expect(passkeysOnly).not.toContain('No sign-in methods');
  expect(passkeysOnly).toContain('id="pg-error"');
});

it('markSvg draws a provider’s mark from attributes only', () => {
  const svg = markSvg('google');
  expect(svg).toMatch(/^<svg class="mark" [^>]*aria-hidden="true"/);
  expect(svg).not.toMatch(/on\w+=/);
});
