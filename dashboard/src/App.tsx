import { lazy, Suspense, useState } from 'react';
import { Navigate, NavLink, Outlet, Route, Routes, useLocation } from 'react-router';
import { api } from './api';
import { LiveProvider, useLive } from './live';
import { useRedirectWhenSignedOut, useSession, useSetSession } from './session';
import type { SessionState } from './types';
import { useTheme, type ThemeChoice } from './theme';
import { Loading } from './ui';
import { AuthPage } from './pages/AuthPage';
import { BulkJobsPage } from './pages/BulkJobsPage';
import { ContactsPage } from './pages/ContactsPage';
import { DevicesPage } from './pages/DevicesPage';
import { GroupsPage } from './pages/GroupsPage';
import { InboxPage } from './pages/InboxPage';
import { MessagesPage } from './pages/MessagesPage';
import { PlanPage } from './pages/PlanPage';
import { ApiAccessPage } from './pages/ApiAccessPage';
import { WebhooksPage } from './pages/WebhooksPage';

// The two pages with heavy libraries (uPlot; libphonenumber-js) load when first opened.
const OverviewPage = lazy(() => import('./pages/OverviewPage').then((module) => ({ default: module.OverviewPage })));
const SendPage = lazy(() => import('./pages/SendPage').then((module) => ({ default: module.SendPage })));

/** The home page, where log-in and unknown paths lead. */
const HOME = '/overview';

const NAV = [
  { to: '/overview', label: 'Overview' },
  { to: '/devices', label: 'Devices' },
  { to: '/inbox', label: 'Inbox' },
  { to: '/send', label: 'Send' },
  { to: '/messages', label: 'Messages' },
  { to: '/bulk-jobs', label: 'Bulk jobs' },
  { to: '/contacts', label: 'Contacts' },
  { to: '/groups', label: 'Groups' },
  { to: '/webhooks', label: 'Webhooks' },
  { to: '/plan', label: 'Plan and usage' },
  { to: '/settings/api-access', label: 'Settings' },
];

export function App() {
  const session = useSession();
  useRedirectWhenSignedOut();
  if (session.isPending) return <Loading what="your session" />;
  const state = session.data;
  const signedIn = state?.authenticated === true;
  return (
    <Routes>
      <Route path="/login" element={signedIn ? <AfterLogin /> : state?.freshInstall ? <ToSignup /> : <AuthPage mode="login" />} />
      <Route path="/signup" element={signedIn ? <AfterLogin /> : <AuthPage mode="signup" />} />
      <Route element={signedIn ? <Shell session={state!} /> : <ToLogin freshInstall={state?.freshInstall === true} />}>
        <Route index element={<Navigate to={HOME} replace />} />
        <Route path="overview" element={<OverviewPage />} />
        <Route path="devices" element={<DevicesPage />} />
        <Route path="inbox" element={<InboxPage />} />
        <Route path="send" element={<SendPage />} />
        <Route path="messages" element={<MessagesPage />} />
        <Route path="bulk-jobs" element={<BulkJobsPage />} />
        <Route path="contacts" element={<ContactsPage />} />
        <Route path="groups" element={<GroupsPage />} />
        <Route path="groups/:groupId" element={<GroupsPage />} />
        <Route path="webhooks" element={<WebhooksPage />} />
        <Route path="plan" element={<PlanPage />} />
        <Route path="settings" element={<Navigate to="/settings/api-access" replace />} />
        <Route path="settings/api-access" element={<ApiAccessPage />} />
        <Route path="*" element={<NotFound />} />
      </Route>
    </Routes>
  );
}

/** After log-in: where the visitor was going (only a dashboard path), else the Overview. */
function AfterLogin() {
  const next = new URLSearchParams(useLocation().search).get('next');
  const target = next && /^\/dashboard\/[\w\-/]*$/.test(next) && !next.startsWith('/dashboard/login') ? next.slice('/dashboard'.length) : HOME;
  return <Navigate to={target} replace />;
}

/** A fresh install has no one to log in: its first visitor signs up (keeping where they were going). */
function ToSignup() {
  return <Navigate to={`/signup${useLocation().search}`} replace />;
}

/** Signed out: to Log in, or to Sign up on a fresh install (no user yet: whoever comes first sets it up). */
function ToLogin({ freshInstall }: { freshInstall: boolean }) {
  const location = useLocation();
  const next = location.pathname === '/' ? '' : `?next=${encodeURIComponent(`/dashboard${location.pathname}`)}`;
  return <Navigate to={`${freshInstall ? '/signup' : '/login'}${next}`} replace />;
}

function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        There is no page here. <NavLink to={HOME}>Go to the Overview</NavLink>.
      </p>
    </section>
  );
}

function Shell({ session }: { session: SessionState }) {
  const [menuOpen, setMenuOpen] = useState(false);
  const setSession = useSetSession();
  const [loggingOut, setLoggingOut] = useState(false);
  const logout = async (): Promise<void> => {
    setLoggingOut(true);
    try {
      await api('/logout', { method: 'POST' });
    } finally {
      setSession({ ...session, authenticated: false, user: null, csrfToken: null });
    }
  };
  return (
    <LiveProvider>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <div className="shell">
        <header className="topbar">
          <NavLink to={HOME} className="brand" aria-label="Waygate home">
            <svg viewBox="0 0 32 32" width="28" height="28" aria-hidden="true">
              <rect width="32" height="32" rx="7" fill="currentColor" />
              <path d="M7 10l4 13 5-9 5 9 4-13" fill="none" stroke="#fff" strokeWidth="3" strokeLinecap="round" strokeLinejoin="round" />
            </svg>
            <span>Waygate</span>
          </NavLink>
          {session.network === 'sandbox' ? (
            <span className="badge badge-wait" title="Messages go to a simulated network, not to real phones">
              Sandbox
            </span>
          ) : null}
          <button type="button" className="button secondary small menu-button" aria-expanded={menuOpen} aria-controls="main-nav" onClick={() => setMenuOpen(!menuOpen)}>
            Menu
          </button>
        </header>
        <nav id="main-nav" className={`sidebar ${menuOpen ? 'open' : ''}`} aria-label="Main">
          <ul>
            {NAV.map((item) => (
              <li key={item.to}>
                <NavLink to={item.to} onClick={() => setMenuOpen(false)}>
                  {item.label}
                </NavLink>
              </li>
            ))}
          </ul>
          <div className="sidebar-footer">
            <a href="/docs" className="small" target="_blank" rel="noopener">
              API reference <span className="visually-hidden">(opens in a new tab)</span>
            </a>
            <ThemeSwitch />
            <div className="small muted" title={session.user?.email}>
              Signed in as <strong>{session.user?.email}</strong>
            </div>
            <button type="button" className="button secondary small" disabled={loggingOut} onClick={() => void logout()}>
              Log out
            </button>
          </div>
        </nav>
        <main id="main" className="content">
          <UnreachableBanner />
          <Suspense fallback={<Loading what="the page" />}>
            <Outlet />
          </Suspense>
        </main>
      </div>
      <LiveAnnouncer />
    </LiveProvider>
  );
}

const THEMES: Array<[ThemeChoice, string]> = [
  ['system', 'System'],
  ['light', 'Light'],
  ['dark', 'Dark'],
];

/** Light, dark, or the system's choice; kept in this browser. */
function ThemeSwitch() {
  const [theme, setTheme] = useTheme();
  return (
    <label className="small theme-switch">
      Theme{' '}
      <select value={theme} onChange={(event) => setTheme(event.target.value as ThemeChoice)}>
        {THEMES.map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
    </label>
  );
}

/** Shown while the server does not answer: what the pages show may be out of date. */
function UnreachableBanner() {
  const { unreachable } = useLive();
  if (!unreachable) return null;
  return (
    <div className="alert alert-error banner" role="alert" data-testid="unreachable-banner">
      <strong>Waygate cannot be reached.</strong> What you see may be out of date, and changes cannot be saved. This page reconnects by itself when the
      server is back.
    </div>
  );
}

function LiveAnnouncer() {
  const { announcement } = useLive();
  return (
    <div className="visually-hidden" aria-live="polite">
      {announcement}
    </div>
  );
}
