/**
 * Shared helpers for the messaging tests (devices, sending, bulk jobs, scheduling, idempotency,
 * quota): typed response bodies, a small request wrapper, polling with a bounded timeout, device
 * linking through the sandbox, and phone numbers that are (or deliberately are not) magic.
 */
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { DeviceJson, DeviceStatus } from '../src/devices/device-record.js';
import type { SandboxPayload } from '../src/network/sandbox/world.js';
import type { BulkJobJson, MessageJson, MessageStatus } from '../src/messaging/message-record.js';
import { createTestApp, json, type Tenant, type TestContext } from './helpers.js';

/**
 * The environment of every messaging test app. On PostgreSQL all test files of a run share one
 * database, so any file's worker may pick up any file's device: worker settings must be the same
 * everywhere. QR codes live 1 s (a new one is shown after 750 ms) so rotation and expiry can be
 * tested without waiting; receipts come after 50 ms and leases last 3 s (createTestApp's defaults).
 */
export const MESSAGING_ENV: Record<string, string> = { SANDBOX_QR_MS: '1000' };

/** The real app with a real worker in-process, for a messaging test file. */
export function createMessagingApp(): Promise<TestContext> {
  return createTestApp(MESSAGING_ENV, { worker: true });
}

// ---------------------------------------------------------------------------------------------
// Response bodies
// ---------------------------------------------------------------------------------------------

import { expectError, type ErrorBody, type FieldError } from './helpers.js';

export { expectError, ISO_MS, type ErrorBody, type FieldError } from './helpers.js';
export interface Meta {
  total: number;
  page: number;
  limit: number;
}
export interface PageBody<T> {
  success: true;
  data: T[];
  meta: Meta;
}
export interface DataBody<T> {
  success: true;
  data: T;
}

/** Devices as the API writes them: the server's one definition of the record. */
export type { DeviceStatus } from '../src/devices/device-record.js';
export type DeviceBody = DeviceJson;
export interface QrBody {
  code: string;
  image: string;
  expiresAt: string;
}
export interface CreatedDeviceBody {
  success: true;
  data: DeviceBody;
  qr: QrBody | null;
}

/** Messages and bulk jobs as the API writes them: the server's one definition of the records. */
export type { BulkJobStatus as JobStatus, MessageStatus } from '../src/messaging/message-record.js';
export type MessageBody = MessageJson;
export interface DirectSendBody {
  success: true;
  message: MessageBody;
  messages: MessageBody[];
  async: boolean;
}
export interface BulkSendBody {
  success: true;
  jobId: string;
  status: 'PROCESSING' | 'SCHEDULED';
  message: string;
  totalContacts: number;
}

export type BulkJobBody = BulkJobJson;

export interface SandboxMessageBody {
  networkMessageId: string;
  deviceId: string;
  to: string;
  type: string;
  content: string;
  payload: SandboxPayload | null;
  editedAt: string | null;
  deletedAt: string | null;
  mediaBytes: number | null;
  mediaType: string | null;
  fileName: string | null;
  sendCalls: number;
  delivered: number;
  read: number;
  acceptedAt: string;
  deliveredAt: string | null;
  readAt: string | null;
}

export interface AccountBody {
  id: string;
  plan: { id: string; messageQuota: number | null; maxDevices: number | null };
  period: { start: string; end: string };
  usage: { messages: number; contacts: number };
  limits: { messages: number | null; devices: number | null };
}


// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** One request as the tenant (its token in x-api-key), with optional extra headers. */
export function call(
  ctx: TestContext,
  tenant: Tenant,
  method: Method,
  url: string,
  payload?: unknown,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return ctx.app.inject({
    method,
    url,
    headers: { ...tenant.headers, ...headers },
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  });
}

/** The field errors of a 400, asserting they are a list. */
export function fieldErrors(body: ErrorBody): FieldError[] {
  expect(Array.isArray(body.error.details), JSON.stringify(body)).toBe(true);
  return body.error.details as FieldError[];
}

/** A 400 VALIDATION_ERROR whose details name `field`; returns that detail. */
export function expectFieldError(response: LightMyRequestResponse, field: string): FieldError {
  const errors = fieldErrors(expectError(response, 400, 'VALIDATION_ERROR'));
  const found = errors.find((error) => error.field === field);
  expect(found, `no detail for field "${field}" in ${response.body}`).toBeDefined();
  expect(found!.message.length).toBeGreaterThan(0);
  return found!;
}

export function expectOk<T>(response: LightMyRequestResponse, status = 200): T {
  expect(response.statusCode, response.body).toBe(status);
  return json<T>(response);
}

export async function send(ctx: TestContext, tenant: Tenant, payload: Record<string, unknown>, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  return call(ctx, tenant, 'POST', '/messages/send', payload, headers);
}

/** A direct send that must be answered 200 (every message acknowledged or refused). */
export async function sendDirect(ctx: TestContext, tenant: Tenant, payload: Record<string, unknown>): Promise<DirectSendBody> {
  const body = expectOk<DirectSendBody>(await send(ctx, tenant, payload), 200);
  expect(body.success).toBe(true);
  expect(body.async).toBe(false);
  return body;
}

/** A send that must create a bulk job (202). */
export async function sendBulk(ctx: TestContext, tenant: Tenant, payload: Record<string, unknown>): Promise<BulkSendBody> {
  const body = expectOk<BulkSendBody>(await send(ctx, tenant, payload), 202);
  expect(body.success).toBe(true);
  expect(body.jobId).toMatch(/^job_/);
  return body;
}

export async function getMessage(ctx: TestContext, tenant: Tenant, id: string): Promise<MessageBody> {
  return expectOk<DataBody<MessageBody>>(await call(ctx, tenant, 'GET', `/messages/${id}`)).data;
}

export async function listMessages(ctx: TestContext, tenant: Tenant, query = ''): Promise<PageBody<MessageBody>> {
  return expectOk<PageBody<MessageBody>>(await call(ctx, tenant, 'GET', `/messages${query ? `?${query}` : ''}`));
}

export async function getJob(ctx: TestContext, tenant: Tenant, id: string): Promise<BulkJobBody> {
  return expectOk<DataBody<BulkJobBody>>(await call(ctx, tenant, 'GET', `/messages/bulk-jobs/${id}`)).data;
}

export async function getDevice(ctx: TestContext, tenant: Tenant, id: string): Promise<DeviceBody> {
  return expectOk<DataBody<DeviceBody>>(await call(ctx, tenant, 'GET', `/devices/${id}`)).data;
}

export async function usedMessages(ctx: TestContext, tenant: Tenant): Promise<number> {
  return expectOk<DataBody<AccountBody>>(await call(ctx, tenant, 'GET', '/account')).data.usage.messages;
}

/** Everything the sandbox network received from the tenant (up to 1000 rows), optionally for one recipient. */
export async function sandboxMessages(ctx: TestContext, tenant: Tenant, query: { to?: string; deviceId?: string } = {}): Promise<PageBody<SandboxMessageBody>> {
  const params = new URLSearchParams({ limit: '1000', ...query });
  return expectOk<PageBody<SandboxMessageBody>>(await call(ctx, tenant, 'GET', `/sandbox/messages?${params.toString()}`));
}

// ---------------------------------------------------------------------------------------------
// Waiting
// ---------------------------------------------------------------------------------------------

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `fn` every `intervalMs` until it returns a value other than undefined, null or false
 * without throwing (so expect() can be used inside), and returns that value. On timeout it fails
 * with `what`, the time waited and the last assertion error or result.
 */
export async function waitFor<T>(
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 15_000,
  what = 'condition',
  intervalMs = 25,
): Promise<T> {
  const started = Date.now();
  let last: unknown;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await fn();
      lastError = undefined;
      last = value;
      if (value !== undefined && value !== null && value !== false) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() - started >= timeoutMs) {
      const detail = lastError instanceof Error ? `last error: ${lastError.message}` : `last result: ${JSON.stringify(last)}`;
      throw new Error(`waitFor timed out after ${timeoutMs} ms waiting for ${what}; ${detail}`);
    }
    await sleep(intervalMs);
  }
}

/** Polls GET /messages/:id until `accept` holds. */
export function waitForMessage(
  ctx: TestContext,
  tenant: Tenant,
  id: string,
  accept: (message: MessageBody) => boolean,
  what: string,
  timeoutMs = 20_000,
): Promise<MessageBody> {
  let last: MessageBody | undefined;
  return waitFor(
    async () => {
      last = await getMessage(ctx, tenant, id);
      if (accept(last)) return last;
      throw new Error(`message ${id} is ${last.status} (attempts ${last.attempts}, error ${JSON.stringify(last.error)})`);
    },
    timeoutMs,
    `message ${id}: ${what}`,
  );
}

export function waitForStatus(ctx: TestContext, tenant: Tenant, id: string, status: MessageStatus, timeoutMs = 20_000): Promise<MessageBody> {
  return waitForMessage(ctx, tenant, id, (message) => message.status === status, `status ${status}`, timeoutMs);
}

/** Polls GET /messages/bulk-jobs/:id until `accept` holds. */
export function waitForJob(
  ctx: TestContext,
  tenant: Tenant,
  id: string,
  accept: (job: BulkJobBody) => boolean,
  what: string,
  timeoutMs = 25_000,
): Promise<BulkJobBody> {
  return waitFor(
    async () => {
      const job = await getJob(ctx, tenant, id);
      if (accept(job)) return job;
      throw new Error(`job ${id} is ${JSON.stringify(job)}`);
    },
    timeoutMs,
    `bulk job ${id}: ${what}`,
  );
}

export function waitForDevice(ctx: TestContext, tenant: Tenant, id: string, status: DeviceStatus, timeoutMs = 20_000): Promise<DeviceBody> {
  return waitFor(
    async () => {
      const device = await getDevice(ctx, tenant, id);
      if (device.status === status) return device;
      throw new Error(`device ${id} is ${device.status}`);
    },
    timeoutMs,
    `device ${id} to be ${status}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Devices
// ---------------------------------------------------------------------------------------------

/**
 * POST /devices; asserts 201 PENDING, and returns the first QR code: the one the answer carries,
 * or (the answer's qr is null when no worker showed one within its 5 s wait, as on a busy
 * machine) the one GET /devices/:id/qr shows once a worker does.
 */
export async function addDevice(ctx: TestContext, tenant: Tenant, name = 'phone'): Promise<{ device: DeviceBody; qr: QrBody }> {
  const body = expectOk<CreatedDeviceBody>(await call(ctx, tenant, 'POST', '/devices', { name }), 201);
  expect(body.data.status).toBe('PENDING');
  return { device: body.data, qr: body.qr ?? (await currentQrBody(ctx, tenant, body.data.id)) };
}

/** Plays the phone scanning a QR code. */
export function scan(ctx: TestContext, tenant: Tenant, code: string, phoneNumber: string): Promise<LightMyRequestResponse> {
  return call(ctx, tenant, 'POST', '/sandbox/scan', { code, phoneNumber });
}

/** The device's current QR code, once a worker shows one (on a busy machine the first may take a while). */
async function currentQrBody(ctx: TestContext, tenant: Tenant, deviceId: string): Promise<QrBody> {
  return waitFor(
    async () => {
      const response = await call(ctx, tenant, 'GET', `/devices/${deviceId}/qr`);
      return response.statusCode === 503 ? undefined : expectOk<DataBody<QrBody>>(response).data;
    },
    20_000,
    `a QR code shown for device ${deviceId}`,
  );
}

const currentQr = async (ctx: TestContext, tenant: Tenant, deviceId: string): Promise<string> => (await currentQrBody(ctx, tenant, deviceId)).code;

/**
 * Scans the device's QR code as `phoneNumber` (starting with `code` when given). Codes live only
 * a second in tests: while the one scanned has expired (a busy machine can take longer than that
 * between showing and scanning), it scans the current one, as a person would, for up to 20 s.
 * Asserts the scan is accepted.
 */
export async function scanCurrent(ctx: TestContext, tenant: Tenant, deviceId: string, phoneNumber: string, code?: string): Promise<LightMyRequestResponse> {
  const deadline = Date.now() + 20_000;
  let current = code ?? (await currentQr(ctx, tenant, deviceId));
  for (;;) {
    const scanned = await scan(ctx, tenant, current, phoneNumber);
    if (scanned.statusCode === 200 || Date.now() > deadline) {
      expectOk(scanned);
      return scanned;
    }
    expect(expectFieldError(scanned, 'code').message).toMatch(/expired/);
    current = await currentQr(ctx, tenant, deviceId);
  }
}

/**
 * Creates a device, scans its QR code as `phoneNumber` and waits until it is CONNECTED. (The
 * first QR code usually comes with POST /devices; on a busy machine it comes later, from GET qr.)
 */
export async function linkDevice(ctx: TestContext, tenant: Tenant, options: { name?: string; phoneNumber?: string } = {}): Promise<DeviceBody> {
  const created = expectOk<CreatedDeviceBody>(await call(ctx, tenant, 'POST', '/devices', { name: options.name ?? 'phone' }), 201);
  const phoneNumber = options.phoneNumber ?? phone();
  await scanCurrent(ctx, tenant, created.data.id, phoneNumber, created.qr?.code);
  const connected = await waitForDevice(ctx, tenant, created.data.id, 'CONNECTED');
  expect(connected.phoneNumber).toBe(phoneNumber);
  return connected;
}

// ---------------------------------------------------------------------------------------------
// Phone numbers
// ---------------------------------------------------------------------------------------------

const MAGIC_ENDINGS = new Set(['0000', '0001', '0002', '0003']);

const digits = (count: number): string => Array.from({ length: count }, () => Math.floor(Math.random() * 10)).join('');

/**
 * A random valid Indonesian mobile number (E.164 digits). Without `ending` it never ends in a
 * magic sandbox ending (0000–0003), so it is delivered and read normally; with `ending` it ends
 * in exactly those four digits.
 */
export function phone(ending?: string): string {
  if (ending !== undefined) return `62812${digits(4)}${ending}`;
  for (;;) {
    const candidate = `62813${digits(8)}`;
    if (!MAGIC_ENDINGS.has(candidate.slice(-4))) return candidate;
  }
}

/** `count` different normal numbers. */
export function phones(count: number): string[] {
  const set = new Set<string>();
  while (set.size < count) set.add(phone());
  return [...set];
}

/** A timestamp `ms` from now, ISO 8601 UTC. */
export const isoIn = (ms: number): string => new Date(Date.now() + ms).toISOString();

export const time = (iso: string | null): number => {
  expect(iso).not.toBeNull();
  return new Date(iso!).getTime();
};

// ---------------------------------------------------------------------------------------------
// Contacts and groups
// ---------------------------------------------------------------------------------------------

export async function createContact(ctx: TestContext, tenant: Tenant, phoneNumber: string, name = `Contact ${phoneNumber}`): Promise<{ id: string; phoneNumber: string }> {
  return expectOk<DataBody<{ id: string; phoneNumber: string }>>(await call(ctx, tenant, 'POST', '/contacts', { name, phoneNumber }), 201).data;
}

/** A group of new contacts with the given numbers (none: an empty group). */
export async function createGroup(ctx: TestContext, tenant: Tenant, numbers: string[], name = 'group'): Promise<{ id: string; contactsCount: number }> {
  const contactIds: string[] = [];
  for (const number of numbers) contactIds.push((await createContact(ctx, tenant, number)).id);
  return expectOk<DataBody<{ id: string; contactsCount: number }>>(await call(ctx, tenant, 'POST', '/groups', { name, contactIds }), 201).data;
}
