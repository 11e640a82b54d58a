/**
 * Endpoints on 127.0.0.1 that stand in for WhatsApp Web's websocket in the tests that run the
 * real Baileys socket: one that never answers the upgrade, one that upgrades and then stays silent
 * (recording the frames the client sends) or hangs up, and a port nothing listens on.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

/** Accepts TCP connections and the HTTP upgrade request, and never answers. */
export function silentListener(): Promise<{ port: number; connected: Promise<void>; close(): void }> {
  const sockets: net.Socket[] = [];
  let connectedResolve: () => void = () => undefined;
  const connected = new Promise<void>((resolve) => (connectedResolve = resolve));
  const server = net.createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => undefined);
    socket.once('data', () => connectedResolve());
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as AddressInfo).port,
        connected,
        close: () => {
          for (const socket of sockets) socket.destroy();
          server.close();
        },
      }),
    ),
  );
}

/** The payloads of the (masked) binary websocket frames a client sent, in order. */
function websocketPayloads(buffer: Buffer): { payloads: Buffer[]; rest: Buffer } {
  const payloads: Buffer[] = [];
  let offset = 0;
  for (;;) {
    if (buffer.length - offset < 2) break;
    const masked = (buffer[offset + 1]! & 0x80) !== 0;
    let length = buffer[offset + 1]! & 0x7f;
    let header = 2;
    if (length === 126) {
      if (buffer.length - offset < 4) break;
      length = buffer.readUInt16BE(offset + 2);
      header = 4;
    } else if (length === 127) {
      if (buffer.length - offset < 10) break;
      length = Number(buffer.readBigUInt64BE(offset + 2));
      header = 10;
    }
    const maskBytes = masked ? 4 : 0;
    if (buffer.length - offset < header + maskBytes + length) break;
    const mask = buffer.subarray(offset + header, offset + header + maskBytes);
    const payload = Buffer.from(buffer.subarray(offset + header + maskBytes, offset + header + maskBytes + length));
    if (masked) for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
    payloads.push(payload);
    offset += header + maskBytes + length;
  }
  return { payloads, rest: buffer.subarray(offset) };
}

/**
 * WhatsApp's frames inside the websocket payloads: the first carries the 4-byte intro header
 * ("WA", 6, dictionary version), each is a 3-byte length and the data. Before the noise handshake
 * completes, the data is not encrypted.
 */
export function whatsappFrames(payloads: Buffer[]): Buffer[] {
  const stream = Buffer.concat(payloads);
  const frames: Buffer[] = [];
  let offset = stream.subarray(0, 2).toString() === 'WA' ? 4 : 0;
  while (stream.length - offset >= 3) {
    const length = (stream[offset]! << 16) | (stream[offset + 1]! << 8) | stream[offset + 2]!;
    if (stream.length - offset - 3 < length) break;
    frames.push(stream.subarray(offset + 3, offset + 3 + length));
    offset += 3 + length;
  }
  return frames;
}

/** Completes the websocket upgrade; then stays silent (recording what the client sends), or hangs up at once. */
export function upgradingServer(
  then: 'silent' | 'hang-up',
): Promise<{ port: number; upgraded: Promise<void>; payloads: Buffer[]; close(): void }> {
  const sockets: net.Socket[] = [];
  const payloads: Buffer[] = [];
  let upgradedResolve: () => void = () => undefined;
  const upgraded = new Promise<void>((resolve) => (upgradedResolve = resolve));
  const server = http.createServer((_request, response) => response.writeHead(426).end());
  server.on('upgrade', (request, socket: net.Socket) => {
    sockets.push(socket);
    socket.on('error', () => undefined);
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      const parsed = websocketPayloads(Buffer.concat([pending, chunk]));
      payloads.push(...parsed.payloads);
      pending = Buffer.from(parsed.rest);
    });
    const accept = createHash('sha1')
      .update(`${String(request.headers['sec-websocket-key'])}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`)
      .digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    upgradedResolve();
    if (then === 'hang-up') setTimeout(() => socket.destroy(), 20);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        port: (server.address() as AddressInfo).port,
        upgraded,
        payloads,
        close: () => {
          for (const socket of sockets) socket.destroy();
          server.close();
        },
      }),
    ),
  );
}

export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
