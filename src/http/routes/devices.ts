import Type from 'typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { DeviceService } from '../../devices/device-service.js';
import { DeviceSchema, DeviceStatusSchema } from '../../devices/device-record.js';
import { PROXY_URL_MAX } from '../../devices/device-proxy.js';
import { DEVICE_NAME_MAX } from '../../platform/text-limits.js';
import { auth } from '../auth.js';
import { errorResponses, IdParams, PageQuery, successData, successPage, Timestamp, type RouteApp } from '../schemas.js';

/** The device record is defined once (devices/device-record.ts); re-exported for the route's readers. */
export { DeviceSchema };
const DeviceStatus = DeviceStatusSchema;

const QrSchema = Type.Object({
  code: Type.String({ description: 'The text encoded in the QR code' }),
  image: Type.String({ description: 'PNG data URL of the QR code' }),
  expiresAt: Timestamp,
}, { title: 'QrCode' });

const DeviceName = Type.String({ minLength: 1, maxLength: DEVICE_NAME_MAX });
const ProxyUrl = Type.Union([Type.String({ minLength: 1, maxLength: PROXY_URL_MAX }), Type.Null()], {
  description: 'A proxy for this number (http, https, socks5 or socks5h URL, credentials included), e.g. socks5://user:pass@10.0.0.5:1080; null: direct. Shown back with the password as ***',
});

const PairingCodeSchema = Type.Object({
  code: Type.String({ description: 'The 8 characters to type on the phone: WhatsApp → Linked devices → Link a device → Link with phone number instead' }),
  phoneNumber: Type.String({ description: 'The number the code was requested for (E.164 digits)' }),
  expiresAt: Timestamp,
}, { title: 'PairingCode' });

export const deviceRoutes: FastifyPluginAsyncTypebox<{ devices: DeviceService }> = async (app, { devices }) => {
  deviceRecordRoutes(app, devices);
  linkingRoutes(app, devices);
};

/** The account's devices: listed, added, read, renamed and removed. */
function deviceRecordRoutes(app: RouteApp, devices: DeviceService): void {
  app.get(
    '/devices',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags: ['devices'],
        operationId: 'listDevices',
        summary: 'List devices',
        description: 'List linked devices (newest first; removed ones are left out).',
        querystring: Type.Object({ ...PageQuery, status: Type.Optional(DeviceStatus) }, { additionalProperties: false }),
        response: { 200: successPage(DeviceSchema), ...errorResponses('FORBIDDEN') },
      },
    },
    async (request) => {
      const { page = 1, limit = 50, status } = request.query;
      return { success: true as const, ...(await devices.list(auth(request).accountId, { page, limit, status })) };
    },
  );

  app.post(
    '/devices',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags: ['devices'],
        operationId: 'createDevice',
        summary: 'Add a device',
        description: 'Add a device: answers with its first QR code to scan with the phone.',
        body: Type.Object({ name: DeviceName, proxyUrl: Type.Optional(ProxyUrl) }, { additionalProperties: false }),
        response: {
          201: Type.Object({ success: Type.Literal(true), data: DeviceSchema, qr: Type.Union([QrSchema, Type.Null()], { description: 'null when no worker has shown a code yet; poll GET /devices/:id/qr' }) }),
          ...errorResponses('FORBIDDEN', 'PLAN_LIMIT'),
        },
      },
    },
    async (request, reply) => {
      const { device, qr } = await devices.create(auth(request).accountId, request.body.name, request.body.proxyUrl ?? null);
      return reply.status(201).send({ success: true as const, data: device, qr });
    },
  );

  app.get(
    '/devices/:id',
    {
      config: { scope: 'devices:read' },
      schema: { tags: ['devices'], operationId: 'getDevice', summary: 'Read a device', description: 'One device of the account by id, with its status.', params: IdParams, response: { 200: successData(DeviceSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') } },
    },
    async (request) => ({ success: true as const, data: await devices.get(auth(request).accountId, request.params.id) }),
  );

  app.patch(
    '/devices/:id',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags: ['devices'],
        operationId: 'updateDevice',
        summary: 'Update a device',
        description: 'Rename a device or change its proxy (the session reconnects through the new one at once).',
        params: IdParams,
        body: Type.Object({ name: Type.Optional(DeviceName), proxyUrl: Type.Optional(ProxyUrl) }, { additionalProperties: false, minProperties: 1 }),
        response: { 200: successData(DeviceSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') },
      },
    },
    async (request) => ({ success: true as const, data: await devices.update(auth(request).accountId, request.params.id, request.body) }),
  );

  app.delete(
    '/devices/:id',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags: ['devices'],
        operationId: 'deleteDevice',
        summary: 'Remove a device',
        description: 'Unlink and remove a device (its messages stay; waiting ones fail with DEVICE_REMOVED and are refunded).',
        params: IdParams,
        response: { 200: successData(DeviceSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND') },
      },
    },
    async (request) => ({ success: true as const, data: await devices.remove(auth(request).accountId, request.params.id) }),
  );
}

/** Linking a device to its phone: the QR code, a pairing code, reconnecting. */
function linkingRoutes(app: RouteApp, devices: DeviceService): void {
  app.get(
    '/devices/:id/qr',
    {
      config: { scope: 'devices:read' },
      schema: {
        tags: ['devices'],
        operationId: 'getDeviceQr',
        summary: 'Read the QR code of a device',
        description: 'The current QR code of a PENDING device (codes rotate; fetch again after expiresAt).',
        params: IdParams,
        response: { 200: successData(QrSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND', 'CONFLICT', 'SERVICE_UNAVAILABLE') },
      },
    },
    async (request) => ({ success: true as const, data: await devices.qr(auth(request).accountId, request.params.id) }),
  );

  app.post(
    '/devices/:id/pairing-code',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags: ['devices'],
        operationId: 'requestPairingCode',
        summary: 'Request a pairing code',
        description:
          'Link a PENDING device by pairing code instead of scanning the QR code (NETWORK=whatsapp). ' +
          'Asks the network for an 8-character code for the phone with `phoneNumber`; type it on that phone under Linked devices → ' +
          'Link with phone number instead. The device becomes CONNECTED like after a QR scan. 409 when the device is not PENDING or the ' +
          'network links by QR code only (sandbox); 503 when no worker holding the device answered in time or the network could not be reached.',
        params: IdParams,
        body: Type.Object(
          { phoneNumber: Type.String({ minLength: 1, maxLength: 32, description: 'The phone\'s number; +, spaces, dashes, dots and parentheses are ignored' }) },
          { additionalProperties: false },
        ),
        response: { 200: successData(PairingCodeSchema), ...errorResponses('FORBIDDEN', 'NOT_FOUND', 'CONFLICT', 'SERVICE_UNAVAILABLE') },
      },
    },
    async (request) => ({
      success: true as const,
      data: await devices.pairingCode(auth(request).accountId, request.params.id, request.body.phoneNumber),
    }),
  );

  app.post(
    '/devices/:id/reconnect',
    {
      config: { scope: 'devices:write' },
      schema: {
        tags: ['devices'],
        operationId: 'reconnectDevice',
        summary: 'Reconnect a device',
        description: 'Reconnect a DISCONNECTED device now, or start linking a LOGGED_OUT one again (new QR; counts against the plan\'s device limit).',
        params: IdParams,
        response: { 200: successData(DeviceSchema), ...errorResponses('FORBIDDEN', 'PLAN_LIMIT', 'NOT_FOUND') },
      },
    },
    async (request) => ({ success: true as const, data: await devices.reconnect(auth(request).accountId, request.params.id) }),
  );
}
