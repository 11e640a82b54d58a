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
 *
 * What contacts show in chats (`presence` news): the latest state per device and chat, with when it
 * arrived, in a context of its own (PresenceContext) so that only the Inbox re-renders on it.
 * Typing or recording is forgotten after TYPING_SHOWN_MS (WhatsApp repeats it while the person
 * keeps at it) unless a newer state replaces it first; after a reconnect all of it is forgotten,
 * as news may have been missed.
 */
import { useQueryClient } from '@tanstack/react-query';
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import type { ContactPresenceState, Device, Page } from './types';

interface LiveState {
  connected: boolean;
  /** The server did not answer: what the pages show may be out of date. */
  unreachable: boolean;
  /** The last announcement, read out by screen readers. */
  announcement: string;
}

const LiveContext = createContext<LiveState>({ connected: false, unreachable: false, announcement: '' });
export const useLive = () => useContext(LiveContext);

/** A contact's latest presence in a chat, and when (browser clock, ms) it arrived. */
export interface ContactPresence {
  state: ContactPresenceState;
  at: number;
}
/** How long typing or recording shows without being repeated. */
export const TYPING_SHOWN_MS = 25_000;
const presenceKey = (deviceId: string, chatId: string): string => `${deviceId} ${chatId}`;
const showsActivity = (state: ContactPresenceState): state is 'typing' | 'recording' => state === 'typing' || state === 'recording';

const PresenceContext = createContext<ReadonlyMap<string, ContactPresence>>(new Map());

/** What the contact is doing in the chat of the device now: 'typing', 'recording' or nothing. */
export function useContactPresence(deviceId: string, chatId: string): 'typing' | 'recording' | undefined {
  const state = useContext(PresenceContext).get(presenceKey(deviceId, chatId))?.state;
  return state && showsActivity(state) ? state : undefined;
}

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
  const [presence, setPresence] = useState<ReadonlyMap<string, ContactPresence>>(() => new Map());

  useEffect(() => {
    let source: EventSource | null = null;
    let opened = false;
    let timer: number | undefined;
    let stopped = false;
    /** Per chat, the timer that ends its typing or recording. */
    const expiries = new Map<string, number>();
    const forgetPresence = (): void => {
      for (const expiry of expiries.values()) window.clearTimeout(expiry);
      expiries.clear();
      setPresence((previous) => (previous.size === 0 ? previous : new Map()));
    };

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
        if (opened) {
          void client.invalidateQueries();
          forgetPresence();
        }
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
      // A contact's presence in a chat: typing or recording shows until replaced, or for TYPING_SHOWN_MS.
      source.addEventListener('presence', (event: MessageEvent<string>) => {
        const news = JSON.parse(event.data) as { deviceId: string; state: ContactPresenceState; chatId: string };
        const key = presenceKey(news.deviceId, news.chatId);
        const latest: ContactPresence = { state: news.state, at: Date.now() };
        window.clearTimeout(expiries.get(key));
        expiries.delete(key);
        setPresence((previous) => new Map(previous).set(key, latest));
        if (!showsActivity(news.state)) return;
        expiries.set(
          key,
          window.setTimeout(() => {
            expiries.delete(key);
            setPresence((previous) => {
              if (previous.get(key) !== latest) return previous;
              const next = new Map(previous);
              next.delete(key);
              return next;
            });
          }, TYPING_SHOWN_MS),
        );
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
      for (const expiry of expiries.values()) window.clearTimeout(expiry);
      source?.close();
    };
  }, [client]);

  return (
    <LiveContext.Provider value={state}>
      <PresenceContext.Provider value={presence}>{children}</PresenceContext.Provider>
    </LiveContext.Provider>
  );
}
