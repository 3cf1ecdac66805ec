// The admin token signs in once: it goes to POST /console/api/session and is dropped (the input is
// cleared, nothing is stored); the server answers with the HttpOnly session cookie.
import { type FormEvent, useState } from 'react';
import { type Session, signIn } from '../api';
import { ErrorBox } from './ui';

export function SignInForm({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [error, setError] = useState<Error>();
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const input = form.elements.namedItem('token') as HTMLInputElement;
    const token = input.value;
    setBusy(true);
    setError(undefined);
    try {
      const s = await signIn(token);
      input.value = '';
      onSignedIn(s);
    } catch (err) {
      input.value = '';
      setError(err instanceof Error ? err : new Error(String(err)));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="signin">
      <form className="card signin-card" onSubmit={submit} aria-labelledby="signin-title">
        <div className="brand big">postgate</div>
        <h1 id="signin-title">Sign in to the console</h1>
        <p className="muted">Use the admin token (POSTGATE_ADMIN_TOKEN). It is sent once and not kept in the page.</p>
        <label htmlFor="token">Admin token</label>
        <input id="token" name="token" type="password" autoComplete="current-password" required spellCheck={false} />
        <ErrorBox error={error} />
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
