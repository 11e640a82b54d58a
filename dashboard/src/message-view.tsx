/**
 * How one message of any kind is shown, shared by the Inbox's conversation and the Messages
 * page: its body by type (images and stickers inline, audio playable, a location as a map link,
 * contact cards, a poll with its votes), the message it quotes, the reactions to it, and the
 * marks of an edit, a delete for everyone and a file that could not be downloaded.
 */
import { useQuery } from '@tanstack/react-query';
import { uploadIdOf, uploadPath } from '../../src/media/upload-url';
import { api } from './api';
import type { Message, One } from './types';
import { formatPhone, Time } from './ui';

/**
 * A media URL the browser can load: the API's own paths, and the uploads an outgoing message
 * was sent from, go through the dashboard's session.
 */
export function browserUrl(url: string | null): string | null {
  if (!url) return null;
  const upload = uploadIdOf(url);
  if (upload) return `/dashboard/api${uploadPath(upload)}`;
  return url.startsWith('/') ? `/dashboard/api${url.replace(/^\/v1/, '')}` : url;
}

/** One line of what a message is, for the chat list and quotes. */
export function preview(message: Message | null | undefined): string {
  if (!message) return '';
  switch (message.type) {
    case 'TEXT':
      return message.content;
    case 'LOCATION':
      return `📍 ${message.location?.name ?? 'Location'}`;
    case 'CONTACT':
      return `👤 ${message.contacts?.map((c) => c.name).join(', ') ?? 'Contact'}`;
    case 'POLL':
      return `📊 ${message.content}`;
    case 'REACTION':
      return message.reaction?.emoji ? `Reacted ${message.reaction.emoji}` : 'Removed a reaction';
    default:
      return `${message.type.toLowerCase()}${message.content ? `: ${message.content}` : ''}`;
  }
}

/** The emoji of the current reactions among `messages`, by the id of the message reacted to. */
export function reactionsByTarget(messages: Message[]): Map<string, string[]> {
  const reactions = new Map<string, string[]>();
  for (const m of messages) {
    if (m.type === 'REACTION' && m.reaction?.messageId && m.reaction.emoji) reactions.set(m.reaction.messageId, [...(reactions.get(m.reaction.messageId) ?? []), m.reaction.emoji]);
  }
  return reactions;
}

/** The message a reply quotes: `known` when the caller has it already, else read from the API. */
export function Quote({ id, known }: { id: string; known: Message | undefined }) {
  const fetched = useQuery({ queryKey: ['messages', 'one', id], queryFn: () => api<One<Message>>(`/messages/${id}`), enabled: known === undefined, staleTime: 60_000 });
  const quoted = known ?? fetched.data?.data;
  return (
    <blockquote className="quote small" aria-label="Quoted message">
      {quoted ? preview(quoted) : 'A message'}
    </blockquote>
  );
}

/** The reactions to a message (nothing when there are none). */
export function Reactions({ emoji }: { emoji: string[] | undefined }) {
  return emoji && emoji.length > 0 ? (
    <span className="reactions" aria-label="Reactions">
      {emoji.join(' ')}
    </span>
  ) : null;
}

/** "edited", "deleted for everyone" and a failed download, when they apply. */
export function MessageMarks({ message }: { message: Message }) {
  const failed = message.media?.status === 'FAILED' ? message.media.error : null;
  if (!message.editedAt && !message.deletedAt && !failed && message.media?.status !== 'EXPIRED') return null;
  return (
    <span className="message-marks small muted">
      {message.editedAt ? (
        <span className="mark" data-mark="edited">
          ✏️ edited <Time value={message.editedAt} short />
        </span>
      ) : null}
      {message.deletedAt ? (
        <span className="mark" data-mark="deleted">
          🚫 deleted for everyone <Time value={message.deletedAt} short />
        </span>
      ) : null}
      {failed ? (
        <span className="mark error-text" data-mark="media-failed">
          file not downloaded ({failed.code})
        </span>
      ) : null}
      {message.media?.status === 'EXPIRED' ? (
        <span className="mark" data-mark="media-expired">
          file pruned
        </span>
      ) : null}
    </span>
  );
}

/** The body of a message by its type; `media` is its file's URL as the browser loads it. */
export function MessageBody({ message, media }: { message: Message; media: string | null }) {
  const caption = message.content ? <p className="bubble-text">{message.content}</p> : null;
  switch (message.type) {
    case 'IMAGE':
    case 'STICKER':
      return (
        <>
          {media ? <img className="bubble-image" src={media} alt={message.content || (message.type === 'STICKER' ? 'Sticker' : 'Image')} loading="lazy" /> : <p className="muted">Image</p>}
          {message.type === 'IMAGE' ? caption : null}
        </>
      );
    case 'VIDEO':
      return (
        <>
          {media ? <video className="bubble-image" src={media} controls preload="none" /> : <p className="muted">Video</p>}
          {caption}
        </>
      );
    case 'AUDIO':
      return media ? <audio src={media} controls preload="none" aria-label={message.media?.seconds ? `Audio, ${message.media.seconds} s` : 'Audio'} /> : <p className="muted">Audio</p>;
    case 'DOCUMENT':
      return (
        <>
          <p>
            📄{' '}
            {media ? (
              <a href={media} target="_blank" rel="noreferrer">
                {message.media?.fileName ?? 'Document'}
              </a>
            ) : (
              (message.media?.fileName ?? 'Document')
            )}
          </p>
          {caption}
        </>
      );
    case 'LOCATION': {
      const place = message.location;
      if (!place) return caption;
      const map = `https://www.openstreetmap.org/?mlat=${place.latitude}&mlon=${place.longitude}#map=16/${place.latitude}/${place.longitude}`;
      return (
        <p>
          📍{' '}
          <a href={map} target="_blank" rel="noreferrer">
            {place.name ?? `${place.latitude}, ${place.longitude}`}
          </a>
          {place.address ? <span className="small muted"> · {place.address}</span> : null}
        </p>
      );
    }
    case 'CONTACT':
      return (
        <ul className="plain contact-cards">
          {(message.contacts ?? []).map((card) => (
            <li key={`${card.name}-${card.phoneNumber}`}>
              👤 <strong>{card.name}</strong> <span className="muted">{formatPhone(card.phoneNumber)}</span>
            </li>
          ))}
        </ul>
      );
    case 'POLL':
      return (
        <div className="poll">
          <p className="bubble-text">📊 {message.content}</p>
          <ul className="plain">
            {(message.poll?.votes ?? message.poll?.options.map((option) => ({ option, count: 0 })) ?? []).map((vote) => (
              <li key={vote.option}>
                {vote.option} <span className="badge badge-neutral">{vote.count}</span>
              </li>
            ))}
          </ul>
        </div>
      );
    case 'REACTION':
      return <p className="muted">{preview(message)}</p>;
    default:
      return caption ?? <p className="muted">(no text)</p>;
  }
}
