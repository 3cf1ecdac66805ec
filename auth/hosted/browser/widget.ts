// The widget page's behaviour: provider buttons (hosted-start, then the top
// window goes to the provider), the email code form (send, verify, resend
// after the cooldown, clear errors), the language switch, and the messages to
// the embedding page. No cookies and no storage: all state is in this page.
import { dictionaries, errorKeys, langs, t, type Key, type Lang } from '../i18n.js';
import type { WidgetConfig } from '../page.js';
import { isOurs, SOURCE, type FromWidget } from './messages.js';

const cfg = JSON.parse(document.getElementById('pg-config')!.textContent!) as WidgetConfig;
let lang: Lang = cfg.lang;
const embedded = window.parent !== window && cfg.parentOrigin !== null;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T | null;

function post(msg: FromWidget): void {
  if (embedded) window.parent.postMessage(msg, cfg.parentOrigin!);
}

/** The top window goes there: through the embedding page, or this page itself when it is not framed. */
function navigate(url: string): void {
  if (embedded) post({ source: SOURCE, type: 'navigate', url });
  else location.assign(url);
}

// ------------------------------------------------------------------ words

/** The current text of each dynamic element, so a language switch can redo it. */
const dynamic = new Map<HTMLElement, { key: Key; vars?: Record<string, string | number> } | null>();

function say(el: HTMLElement | null, key: Key | null, vars?: Record<string, string | number>): void {
  if (!el) return;
  dynamic.set(el, key ? { key, ...(vars ? { vars } : {}) } : null);
  el.textContent = key ? t(lang, key, vars) : '';
}

function providerName(id: string): string {
  const p = cfg.providers.find((x) => x.id === id);
  return p ? (lang === 'ru' && p.nameRu ? p.nameRu : p.name) : id;
}

function applyLang(next: Lang): void {
  lang = next;
  document.documentElement.lang = next;
  document.title = t(lang, 'title', { name: cfg.name });
  for (const el of document.querySelectorAll<HTMLElement>('[data-i18n]')) {
    el.textContent = t(lang, el.dataset.i18n as Key, { name: cfg.name });
  }
  for (const el of document.querySelectorAll<HTMLElement>('[data-i18n-label]')) el.setAttribute('aria-label', t(lang, el.dataset.i18nLabel as Key));
  for (const b of document.querySelectorAll<HTMLButtonElement>('.provider')) {
    b.querySelector('.provider-label')!.textContent = t(lang, 'continueWith', { provider: providerName(b.dataset.provider!) });
  }
  for (const b of document.querySelectorAll<HTMLButtonElement>('.lang-btn')) b.setAttribute('aria-pressed', String(b.dataset.lang === lang));
  for (const [el, v] of dynamic) el.textContent = v ? t(lang, v.key, v.vars) : '';
  renderCountdown();
  post({ source: SOURCE, type: 'lang', lang });
}

// ------------------------------------------------------------------ API

/** The embedding browser's challenge: the sign-ins this form ends are exchanged only with its verifier. */
const binding = cfg.codeChallenge ? { codeChallenge: cfg.codeChallenge } : {};

class ApiFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly retryAfter: number | null,
  ) {
    super(message);
  }
}

async function call<T>(path: string, body: Record<string, unknown>): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slug: cfg.slug, redirectUri: cfg.redirectUri, ...body }),
    });
  } catch {
    throw new ApiFailure('NETWORK_ERROR', 'network error', null);
  }
  const data = (await res.json().catch(() => ({}))) as { error?: string; code?: string };
  if (!res.ok) {
    const retry = Number(res.headers.get('retry-after'));
    throw new ApiFailure(data.code ?? 'INTERNAL', data.error ?? `HTTP ${res.status}`, Number.isFinite(retry) && retry > 0 ? retry : null);
  }
  return data as T;
}

/** What to tell the person about a failure. */
function explain(err: unknown): { key: Key; vars: Record<string, string | number> } {
  if (!(err instanceof ApiFailure)) return { key: 'errGeneric', vars: {} };
  if (err.code === 'NETWORK_ERROR') return { key: 'errNetwork', vars: {} };
  if (err.code === 'INVALID_REQUEST' && /email/i.test(err.message)) return { key: 'errEmail', vars: {} };
  return { key: errorKeys[err.code] ?? 'errGeneric', vars: { name: cfg.name, s: err.retryAfter ?? 60 } };
}

// ------------------------------------------------------------------ providers

const status = $<HTMLParagraphElement>('pg-status');
const formError = $<HTMLParagraphElement>('pg-error');

function busy(on: boolean): void {
  for (const b of document.querySelectorAll<HTMLButtonElement>('.provider, .primary')) b.disabled = on;
}

for (const b of document.querySelectorAll<HTMLButtonElement>('.provider')) {
  b.addEventListener('click', async () => {
    say(formError, null);
    busy(true);
    say(status, 'redirecting');
    try {
      const { url } = await call<{ url: string }>('/api/v1/auth/hosted-start', { provider: b.dataset.provider, method: 'oauth', ...binding });
      navigate(url);
    } catch (err) {
      busy(false);
      say(status, null);
      const e = explain(err);
      say(formError, e.key, e.vars);
      b.focus();
    }
  });
}

// ------------------------------------------------------------------ email code

const emailForm = $<HTMLFormElement>('pg-email-form');
const codeForm = $<HTMLFormElement>('pg-code-form');
const emailInput = $<HTMLInputElement>('pg-email');
const codeInput = $<HTMLInputElement>('pg-code');
const emailError = $<HTMLParagraphElement>('pg-email-error');
const codeError = $<HTMLParagraphElement>('pg-code-error');
const codeSent = $<HTMLParagraphElement>('pg-code-sent');
const resend = $<HTMLButtonElement>('pg-resend');
const change = $<HTMLButtonElement>('pg-change');
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

let email = '';
let resendAt = 0;
let timer: ReturnType<typeof setInterval> | undefined;

function fieldError(input: HTMLInputElement | null, out: HTMLElement | null, key: Key | null, vars?: Record<string, string | number>): void {
  say(out, key, vars);
  if (!input) return;
  if (key) {
    input.setAttribute('aria-invalid', 'true');
    input.focus();
    input.select();
  } else {
    input.removeAttribute('aria-invalid');
  }
}

function renderCountdown(): void {
  if (!resend) return;
  const left = Math.ceil((resendAt - Date.now()) / 1000);
  resend.disabled = left > 0;
  resend.textContent = left > 0 ? t(lang, 'resendIn', { s: left }) : t(lang, 'resend');
  if (left <= 0 && timer) {
    clearInterval(timer);
    timer = undefined;
  }
}

function startCountdown(seconds: number): void {
  resendAt = Date.now() + seconds * 1000;
  renderCountdown();
  timer ??= setInterval(renderCountdown, 250);
}

function button(form: HTMLFormElement | null): HTMLButtonElement | null {
  return form?.querySelector<HTMLButtonElement>('.primary') ?? null;
}

async function sendCode(): Promise<boolean> {
  const r = await call<{ resendAfterSeconds: number }>('/api/v1/auth/hosted/email-otp/send', { email });
  startCountdown(r.resendAfterSeconds);
  return true;
}

emailForm?.addEventListener('submit', async (e) => {
  e.preventDefault();
  say(formError, null);
  const value = emailInput!.value.trim();
  if (!EMAIL.test(value)) return fieldError(emailInput, emailError, 'errEmail');
  fieldError(emailInput, emailError, null);
  email = value.toLowerCase();
  const btn = button(emailForm);
  btn!.disabled = true;
  say(btn, 'sending');
  try {
    await sendCode();
    emailForm.hidden = true;
    codeForm!.hidden = false;
    say(codeSent, 'codeSent', { email });
    codeInput!.value = '';
    fieldError(codeInput, codeError, null);
    codeInput!.focus();
  } catch (err) {
    const x = explain(err);
    fieldError(emailInput, emailError, x.key, x.vars);
  } finally {
    btn!.disabled = false;
    say(btn, 'sendCode');
  }
});

codeForm?.addEventListener('submit', async (e) => {
  e.preventDefault();
  const value = codeInput!.value.replace(/\s+/g, '');
  if (!new RegExp(`^\\d{${cfg.codeLength}}$`).test(value)) return fieldError(codeInput, codeError, 'errCodeFormat');
  // Clear the last answer while checking: a stale one would read as the answer to this code.
  fieldError(codeInput, codeError, null);
  const btn = button(codeForm);
  btn!.disabled = true;
  say(btn, 'checking');
  try {
    const { redirectUrl } = await call<{ redirectUrl: string }>('/api/v1/auth/hosted/email-otp/verify', { email, code: value, ...binding });
    fieldError(codeInput, codeError, null);
    say(status, 'redirecting');
    navigate(redirectUrl);
  } catch (err) {
    btn!.disabled = false;
    say(btn, 'signIn');
    const x = explain(err);
    // A spent code cannot be retried: offer a new one at once.
    if (err instanceof ApiFailure && (err.code === 'CODE_EXPIRED' || err.code === 'TOO_MANY_ATTEMPTS')) {
      resendAt = 0;
      renderCountdown();
    }
    fieldError(codeInput, codeError, x.key, x.vars);
  }
});

resend?.addEventListener('click', async () => {
  resend.disabled = true;
  say(status, null);
  try {
    await sendCode();
    fieldError(codeInput, codeError, null);
    say(status, 'newCodeSent');
    codeInput!.value = '';
    codeInput!.focus();
  } catch (err) {
    const x = explain(err);
    if (err instanceof ApiFailure && err.retryAfter) startCountdown(err.retryAfter);
    else renderCountdown();
    fieldError(codeInput, codeError, x.key, x.vars);
  }
});

change?.addEventListener('click', () => {
  codeForm!.hidden = true;
  emailForm!.hidden = false;
  say(status, null);
  fieldError(codeInput, codeError, null);
  emailInput!.focus();
  emailInput!.select();
});

// "Sign in with a passkey" (discoverable: the authenticator offers the user's passkeys) and the browser's
// passkey autofill in the email field (conditional mediation); either ends like the code form, on the app's
// callback with a svc_code bound to the embedding browser.
import { browserSupportsWebAuthn, browserSupportsWebAuthnAutofill, startAuthentication } from '@simplewebauthn/browser';

const passkeyStart = async (useBrowserAutofill: boolean): Promise<void> => {
  const optionsJSON = await call<Parameters<typeof startAuthentication>[0]['optionsJSON']>('/api/v1/auth/hosted/passkey/options', {});
  const response = await startAuthentication({ optionsJSON, useBrowserAutofill });
  say(status, 'redirecting');
  const { redirectUrl } = await call<{ redirectUrl: string }>('/api/v1/auth/hosted/passkey/verify', { response, ...binding });
  navigate(redirectUrl);
};

const passkeyError = (err: unknown): { key: Key; vars: Record<string, string | number> } => {
  if (err instanceof ApiFailure) return err.code === 'INVALID_CREDENTIAL' ? { key: 'errPasskey', vars: {} } : explain(err);
  // The browser's refusals: the person closed the prompt (NotAllowedError), or no passkey fits.
  return { key: (err as { name?: string })?.name === 'NotAllowedError' ? 'errPasskeyCancelled' : 'errPasskey', vars: {} };
};

/** Autofill waits in the email field until the person picks a passkey there; a button ceremony cancels it (AbortError). */
const passkeyAutofill = async (): Promise<void> => {
  if (!emailInput || !(await browserSupportsWebAuthnAutofill())) return;
  emailInput.autocomplete = 'email webauthn';
  try {
    await passkeyStart(true);
  } catch (err) {
    // Only the server's refusal is worth showing; the browser's (aborted by the button, not offered) stay quiet.
    // Either way autofill is not restarted here: a refusal that repeats must not turn into a loop of requests.
    if (!(err instanceof ApiFailure)) return;
    say(status, null);
    const e = passkeyError(err);
    say(formError, e.key, e.vars);
  }
};

if (cfg.passkeys && browserSupportsWebAuthn()) {
  const button = document.createElement('button');
  button.type = 'button';
  button.id = 'pg-passkey';
  button.className = 'passkey';
  const label = document.createElement('span');
  label.dataset.i18n = 'passkeySignIn';
  label.textContent = t(lang, 'passkeySignIn');
  button.innerHTML =
    '<svg class="mark" viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false"><circle cx="9" cy="8" r="4" fill="none" stroke="currentColor" stroke-width="2"/><path d="M2 20c0-3.3 3.1-6 7-6 1.4 0 2.7.3 3.8.9" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"/><circle cx="18" cy="13" r="2.5" fill="none" stroke="currentColor" stroke-width="2"/><path d="M18 15.5V21l1.5-1.2M18 18.5h1.5" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"/></svg>';
  button.append(label);
  formError?.insertAdjacentElement('afterend', button);
  button.addEventListener('click', async () => {
    say(formError, null);
    busy(true);
    button.disabled = true;
    say(status, 'passkeyWaiting');
    try {
      await passkeyStart(false);
    } catch (err) {
      busy(false);
      button.disabled = false;
      say(status, null);
      const e = passkeyError(err);
      say(formError, e.key, e.vars);
      button.focus();
      // The button's ceremony ended the autofill's: it waits again.
      void passkeyAutofill();
    }
  });
  void passkeyAutofill();
}
// "Email me a sign-in link": the same address field, then "Check your email". The link is bound to the
// embedding browser (cfg.codeChallenge), so it signs in only where it was asked for.
const linkButton = $<HTMLButtonElement>('pg-magic-link');
const linkStep = $<HTMLElement>('pg-link-step');
const linkSent = $<HTMLParagraphElement>('pg-link-sent');
const linkError = $<HTMLParagraphElement>('pg-link-error');
const linkResend = $<HTMLButtonElement>('pg-link-resend');
const linkChange = $<HTMLButtonElement>('pg-link-change');
let linkEmail = '';
let linkResendAt = 0;
let linkTimer: ReturnType<typeof setInterval> | undefined;

function renderLinkCountdown(): void {
  if (!linkResend) return;
  const left = Math.ceil((linkResendAt - Date.now()) / 1000);
  linkResend.disabled = left > 0;
  say(linkResend, left > 0 ? 'resendLinkIn' : 'resendLink', left > 0 ? { s: left } : undefined);
  if (left <= 0 && linkTimer) {
    clearInterval(linkTimer);
    linkTimer = undefined;
  }
}

async function sendLink(): Promise<void> {
  const r = await call<{ resendAfterSeconds: number }>('/api/v1/auth/hosted/magic-link/send', { email: linkEmail, ...binding });
  // The embedding page keeps its verifier where a new tab of this browser (the one the email opens) finds it.
  post({ source: SOURCE, type: 'magic-link-sent' });
  linkResendAt = Date.now() + r.resendAfterSeconds * 1000;
  renderLinkCountdown();
  linkTimer ??= setInterval(renderLinkCountdown, 250);
}

async function requestLink(): Promise<void> {
  say(formError, null);
  const value = emailInput!.value.trim();
  if (!EMAIL.test(value)) return fieldError(emailInput, emailError, 'errEmail');
  fieldError(emailInput, emailError, null);
  linkEmail = value.toLowerCase();
  linkButton!.disabled = true;
  say(linkButton, 'sending');
  try {
    await sendLink();
    emailForm!.hidden = true;
    linkStep!.hidden = false;
    say(linkSent, 'linkSent', { email: linkEmail });
    say(linkError, null);
    linkChange?.focus();
  } catch (err) {
    const x = explain(err);
    fieldError(emailInput, emailError, x.key, x.vars);
  } finally {
    linkButton!.disabled = false;
    say(linkButton, 'sendLink');
  }
}

if (linkButton) {
  if (cfg.email) {
    linkButton.addEventListener('click', () => void requestLink());
  } else {
    // Links only: the form's submit (its button, Enter) asks for a link, ahead of the code form's handler.
    document.addEventListener(
      'submit',
      (e) => {
        if (e.target !== emailForm) return;
        e.preventDefault();
        e.stopImmediatePropagation();
        void requestLink();
      },
      true,
    );
  }
}

linkResend?.addEventListener('click', async () => {
  linkResend.disabled = true;
  say(status, null);
  try {
    await sendLink();
    say(linkError, null);
    say(status, 'newLinkSent');
  } catch (err) {
    const x = explain(err);
    if (err instanceof ApiFailure && err.retryAfter) linkResendAt = Date.now() + err.retryAfter * 1000;
    renderLinkCountdown();
    linkTimer ??= setInterval(renderLinkCountdown, 250);
    say(linkError, x.key, x.vars);
  }
});

linkChange?.addEventListener('click', () => {
  linkStep!.hidden = true;
  emailForm!.hidden = false;
  say(status, null);
  emailInput!.focus();
  emailInput!.select();
});

// ------------------------------------------------------------------ language, size, hello

for (const b of document.querySelectorAll<HTMLButtonElement>('.lang-btn')) {
  b.addEventListener('click', () => applyLang(b.dataset.lang as Lang));
}

window.addEventListener('message', (e: MessageEvent) => {
  if (!embedded || e.source !== window.parent || e.origin !== cfg.parentOrigin || !isOurs(e.data)) return;
  const m = e.data as { type: string; lang?: unknown };
  if (m.type === 'lang' && typeof m.lang === 'string' && (langs as readonly string[]).includes(m.lang) && m.lang in dictionaries) applyLang(m.lang as Lang);
});

const root = $<HTMLElement>('pg-root')!;
const reportSize = () => {
  const style = getComputedStyle(document.body);
  post({ source: SOURCE, type: 'resize', height: root.getBoundingClientRect().height + parseFloat(style.paddingTop) + parseFloat(style.paddingBottom) + 2 });
};
new ResizeObserver(reportSize).observe(root);
post({ source: SOURCE, type: 'ready' });
reportSize();
