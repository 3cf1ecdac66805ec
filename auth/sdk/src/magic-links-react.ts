// The React side of magic links: PostgateProvider's sendMagicLink (magic-links.ts has the rest).
import { useCallback } from 'react';
import type { PostgateClient } from './client.js';
import { toPostgateError, type PostgateError } from './errors.js';
import type { MagicLinkResult } from './magic-links.js';

/** This page without a stale svc_code or error: where a link returns by default. */
function here(): string {
  const u = new URL(window.location.href);
  u.searchParams.delete('svc_code');
  u.searchParams.delete('error');
  return u.toString();
}

/**
 * React: `sendMagicLink(email)` emails a link back to the given callbackURL, else the provider's config
 * callbackURL (read when sent), else this page. Failures also land in the provider's error state.
 */
export function useSendMagicLink(
  client: PostgateClient,
  config: { readonly current: { callbackURL?: string } },
  fail: (err: unknown) => PostgateError,
): (email: string, options?: { callbackURL?: string }) => Promise<MagicLinkResult> {
  return useCallback(
    async (email: string, options: { callbackURL?: string } = {}): Promise<MagicLinkResult> => {
      try {
        await client.sendMagicLink(email, { callbackURL: options.callbackURL ?? config.current.callbackURL ?? here() });
        return { status: 'link_sent' };
      } catch (err) {
        return { status: 'error', error: fail(toPostgateError(err)) };
      }
    },
    [client, config, fail],
  );
}
