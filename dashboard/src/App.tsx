import { useState } from 'react';
import { Navigate, NavLink, Outlet, Route, Routes, useLocation } from 'react-router';
import { api } from './api';
import { LiveProvider, useLive } from './live';
import { useRedirectWhenSignedOut, useSession, useSetSession } from './session';
import type { SessionState } from './types';
import { Loading } from './ui';
import { AuthPage } from './pages/AuthPage';
import { BulkJobsPage } from './pages/BulkJobsPage';
import { ContactsPage } from './pages/ContactsPage';
import { DevicesPage } from './pages/DevicesPage';
import { GroupsPage } from './pages/GroupsPage';
import { InboxPage } from './pages/InboxPage';
import { MessagesPage } from './pages/MessagesPage';
import { PlanPage } from './pages/PlanPage';
import { SendPage } from './pages/SendPage';
import { ApiAccessPage } from './pages/ApiAccessPage';
import { WebhooksPage } from './pages/WebhooksPage';

const NAV = [
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
      <Route path="/login" element={signedIn ? <AfterLogin /> : <AuthPage mode="login" />} />
      <Route path="/signup" element={signedIn ? <AfterLogin /> : <AuthPage mode="signup" />} />
      <Route element={signedIn ? <Shell session={state!} /> : <ToLogin />}>
        <Route index element={<Navigate to="/devices" replace />} />
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

/** After log-in: where the visitor was going (only a dashboard path), else Devices. */
function AfterLogin() {
  const next = new URLSearchParams(useLocation().search).get('next');
  const target = next && /^\/dashboard\/[\w\-/]*$/.test(next) && !next.startsWith('/dashboard/login') ? next.slice('/dashboard'.length) : '/devices';
  return <Navigate to={target} replace />;
}

function ToLogin() {
  const location = useLocation();
  const next = location.pathname === '/' ? '' : `?next=${encodeURIComponent(`/dashboard${location.pathname}`)}`;
  return <Navigate to={`/login${next}`} replace />;
}

function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        There is no page here. <NavLink to="/devices">Go to Devices</NavLink>.
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
          <NavLink to="/devices" className="brand" aria-label="Waygate home">
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
            <div className="small muted" title={session.user?.email}>
              Signed in as <strong>{session.user?.email}</strong>
            </div>
            <button type="button" className="button secondary small" disabled={loggingOut} onClick={() => void logout()}>
              Log out
            </button>
          </div>
        </nav>
        <main id="main" className="content">
          <Outlet />
        </main>
      </div>
      <LiveAnnouncer />
    </LiveProvider>
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
