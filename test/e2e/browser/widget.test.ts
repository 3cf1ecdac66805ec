// The hosted widget in a real browser (Debian's chromium): a demo app on one
// loopback origin (127.0.0.1) embeds the widget served from another
// (localhost, postgate's base URL). Email codes travel through the gateway to
// a receiving MX; OAuth goes through oidc-provider standing in for Google.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Frame, FrameLocator, Page } from 'playwright-core';
import { allowOrigin, allStarted, codeFor, INBOX, launch, settled, shot, startDemoApp, startEnv, type DemoApp, type Env } from './harness.js';
import { setClock } from '../auth/setup.js';

let env: Env;
let app: DemoApp;
let evil: DemoApp;
let browser: Browser;

beforeAll(async () => {
  await allStarted([startEnv('acme').then((e) => (env = e)), launch().then((b) => (browser = b))]);
  app = await startDemoApp(env);
  // The evil app (not allowed) points at the good app's callback, so only the framing rule stands in its way.
  evil = await startDemoApp(env, { redirectOrigin: app.origin });
  await allowOrigin(env, app.origin);
});
afterAll(async () => {
  await browser?.close();
  await Promise.all([app?.close(), evil?.close()]);
  await env?.close();
});

let context: BrowserContext;
async function open(
  path = '/',
  opts: { viewport?: { width: number; height: number }; mobile?: boolean; locale?: string } = {},
): Promise<{ page: Page; widget: FrameLocator }> {
  context = await browser.newContext({
    viewport: opts.viewport ?? { width: 1000, height: 800 },
    locale: opts.locale ?? 'en-US',
    ...(opts.mobile ? { isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : {}),
  });
  const page = await context.newPage();
  await page.goto(app.origin + path);
  const widget = page.frameLocator('#signin iframe');
  await widget.locator('h1').waitFor();
  await page.waitForFunction(() => document.querySelector('.postgate-widget')?.getAttribute('data-state') === 'ready');
  return { page, widget };
}

const done = () => context?.close();
const widgetFrame = (page: Page): Frame => page.frames().find((f) => f.url().includes('/api/v1/auth/hosted/widget'))!;

/** Asks for a code in the widget and returns it as the MX received it. */
async function requestCode(widget: FrameLocator, address: string): Promise<string> {
  await widget.locator('#pg-email').fill(address);
  const sentAt = Date.now();
  await widget.locator('#pg-email-form .primary').click();
  await widget.locator('#pg-code').waitFor();
  return codeFor(env.sink, address, sentAt);
}

async function submitCode(widget: FrameLocator, code: string): Promise<string> {
  await widget.locator('#pg-code').fill(code);
  await widget.locator('#pg-code-form .primary').click();
  await expect.poll(() => widget.locator('#pg-code-error').textContent()).not.toBe('');
  return (await widget.locator('#pg-code-error').textContent())!;
}

const wrong = (code: string) => (code === '000000' ? '111111' : '000000');

describe('embedded widget', () => {
  it('signs in with an email code caught at the MX; the app exchanges svc_code and shows the user', async () => {
    const { page, widget } = await open();
    const address = `ann@${INBOX}`;
    await widget.getByLabel('Email', { exact: true }).fill(address);
    const sentAt = Date.now();
    await widget.getByRole('button', { name: 'Send code' }).click();
    await expect.poll(() => widget.locator('#pg-code-sent').textContent()).toContain(address);
    const code = await codeFor(env.sink, address, sentAt);
    await widget.getByLabel('Code from the email').fill(code);
    await widget.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${app.origin}/callback**`);
    expect(await page.locator('#who').textContent()).toBe(address);
    expect(await page.locator('#via').textContent()).toBe('email');
    // The widget's origin never set a cookie, first- or third-party.
    expect((await context.cookies(env.id)).length).toBe(0);
    await done();
  });

  it('binds each sign-in to the browser that started it: a callback URL sent to another browser signs nobody in (login CSRF)', async () => {
    // The attacker completes Google in their own browser and stops at the app's callback, keeping the URL.
    env.idp.loginAs({ sub: 'g-mallory', email: 'mallory@gmail.com', email_verified: true, name: 'Mallory' });
    const attacker = await open();
    const attackerContext = context;
    // The attacker's own tab reaches the app's callback page; its exchange is held back, the URL kept.
    const exchange = `${app.origin}/callback/exchange`;
    await attacker.page.route(exchange, (route) => route.abort());
    await attacker.widget.getByRole('button', { name: 'Continue with Google' }).click();
    await attacker.page.waitForURL(`${app.origin}/callback**`);
    const lure = attacker.page.url();
    expect(lure).toContain('svc_code=');

    // The victim opens it: their browser holds no verifier, so the app's exchange is refused.
    const before = app.tokens.length;
    const victim = await open();
    await victim.page.goto(lure);
    expect(await victim.page.locator('#result').textContent()).toBe('INVALID_CODE');
    // Also when the victim's tab has a sign-in of its own under way (another verifier): it loaded the widget above.
    expect(await victim.page.evaluate(() => sessionStorage.getItem('postgate.code-verifier'))).toMatch(/^[\w-]{43}$/);
    expect(app.tokens.length).toBe(before);
    await done();

    // The code was not used up: the attacker's own tab can still finish it, as itself.
    await attacker.page.unroute(exchange);
    await attacker.page.goto(lure);
    expect(await attacker.page.locator('#who').textContent()).toBe('mallory@gmail.com');
    await attackerContext.close();
  });

  it('signs in through OAuth (oidc-provider as Google): the top window goes to the provider and back to the app', async () => {
    env.idp.loginAs({ sub: 'g-100', email: 'gina@gmail.com', email_verified: true, name: 'Gina G' });
    const { page, widget } = await open();
    await widget.getByRole('button', { name: 'Continue with Google' }).click();
    await page.waitForURL(`${app.origin}/callback**`);
    expect(await page.locator('#who').textContent()).toBe('gina@gmail.com');
    expect(await page.locator('#via').textContent()).toBe('google');
    // The app's callback got the code once; the address kept the app's own query.
    expect(new URL(page.url()).searchParams.get('from')).toBe('widget');

    // Sign-out: the app's backend ends the session; the token is dead at once.
    const token = app.tokens.at(-1)!;
    await page.locator('#signout').click();
    await page.waitForURL(`${app.origin}/signout`);
    expect(await page.locator('#result').textContent()).toBe('Signed out');
    const after = await env.stack.api('GET', '/api/v1/auth/session', undefined, undefined, {
      'x-service-key': env.project.keys.live,
      authorization: `Bearer ${token}`,
    });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('SESSION_INVALID');
    await done();
  });

  it('is refused on an origin outside the allowed list: the browser will not frame it, the API will not start', async () => {
    context = await browser.newContext();
    const page = await context.newPage();
    const csp: string[] = [];
    page.on('response', (r) => {
      if (r.url().includes('/hosted/widget?')) csp.push(r.headers()['content-security-policy'] ?? '');
    });
    await page.goto(`${evil.origin}/`);
    await page.waitForFunction(() => document.querySelector('.postgate-widget')?.getAttribute('data-state') === 'refused');
    expect(await page.locator('.postgate-notice').textContent()).toContain(`postgate origin allow ${evil.origin}`);
    expect(await page.frameLocator('#signin iframe').locator('#pg-email').count()).toBe(0);
    // Only the allowed origin may frame the form.
    expect(csp[0]).toContain(`frame-ancestors ${app.origin}`);
    expect(csp[0]).not.toContain(evil.origin);
    await done();

    // The endpoints themselves refuse redirects and browser origins outside the list.
    const start = await env.stack.api('POST', '/api/v1/auth/hosted-start', undefined, {
      slug: env.project.slug,
      provider: 'google',
      redirectUri: `${evil.origin}/callback`,
    });
    expect(start.status).toBe(400);
    expect(start.body.code).toBe('REDIRECT_NOT_ALLOWED');
    const send = await env.stack.api(
      'POST',
      '/api/v1/auth/hosted/email-otp/send',
      undefined,
      { slug: env.project.slug, email: `x@${INBOX}`, redirectUri: `${app.origin}/callback` },
      { origin: evil.origin },
    );
    expect(send.body.code).toBe('REDIRECT_NOT_ALLOWED');
    // A page claiming an origin that is not allowed gets the refusal text, not the form.
    const claimed = await fetch(
      `${env.stack.url}/api/v1/auth/hosted/widget?slug=${env.project.slug}&redirect_uri=${encodeURIComponent(`${app.origin}/callback`)}&origin=${encodeURIComponent(evil.origin)}`,
    );
    expect(claimed.status).toBe(400);
    expect(await claimed.text()).not.toContain('pg-email-form');
  });

  it('works with the keyboard alone: tab to the email field, type, Enter, type the code, Enter', async () => {
    const { page } = await open();
    const frame = widgetFrame(page);
    const focused = () => frame.evaluate(() => document.activeElement?.id ?? '');
    // What has focus inside the frame ('' until focus has crossed into it: that happens asynchronously).
    const stop = () =>
      frame.evaluate(() => {
        const a = document.activeElement;
        return document.hasFocus() && a && a !== document.body ? a.textContent?.trim() || a.id : '';
      });
    const stops: string[] = [];
    for (let i = 0; i < 10 && (await focused()) !== 'pg-email'; i++) {
      const before = stops.at(-1);
      await page.keyboard.press('Tab');
      let now = '';
      for (let j = 0; j < 40 && (!(now = await stop()) || now === before); j++) await page.waitForTimeout(25);
      stops.push(now);
    }
    expect(await focused()).toBe('pg-email');
    // Language switch and the provider button come first, each reachable.
    expect(stops, stops.join(' | ')).toEqual(expect.arrayContaining(['EN', 'RU', 'Continue with Google']));
    // Focus is visible (outline drawn by :focus-visible).
    expect(await frame.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle)).toBe('solid');
    const address = `kim@${INBOX}`;
    await page.keyboard.type(address);
    const sentAt = Date.now();
    await page.keyboard.press('Enter');
    await frame.waitForFunction(() => document.activeElement?.id === 'pg-code');
    const code = await codeFor(env.sink, address, sentAt);
    await page.keyboard.type(code);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${app.origin}/callback**`);
    expect(await page.locator('#who').textContent()).toBe(address);
    await done();
  });

  it('tells wrong, expired and spent codes apart and offers a new code after the countdown', async () => {
    const { page, widget } = await open();
    const address = `lee@${INBOX}`;
    const code = await requestCode(widget, address);
    expect(await widget.locator('#pg-resend').textContent()).toMatch(/^New code in \d+ s$/);
    expect(await widget.locator('#pg-resend').isDisabled()).toBe(true);
    // Not 6 digits: said before asking the server.
    expect(await submitCode(widget, '12ab')).toBe('The code is 6 digits.');
    expect(await submitCode(widget, wrong(code))).toBe('That code is wrong. Check the email and try again.');
    expect(await widget.locator('#pg-code').getAttribute('aria-invalid')).toBe('true');
    await settled(page);
    await shot(page, 'widget-wrong-code', { frame: true });

    // Expired: ten minutes pass (control's test clock).
    await setClock(env.stack, 11 * 60_000);
    try {
      expect(await submitCode(widget, code)).toBe('This code has expired. Ask for a new one.');
      expect(await widget.locator('#pg-resend').isEnabled()).toBe(true);
    } finally {
      await setClock(env.stack, 0);
    }

    // A new code; then five wrong tries spend it, and even the right one is refused.
    const sentAt = Date.now();
    await widget.locator('#pg-resend').click();
    await expect.poll(() => widget.locator('#pg-status').textContent()).toBe('A new code is on its way.');
    const fresh = await codeFor(env.sink, address, sentAt);
    const answers: string[] = [];
    for (let i = 0; i < 5; i++) answers.push(await submitCode(widget, wrong(fresh)));
    expect(answers.at(-1)).toBe('Too many wrong tries. Ask for a new code.');
    expect(await submitCode(widget, fresh)).toBe('Too many wrong tries. Ask for a new code.');
    // The cooldown of the server still holds: asking again too soon says how long to wait.
    await widget.locator('#pg-resend').click();
    await expect.poll(() => widget.locator('#pg-code-error').textContent()).toMatch(/^Too many requests\. Try again in \d+ s\.$/);
    expect(await widget.locator('#pg-resend').textContent()).toMatch(/^New code in \d+ s$/);
    await done();
  });

  it('switches language in the page and from the embedding page; screenshots in both languages and on a phone', async () => {
    const { page, widget } = await open();
    expect(await widget.locator('h1').textContent()).toBe('Sign in to Acme');
    await settled(page);
    await shot(page, 'widget-en', { frame: true });

    await widget.getByRole('button', { name: 'RU', exact: true }).click();
    expect(await widget.locator('h1').textContent()).toBe('Вход в Acme');
    expect(await widget.locator('html').getAttribute('lang')).toBe('ru');
    expect(await widget.getByRole('button', { name: 'RU', exact: true }).getAttribute('aria-pressed')).toBe('true');
    expect(await widget.locator('.provider').first().textContent()).toBe('Войти через Google');
    await settled(page);
    await shot(page, 'widget-ru', { frame: true });
    expect(await widget.getByLabel('Электронная почта').count()).toBe(1);
    await widget.getByLabel('Электронная почта').fill('not-an-address');
    await widget.locator('#pg-email-form .primary').click();
    expect(await widget.locator('#pg-email-error').textContent()).toBe('Введите адрес почты, например name@example.com.');

    // Messages are checked by origin and sender on both sides. The frame ignores one from itself (its
    // own origin, not the embedding page's); the page ignores a "navigate" that is not from the frame.
    await widgetFrame(page).evaluate(() => window.postMessage({ source: 'postgate', type: 'lang', lang: 'en' }, '*'));
    await page.evaluate(() => window.postMessage({ source: 'postgate', type: 'navigate', url: 'https://elsewhere.example/' }, '*'));
    await page.waitForTimeout(300);
    expect(await widget.locator('h1').textContent()).toBe('Вход в Acme');
    expect(page.url()).toBe(`${app.origin}/`);

    // The embedding page switches it back (a message to the frame's origin, checked there).
    await page.evaluate(() => window.PostgateWidget!.setLanguage('en'));
    await expect.poll(() => widget.locator('h1').textContent()).toBe('Sign in to Acme');
    expect(await widget.locator('#pg-email-error').textContent()).toBe('Enter a valid email address, like name@example.com.');
    await done();

    // data-lang="ru", and Russian errors from the server's codes.
    const ru = await open('/?lang=ru');
    expect(await ru.widget.locator('h1').textContent()).toBe('Вход в Acme');
    const code = await requestCode(ru.widget, `ivan@${INBOX}`);
    expect(await ru.widget.locator('#pg-resend').textContent()).toMatch(/^Новый код через \d+ с$/);
    expect(await submitCode(ru.widget, wrong(code))).toBe('Неверный код. Проверьте письмо и попробуйте ещё раз.');
    await done();

    // A phone: the form fits the width, targets stay finger-sized.
    const phone = await open('/', { viewport: { width: 390, height: 844 }, mobile: true });
    const frame = widgetFrame(phone.page);
    const fit = await frame.evaluate(() => ({
      overflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
      button: document.querySelector('.provider')!.getBoundingClientRect().height,
      input: document.querySelector('#pg-email')!.getBoundingClientRect().height,
    }));
    expect(fit.overflow).toBeLessThanOrEqual(0);
    expect(fit.button).toBeGreaterThanOrEqual(44);
    expect(fit.input).toBeGreaterThanOrEqual(44);
    await settled(phone.page);
    await shot(phone.page, 'widget-phone');
    await done();
  });
});
