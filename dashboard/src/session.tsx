/** The signed-in state: read once from /session, kept in the query cache, and its CSRF token handed to the API client. */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { api, setCsrfToken, UNAUTHORIZED_EVENT } from './api';
import type { SessionState } from './types';

export const SESSION_KEY = ['session'] as const;

export function useSession() {
  const query = useQuery({
    queryKey: SESSION_KEY,
    queryFn: () => api<SessionState>('/session'),
    staleTime: Infinity,
  });
  setCsrfToken(query.data?.csrfToken ?? null);
  return query;
}

/** Stores a session the server just answered with (log-in, sign-up, log-out). */
export function useSetSession() {
  const client = useQueryClient();
  return (state: SessionState) => {
    setCsrfToken(state.csrfToken);
    client.setQueryData(SESSION_KEY, state);
    // Nothing read for one user may show for the next: drop every other cached answer.
    client.removeQueries({ predicate: (query) => query.queryKey[0] !== SESSION_KEY[0] });
  };
}

/** When any request finds the session gone (expired, logged out elsewhere), go to the log-in page. */
export function useRedirectWhenSignedOut() {
  const client = useQueryClient();
  const navigate = useNavigate();
  const location = useLocation();
  useEffect(() => {
    const onUnauthorized = (): void => {
      const previous = client.getQueryData<SessionState>(SESSION_KEY);
      if (previous) client.setQueryData(SESSION_KEY, { ...previous, authenticated: false, user: null, csrfToken: null });
      navigate(`/login?next=${encodeURIComponent(`/dashboard${location.pathname}`)}`, { replace: true });
    };
    window.addEventListener(UNAUTHORIZED_EVENT, onUnauthorized);
    return () => window.removeEventListener(UNAUTHORIZED_EVENT, onUnauthorized);
  }, [client, navigate, location.pathname]);
}
