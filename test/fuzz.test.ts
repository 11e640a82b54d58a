/**
 * The red-team fuzzer, repeatable: driven by the app's own /openapi.json, it sends malformed
 * input to every operation (at / and /v1) as an authenticated tenant: wrong types, NUL and other
 * control characters, unpaired surrogates, huge and negative numbers, 100,000-item arrays, deep
 * JSON, bad %-encodings, over-long ids, another account's ids, requests without a token, and (on
 * a real socket) oversize headers. It fails on any 5xx, any error answer outside the documented
 * body, any stack trace or SQL in an answer, and any 2xx to another account's id. Bounded: a
 * fixed set of cases per operation (a few thousand requests), 8 at a time, on 127.0.0.1 only.
 * Prints one summary line and writes it to test-results/fuzz-<database>.json for CI.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_STATUS, type ErrorCode } from '../src/platform/errors.js';
import { newId } from '../src/platform/ids.js';
import { createTenant, createTestApp, rawExchange, type Tenant, type TestContext } from './helpers.js';

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  minimum?: number;
  minLength?: number;
  minItems?: number;
  $ref?: string;
}

interface Operation {
  method: string;
  path: string;
  parameters: Array<{ in: string; name: string; schema: Schema }>;
  body?: { contentType: string; schema: Schema };
  secured: boolean;
}

interface Case {
  operation: Operation;
  label: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  /** Another account's id is in it: any 2xx is a leak. */
  foreign?: boolean;
}

const CONCURRENCY = 8;
const SLOW_MS = 20_000;
const STACK = /\bat [\w$.<>]+ \(|\.(?:ts|js|mjs):\d+:\d+|node_modules/;
const SQL = /syntax error at or near|violates [\w ]*constraint|relation "|column "|duplicate key value|invalid input syntax|invalid byte sequence|out of range for type|\b(?:SELECT|INSERT|UPDATE|DELETE)\b[^"]{0,80}\b(?:FROM|INTO|SET|WHERE)\b/;

let ctx: TestContext;
let attacker: Tenant;
let victim: Tenant;
const victimIds: Record<string, string> = {};
let document: { paths: Record<string, Record<string, unknown>>; components?: { schemas?: Record<string, Schema> } };

beforeAll(async () => {
  // Private URLs allowed: webhook URLs are then never resolved through DNS (no network here).
  ctx = await createTestApp({ ALLOW_PRIVATE_URLS: 'true' });
  // The attacker is on `free`: a send that passes every check stops at the quota, not in a bulk job.
  attacker = await createTenant(ctx, { plan: 'free' });
  victim = await createTenant(ctx);
  const contact = await ctx.services.contacts.create(victim.accountId, { name: 'Victim contact', phoneNumber: '+6281234567890' });
  const group = await ctx.services.groups.create(victim.accountId, { name: 'Victim group', contactIds: [contact.id] });
  const webhook = await ctx.services.webhooks.create(victim.accountId, { url: 'http://127.0.0.1:9/hook', events: ['message.status'] });
  const device = newId('dev');
  await ctx.database.query(`INSERT INTO devices (id, account_id, name, status) VALUES ($1, $2, 'Victim phone', 'PENDING')`, [device, victim.accountId]);
  const token = await ctx.services.tokens.create(victim.accountId, { name: 'victim' });
  Object.assign(victimIds, { contact: contact.id, group: group.id, webhook: webhook.id, device, token: token.record.id });
  document = (await ctx.app.inject({ method: 'GET', url: '/openapi.json' })).json();
}, 120_000);
afterAll(async () => ctx?.close());

function resolve(schema: Schema | undefined): Schema {
  let current = schema ?? {};
  for (let depth = 0; current.$ref && depth < 10; depth++) current = document.components?.schemas?.[current.$ref.split('/').pop()!] ?? {};
  return current;
}

/** A value the schema accepts, as small as it allows (domain rules may still refuse it). */
function sample(raw: Schema | undefined, name = ''): unknown {
  const schema = resolve(raw);
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  const branch = schema.anyOf?.[0] ?? schema.oneOf?.[0];
  if (branch) return sample(branch, name);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((key) => [key, sample(schema.properties?.[key], key)]));
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items, name));
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    case 'string':
      if (schema.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
      if (/url/i.test(name)) return 'https://example.com/fuzz';
      if (/phone|from|to|recipient/i.test(name)) return '6281234567890';
      if (/^type$/.test(name)) return 'TEXT';
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    default:
      return 'x';
  }
}

function operations(): Operation[] {
  const list: Operation[] = [];
  for (const [route, methods] of Object.entries(document.paths)) {
    for (const [method, raw] of Object.entries(methods)) {
      const spec = raw as {
        parameters?: Operation['parameters'];
        requestBody?: { content: Record<string, { schema: Schema }> };
        security?: unknown[];
        tags?: string[];
      };
      const [contentType, content] = Object.entries(spec.requestBody?.content ?? {})[0] ?? [];
      const operation: Operation = {
        method: method.toUpperCase(),
        path: route,
        parameters: spec.parameters ?? [],
        ...(contentType && content ? { body: { contentType, schema: resolve(content.schema) } } : {}),
        secured: !(Array.isArray(spec.security) && spec.security.length === 0),
      };
      list.push(operation);
      // The document lists each path once; every API path also answers under /v1 (its second server).
      if (!spec.tags?.includes('ops')) list.push({ ...operation, path: `/v1${route}` });
    }
  }
  return list;
}

/** Another account's id for a path parameter, judged by the resource the path names. */
function foreignId(route: string, param: string): string | undefined {
  if (param === 'contactId') return victimIds.contact;
  const resource = /\/(contacts|groups|devices|webhooks|tokens)\/\{[^}]+\}/.exec(route)?.[1];
  return resource ? victimIds[{ contacts: 'contact', groups: 'group', devices: 'device', webhooks: 'webhook', tokens: 'token' }[resource]!] : undefined;
}

const PATH_VALUES: Array<[string, string]> = [
  ['NUL', '%00'],
  ['control', 'a%01b%1B'],
  ['DEL', '%7F'],
  ['bad encoding', '%zz'],
  ['truncated UTF-8', '%E0%A4%A'],
  ['overlong UTF-8', '%C0%AF'],
  ['lone surrogate', '%ED%A0%80'],
  ['150 chars', 'a'.repeat(150)],
  ['5000 chars', 'a'.repeat(5_000)],
  ['traversal', '..%2F..%2Fetc%2Fpasswd'],
  ['space', '%20'],
];

const QUERY_VALUES: Array<[string, string]> = [
  ['NUL', '%00'],
  ['control', '%01%1F'],
  ['negative', '-1'],
  ['zero', '0'],
  ['huge', '1e308'],
  ['2^63', '9223372036854775808'],
  ['Infinity', 'Infinity'],
  ['NaN', 'NaN'],
  ['text', 'abc'],
  ['bad encoding', '%zz'],
  ['5000 chars', 'x'.repeat(5_000)],
  ['lone surrogate', '%ED%A0%80'],
];

const VALUE_MUTATIONS: Array<[string, unknown]> = [
  ['number', 12345],
  ['boolean', true],
  ['null', null],
  ['object', { nested: { deeper: 1 } }],
  ['array', ['x']],
  ['NUL', 'a\u0000b'],
  ['controls', '\u0001\u001b[2J\u007f'],
  ['lone surrogate', '\ud800x'],
  ['100k chars', 'x'.repeat(100_000)],
  ['negative', -1],
  ['huge', 1e308],
  ['beyond 2^53', 2 ** 60],
  ['fraction', 1.5],
  ['NUL array', ['\u0000']],
];

const HUGE_ARRAY = JSON.stringify(Array.from({ length: 100_000 }, (_, i) => `62812${String(i).padStart(8, '0')}`));

function fill(operation: Operation, values: Record<string, string>): string {
  return operation.path.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? 'zz_fuzz_missing');
}

function casesFor(operation: Operation): Case[] {
  const cases: Case[] = [];
  const pathParams = operation.parameters.filter((p) => p.in === 'path');
  const queryParams = operation.parameters.filter((p) => p.in === 'query');
  const basePath: Record<string, string> = Object.fromEntries(pathParams.map((p) => [p.name, 'zz_fuzz_missing']));
  const auth = { 'x-api-key': attacker.token };
  const bodyBase = operation.body?.contentType === 'application/json' ? (sample(operation.body.schema) as Record<string, unknown>) : undefined;
  const basePayload = operation.body ? (bodyBase !== undefined ? JSON.stringify(bodyBase) : 'name,phoneNumber\nA,+6281234567890\n') : undefined;
  const bodyHeaders: Record<string, string> = operation.body ? { 'content-type': operation.body.contentType } : {};
  const add = (label: string, overrides: Partial<Case>): void => {
    const payload = 'payload' in overrides ? overrides.payload : basePayload;
    cases.push({
      operation,
      label,
      method: operation.method,
      url: fill(operation, basePath),
      headers: { ...auth, ...bodyHeaders },
      ...overrides,
      ...(payload !== undefined ? { payload } : {}),
    });
  };

  add('baseline', {});
  if (operation.secured) add('no token', { headers: bodyHeaders });
  if (operation.secured) add('invalid token', { headers: { ...bodyHeaders, 'x-api-key': 'wg_000000000000000000000000000000000000000000' } });

  for (const param of pathParams) {
    for (const [label, value] of PATH_VALUES) add(`path ${param.name}: ${label}`, { url: fill(operation, { ...basePath, [param.name]: value }) });
    const foreign = foreignId(operation.path, param.name);
    if (foreign) add(`path ${param.name}: another account's id`, { url: fill(operation, { ...basePath, [param.name]: foreign }), foreign: true });
  }

  const base = fill(operation, basePath);
  for (const param of queryParams) {
    for (const [label, value] of QUERY_VALUES) add(`query ${param.name}: ${label}`, { url: `${base}?${param.name}=${value}` });
    add(`query ${param.name}: repeated`, { url: `${base}?${param.name}=1&${param.name}=2` });
    add(`query ${param.name}: bracketed`, { url: `${base}?${param.name}[]=1&${param.name}[x]=2` });
  }
  add('query: unknown parameter', { url: `${base}?zz_unknown=1` });
  add('query: 2000 parameters', { url: `${base}?${Array.from({ length: 2_000 }, (_, i) => `p${i}=${i}`).join('&')}` });
  add('header: oversize Idempotency-Key', { headers: { ...auth, ...bodyHeaders, 'idempotency-key': 'k'.repeat(5_000) } });

  if (operation.body) {
    const jsonHeaders = { ...auth, 'content-type': 'application/json' };
    add('body: not JSON', { headers: jsonHeaders, payload: '{"a":' });
    add('body: empty', { headers: jsonHeaders, payload: '' });
    add('body: array', { headers: jsonHeaders, payload: '[]' });
    add('body: string', { headers: jsonHeaders, payload: '"x"' });
    add('body: null', { headers: jsonHeaders, payload: 'null' });
    add('body: deep JSON', { headers: jsonHeaders, payload: `${'{"a":'.repeat(5_000)}1${'}'.repeat(5_000)}` });
    add('body: deep array', { headers: jsonHeaders, payload: `${'['.repeat(20_000)}${']'.repeat(20_000)}` });
    add('body: __proto__', { headers: jsonHeaders, payload: '{"__proto__":{"polluted":true}}' });
    add('body: constructor.prototype', { headers: jsonHeaders, payload: '{"constructor":{"prototype":{"polluted":true}}}' });
    add('body: 5000 unknown keys', { headers: jsonHeaders, payload: JSON.stringify(Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`k${i}`, i]))) });
    add('body: NUL key', { headers: jsonHeaders, payload: JSON.stringify({ ...(bodyBase ?? {}), 'a\u0000': 1 }) });
    add('body: wrong content type', { headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'a=1' });
    add('body: UTF-16 claim', { headers: { ...auth, 'content-type': 'application/json; charset=utf-16' }, payload: basePayload ?? '{}' });
    add('body: NUL CSV', { headers: { ...auth, 'content-type': 'text/csv' }, payload: 'name,phoneNumber\nA\u0000,+6281234567890\n' });
  }

  const properties = Object.entries(operation.body?.schema.properties ?? {}).slice(0, 12);
  let hugeArraySent = false;
  for (const [name, raw] of properties) {
    const schema = resolve(raw);
    for (const [label, value] of VALUE_MUTATIONS) add(`body ${name}: ${label}`, { payload: JSON.stringify({ ...bodyBase, [name]: value }) });
    const isArray = schema.type === 'array' || schema.anyOf?.some((branch) => resolve(branch).type === 'array');
    if (isArray && !hugeArraySent) {
      hugeArraySent = true;
      const rest = JSON.stringify({ ...bodyBase, [name]: null }).replace(`"${name}":null`, `"${name}":${HUGE_ARRAY}`);
      add(`body ${name}: 100k items`, { payload: rest });
    }
    if (/ids?$/i.test(name)) {
      const foreign = /contact/i.test(name) ? victimIds.contact : /group/i.test(name) ? victimIds.group : /device/i.test(name) ? victimIds.device : undefined;
      if (foreign) add(`body ${name}: another account's id`, { payload: JSON.stringify({ ...bodyBase, [name]: isArray ? [foreign] : foreign }), foreign: true });
    }
  }
  return cases;
}

/** What is wrong with an answer, or undefined. */
function judge(test: Case, response: LightMyRequestResponse): string | undefined {
  if (response.statusCode >= 500) return `answered ${response.statusCode}: ${response.body.slice(0, 300)}`;
  if (STACK.test(response.body)) return `a stack trace in the answer: ${response.body.slice(0, 300)}`;
  if (SQL.test(response.body)) return `SQL in the answer: ${response.body.slice(0, 300)}`;
  if (test.foreign && response.statusCode < 300) return `answered ${response.statusCode} to another account's id`;
  if (response.statusCode < 400) return undefined;
  let body: { success?: unknown; error?: { code?: unknown; message?: unknown; details?: unknown }; requestId?: unknown };
  try {
    body = JSON.parse(response.body) as typeof body;
  } catch {
    return `error answer ${response.statusCode} is not JSON: ${response.body.slice(0, 200)}`;
  }
  const code = body.error?.code as ErrorCode | undefined;
  const shaped =
    body.success === false &&
    typeof code === 'string' &&
    code in ERROR_STATUS &&
    ERROR_STATUS[code] === response.statusCode &&
    typeof body.error?.message === 'string' &&
    (body.error.details === undefined || typeof body.error.details === 'object') &&
    typeof body.requestId === 'string' &&
    Object.keys(body).length === 3;
  return shaped ? undefined : `error answer ${response.statusCode} is not in the documented shape: ${response.body.slice(0, 200)}`;
}

describe('the OpenAPI-driven fuzzer', () => {
  it('finds no 5xx, no undocumented error body, no leak and no cross-account answer in any operation', async () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(90);
    const cases = ops.flatMap(casesFor);
    const failures: string[] = [];
    const statuses = new Map<number, number>();
    let slowest = 0;
    const started = Date.now();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < cases.length) {
        const test = cases[next++]!;
        const sent = Date.now();
        let response: LightMyRequestResponse;
        try {
          response = await ctx.app.inject({
            method: test.method as 'GET',
            url: test.url,
            headers: test.headers,
            ...(test.payload !== undefined ? { payload: test.payload } : {}),
          });
        } catch (error) {
          failures.push(`${test.method} ${test.operation.path} [${test.label}]: the request threw ${(error as Error).message}`);
          continue;
        }
        const took = Date.now() - sent;
        slowest = Math.max(slowest, took);
        statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
        const problem = judge(test, response) ?? (took > SLOW_MS ? `took ${took} ms` : undefined);
        if (problem) failures.push(`${test.method} ${test.operation.path} [${test.label}]: ${problem}`);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));

    // Oversize headers and malformed request lines reach Node's parser only on a real socket.
    await ctx.app.listen({ host: '127.0.0.1', port: 0 });
    let socketRequests = 0;
    for (const operation of ops.filter((op) => !op.path.startsWith('/v1/'))) {
      const url = fill(operation, Object.fromEntries(operation.parameters.filter((p) => p.in === 'path').map((p) => [p.name, 'zz_fuzz_missing'])));
      const answer = await rawExchange(ctx.app, `${operation.method} ${url} HTTP/1.1\r\nHost: 127.0.0.1\r\nx-api-key: ${attacker.token}\r\nx-filler: ${'h'.repeat(20_000)}\r\n\r\n`);
      socketRequests++;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer.text)?.[1]);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      const problem = judge({ operation, label: 'oversize header', method: operation.method, url, headers: {} }, { statusCode: status, body: answer.body } as LightMyRequestResponse);
      if (status !== 431 || problem) failures.push(`${operation.method} ${operation.path} [oversize header]: ${status} ${problem ?? ''}`);
    }
    for (const line of ['GET /contacts HTTP/9.9', 'GET /contacts\u0000 HTTP/1.1', 'BREW /contacts HTTP/1.1', 'GET /contacts/%zz HTTP/1.1']) {
      const answer = await rawExchange(ctx.app, `${line}\r\nHost: 127.0.0.1\r\nx-api-key: ${attacker.token}\r\nConnection: close\r\n\r\n`);
      socketRequests++;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer.text)?.[1]);
      const problem = judge({ operation: ops[0]!, label: line, method: 'GET', url: line, headers: {} }, { statusCode: status, body: answer.body } as LightMyRequestResponse);
      if (!(status >= 400 && status < 500) || problem) failures.push(`raw "${line}": ${status} ${problem ?? ''}`);
    }

    const summary = {
      database: ctx.database.kind,
      operations: ops.length,
      requests: cases.length + socketRequests,
      failures: failures.length,
      seconds: Math.round((Date.now() - started) / 100) / 10,
      slowestMs: slowest,
      statuses: Object.fromEntries([...statuses].sort(([a], [b]) => a - b)),
    };
    console.log(`fuzz (${summary.database}): ${summary.requests} requests over ${summary.operations} operations, ${summary.failures} failures, ${summary.seconds} s (slowest ${summary.slowestMs} ms)`);
    const results = path.resolve('test-results');
    fs.mkdirSync(results, { recursive: true });
    fs.writeFileSync(path.join(results, `fuzz-${summary.database}.json`), JSON.stringify({ ...summary, failureList: failures.slice(0, 200) }, null, 2));
    expect(failures.slice(0, 40)).toEqual([]);
  }, 300_000);
});
