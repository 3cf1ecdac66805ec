// auth/telegram.ts: Telegram's Login Widget and Mini App payloads, signed as Telegram documents
// (core.telegram.org/widgets/login, core.telegram.org/bots/webapps), computed independently here.
import nodeCrypto from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CredentialError } from '../../auth/providers/types.js';
import { checkInitData, checkWidget } from '../../auth/telegram.js';
import { clock } from '../../core/clock.js';

const BOT = '123456:AAE-bot-token';
const WINDOW = 10 * 60_000;
const now = () => Math.floor(clock.now() / 1000);

const dataCheck = (fields: Record<string, string>) =>
  Object.keys(fields)
    .filter((k) => k !== 'hash')
    .sort()
    .map((k) => `${k}=${fields[k]}`)
    .join('\n');

/** The Login Widget: HMAC-SHA256 keyed with SHA-256(bot token). */
function widget(fields: Record<string, string | number>, bot = BOT): Record<string, string | number> {
  const strings = Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)]));
  const key = nodeCrypto.createHash('sha256').update(bot).digest();
  return { ...fields, hash: nodeCrypto.createHmac('sha256', key).update(dataCheck(strings)).digest('hex') };
}

/** Mini App initData: HMAC-SHA256 keyed with HMAC-SHA256("WebAppData", bot token). */
function initData(fields: Record<string, string>, bot = BOT): string {
  const key = nodeCrypto.createHmac('sha256', 'WebAppData').update(bot).digest();
  const hash = nodeCrypto.createHmac('sha256', key).update(dataCheck(fields)).digest('hex');
  return new URLSearchParams({ ...fields, hash }).toString();
}

afterEach(() => {
  clock.setOffset(0);
  vi.restoreAllMocks();
});

describe('Login Widget', () => {
  const fields = () => ({ id: 4242, first_name: 'Ada', last_name: 'L', username: 'ada', photo_url: 'https://t.me/i/a.jpg', auth_date: now() });

  it('a signed payload gives the profile (no email: Telegram has none) and a one-shot digest valid to the end of the window', () => {
    const f = fields();
    const p = checkWidget(BOT, widget(f), WINDOW);
    expect(p).toMatchObject({
      subject: '4242',
      email: null,
      emailVerified: false,
      name: 'Ada L',
      username: 'ada',
      avatarUrl: 'https://t.me/i/a.jpg',
      phone: null,
    });
    expect(p.once.expiresAt).toBe(f.auth_date * 1000 + WINDOW);
    expect(p.once.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('the one-shot digest is the same whatever the case of the hash (a replay in upper case is still a replay)', () => {
    const signed = widget(fields());
    const upper = { ...signed, hash: String(signed.hash).toUpperCase() };
    expect(checkWidget(BOT, upper, WINDOW).once.digest).toBe(checkWidget(BOT, signed, WINDOW).once.digest);
  });

  it('refuses a changed field, an added field, another bot token and a missing hash', () => {
    const signed = widget(fields());
    expect(() => checkWidget(BOT, { ...signed, id: 1 }, WINDOW)).toThrow(CredentialError);
    expect(() => checkWidget(BOT, { ...signed, is_admin: 'true' }, WINDOW)).toThrow(/signature does not match/);
    expect(() => checkWidget('999:other', signed, WINDOW)).toThrow(/signature does not match/);
    const { hash: _, ...unsigned } = signed;
    expect(() => checkWidget(BOT, unsigned, WINDOW)).toThrow(/signature does not match/);
  });

  it('auth_date must be within the window, at most a minute ahead of our clock, and present', () => {
    expect(() => checkWidget(BOT, widget({ ...fields(), auth_date: now() - WINDOW / 1000 - 5 }), WINDOW)).toThrow(/too old/);
    expect(checkWidget(BOT, widget({ ...fields(), auth_date: now() - WINDOW / 1000 + 5 }), WINDOW).subject).toBe('4242');
    expect(() => checkWidget(BOT, widget({ ...fields(), auth_date: now() + 120 }), WINDOW)).toThrow(/in the future/);
    expect(checkWidget(BOT, widget({ ...fields(), auth_date: now() + 30 }), WINDOW).subject).toBe('4242');
    const { auth_date: _, ...dateless } = fields();
    expect(() => checkWidget(BOT, widget(dateless), WINDOW)).toThrow(/auth_date is missing/);
    expect(() => checkWidget(BOT, widget({ ...fields(), auth_date: 'soon' }), WINDOW)).toThrow(/auth_date is missing/);
  });

  it('reads auth_date on our clock (moved forward, a payload grows old)', () => {
    const signed = widget(fields());
    clock.setOffset(WINDOW + 60_000);
    expect(() => checkWidget(BOT, signed, WINDOW)).toThrow(/too old/);
  });

  it('compares the signature in constant time', () => {
    const spy = vi.spyOn(nodeCrypto, 'timingSafeEqual');
    checkWidget(BOT, widget(fields()), WINDOW);
    expect(spy).toHaveBeenCalledTimes(1);
  });
});

describe('Mini App initData', () => {
  const user = JSON.stringify({ id: 77, first_name: 'Grace', username: 'grace', photo_url: 'https://t.me/i/g.jpg' });
  const fields = () => ({ query_id: 'AAH', user, auth_date: String(now()) });

  it('a signed initData gives the user, with or without the "tma " prefix of an Authorization header', () => {
    const data = initData(fields());
    expect(checkInitData(BOT, data, WINDOW)).toMatchObject({ subject: '77', name: 'Grace', username: 'grace', email: null, avatarUrl: 'https://t.me/i/g.jpg' });
    expect(checkInitData(BOT, `tma ${data}`, WINDOW).subject).toBe('77');
  });

  it('is not a widget signature: the same fields signed the widget way are refused', () => {
    const asWidget = widget(fields());
    const data = new URLSearchParams(Object.entries(asWidget).map(([k, v]) => [k, String(v)])).toString();
    expect(() => checkInitData(BOT, data, WINDOW)).toThrow(/initData signature does not match/);
  });

  it('refuses a changed user, an old auth_date and a payload without a user', () => {
    const tampered = new URLSearchParams(initData(fields()));
    tampered.set('user', JSON.stringify({ id: 1, first_name: 'Mallory' }));
    expect(() => checkInitData(BOT, tampered.toString(), WINDOW)).toThrow(/signature does not match/);
    expect(() => checkInitData(BOT, initData({ ...fields(), auth_date: String(now() - 3600) }), WINDOW)).toThrow(/too old/);
    expect(() => checkInitData(BOT, initData({ query_id: 'AAH', auth_date: String(now()) }), WINDOW)).toThrow(/has no user/);
    expect(() => checkInitData(BOT, initData({ user: '{"first_name":"x"}', auth_date: String(now()) }), WINDOW)).toThrow(/has no user/);
  });
});
