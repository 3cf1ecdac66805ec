// Calls to providers' APIs: bounded in time, never following redirects, JSON
// only. Failures become CredentialError (the caller answers 401 or ?error=).
import { settings } from '../settings.js';
import { CredentialError } from './types.js';

export async function providerJson(
  url: string,
  init: { method?: 'GET' | 'POST'; headers?: Record<string, string>; form?: Record<string, string> } = {},
): Promise<any> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: init.method ?? (init.form ? 'POST' : 'GET'),
      headers: { accept: 'application/json', 'user-agent': 'postgate', ...init.headers },
      body: init.form ? new URLSearchParams(init.form) : undefined,
      redirect: 'manual',
      signal: AbortSignal.timeout(settings.providerTimeoutMs),
    });
  } catch (err) {
    throw new CredentialError(`provider unreachable (${new URL(url).host}): ${(err as Error).message}`);
  }
  const body = await res.json().catch(() => undefined);
  if (!res.ok || body === undefined) throw new CredentialError(`provider answered ${res.status} at ${new URL(url).pathname}`);
  return body;
}
