// Telegram's signed payloads: the Login Widget (secret = SHA-256(bot token))
// and Mini App initData (secret = HMAC-SHA256("WebAppData", bot token)). The
// HMAC covers every field received, is compared in constant time, and
// `auth_date` must be recent; the caller makes each payload usable once.
import crypto from 'node:crypto';
import { clock } from '../core/clock.js';
import { settings } from './settings.js';
import { hmacHex, sameHex, sha256 } from './crypto.js';
import { CredentialError, joinName, str, type OneShot, type Profile } from './providers/types.js';

export type WidgetFields = Record<string, string | number | boolean>;

const dataCheckString = (entries: Array<[string, string]>) =>
  entries
    .filter(([k]) => k !== 'hash')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');

/** Checks `auth_date` (Unix seconds) against the window; returns when the payload stops being acceptable. */
function fresh(authDate: unknown, windowMs: number): number {
  const at = Number(authDate) * 1000;
  if (!Number.isSafeInteger(Number(authDate)) || at <= 0) throw new CredentialError('auth_date is missing');
  const now = clock.now();
  if (at > now + settings.telegramFutureSkewMs) throw new CredentialError('auth_date is in the future');
  if (now - at > windowMs) throw new CredentialError('auth_date is too old');
  return at + windowMs;
}

const once = (hash: string, expiresAt: number): OneShot => ({ digest: sha256(`telegram:${hash.toLowerCase()}`), expiresAt });

export function checkWidget(botToken: string, fields: WidgetFields, windowMs: number): Profile & { once: OneShot } {
  const hash = typeof fields.hash === 'string' ? fields.hash : '';
  const secret = crypto.createHash('sha256').update(botToken).digest();
  const expected = hmacHex(secret, dataCheckString(Object.entries(fields).map(([k, v]) => [k, String(v)])));
  if (!sameHex(expected, hash.toLowerCase())) throw new CredentialError('Telegram data signature does not match');
  const expiresAt = fresh(fields.auth_date, windowMs);
  return {
    subject: String(fields.id),
    email: null,
    emailVerified: false,
    name: joinName(fields.first_name, fields.last_name),
    avatarUrl: str(fields.photo_url),
    phone: null,
    username: str(fields.username),
    once: once(hash, expiresAt),
  };
}

export function checkInitData(botToken: string, initData: string, windowMs: number): Profile & { once: OneShot } {
  const params = new URLSearchParams(initData.replace(/^tma\s+/i, ''));
  const hash = params.get('hash') ?? '';
  const secret = crypto.createHmac('sha256', 'WebAppData').update(botToken).digest();
  const expected = hmacHex(secret, dataCheckString([...params.entries()]));
  if (!sameHex(expected, hash.toLowerCase())) throw new CredentialError('Telegram initData signature does not match');
  const expiresAt = fresh(params.get('auth_date'), windowMs);
  let user: any;
  try {
    user = JSON.parse(params.get('user') ?? '');
  } catch {
    throw new CredentialError('Telegram initData has no user');
  }
  if (!user || user.id === undefined) throw new CredentialError('Telegram initData has no user');
  return {
    subject: String(user.id),
    email: null,
    emailVerified: false,
    name: joinName(user.first_name, user.last_name),
    avatarUrl: str(user.photo_url),
    phone: null,
    username: str(user.username),
    once: once(hash, expiresAt),
  };
}
