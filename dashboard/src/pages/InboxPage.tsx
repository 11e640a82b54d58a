/**
 * The Inbox: the chats of every device, newest activity first, with unread counts that follow the
 * live stream (live.tsx refetches the ['chats'] queries when a chat changes), and a conversation
 * showing every kind of message with a reply box. Opening a chat marks it read. While a contact
 * is typing or recording (live.tsx, `presence` news), the conversation's header and the chat's row
 * say so. A new WhatsApp group is created from the list, and a group chat's panel manages its
 * members (GroupChats.tsx).
 */
import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { useSearchParams } from 'react-router';
import { api, ApiError, errorMessage } from '../api';
import { useContactPresence } from '../live';
import type { Chat, ChatDetail, Device, Message, One, Page } from '../types';
import { Empty, ErrorBox, formatPhone, Loading, PageHeader, QueryStatus, StatusBadge, Time } from '../ui';
import { browserUrl, MessageBody, MessageMarks, preview, Quote, Reactions, reactionsByTarget } from '../message-view';
import { UploadField, useUpload } from '../upload';
import { deviceInGroup } from '../../../src/conversations/group-membership';
import { GroupPanel, NewGroupForm } from './GroupChats';

interface ChatList {
  success: true;
  data: Chat[];
  meta: { total: number; nextCursor: string | null };
}
interface History {
  success: true;
  data: Message[];
  meta: { limit: number; nextBefore: string | null };
}

const MEDIA_TYPES = ['IMAGE', 'VIDEO', 'AUDIO', 'DOCUMENT'] as const;

/** How a chat is named: its name, else its number (or LID, or group id). */
function chatTitle(chat: Chat): string {
  if (chat.name) return chat.name;
  if (chat.phoneNumber) return formatPhone(chat.phoneNumber);
  return chat.id;
}

const PRESENCE_WORDS = { typing: 'typing…', recording: 'recording audio…' } as const;

/** A chat row's second line: what the contact is doing now, else the last message. */
function ChatPreview({ chat }: { chat: Chat }) {
  const presence = useContactPresence(chat.deviceId, chat.id);
  if (presence) return <span className="clip small presence">{PRESENCE_WORDS[presence]}</span>;
  return (
    <span className="clip muted small">
      {chat.lastMessage?.direction === 'out' ? 'You: ' : ''}
      {preview(chat.lastMessage)}
    </span>
  );
}

export function InboxPage() {
  const [params, setParams] = useSearchParams();
  const selected = params.get('chat');
  const selectedDevice = params.get('device');
  const deviceFilter = params.get('deviceId') ?? '';
  const devices = useQuery({ queryKey: ['devices', 'list'], queryFn: () => api<Page<Device>>('/devices') });
  const chats = useInfiniteQuery({
    queryKey: ['chats', 'list', deviceFilter],
    queryFn: ({ pageParam }) => api<ChatList>('/chats', { query: { limit: 50, deviceId: deviceFilter, cursor: pageParam } }),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.meta.nextCursor ?? undefined,
  });
  const all = chats.data?.pages.flatMap((page) => page.data) ?? [];
  const open = (chat: Chat): void => {
    const next = new URLSearchParams(params);
    next.set('chat', chat.id);
    next.set('device', chat.deviceId);
    setParams(next);
  };
  const close = (): void => {
    const next = new URLSearchParams(params);
    next.delete('chat');
    next.delete('device');
    setParams(next);
  };
  const deviceName = (id: string): string => devices.data?.data.find((d) => d.id === id)?.name ?? id;
  const manyDevices = (devices.data?.data.length ?? 0) > 1;
  const [creating, setCreating] = useState(false);

  return (
    <section className="inbox-page">
      <PageHeader title="Inbox" description="Conversations of every device: people and WhatsApp groups, newest first. New messages appear as they arrive." />
      <div className={`inbox ${selected ? 'inbox-open' : ''}`}>
        <div className="inbox-list" aria-label="Chats">
          {manyDevices ? (
            <div className="field">
              <label htmlFor="inbox-device">Device</label>
              <select
                id="inbox-device"
                value={deviceFilter}
                onChange={(e) => {
                  const next = new URLSearchParams(params);
                  if (e.target.value) next.set('deviceId', e.target.value);
                  else next.delete('deviceId');
                  setParams(next);
                }}
              >
                <option value="">All devices</option>
                {devices.data?.data.map((d) => (
                  <option key={d.id} value={d.id}>
                    {d.name}
                  </option>
                ))}
              </select>
            </div>
          ) : null}
          {creating ? (
            <NewGroupForm
              devices={devices.data?.data ?? []}
              onCancel={() => setCreating(false)}
              onCreated={(chat) => {
                setCreating(false);
                open(chat);
              }}
            />
          ) : (
            <div className="row end">
              <button type="button" className="button secondary small" onClick={() => setCreating(true)}>
                New group
              </button>
            </div>
          )}
          <QueryStatus query={chats} what="chats" />
          {chats.data && all.length === 0 ? <Empty>No conversations yet. Messages you send and receive show up here.</Empty> : null}
          <ul className="plain chat-list">
            {all.map((chat) => {
              const active = chat.id === selected && chat.deviceId === selectedDevice;
              return (
                <li key={`${chat.deviceId}/${chat.id}`}>
                  <button type="button" className={`chat-item ${active ? 'active' : ''}`} aria-current={active ? 'true' : undefined} onClick={() => open(chat)} data-chat={chat.id}>
                    <span className="chat-item-head">
                      <strong className="clip">
                        {chat.type === 'group' ? '👥 ' : ''}
                        {chatTitle(chat)}
                      </strong>
                      <span className="small muted nowrap">
                        <Time value={chat.updatedAt} short />
                      </span>
                    </span>
                    <span className="chat-item-body">
                      <ChatPreview chat={chat} />
                      {chat.unreadCount > 0 ? (
                        <span className="unread" aria-label={`${chat.unreadCount} unread`}>
                          {chat.unreadCount}
                        </span>
                      ) : null}
                    </span>
                    {manyDevices ? <span className="small muted">{deviceName(chat.deviceId)}</span> : null}
                  </button>
                </li>
              );
            })}
          </ul>
          {chats.hasNextPage ? (
            <button type="button" className="button secondary small" disabled={chats.isFetchingNextPage} onClick={() => void chats.fetchNextPage()}>
              More chats
            </button>
          ) : null}
        </div>
        <div className="inbox-conversation">
          {selected && selectedDevice ? (
            <Conversation
              key={`${selectedDevice}/${selected}`}
              chatId={selected}
              deviceId={selectedDevice}
              ownNumber={devices.data?.data.find((d) => d.id === selectedDevice)?.phoneNumber ?? null}
              onBack={close}
            />
          ) : (
            <Empty>Choose a chat to read it and reply.</Empty>
          )}
        </div>
      </div>
    </section>
  );
}

function Conversation({ chatId, deviceId, ownNumber, onBack }: { chatId: string; deviceId: string; ownNumber: string | null; onBack: () => void }) {
  const client = useQueryClient();
  const path = `/chats/${encodeURIComponent(chatId)}`;
  const chat = useQuery({ queryKey: ['chats', 'one', deviceId, chatId], queryFn: () => api<One<ChatDetail>>(path, { query: { deviceId } }) });
  const history = useInfiniteQuery({
    queryKey: ['chats', 'history', deviceId, chatId],
    queryFn: ({ pageParam }) => api<History>(`${path}/messages`, { query: { deviceId, limit: 50, before: pageParam } }),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => last.meta.nextBefore ?? undefined,
  });
  const read = useMutation({
    mutationFn: () => api(`${path}/read`, { method: 'POST', query: { deviceId } }),
    onSuccess: () => client.invalidateQueries({ queryKey: ['chats'] }),
  });
  const unread = chat.data?.data.unreadCount ?? 0;
  // Reading the chat marks it read (as on the phone), also when a message arrives while it is open.
  useEffect(() => {
    if (unread > 0 && !read.isPending) read.mutate();
    // eslint-disable-next-line react-hooks/exhaustive-deps -- read.mutate is stable; only a new unread count matters
  }, [unread]);

  const newestFirst = history.data?.pages.flatMap((page) => page.data) ?? [];
  const byId = new Map(newestFirst.map((m) => [m.id, m]));
  const reactions = reactionsByTarget(newestFirst);
  const shown = [...newestFirst].reverse().filter((m) => !(m.type === 'REACTION' && m.reaction?.messageId && byId.has(m.reaction.messageId)));
  const end = useRef<HTMLDivElement>(null);
  const newestId = newestFirst[0]?.id;
  useEffect(() => {
    end.current?.scrollIntoView({ block: 'end' });
  }, [newestId]);

  const detail = chat.data?.data;
  const group = detail?.type === 'group';
  const presence = useContactPresence(deviceId, chatId);
  const [showGroup, setShowGroup] = useState(false);
  return (
    <div className="conversation">
      <div className="conversation-head">
        <button type="button" className="button secondary small back-button" onClick={onBack}>
          ← Chats
        </button>
        <div className="clip">
          <h2 className="h3">{detail ? chatTitle(detail) : chatId}</h2>
          <div className="small muted clip conversation-sub">
            {/* Always there, so that a screen reader hears it change. */}
            <span className="presence" aria-live="polite">
              {presence ? PRESENCE_WORDS[presence] : ''}
            </span>
            {presence ? null : (
              <>
                {group ? `${detail?.participantsCount ?? 0} participants: ${detail?.participants?.map((p) => formatPhone(p.phoneNumber)).join(', ')}` : null}
                {!group && detail?.phoneNumber && detail.name ? formatPhone(detail.phoneNumber) : null}
                {!group && detail?.lid ? ` · ${detail.lid}` : null}
              </>
            )}
          </div>
        </div>
        <span className="row">
          {group ? (
            <button type="button" className="button secondary small" aria-expanded={showGroup} onClick={() => setShowGroup(!showGroup)}>
              Group info
            </button>
          ) : null}
          <button type="button" className="button secondary small" disabled={read.isPending || unread === 0} onClick={() => read.mutate()}>
            Mark read
          </button>
        </span>
      </div>
      {group && showGroup && detail ? <GroupPanel chat={detail} ownNumber={ownNumber} /> : null}
      <ErrorBox error={chat.error ?? history.error ?? read.error} />
      <div className="messages-pane" aria-label="Messages" role="log">
        {history.hasNextPage ? (
          <button type="button" className="button secondary small" disabled={history.isFetchingNextPage} onClick={() => void history.fetchNextPage()}>
            Older messages
          </button>
        ) : null}
        {history.isPending ? <Loading what="messages" /> : null}
        {shown.map((message) => (
          <Bubble key={message.id} message={message} group={group} quoted={message.replyTo ? byId.get(message.replyTo) : undefined} reactions={reactions.get(message.id)} />
        ))}
        <div ref={end} />
      </div>
      {group && detail && !deviceInGroup(detail.participants, ownNumber).inGroup ? (
        <p className="muted small">Your device left this group: nothing more can be sent into it.</p>
      ) : (
        <ReplyBox chatId={chatId} deviceId={deviceId} group={group} />
      )}
    </div>
  );
}

function Bubble({ message, group, quoted, reactions }: { message: Message; group: boolean; quoted: Message | undefined; reactions: string[] | undefined }) {
  const mine = message.direction === 'out';
  const media = browserUrl(message.mediaUrl);
  return (
    <article className={`bubble ${mine ? 'bubble-out' : 'bubble-in'}`} data-message={message.id}>
      {group && !mine ? <div className="small bubble-from">{formatPhone(message.from)}</div> : null}
      {message.replyTo ? <Quote id={message.replyTo} known={quoted} /> : null}
      <MessageBody message={message} media={media} />
      <div className="bubble-meta small muted">
        <MessageMarks message={message} />
        <Reactions emoji={reactions} />
        <Time value={message.createdAt} short />
        {mine ? <StatusBadge status={message.status} /> : null}
      </div>
    </article>
  );
}

function ReplyBox({ chatId, deviceId, group }: { chatId: string; deviceId: string; group: boolean }) {
  const client = useQueryClient();
  const [text, setText] = useState('');
  const [mediaUrl, setMediaUrl] = useState('');
  const [mediaType, setMediaType] = useState<(typeof MEDIA_TYPES)[number]>('IMAGE');
  const [attach, setAttach] = useState(false);
  const upload = useUpload((uploaded) => setMediaUrl(uploaded.mediaUrl));
  const send = useMutation({
    mutationFn: () =>
      api('/messages/send', {
        method: 'POST',
        body: {
          type: attach && mediaUrl.trim() ? mediaType : 'TEXT',
          content: text,
          ...(attach && mediaUrl.trim() ? { mediaUrl: mediaUrl.trim() } : {}),
          ...(group ? { chatIds: [chatId] } : { recipients: [chatId] }),
          deviceId,
        },
      }),
    onSuccess: async () => {
      setText('');
      setMediaUrl('');
      setAttach(false);
      upload.reset();
      await client.invalidateQueries({ queryKey: ['chats'] });
    },
  });
  const submit = (event: FormEvent): void => {
    event.preventDefault();
    if (!upload.isPending && (text.trim() || (attach && mediaUrl.trim()))) send.mutate();
  };
  const fieldError = (field: string): string | undefined => (send.error instanceof ApiError ? send.error.fieldMessage(field) : undefined);
  return (
    <form className="reply-box" onSubmit={submit} aria-label="Reply">
      {send.error ? <div className="alert alert-error small">{fieldError('mediaUrl') ?? errorMessage(send.error)}</div> : null}
      {attach ? (
        <div className="row wrap">
          <label className="visually-hidden" htmlFor="reply-media-type">
            File type
          </label>
          <select id="reply-media-type" value={mediaType} onChange={(e) => setMediaType(e.target.value as (typeof MEDIA_TYPES)[number])}>
            {MEDIA_TYPES.map((type) => (
              <option key={type} value={type}>
                {type.toLowerCase()}
              </option>
            ))}
          </select>
          <label className="visually-hidden" htmlFor="reply-media-url">
            File URL
          </label>
          <input id="reply-media-url" type="url" placeholder="https://… (the file Waygate downloads and sends)" value={mediaUrl} onChange={(e) => setMediaUrl(e.target.value)} />
        </div>
      ) : null}
      {attach ? <UploadField upload={upload} mediaUrl={mediaUrl} type={mediaType} /> : null}
      <div className="row">
        <button type="button" className="button secondary small" aria-pressed={attach} onClick={() => setAttach(!attach)} title="Attach a file: upload it, or give its URL">
          {/* Drawn here rather than an emoji, so it shows on a machine without an emoji font. Feather's paperclip (MIT). */}
          <svg viewBox="0 0 24 24" width="16" height="16" aria-hidden="true" focusable="false" fill="none" stroke="currentColor" strokeWidth="2" strokeLinecap="round" strokeLinejoin="round">
            <path d="M21.44 11.05l-9.19 9.19a6 6 0 0 1-8.49-8.49l9.19-9.19a4 4 0 0 1 5.66 5.66l-9.2 9.19a2 2 0 0 1-2.83-2.83l8.49-8.48" />
          </svg>
          <span className="visually-hidden">Attach a file</span>
        </button>
        <label className="visually-hidden" htmlFor="reply-text">
          Message
        </label>
        <textarea
          id="reply-text"
          rows={1}
          placeholder={attach ? 'Caption (optional)' : 'Write a message'}
          value={text}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey) {
              e.preventDefault();
              e.currentTarget.form?.requestSubmit();
            }
          }}
        />
        <button type="submit" className="button primary" disabled={send.isPending || upload.isPending}>
          Send
        </button>
      </div>
    </form>
  );
}
