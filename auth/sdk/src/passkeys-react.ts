// The React side of passkeys: PostgateProvider's registerPasskey and signInWithPasskey (passkeys.ts has the rest).
import { useCallback, useMemo } from 'react';
import type { PostgateClient } from './client.js';
import { PostgateError, toPostgateError } from './errors.js';
import type { Passkey, SignedIn, User } from './types.js';

type Result = { status: 'signed_in'; user: User } | { status: 'error'; error: PostgateError };

export interface PasskeysValue {
  /** Registers a passkey for the signed-in user (the browser asks to create one). */
  registerPasskey(name?: string, options?: { rpId?: string }): Promise<Passkey>;
  /** Signs in with a passkey, as the other sign-ins do (onSignIn, the kept session); `autofill` waits on an input's passkey autofill. */
  signInWithPasskey(options?: { autofill?: boolean; rpId?: string }): Promise<Result>;
}

export function usePasskeys(o: {
  client: PostgateClient;
  token: string | null;
  adopt: (signed: SignedIn) => Promise<User>;
  fail: (err: unknown) => PostgateError;
  /** Holds a sign-in for its second factor (a passkey without user verification, for a user with two-factor). */
  hold?: (err: unknown) => PostgateError | null | undefined | false;
}): PasskeysValue {
  const { client, token, adopt, fail, hold } = o;
  const registerPasskey = useCallback(
    async (name?: string, options: { rpId?: string } = {}): Promise<Passkey> => {
      if (!token) throw new PostgateError('SESSION_INVALID', 'Sign in before registering a passkey', 0);
      const { registerPasskey: register } = await import('./passkeys.js');
      return register(client, token, { ...(name !== undefined ? { name } : {}), ...options });
    },
    [client, token],
  );
  const signInWithPasskey = useCallback(
    async (options: { autofill?: boolean; rpId?: string } = {}): Promise<Result> => {
      try {
        const { signInWithPasskey: signIn } = await import('./passkeys.js');
        return { status: 'signed_in', user: await adopt(await signIn(client, options)) };
      } catch (err) {
        const e = toPostgateError(err);
        // A ceremony another one replaced (autofill when the button is pressed) is no failure to show.
        if (e.code === 'PASSKEY_ABORTED') return { status: 'error', error: e };
        return { status: 'error', error: (hold?.(e) || undefined) ?? fail(e) };
      }
    },
    [client, adopt, fail, hold],
  );
  return useMemo(() => ({ registerPasskey, signInWithPasskey }), [registerPasskey, signInWithPasskey]);
}
