/**
 * Live device news over server-sent events (/dashboard/api/stream): each event carries a device
 * record, which goes straight into the query cache, so every page showing devices updates
 * without a reload. EventSource reconnects by itself; after a reconnect the lists are refetched
 * in case news was missed while it was away.
 */
import { useQueryClient } from '@tanstack/react-query';
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import type { Device, Page } from './types';

interface LiveState {
  connected: boolean;
  /** The last announcement, read out by screen readers. */
  announcement: string;
}

const LiveContext = createContext<LiveState>({ connected: false, announcement: '' });
export const useLive = () => useContext(LiveContext);

export function LiveProvider({ children }: { children: ReactNode }) {
  const client = useQueryClient();
  const [state, setState] = useState<LiveState>({ connected: false, announcement: '' });

  useEffect(() => {
    const source = new EventSource('/dashboard/api/stream');
    let opened = false;
    source.addEventListener('ready', () => {
      setState((previous) => ({ ...previous, connected: true }));
      if (opened) {
        void client.invalidateQueries({ queryKey: ['devices'] });
        void client.invalidateQueries({ queryKey: ['chats'] });
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
      if (kind === 'qr') void client.invalidateQueries({ queryKey: ['devices', 'qr', device.id] });
      if (kind === 'status') setState((previous) => ({ ...previous, announcement: `${device.name} is now ${device.status.replace('_', ' ').toLowerCase()}` }));
    });
    // A chat changed (a message arrived or went out, a chat was read): the Inbox's queries refetch.
    source.addEventListener('chat', () => {
      void client.invalidateQueries({ queryKey: ['chats'] });
    });
    source.onerror = () => setState((previous) => ({ ...previous, connected: false }));
    return () => source.close();
  }, [client]);

  return <LiveContext.Provider value={state}>{children}</LiveContext.Provider>;
}
