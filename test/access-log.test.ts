import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, type TestContext } from './helpers.js';

interface Line {
  level: number;
  msg: string;
  reqId?: string;
  req?: { method: string; url: string; remoteAddress: string };
  res?: { statusCode: number };
  responseTime?: number;
}

/** An app logging at `level` into an array of parsed lines. */
async function appLoggingAt(level: 'warn' | 'info' | 'debug'): Promise<{ ctx: TestContext; lines: Line[] }> {
  const lines: Line[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  return { ctx: await createTestApp({ LOG_LEVEL: level }, { logStream: sink }), lines };
}

const contexts: TestContext[] = [];
afterAll(async () => {
  for (const ctx of contexts) await ctx.close();
});

describe('access log', () => {
  it('writes one line a request at info: method, redacted url, address, status, time, request id', async () => {
    const { ctx, lines } = await appLoggingAt('info');
    contexts.push(ctx);
    const tenant = await createTenant(ctx);
    const ok = await ctx.app.inject({ method: 'GET', url: '/contacts?page=1', headers: tenant.headers, remoteAddress: '198.51.100.7' });
    const refused = await ctx.app.inject({ method: 'GET', url: `/contacts?token=${tenant.token}&page=0` });
    expect([ok.statusCode, refused.statusCode]).toEqual([200, 400]);

    const access = lines.filter((line) => line.req);
    expect(access.map((line) => line.msg)).toEqual(['request completed', 'request completed']);
    expect(access[0]).toMatchObject({ level: 30, reqId: ok.headers['x-request-id'], req: { method: 'GET', url: '/contacts?page=1', remoteAddress: '198.51.100.7' }, res: { statusCode: 200 } });
    expect(access[0]!.responseTime).toBeGreaterThan(0);
    expect(access[1]).toMatchObject({ reqId: refused.headers['x-request-id'], req: { url: '/contacts?token=[REDACTED]&page=0' }, res: { statusCode: 400 } });
    expect(JSON.stringify(lines)).not.toContain(tenant.token);
  });

  it('adds the line on arrival at debug, before the answer', async () => {
    const { ctx, lines } = await appLoggingAt('debug');
    contexts.push(ctx);
    const response = await ctx.app.inject({ method: 'GET', url: '/healthz' });
    const own = lines.filter((line) => line.reqId === response.headers['x-request-id']);
    expect(own.map((line) => line.msg)).toEqual(['incoming request', 'request completed']);
    expect(own[0]).toMatchObject({ level: 20, req: { method: 'GET', url: '/healthz' } });
  });

  it('writes one line for a request its client aborted (the live stream, never answered)', async () => {
    const { ctx, lines } = await appLoggingAt('info');
    contexts.push(ctx);
    const tenant = await createTenant(ctx);
    const login = await ctx.app.inject({ method: 'POST', url: '/dashboard/api/login', payload: { email: tenant.email, password: 'correct horse battery' } });
    expect(login.statusCode, login.body).toBe(200);
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    const address = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const abort = new AbortController();
    const response = await fetch(`${address}/dashboard/api/stream`, { headers: { cookie }, signal: abort.signal });
    expect(response.status).toBe(200);
    abort.abort();
    const deadline = Date.now() + 10_000;
    while (!lines.some((line) => line.msg === 'request aborted by the client') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    const stream = lines.filter((line) => line.req?.url === '/dashboard/api/stream');
    expect(stream.map((line) => line.msg)).toEqual(['request aborted by the client']);
    expect(stream[0]).toMatchObject({ level: 30, req: { method: 'GET' } });
  });

  it('writes none at warn', async () => {
    const { ctx, lines } = await appLoggingAt('warn');
    contexts.push(ctx);
    expect((await ctx.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect(lines.filter((line) => line.req)).toEqual([]);
  });
});
