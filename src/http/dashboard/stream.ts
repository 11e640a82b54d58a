/**
 * Server-sent events for the dashboard: every change of one of the session account's devices
 * (status, a new QR code, log-out, reconnect), as the device record, the moment the bus hears of
 * it (waygate_devices, LISTEN/NOTIFY, so a change made by a worker process elsewhere arrives
 * too), which device's chats changed (waygate_chats), and what a contact shows in a chat
 * (waygate_presence). The stream carries news only; the page reads state through the JSON
 * routes.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Services } from '../../app.js';
import { parsePresenceNews } from '../../conversations/chat-activity.js';
import type { Device } from '../../devices/device-service.js';

const HEARTBEAT_MS = 15_000;

/** Open streams, so that closing the app ends them instead of waiting for browsers to leave. */
export class StreamRegistry {
  private readonly open = new Set<() => void>();

  add(end: () => void): () => void {
    this.open.add(end);
    return () => this.open.delete(end);
  }

  closeAll(): void {
    for (const end of [...this.open]) end();
  }
}

/** Device bus payloads are `dev_…` or `<what>:dev_…`. */
function parsePayload(payload: string): { kind: string; deviceId: string } {
  const colon = payload.indexOf(':');
  return colon === -1 ? { kind: 'created', deviceId: payload } : { kind: payload.slice(0, colon), deviceId: payload.slice(colon + 1) };
}

export function deviceStream(request: FastifyRequest, reply: FastifyReply, services: Services, streams: StreamRegistry): void {
  const accountId = request.auth!.accountId;
  reply.hijack();
  const response = reply.raw;
  response.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': request.id,
  });
  // The browser reconnects by itself after a drop; 2 s keeps the page close to live.
  response.write('retry: 2000\n\n');

  let ended = false;
  const send = (event: string, data: unknown): void => {
    if (!ended) response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
  /** Sends news of one of the account's devices: another account's device is not found here, so its news is skipped, never sent. */
  const ofOwnDevice = (deviceId: string, news: (device: Device) => [event: string, data: unknown]): void => {
    services.devices.get(accountId, deviceId).then(
      (device) => send(...news(device)),
      () => undefined,
    );
  };
  const unsubscribe = services.bus.subscribe('waygate_devices', (payload) => {
    const { kind, deviceId } = parsePayload(payload);
    ofOwnDevice(deviceId, (device) => ['device', { kind, device }]);
  });
  // A chat of one of the account's devices changed (src/conversations): the Inbox refetches.
  const unsubscribeChats = services.bus.subscribe('waygate_chats', (deviceId) => ofOwnDevice(deviceId, () => ['chat', { deviceId }]));
  // A contact's presence in a chat of one of the account's devices: the Inbox shows it for a moment.
  const unsubscribePresence = services.bus.subscribe('waygate_presence', (payload) => {
    const news = parsePresenceNews(payload);
    if (news) ofOwnDevice(news.deviceId, () => ['presence', news]);
  });
  const heartbeat = setInterval(() => {
    if (!ended) response.write(': keep-alive\n\n');
  }, HEARTBEAT_MS);
  heartbeat.unref();

  const end = (): void => {
    if (ended) return;
    ended = true;
    clearInterval(heartbeat);
    unsubscribe();
    unsubscribeChats();
    unsubscribePresence();
    forget();
    response.end();
  };
  const forget = streams.add(end);
  request.raw.on('close', end);
  send('ready', { accountId });
}
