// Two-factor in the SDK: a sign-in held for its second factor fails with PostgateError
// TWO_FACTOR_REQUIRED; pendingOf(err) reads its ticket, methods and expiry. useTwoFactor is the
// React provider's part: it keeps the held sign-in and finishes it (verifyTwoFactor), enrols under
// it when the project requires a factor the user has not got, or enrols a signed-in user's app.
import { useCallback, useMemo, useState, type Dispatch, type SetStateAction } from 'react';
import type { PostgateClient } from './client.js';
import { PostgateError } from './errors.js';
import type { SignedIn, TotpSetup, TwoFactorMethod, TwoFactorPending, TwoFactorPrompt, User } from './types.js';

/** The held sign-in of a TWO_FACTOR_REQUIRED error (its pendingToken and what can finish it); null for any other error. */
export function pendingOf(err: unknown): TwoFactorPending | null {
  if (!(err instanceof PostgateError) || err.code !== 'TWO_FACTOR_REQUIRED') return null;
  const d = err.details ?? {};
  if (typeof d.pendingToken !== 'string') return null;
  return {
    pendingToken: d.pendingToken,
    methods: Array.isArray(d.methods) ? d.methods.filter((m): m is TwoFactorMethod => m === 'totp' || m === 'backup_code') : [],
    enrol: d.enrol === true,
    expiresAt: typeof d.expiresAt === 'string' ? d.expiresAt : '',
  };
}

/** What verifyTwoFactor answers (a SignInResult of react.tsx). */
export type TwoFactorResult = { status: 'signed_in'; user: User } | { status: 'error'; error: PostgateError };

/** What usePostgate() gives of two-factor (documented in react.tsx, which this module does not import: no import circle). */
export interface TwoFactorContext {
  twoFactor: TwoFactorPrompt | null;
  verifyTwoFactor(code: string, method?: TwoFactorMethod): Promise<TwoFactorResult>;
  enrolTwoFactor(): Promise<TotpSetup>;
  confirmTwoFactor(code: string): Promise<{ backupCodes: string[] }>;
}

/** The part of the provider's state this module sets. */
interface StateLike {
  loading: boolean;
  error: string | null;
  errorCode: string | null;
}

interface Deps<S extends StateLike> {
  client: PostgateClient;
  token: string | null;
  adopt(signed: SignedIn): Promise<User>;
  fail(err: unknown): PostgateError;
  setState: Dispatch<SetStateAction<S>>;
}

const noTicket = () => new PostgateError('INVALID_REQUEST', 'No sign-in is waiting for a second factor', 0);

/** A ticket that cannot be used any more: the prompt goes, the person signs in again. */
const dead = (e: PostgateError) => e.code === 'TOO_MANY_ATTEMPTS' || e.code === 'CODE_EXPIRED' || (e.code === 'INVALID_CODE' && /ticket/i.test(e.message));

/** The provider's two-factor state: `hold` takes a TWO_FACTOR_REQUIRED failure (true when it was one), `value` goes into the context. */
export function useTwoFactor<S extends StateLike>({
  client,
  token,
  adopt,
  fail,
  setState,
}: Deps<S>): { hold(err: unknown): PostgateError | undefined; value: TwoFactorContext } {
  const [held, setHeld] = useState<TwoFactorPending | null>(null);

  const hold = useCallback(
    (err: unknown): PostgateError | undefined => {
      const p = pendingOf(err);
      if (!p) return undefined;
      setHeld(p);
      setState((s) => ({ ...s, loading: false, error: null, errorCode: null }));
      return err as PostgateError;
    },
    [setState],
  );

  const failed = useCallback(
    (err: unknown): PostgateError => {
      const e = fail(err);
      if (dead(e)) setHeld(null);
      return e;
    },
    [fail],
  );

  const verifyTwoFactor = useCallback(
    async (code: string, method?: TwoFactorMethod): Promise<TwoFactorResult> => {
      if (!held) return { status: 'error', error: fail(noTicket()) };
      setState((s) => ({ ...s, loading: true, error: null, errorCode: null }));
      try {
        const signed = await client.verifyTwoFactor(held.pendingToken, code, method);
        setHeld(null);
        return { status: 'signed_in', user: await adopt(signed) };
      } catch (err) {
        return { status: 'error', error: failed(err) };
      }
    },
    [client, held, adopt, fail, failed, setState],
  );

  const enrolTwoFactor = useCallback(async (): Promise<TotpSetup> => {
    try {
      if (held?.enrol) return await client.enrolTwoFactor(held.pendingToken);
      if (!token) throw new PostgateError('SESSION_INVALID', 'Sign in first', 0);
      return await client.setupTotp(token);
    } catch (err) {
      throw failed(err);
    }
  }, [client, held, token, failed]);

  const confirmTwoFactor = useCallback(
    async (code: string): Promise<{ backupCodes: string[] }> => {
      try {
        if (held?.enrol) {
          const { backupCodes, ...signed } = await client.confirmTwoFactorEnrolment(held.pendingToken, code);
          setHeld(null);
          await adopt(signed);
          return { backupCodes };
        }
        if (!token) throw new PostgateError('SESSION_INVALID', 'Sign in first', 0);
        return await client.confirmTotp(token, code);
      } catch (err) {
        throw failed(err);
      }
    },
    [client, held, token, adopt, failed],
  );

  const twoFactor = useMemo<TwoFactorPrompt | null>(() => held && { methods: held.methods, enrol: held.enrol, expiresAt: held.expiresAt }, [held]);
  const value = useMemo<TwoFactorContext>(
    () => ({ twoFactor, verifyTwoFactor, enrolTwoFactor, confirmTwoFactor }),
    [twoFactor, verifyTwoFactor, enrolTwoFactor, confirmTwoFactor],
  );
  return { hold, value };
}
