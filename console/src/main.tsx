import { lazy, StrictMode, Suspense, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { currentSession, onSignedOut, type Session, signOut } from './api';
import { SignInForm } from './components/SignInForm';
import { ErrorBox } from './components/ui';
import { Overview } from './pages/Overview';
import { Link, useLocation } from './router';
import './styles.css';

// The overview loads with the app; the other pages when first opened (a smaller first load).
const Providers = lazy(() => import('./pages/Providers'));
const Projects = lazy(() => import('./pages/Projects'));
const Emails = lazy(() => import('./pages/Emails'));
const Suppressions = lazy(() => import('./pages/Suppressions'));
const Webhooks = lazy(() => import('./pages/Webhooks'));
const SignInActivity = lazy(() => import('./pages/SignIn'));
const Users = lazy(() => import('./pages/Users'));

const NAV = [
  { to: '/', label: 'Overview' },
  { to: '/providers', label: 'Providers' },
  { to: '/projects', label: 'Projects' },
  { to: '/emails', label: 'Emails' },
  { to: '/suppressions', label: 'Suppressions' },
  { to: '/webhooks', label: 'Webhooks' },
  { to: '/sign-in', label: 'Sign-in' },
  { to: '/users', label: 'Users' },
] as const;

function Routes({ path }: { path: string }) {
  const [, first, second, third] = path.split('/');
  const id = second ? decodeURIComponent(second) : undefined;
  switch (first) {
    case '':
      return <Overview />;
    case 'providers':
      return <Providers />;
    case 'projects':
      return <Projects slug={id} />;
    case 'emails':
      return <Emails id={id} />;
    case 'suppressions':
      return <Suppressions />;
    case 'webhooks':
      return <Webhooks id={id} />;
    case 'sign-in':
      return <SignInActivity slug={id} />;
    case 'users':
      return <Users slug={id} id={third ? decodeURIComponent(third) : undefined} />;
    default:
      return (
        <section className="page">
          <h1>Not found</h1>
          <p>
            No page at this address. <Link to="/">Go to the overview</Link>.
          </p>
        </section>
      );
  }
}

function Shell({ onSignOut }: { onSignOut: () => void }) {
  const { path } = useLocation();
  const [error, setError] = useState<Error>();
  const section = `/${path.split('/')[1] ?? ''}`;
  return (
    <div className="app">
      <header className="topbar">
        <Link to="/" className="brand">
          postgate
        </Link>
        <nav aria-label="Console">
          <ul>
            {NAV.map((n) => (
              <li key={n.to}>
                <Link to={n.to} current={n.to === section}>
                  {n.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <button
          type="button"
          className="signout"
          onClick={() =>
            signOut().then(onSignOut, (e: unknown) => {
              setError(e instanceof Error ? e : new Error(String(e)));
            })
          }
        >
          Sign out
        </button>
      </header>
      <main className="content">
        <ErrorBox error={error} />
        <Suspense fallback={<p className="muted">Loading…</p>}>
          <Routes path={path} />
        </Suspense>
      </main>
    </div>
  );
}

function App() {
  const [state, setState] = useState<'checking' | 'in' | 'out'>('checking');
  const [error, setError] = useState<Error>();

  useEffect(() => {
    currentSession().then(
      (s) => setState(s ? 'in' : 'out'),
      (e: unknown) => {
        setError(e instanceof Error ? e : new Error(String(e)));
        setState('out');
      },
    );
    return onSignedOut(() => setState('out'));
  }, []);

  if (state === 'checking') return <p className="muted boot">Loading…</p>;
  if (state === 'out') {
    return (
      <>
        <ErrorBox error={error} />
        <SignInForm onSignedIn={(_s: Session) => setState('in')} />
      </>
    );
  }
  return <Shell onSignOut={() => setState('out')} />;
}

const root = document.getElementById('root');
if (root) {
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
}
