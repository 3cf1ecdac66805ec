// The page a magic link opens: a confirm step (a plain form that POSTs to the same address, so a
// mail scanner fetching the link spends nothing, and it works without script) or a clear refusal.
// English or Russian by Accept-Language; the widget's stylesheet; no script at all.
import type { FastifyReply } from 'fastify';
import { escapeHtml } from '../../core/html.js';
import type { Lang } from '../hosted/i18n.js';

const words = {
  en: {
    title: 'Sign in to {name}',
    confirm: 'Continue signing in to {name} as {email}?',
    button: 'Sign in',
    note: 'If you did not ask for this link, close this page.',
    usedTitle: 'This link was already used',
    used: 'Each sign-in link works once. Go back to the app and ask for a new one.',
    expiredTitle: 'This link has expired',
    expired: 'Sign-in links work for 10 minutes. Go back to the app and ask for a new one.',
    unknownTitle: 'This link is not valid',
    unknown: 'It may have been copied incompletely. Go back to the app and ask for a new one.',
    disabledTitle: 'Sign-in links are off',
    disabled: 'This app no longer signs in with email links. Go back to the app to sign in another way.',
  },
  ru: {
    title: 'Вход в {name}',
    confirm: 'Продолжить вход в {name} как {email}?',
    button: 'Войти',
    note: 'Если вы не запрашивали эту ссылку, просто закройте страницу.',
    usedTitle: 'Эта ссылка уже использована',
    used: 'Каждая ссылка для входа работает один раз. Вернитесь в приложение и запросите новую.',
    expiredTitle: 'Срок действия ссылки истёк',
    expired: 'Ссылка для входа действует 10 минут. Вернитесь в приложение и запросите новую.',
    unknownTitle: 'Ссылка недействительна',
    unknown: 'Возможно, она скопирована не полностью. Вернитесь в приложение и запросите новую.',
    disabledTitle: 'Вход по ссылке выключен',
    disabled: 'Это приложение больше не принимает вход по ссылке из письма. Вернитесь в приложение и войдите иначе.',
  },
} as const;

type Word = keyof (typeof words)['en'];
export type Refusal = 'used' | 'expired' | 'unknown' | 'malformed' | 'disabled';

const say = (lang: Lang, w: Word, vars: Record<string, string> = {}) => words[lang][w].replace(/\{(\w+)\}/g, (m, v: string) => vars[v] ?? m);

/**
 * The page's security headers: no script, never framed, cached nowhere, no referrer (the token is in the URL).
 * Its form posts here only; browsers apply form-action to the redirect that follows too, so the confirm page
 * also names the one origin it returns to (the link's checked callback).
 */
const csp = (returnsTo?: string) =>
  `default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'${returnsTo ? ` ${returnsTo}` : ''}; base-uri 'none'; frame-ancestors 'none'`;

function send(reply: FastifyReply, status: number, lang: Lang, title: string, body: string, css: string, returnsTo?: string): FastifyReply {
  return reply
    .code(status)
    .type('text/html; charset=utf-8')
    .header('content-security-policy', csp(returnsTo))
    .header('x-frame-options', 'DENY')
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .send(`<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="/api/v1/auth/hosted/widget.css?v=${css}">
</head>
<body>
<main class="card" aria-labelledby="pg-title">
<header class="head"><h1 id="pg-title">${escapeHtml(title)}</h1></header>
${body}
</main>
</body>
</html>`);
}

/** The confirm step: its button POSTs to this same address (the form has no action: the page's own URL), which redirects to `callbackUrl`. */
export function confirmPage(reply: FastifyReply, lang: Lang, projectName: string, email: string, callbackUrl: string, css: string): FastifyReply {
  const body =
    `<p id="pg-confirm">${escapeHtml(say(lang, 'confirm', { name: projectName, email }))}</p>` +
    `<form method="post"><button type="submit" class="primary" id="pg-magic-confirm">${escapeHtml(say(lang, 'button'))}</button></form>` +
    `<p class="hint">${escapeHtml(say(lang, 'note'))}</p>`;
  return send(reply, 200, lang, say(lang, 'title', { name: projectName }), body, css, new URL(callbackUrl).origin);
}

const STATUS: Record<Refusal, number> = { used: 410, expired: 410, unknown: 404, malformed: 400, disabled: 403 };

/** A link that cannot sign anyone in: 410 used or expired, 404 unknown, 400 not a token at all, 403 links turned off. */
export function refusalPage(reply: FastifyReply, lang: Lang, why: Refusal, css: string): FastifyReply {
  const words = why === 'malformed' ? 'unknown' : why;
  const title = say(lang, `${words}Title`);
  return send(
    reply,
    STATUS[why],
    lang,
    title,
    `<p class="page-error" role="alert" id="pg-refusal" data-reason="${why}">${escapeHtml(say(lang, words))}</p>`,
    css,
  );
}
