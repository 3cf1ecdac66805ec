// The widget page, rendered on the server in the chosen language: complete and
// readable before its script runs; the script (browser/widget.ts) adds the
// behaviour and the language switch from the same words (i18n.ts).
import { markOf, type MarkShape } from '../sdk/src/marks.js';
import { langs, t, type Key, type Lang } from './i18n.js';
import { escapeHtml } from '../../core/html.js';

export interface WidgetProvider {
  id: string;
  name: string;
  nameRu?: string;
  methods: Array<'oauth' | 'otp' | 'magic_link'>;
}

/** What the page's script reads from the page (a JSON data block: not executed, so CSP-safe). */
export interface WidgetConfig {
  slug: string;
  name: string;
  lang: Lang;
  redirectUri: string;
  /** From the embed script (auth/sdk/src/binding.ts): sent with each start so the sign-in is bound to the embedding browser. */
  codeChallenge: string | null;
  /** The embedding page's origin, checked against the project's allowed origins; messages go to it only. */
  parentOrigin: string | null;
  providers: WidgetProvider[];
  email: boolean;
  codeLength: number;
  resendAfterSeconds: number;
  /** The project turned passkeys on: the script adds the passkey button and the email field's passkey autofill. */
  passkeys?: boolean;
  /** The project enabled email sign-in links: the email step offers "Email me a sign-in link". */
  magicLink?: boolean;
}

export interface PageInput {
  config: WidgetConfig;
  logoUrl: string | null;
  /** A refusal shown instead of the form (unknown project, callback not allowed). */
  error?: Key;
  assets: { css: string; js: string };
}

const kebab = (k: string) => k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

const shape = (s: MarkShape) =>
  `<${s.tag} ${Object.entries(s.attrs)
    .map(([k, v]) => `${kebab(k)}="${escapeHtml(String(v))}"`)
    .join(' ')}/>`;

export const markSvg = (provider: string) =>
  `<svg class="mark" viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">${markOf(provider).shapes.map(shape).join('')}</svg>`;

export const providerName = (p: Pick<WidgetProvider, 'name' | 'nameRu'>, lang: Lang) => (lang === 'ru' && p.nameRu ? p.nameRu : p.name);

/** A JSON data block that cannot close its <script> element early. */
const jsonBlock = (v: unknown) =>
  JSON.stringify(v)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');

function logo(name: string, url: string | null): string {
  if (url) return `<img class="logo" src="${escapeHtml(url)}" alt="" width="40" height="40">`;
  return `<span class="logo monogram" aria-hidden="true">${escapeHtml((name.trim()[0] ?? '?').toUpperCase())}</span>`;
}

function langSwitch(lang: Lang): string {
  const buttons = langs
    .map((l) => `<button type="button" class="lang-btn" data-lang="${l}" lang="${l}" aria-pressed="${l === lang}">${l.toUpperCase()}</button>`)
    .join('');
  return `<div class="langs" role="group" aria-label="${escapeHtml(t(lang, 'language'))}" data-i18n-label="language">${buttons}</div>`;
}

function providerButtons(c: WidgetConfig): string {
  const oauth = c.providers.filter((p) => p.methods.includes('oauth'));
  if (!oauth.length) return '';
  const items = oauth.map(
    (p) =>
      `<li><button type="button" class="provider" data-provider="${escapeHtml(p.id)}">${markSvg(p.id)}` +
      `<span class="provider-label">${escapeHtml(t(c.lang, 'continueWith', { provider: providerName(p, c.lang) }))}</span></button></li>`,
  );
  return `<ul class="providers" role="list">${items.join('')}</ul>`;
}

function emailForms(c: WidgetConfig): string {
  const L = (k: Key, vars?: Record<string, string | number>) => escapeHtml(t(c.lang, k, vars));
  return `
<form id="pg-email-form" class="step" novalidate>
  <label for="pg-email" data-i18n="emailLabel">${L('emailLabel')}</label>
  <input id="pg-email" name="email" type="email" autocomplete="email" inputmode="email" spellcheck="false" autocapitalize="off" required aria-describedby="pg-email-hint pg-email-error">
  <p id="pg-email-hint" class="hint" data-i18n="${c.email ? 'emailHint' : 'linkHint'}">${L(c.email ? 'emailHint' : 'linkHint')}</p>
  <p id="pg-email-error" class="field-error" aria-live="assertive"></p>
  ${c.email ? `<button type="submit" class="primary" data-i18n="sendCode">${L('sendCode')}</button>` : ''}
  ${magicLinkButton(c) /* magic-links */}
</form>
${linkSentStep(c) /* magic-links */}
<form id="pg-code-form" class="step" novalidate hidden>
  <p id="pg-code-sent" class="hint"></p>
  <label for="pg-code" data-i18n="codeLabel">${L('codeLabel')}</label>
  <input id="pg-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]*" maxlength="${c.codeLength}" required aria-describedby="pg-code-sent pg-code-error" class="code">
  <p id="pg-code-error" class="field-error" aria-live="assertive"></p>
  <button type="submit" class="primary" data-i18n="signIn">${L('signIn')}</button>
  <div class="row">
    <button type="button" id="pg-resend" class="link" disabled></button>
    <button type="button" id="pg-change" class="link" data-i18n="changeEmail">${L('changeEmail')}</button>
  </div>
</form>`;
}

/** "Email me a sign-in link": the email step's only action when codes are off, otherwise a second one. */
function magicLinkButton(c: WidgetConfig): string {
  if (!c.magicLink) return '';
  const label = escapeHtml(t(c.lang, 'sendLink'));
  return c.email
    ? `<button type="button" id="pg-magic-link" class="link" data-i18n="sendLink">${label}</button>`
    : `<button type="submit" id="pg-magic-link" class="primary" data-i18n="sendLink">${label}</button>`;
}

/** After sending: "Check your email" with the address (filled in by the script), and a way back. */
function linkSentStep(c: WidgetConfig): string {
  if (!c.magicLink) return '';
  const L = (k: Key) => escapeHtml(t(c.lang, k));
  return `
<section id="pg-link-step" class="step" hidden aria-labelledby="pg-link-title">
  <h2 id="pg-link-title" data-i18n="checkEmail">${L('checkEmail')}</h2>
  <p id="pg-link-sent" class="hint"></p>
  <p id="pg-link-error" class="field-error" aria-live="assertive"></p>
  <div class="row">
    <button type="button" id="pg-link-resend" class="link" disabled></button>
    <button type="button" id="pg-link-change" class="link" data-i18n="changeEmail">${L('changeEmail')}</button>
  </div>
</section>`;
}

export function renderPage(p: PageInput): string {
  const c = p.config;
  const title = t(c.lang, 'title', { name: c.name });
  let body: string;
  if (p.error) {
    body = `<p class="page-error" role="alert">${escapeHtml(t(c.lang, p.error, { name: c.name }))}</p>`;
  } else if (!c.providers.length && !c.passkeys) {
    // Passkeys alone: the script adds their button (it needs the browser's WebAuthn).
    body = `<p class="page-error" role="alert" data-i18n="noMethods">${escapeHtml(t(c.lang, 'noMethods'))}</p>`;
  } else {
    const buttons = providerButtons(c);
    const divider =
      buttons && (c.email || c.magicLink) ? `<div class="divider" role="separator"><span data-i18n="or">${escapeHtml(t(c.lang, 'or'))}</span></div>` : '';
    body = buttons + divider + (c.email || c.magicLink ? emailForms(c) : '');
  }
  return `<!doctype html>
<html lang="${c.lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/api/v1/auth/hosted/widget.css?v=${p.assets.css}">
<script type="application/json" id="pg-config">${jsonBlock(c)}</script>
<script src="/api/v1/auth/hosted/widget.js?v=${p.assets.js}" defer></script>
</head>
<body>
<main id="pg-root" class="card" aria-labelledby="pg-title">
<header class="head">
${logo(c.name, p.logoUrl)}
<h1 id="pg-title" data-i18n="title">${escapeHtml(title)}</h1>
${langSwitch(c.lang)}
</header>
<p id="pg-status" class="status" role="status" aria-live="polite"></p>
<p id="pg-error" class="form-error" aria-live="assertive"></p>
${body}
</main>
</body>
</html>`;
}
