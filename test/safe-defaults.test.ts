/**
 * Safe defaults for a server on the internet, through the real app: a fresh install that listens
 * beyond loopback is claimed only with the setup code it printed (one for every process, gone
 * once an account exists); a loopback-only one needs none; /metrics answers only its bearer token
 * when METRICS_TOKEN is set.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isLoopbackHost, loadConfig } from '../src/config.js';
import { NODE_VERSION, VERSION } from '../src/platform/build-info.js';
import { createTestApp, expectError, type TestContext } from './helpers.js';

// Each test needs a fresh install of its own: a database of its own, which takes a while to open.
let ctx: TestContext | undefined;
afterEach(async () => {
  await ctx?.close();
  ctx = undefined;
});

const signup = (app: TestContext['app'], payload: Record<string, string>) => app.inject({ method: 'POST', url: '/dashboard/api/signup', payload });

describe('claiming a fresh install', () => {
  it('listening on 0.0.0.0, the first sign-up needs the setup code: refused without it or with a wrong one, accepted with it', async () => {
    ctx = await createTestApp({ HOST: '0.0.0.0' });
    const session = await ctx.app.inject({ method: 'GET', url: '/dashboard/api/session' });
    expect(session.json()).toMatchObject({ freshInstall: true, signupOpen: true, setupCodeRequired: true });

    const without = await signup(ctx.app, { email: 'stranger@example.test', password: 'a long password' });
    expectError(without, 403, 'FORBIDDEN');
    expect(without.json().error.details).toEqual([{ field: 'setupCode', message: 'is required for the first sign-up' }]);
    const wrong = await signup(ctx.app, { email: 'stranger@example.test', password: 'a long password', setupCode: 'aaaa-bbbb-cccc-dddd-eeee' });
    expectError(wrong, 403, 'FORBIDDEN');
    expect(wrong.json().error.message).toMatch(/setup code is not right/);

    const code = await ctx.services.accounts.setupCode();
    expect(code).toMatch(/^([a-z2-9]{4}-){4}[a-z2-9]{4}$/);
    // Every process asks the database, so every one prints (and accepts) the same code.
    expect(await ctx.services.accounts.setupCode()).toBe(code);
    // Typed by hand: case and separators do not matter.
    const claimed = await signup(ctx.app, { email: 'owner@example.test', password: 'a long password', setupCode: ` ${code.toUpperCase().replace(/-/g, ' ')} ` });
    expect(claimed.statusCode, claimed.body).toBe(201);
    expect(claimed.json()).toMatchObject({ authenticated: true, freshInstall: false, setupCodeRequired: false });

    // Claimed: the code is gone and sign-up is closed, code or not.
    const rows = await ctx.database.query<{ n: number }>('SELECT count(*)::int AS n FROM setup_codes');
    expect(rows[0]!.n).toBe(0);
    expectError(await signup(ctx.app, { email: 'late@example.test', password: 'a long password', setupCode: code }), 403, 'FORBIDDEN');
  }, 180_000);

  it('an account made with the CLI claims the install too: the code is deleted with it', async () => {
    ctx = await createTestApp({ HOST: '0.0.0.0', DASHBOARD_SIGNUP: 'open' });
    const code = await ctx.services.accounts.setupCode();
    await ctx.services.accounts.createAccount({ email: 'cli@example.test', password: 'a long password', plan: 'unlimited' });
    expect(await ctx.database.query('SELECT code FROM setup_codes')).toEqual([]);
    // Open sign-up after the first account: later users need no code (and get the free plan).
    const later = await signup(ctx.app, { email: 'second@example.test', password: 'a long password' });
    expect(later.statusCode, later.body).toBe(201);
    expect(code).not.toBe(await ctx.services.accounts.setupCode());
  }, 180_000);

  it('listening on loopback only, the first sign-up needs no code', async () => {
    ctx = await createTestApp({ HOST: '127.0.0.1' });
    expect((await ctx.app.inject({ method: 'GET', url: '/dashboard/api/session' })).json()).toMatchObject({ setupCodeRequired: false });
    const response = await signup(ctx.app, { email: 'me@example.test', password: 'a long password' });
    expect(response.statusCode, response.body).toBe(201);
  }, 180_000);

  it('tells loopback hosts from the rest', () => {
    for (const host of ['127.0.0.1', '127.8.9.10', '::1', '[::1]', 'localhost']) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.5', 'example.com', '192.168.1.2']) expect(isLoopbackHost(host), host).toBe(false);
    expect(loadConfig({}).setupCodeRequired).toBe(true);
  });
});

describe('METRICS_TOKEN', () => {
  const TOKEN = 'metrics-token-of-thirty-two-char';

  it('answers /metrics 401 without the bearer token or with a wrong one, 200 with it', async () => {
    ctx = await createTestApp({ METRICS_TOKEN: TOKEN });
    const none = await ctx.app.inject({ method: 'GET', url: '/metrics' });
    expectError(none, 401, 'UNAUTHORIZED');
    expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(none.body).not.toContain('waygate_');
    expectError(await ctx.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}x` } }), 401, 'UNAUTHORIZED');
    // An API token is not the metrics token.
    expectError(await ctx.app.inject({ method: 'GET', url: '/metrics', headers: { 'x-api-key': TOKEN } }), 401, 'UNAUTHORIZED');
    const ok = await ctx.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.statusCode).toBe(200);
    expect(ok.body).toContain('waygate_http_requests_total');
    // The health routes stay open to the load balancer.
    expect((await ctx.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
  }, 180_000);

  it('leaves /metrics open when unset, and refuses a short token at start', async () => {
    ctx = await createTestApp();
    expect((await ctx.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN must be at least 16 characters/);
  }, 180_000);
});

describe('/metrics', () => {
  it('exposes the webhook backlog and attempt latency, send → acknowledgement latency, failures by code, running bulk jobs and build info', async () => {
    ctx = await createTestApp();
    const body = (await ctx.app.inject({ method: 'GET', url: '/metrics' })).body;
    for (const [name, type] of [
      ['waygate_webhook_backlog', 'gauge'],
      ['waygate_webhook_attempt_duration_seconds', 'histogram'],
      ['waygate_webhook_attempts_total', 'counter'],
      ['waygate_send_ack_duration_seconds', 'histogram'],
      ['waygate_message_failures_total', 'counter'],
      ['waygate_bulk_jobs_running', 'gauge'],
      ['waygate_build_info', 'gauge'],
      ['waygate_queue_depth', 'gauge'],
    ]) {
      expect(body, name).toContain(`# TYPE ${name} ${type}`);
    }
    expect(body).toMatch(/^waygate_webhook_backlog 0$/m);
    expect(body).toMatch(/^waygate_bulk_jobs_running 0$/m);
    expect(body).toContain(`waygate_build_info{version="${VERSION}",node="${NODE_VERSION}"} 1`);
  }, 180_000);
});
