// The hosted widget in a real browser (Debian's chromium): a demo app on one
// loopback origin (127.0.0.1) embeds the widget served from another
// (localhost, postgate's base URL). Email codes travel through the gateway to
// a receiving MX; OAuth goes through oidc-provider standing in for Google.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, FrameLocator, Page } from 'playwright-core';
import { allowOrigin, codeFor, INBOX, launch, shot, startDemoApp, startEnv, type DemoApp, type Env } from './harness.js';
import { setClock } from '../auth/setup.js';

let env: Env;
let app: DemoApp;
let evil: DemoApp;
let browser: Browser;

beforeAll(async () => {
  const t0 = Date.now();
  [env, browser] = await Promise.all([startEnv('acme'), launch()]);
  app = await startDemoApp(env);
  // The evil app (not allowed) points at the good app's callback, so only the framing rule stands in its way.
  evil = await startDemoApp(env, { redirectOrigin: app.origin });
  await allowOrigin(env, app.origin);
  console.log('setup ms', Date.now() - t0);
});
afterAll(async () => {
  await browser?.close();
  await Promise.all([app?.close(), evil?.close()]);
  await env?.close();
});

let context: BrowserContext;
async function open(path = '/', opts: { viewport?: { width: number; height: number }; mobile?: boolean; locale?: string } = {}): Promise<{ page: Page; widget: FrameLocator }> {
  context = await browser.newContext({
    viewport: opts.viewport ?? { width: 1000, height: 800 }, locale: opts.locale ?? 'en-US',
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
});
