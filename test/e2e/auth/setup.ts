// Shared by the auth tests: a stack whose clock tests may move, and calls with
// the project key in X-Service-Key (the auth API's header).
import crypto from 'node:crypto';
import fs from 'node:fs';
import { Stack, type Project } from '../../helpers/stack.js';

export const APP = 'https://app.example.com';

export async function authStack(env: Record<string, string> = {}): Promise<Stack> {
  return Stack.start({ env: { POSTGATE_TEST_CLOCK: '1', POSTGATE_SYSTEM_FROM: 'no-reply@postgate.test', ...env } });
}

export interface Call {
  status: number;
  body: any;
  headers: Headers;
}

export function client(stack: Stack, key: string, extra: Record<string, string> = {}) {
  const h = (more: Record<string, string> = {}) => ({ 'x-service-key': key, ...extra, ...more });
  return {
    get: (p: string, more?: Record<string, string>): Promise<Call> => stack.api('GET', `/api/v1/auth${p}`, undefined, undefined, h(more)),
    post: (p: string, body?: unknown, more?: Record<string, string>): Promise<Call> => stack.api('POST', `/api/v1/auth${p}`, undefined, body ?? {}, h(more)),
    session: (token: string): Promise<Call> => stack.api('GET', '/api/v1/auth/session', undefined, undefined, h({ authorization: `Bearer ${token}` })),
    signOut: (token: string): Promise<Call> => stack.api('POST', '/api/v1/auth/sign-out', undefined, {}, h({ authorization: `Bearer ${token}` })),
  };
}

/** Moves control's clock (the admin test route, present with POSTGATE_TEST_CLOCK=1 only). */
export const setClock = (stack: Stack, offsetMs: number) => stack.admin('POST', '/admin/v1/test/clock', { offset_ms: offsetMs });

export const provider = (stack: Stack, p: Project, id: string, body: Record<string, unknown>) =>
  stack.admin('PUT', `/admin/v1/projects/${p.slug}/auth/providers/${id}`, body);
export const allowOrigin = (stack: Stack, p: Project, origin = APP) => stack.admin('POST', `/admin/v1/projects/${p.slug}/auth/origins`, { origin });

/** postgate's base URL names localhost; the stack listens on 127.0.0.1. */
export const viaLoopback = (u: string) => u.replace(/^http:\/\/localhost:/, 'http://127.0.0.1:');

export const TEST_BOT = '123456789:AAEtestbottokenXXXXXXXXXXXXXXXXXXXXX';
export const unixNow = () => Math.floor(Date.now() / 1000);
export const hmacHex = (key: crypto.BinaryLike, data: string) => crypto.createHmac('sha256', key).update(data).digest('hex');
export const checkString = (entries: Array<[string, string]>) =>
  entries
    .filter(([k]) => k !== 'hash')
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');

/** Telegram Login Widget data signed as Telegram does (secret = SHA-256 of the bot token). */
export function signedWidget(fields: Record<string, string | number>, bot = TEST_BOT): Record<string, string | number> {
  const secret = crypto.createHash('sha256').update(bot).digest();
  return { ...fields, hash: hmacHex(secret, checkString(Object.entries(fields).map(([k, v]) => [k, String(v)]))) };
}

/** Lines of the stack's log that satisfy `match`, waiting a little for pino to flush them. */
export async function logLines(stack: Stack, match: (line: string) => boolean, timeoutMs = 5000): Promise<string[]> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const lines = fs.readFileSync(stack.logFile, 'utf8').split('\n').filter(match);
    if (lines.length || Date.now() > until) return lines;
    await new Promise((r) => setTimeout(r, 50));
  }
}
