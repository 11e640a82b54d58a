/**
 * Live device news over server-sent events (/dashboard/api/stream): each event carries a device
 * record, which goes straight into the query cache, so every page showing devices updates
 * without a reload. EventSource reconnects by itself; after a reconnect the lists are refetched
 * in case news was missed while it was away.
 *
 * Whether the server can be reached: when the stream has been down for a moment, the session
 * route is asked; if that fails too, `unreachable` is set (the shell shows a banner and pages mark
 * what they show as possibly stale) and the server is asked again every few seconds until it
 * answers, when the stream is opened again.
 */
import { useQueryClient } from '@tanstack/react-query';
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import type { Device, Page } from './types';

interface LiveState {
  connected: boolean;
  /** The server did not answer: what the pages show may be out of date. */
  unreachable: boolean;
  /** The last announcement, read out by screen readers. */
  announcement: string;
}

const LiveContext = createContext<LiveState>({ connected: false, unreachable: false, announcement: '' });
export const useLive = () => useContext(LiveContext);

/** How long the stream may be down before the server is asked whether it is there. */
const GRACE_MS = 2500;
const PROBE_EVERY_MS = 3000;

async function serverAnswers(): Promise<boolean> {
  try {
    const response = await fetch('/dashboard/api/session', { credentials: 'same-origin', cache: 'no-store' });
    return response.status < 500;
  } catch {
    return false;
  }
}

export function LiveProvider({ children }: { children: ReactNode }) {
  const client = useQueryClient();
  const [state, setState] = useState<LiveState>({ connected: false, unreachable: false, announcement: '' });

  useEffect(() => {
    let source: EventSource | null = null;
    let opened = false;
    let timer: number | undefined;
    let stopped = false;

    const probe = async (): Promise<void> => {
      timer = undefined;
      if (stopped || source?.readyState === EventSource.OPEN) return;
      const answers = await serverAnswers();
      if (stopped) return;
      setState((previous) => ({ ...previous, unreachable: !answers }));
      if (answers) {
        // The browser gives up on a stream that answered with an error: open it again.
        if (!source || source.readyState === EventSource.CLOSED) open();
        return;
      }
      timer = window.setTimeout(() => void probe(), PROBE_EVERY_MS);
    };
    const schedule = (ms: number): void => {
      if (timer === undefined) timer = window.setTimeout(() => void probe(), ms);
    };

    const open = (): void => {
      source?.close();
      source = new EventSource('/dashboard/api/stream');
      source.addEventListener('ready', () => {
        window.clearTimeout(timer);
        timer = undefined;
        setState((previous) => ({ ...previous, connected: true, unreachable: false }));
        if (opened) void client.invalidateQueries();
        opened = true;
      });
      source.addEventListener('device', (event: MessageEvent<string>) => {
        const { kind, device } = JSON.parse(event.data) as { kind: string; device: Device };
        client.setQueriesData<Page<Device>>({ queryKey: ['devices', 'list'] }, (page) => {
          if (!page) return page;
          const known = page.data.some((item) => item.id === device.id);
          return known ? { ...page, data: page.data.map((item) => (item.id === device.id ? device : item)) } : page;
        });
        void client.invalidateQueries({ queryKey: ['devices', 'list'] });
        void client.invalidateQueries({ queryKey: ['overview'] });
        if (kind === 'qr') void client.invalidateQueries({ queryKey: ['devices', 'qr', device.id] });
        if (kind === 'status') setState((previous) => ({ ...previous, announcement: `${device.name} is now ${device.status.replace('_', ' ').toLowerCase()}` }));
      });
      // A chat changed (a message arrived or went out, a chat was read): the Inbox's queries refetch.
      source.addEventListener('chat', () => {
        void client.invalidateQueries({ queryKey: ['chats'] });
      });
      source.onerror = () => {
        setState((previous) => ({ ...previous, connected: false }));
        schedule(GRACE_MS);
      };
    };

    open();
    schedule(GRACE_MS * 2);
    return () => {
      stopped = true;
      window.clearTimeout(timer);
      source?.close();
    };
  }, [client]);

  return <LiveContext.Provider value={state}>{children}</LiveContext.Provider>;
}
