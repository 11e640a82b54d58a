import { useState, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, ApiError } from '../api';
import { useSession, useSetSession } from '../session';
import type { SessionState } from '../types';
import { ErrorBox, Field, Notice, PageHeader } from '../ui';

/** Log in, or sign up (open to the first user of a fresh install; the server decides). */
export function AuthPage({ mode }: { mode: 'login' | 'signup' }) {
  const session = useSession();
  const setSession = useSetSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  // The sign-up link a fresh install prints in its log carries the setup code (?code=).
  const [params] = useSearchParams();
  const [setupCode, setSetupCode] = useState(() => params.get('code') ?? '');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const signupOpen = session.data?.signupOpen ?? false;
  const signup = mode === 'signup';
  const needsSetupCode = signup && (session.data?.setupCodeRequired ?? false);

  const submit = async (event: FormEvent): Promise<void> => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const body = needsSetupCode ? { email, password, setupCode } : { email, password };
      setSession(await api<SessionState>(signup ? '/signup' : '/login', { method: 'POST', body }));
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };
  const fieldError = (field: string) => (error instanceof ApiError ? error.fieldMessage(field) : undefined);

  return (
    <main id="main" className="auth">
      <div className="auth-card">
        <div className="brand auth-brand" aria-hidden="true">
          <svg viewBox="0 0 32 32" width="32" height="32">
            <rect width="32" height="32" rx="7" fill="currentColor" />
            <path d="M7 10l4 13 5-9 5 9 4-13" fill="none" stroke="#fff" strokeWidth="3" strokeLinecap="round" strokeLinejoin="round" />
          </svg>
          <span>Waygate</span>
        </div>
        <PageHeader title={signup ? 'Create your account' : 'Log in'} />
        {signup && !signupOpen ? (
          <Notice tone="warning">
            Sign-up is closed on this installation: it already has a user. Ask them for an account, or <Link to="/login">log in</Link>.
          </Notice>
        ) : (
          <form onSubmit={(event) => void submit(event)} noValidate>
            {signup ? (
              <p className="muted">
                {session.data?.freshInstall
                  ? 'You are the first user of this installation: your account gets the unlimited plan.'
                  : 'You get an account of your own on the free plan.'}
              </p>
            ) : null}
            <ErrorBox error={error} title={signup ? 'Could not create the account.' : 'Could not log in.'} />
            {needsSetupCode ? (
              <Field label="Setup code" hint="Printed in the server's log at start; the sign-up link there fills it in." error={fieldError('setupCode')}>
                {(props) => <input {...props} autoComplete="off" spellCheck={false} required value={setupCode} onChange={(e) => setSetupCode(e.target.value)} />}
              </Field>
            ) : null}
            <Field label="Email" error={fieldError('email')}>
              {(props) => <input {...props} type="email" autoComplete="email" required value={email} onChange={(e) => setEmail(e.target.value)} />}
            </Field>
            <Field label="Password" hint={signup ? 'At least 8 characters.' : undefined} error={fieldError('password')}>
              {(props) => (
                <input
                  {...props}
                  type="password"
                  autoComplete={signup ? 'new-password' : 'current-password'}
                  required
                  minLength={signup ? 8 : undefined}
                  value={password}
                  onChange={(e) => setPassword(e.target.value)}
                />
              )}
            </Field>
            <button type="submit" className="button primary wide" disabled={busy}>
              {busy ? 'Please wait…' : signup ? 'Create account' : 'Log in'}
            </button>
          </form>
        )}
        <p className="auth-switch">
          {signup ? (
            <>
              Already have an account? <Link to="/login">Log in</Link>
            </>
          ) : signupOpen ? (
            <>
              New here? <Link to="/signup">Create an account</Link>
            </>
          ) : null}
        </p>
      </div>
    </main>
  );
}
