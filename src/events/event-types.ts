/** Every event type, in one list that imports nothing (record schemas and the dashboard read it too). */
export const EVENT_TYPES = [
  'message.received',
  'message.status',
  'message.reaction',
  'message.edited',
  'message.deleted',
  'poll.vote',
  'chat.presence',
  'device.status',
  'bulk_job.completed',
  'bulk_job.cancelled',
  'webhook.test',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** The event types an endpoint can subscribe to (test events go only to the endpoint tested). */
export const SUBSCRIBABLE_EVENT_TYPES = EVENT_TYPES.filter((type): type is Exclude<EventType, 'webhook.test'> => type !== 'webhook.test');
export type SubscribableEventType = (typeof SUBSCRIBABLE_EVENT_TYPES)[number];
