// Passkeys (WebAuthn) in the browser: register one for the signed-in user, sign in with one (discoverable:
// the browser offers the user's passkeys; with `autofill`, in an <input autocomplete="username webauthn">).
// @simplewebauthn/browser turns the server's JSON options into navigator.credentials calls and back.
import { startAuthentication, startRegistration, WebAuthnError } from '@simplewebauthn/browser';
import { PostgateError } from './errors.js';
import type { Passkey, PasskeyAssertion, PasskeyCreationOptions, PasskeyRegistration, PasskeyRequestOptions, SignedIn } from './types.js';

/** The client calls a ceremony makes (PostgateClient has them; named here so this file, loaded on demand, imports no client). */
export interface PasskeyCalls {
  passkeyRegisterOptions(token: string, opts: { rpId?: string }): Promise<PasskeyCreationOptions>;
  passkeyRegisterVerify(token: string, response: PasskeyRegistration, name?: string): Promise<Passkey>;
  passkeySignInOptions(opts: { rpId?: string }): Promise<PasskeyRequestOptions>;
  passkeySignInVerify(response: PasskeyAssertion): Promise<SignedIn>;
}

/** The browser's refusal (the person closed the prompt, no passkey fits, no WebAuthn) as a PostgateError. */
function browserError(err: unknown): PostgateError {
  if (err instanceof PostgateError) return err;
  const e = err as { name?: string; message?: string; code?: string };
  if (e?.name === 'NotAllowedError' || (err instanceof WebAuthnError && e.code === 'ERROR_PASSTHROUGH_SEE_CAUSE_PROPERTY'))
    return new PostgateError('PASSKEY_CANCELLED', 'No passkey was used (the prompt was closed or timed out)', 0);
  if (e?.name === 'AbortError') return new PostgateError('PASSKEY_ABORTED', 'The passkey request was replaced by another', 0);
  return new PostgateError('PASSKEY_UNAVAILABLE', e?.message ?? String(err), 0);
}

/** Registers a passkey for the session `token`'s user: the browser asks to create one, postgate keeps it. */
export async function registerPasskey(client: PasskeyCalls, token: string, opts: { name?: string; rpId?: string } = {}): Promise<Passkey> {
  const optionsJSON = await client.passkeyRegisterOptions(token, opts.rpId !== undefined ? { rpId: opts.rpId } : {});
  let response: Awaited<ReturnType<typeof startRegistration>>;
  try {
    response = await startRegistration({ optionsJSON });
  } catch (err) {
    throw browserError(err);
  }
  return client.passkeyRegisterVerify(token, response, opts.name);
}

/**
 * Signs in with a passkey: a session token and user. `autofill: true` waits for the person to pick a passkey
 * from the autofill of an input with autocomplete="username webauthn" (or "email webauthn").
 */
export async function signInWithPasskey(client: PasskeyCalls, opts: { autofill?: boolean; rpId?: string } = {}): Promise<SignedIn> {
  const optionsJSON = await client.passkeySignInOptions(opts.rpId !== undefined ? { rpId: opts.rpId } : {});
  let response: Awaited<ReturnType<typeof startAuthentication>>;
  try {
    response = await startAuthentication({ optionsJSON, useBrowserAutofill: opts.autofill ?? false });
  } catch (err) {
    throw browserError(err);
  }
  return client.passkeySignInVerify(response);
}
