// The admin API client: openapi-fetch typed with the admin OpenAPI document's `paths`. The session
// cookie (HttpOnly) goes by itself; the CSRF token lives only in this module's memory (a reload gets it
// back from GET /console/api/session) and goes as X-CSRF-Token on every change. The admin token is
// never kept: it is posted once by the sign-in form.
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './gen/admin-api';

let csrf: string | null = null;
const signedOut = new Set<() => void>();

/** Called when any call answers 401: the session is gone, the app shows the sign-in form. */
export function onSignedOut(fn: () => void): () => void {
  signedOut.add(fn);
  return () => signedOut.delete(fn);
}
const fireSignedOut = () => {
  csrf = null;
  for (const fn of signedOut) fn();
};

const session: Middleware = {
  onRequest({ request }) {
    if (request.method !== 'GET' && request.method !== 'HEAD' && csrf) request.headers.set('X-CSRF-Token', csrf);
    return request;
  },
  onResponse({ response }) {
    if (response.status === 401) fireSignedOut();
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: window.location.origin, credentials: 'same-origin' });
api.use(session);

/** An answer of the API that is not a success, with its `{error, code}` when it gave one. */
export class ApiFailure extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message);
  }
}

async function failure(res: Response, body?: unknown): Promise<ApiFailure> {
  let b = body;
  if (b === undefined) b = await res.json().catch(() => undefined);
  const e = b as { error?: unknown; code?: unknown } | undefined;
  const message = typeof e?.error === 'string' ? e.error : `${res.status} ${res.statusText}`;
  return new ApiFailure(message, typeof e?.code === 'string' ? e.code : 'HTTP_ERROR', res.status);
}

/** The data of an openapi-fetch answer, or an ApiFailure thrown with the API's message. */
export async function ok<T>(p: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const r = await p;
  if (!r.response.ok) throw await failure(r.response, r.error);
  return r.data as T;
}

export interface Session {
  csrf_token: string;
  expires_at: string;
  idle_timeout_s: number;
}

const SESSION = '/console/api/session';

/** The live session (the CSRF token recovered after a reload), or null when signed out. */
export async function currentSession(): Promise<Session | null> {
  const res = await fetch(SESSION, { credentials: 'same-origin', headers: { accept: 'application/json' } });
  if (res.status === 401) return null;
  if (!res.ok) throw await failure(res);
  const s = (await res.json()) as Session;
  csrf = s.csrf_token;
  return s;
}

export async function signIn(token: string): Promise<Session> {
  const res = await fetch(SESSION, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ token }),
  });
  if (!res.ok) throw await failure(res);
  const s = (await res.json()) as Session;
  csrf = s.csrf_token;
  return s;
}

export async function signOut(): Promise<void> {
  const res = await fetch(SESSION, { method: 'DELETE', credentials: 'same-origin', headers: csrf ? { 'X-CSRF-Token': csrf } : {} });
  if (!res.ok && res.status !== 401) throw await failure(res);
  fireSignedOut();
}
