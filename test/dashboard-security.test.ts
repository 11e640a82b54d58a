/**
 * The dashboard's security lines, through app.inject: sign-up only for a fresh install's first
 * user, sessions in HttpOnly SameSite cookies, no session → 401 (JSON) or a redirect to the log-in
 * page (pages), a CSRF token on every state-changing route, cross-site requests refused, another
 * account's ids unreachable, and failed log-ins rate limited.
 */
import { createHash, createHmac } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, expectError, randomPhone, type TestContext } from './helpers.js';
import { ensureDashboardBuilt } from './browser/support.js';

let ctx: TestContext;

interface Session {
  cookie: string;
  csrf: string;
  accountId: string;
}

function sessionFrom(response: LightMyRequestResponse): Session {
  const setCookie = response.headers['set-cookie'];
  const line = (Array.isArray(setCookie) ? setCookie : [setCookie ?? '']).find((value) => value.startsWith('waygate_session='));
  expect(line, 'a session cookie is set').toBeDefined();
  const body = response.json() as { csrfToken: string; user: { accountId: string } };
  return { cookie: line!.split(';')[0]!, csrf: body.csrfToken, accountId: body.user.accountId };
}

async function login(email: string, password = 'correct horse battery'): Promise<Session> {
  const response = await ctx.app.inject({ method: 'POST', url: '/dashboard/api/login', payload: { email, password } });
  expect(response.statusCode, response.body).toBe(200);
  return sessionFrom(response);
}

/** Every route as {method, url}, from the tree that printRoutes draws (one segment per line, indented by depth). */
function routeTable(): Array<{ method: string; url: string }> {
  const stack: string[] = [];
  const routes: Array<{ method: string; url: string }> = [];
  for (const line of ctx.app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^(.*?)[├└]── (\S+)(?: \(([^)]*)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    const url = (depth === 0 ? '' : stack[depth - 1]!.replace(/\/$/, '') + (match[2]!.startsWith('/') ? '' : '/')) + match[2]!;
    stack[depth] = url;
    for (const method of (match[3] ?? '').split(', ').filter(Boolean)) routes.push({ method, url });
  }
  return routes;
}

const as = (session: Session, csrf = true) => ({ cookie: session.cookie, ...(csrf ? { 'x-csrf-token': session.csrf } : {}) });

beforeAll(async () => {
  // Webhook endpoints on a local address (never called here) need private URLs allowed.
  ctx = await createTestApp({ ALLOW_PRIVATE_URLS: 'true' });
});
afterAll(async () => {
  await ctx.close();
});

describe('sign-up', () => {
  // These run first, on this file's fresh database, before any other test creates a user.
  it('is open to the first user of a fresh install, who gets an unlimited account and a session cookie', async () => {
    const state = await ctx.app.inject({ method: 'GET', url: '/dashboard/api/session' });
    expect(state.json()).toMatchObject({ authenticated: false, signupOpen: true, freshInstall: true, network: 'sandbox', csrfToken: null });

    const response = await ctx.app.inject({ method: 'POST', url: '/dashboard/api/signup', payload: { email: 'Owner@Example.test', password: 'a long password' } });
    expect(response.statusCode, response.body).toBe(201);
    const cookie = String(response.headers['set-cookie']);
    expect(cookie).toMatch(/^waygate_session=[\w-]{43};/);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\/dashboard/);
    const session = sessionFrom(response);
    expect(response.json()).toMatchObject({ authenticated: true, user: { email: 'owner@example.test' } });

    const account = await ctx.app.inject({ method: 'GET', url: '/dashboard/api/account', headers: as(session) });
    expect(account.json().data.plan.id).toBe('unlimited');
  });

  it('is closed once a user exists', async () => {
    const state = await ctx.app.inject({ method: 'GET', url: '/dashboard/api/session' });
    expect(state.json()).toMatchObject({ signupOpen: false, freshInstall: false });
    const response = await ctx.app.inject({ method: 'POST', url: '/dashboard/api/signup', payload: { email: 'second@example.test', password: 'a long password' } });
    expectError(response, 403, 'FORBIDDEN');
  });

  it('with DASHBOARD_SIGNUP=open, later users each get an account of their own on the free plan (and SESSION_SECRET keys the stored session hash)', async () => {
    const secret = 's'.repeat(40);
    const open = await createTestApp({ DASHBOARD_SIGNUP: 'open', SESSION_SECRET: secret });
    try {
      const first = await open.app.inject({ method: 'POST', url: '/dashboard/api/signup', payload: { email: 'a@example.test', password: 'a long password' } });
      const second = await open.app.inject({ method: 'POST', url: '/dashboard/api/signup', payload: { email: 'b@example.test', password: 'a long password' } });
      expect(second.statusCode, second.body).toBe(201);
      expect(second.json().user.accountId).not.toBe(first.json().user.accountId);
      const account = await open.app.inject({ method: 'GET', url: '/dashboard/api/account', headers: { cookie: String(second.headers['set-cookie']).split(';')[0]! } });
      expect(account.json().data.plan.id).toBe('free');
      const again = await open.app.inject({ method: 'POST', url: '/dashboard/api/signup', payload: { email: 'B@example.test', password: 'a long password' } });
      expectError(again, 409, 'CONFLICT');
      // Only an HMAC of the cookie value is stored, under SESSION_SECRET.
      const cookieValue = String(second.headers['set-cookie']).split(';')[0]!.split('=')[1]!;
      const stored = await open.database.query<{ id_hash: string }>('SELECT id_hash FROM dashboard_sessions');
      expect(stored.map((row) => row.id_hash)).toContain(createHmac('sha256', secret).update(cookieValue).digest('hex'));
      expect(stored.map((row) => row.id_hash)).not.toContain(createHash('sha256').update(cookieValue).digest('hex'));
    } finally {
      await open.close();
    }
  });
});

describe('without a session', () => {
  it('JSON routes answer 401 in the error envelope', async () => {
    for (const url of ['/dashboard/api/devices', '/dashboard/api/tokens', '/dashboard/api/account', '/dashboard/api/stream', '/dashboard/api/messages/bulk-jobs']) {
      expectError(await ctx.app.inject({ method: 'GET', url }), 401, 'UNAUTHORIZED');
    }
    expectError(await ctx.app.inject({ method: 'GET', url: '/dashboard/api/devices', headers: { cookie: 'waygate_session=forged' } }), 401, 'UNAUTHORIZED');
  });

  it('an API token does not open the dashboard routes', async () => {
    const tenant = await createTenant(ctx);
    expectError(await ctx.app.inject({ method: 'GET', url: '/dashboard/api/devices', headers: tenant.headers }), 401, 'UNAUTHORIZED');
  });

  it('pages redirect to the log-in page, keeping where the visitor was going', async () => {
    const page = await ctx.app.inject({ method: 'GET', url: '/dashboard/devices' });
    expect(page.statusCode).toBe(302);
    expect(page.headers.location).toBe('/dashboard/login?next=%2Fdashboard%2Fdevices');
    const home = await ctx.app.inject({ method: 'GET', url: '/dashboard/' });
    expect(home.headers.location).toBe('/dashboard/login');
    const loginPage = await ctx.app.inject({ method: 'GET', url: '/dashboard/login' });
    expect(loginPage.statusCode).not.toBe(302);
  });

  it('the root redirects to the dashboard, and the public API still answers tokens', async () => {
    const root = await ctx.app.inject({ method: 'GET', url: '/' });
    expect(root.statusCode).toBe(302);
    expect(root.headers.location).toBe('/dashboard/');
    const tenant = await createTenant(ctx);
    expect((await ctx.app.inject({ method: 'GET', url: '/account', headers: tenant.headers })).statusCode).toBe(200);
  });

  it('dashboard routes stay out of the public OpenAPI document', async () => {
    const document = (await ctx.app.inject({ method: 'GET', url: '/openapi.json' })).json() as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths).filter((p) => p.startsWith('/dashboard'))).toEqual([]);
    expect(document.paths['/devices']).toBeDefined();
  });
});

describe('CSRF', () => {
  it('every state-changing dashboard route needs the session CSRF token', async () => {
    const tenant = await createTenant(ctx);
    const session = await login(tenant.email);
    // Every dashboard route with a state-changing method (read from Fastify's route tree), with made-up ids.
    const changing = routeTable()
      .filter((route) => route.url.startsWith('/dashboard/api/') && ['POST', 'PATCH', 'PUT', 'DELETE'].includes(route.method))
      .map((route) => ({ method: route.method, url: route.url.replace(/:(\w+)/g, 'x_$1') }));
    expect(changing.length).toBeGreaterThan(20);
    for (const { method, url } of changing) {
      if (url.endsWith('/login') || url.endsWith('/signup') || url.endsWith('/*')) continue;
      const missing = await ctx.app.inject({ method: method as 'POST', url, headers: as(session, false), payload: {} });
      expectError(missing, 403, 'FORBIDDEN');
      expect(missing.json().error.message, `${method} ${url}`).toMatch(/CSRF/);
      const wrong = await ctx.app.inject({ method: method as 'POST', url, headers: { cookie: session.cookie, 'x-csrf-token': 'x'.repeat(43) }, payload: {} });
      expectError(wrong, 403, 'FORBIDDEN');
    }
    // With the token, the same request goes through to the route.
    const created = await ctx.app.inject({
      method: 'POST',
      url: '/dashboard/api/contacts',
      headers: as(session),
      payload: { name: 'Ana', phoneNumber: randomPhone() },
    });
    expect(created.statusCode, created.body).toBe(201);
  });

  it("another session's CSRF token does not do", async () => {
    const one = await login((await createTenant(ctx)).email);
    const two = await login((await createTenant(ctx)).email);
    const response = await ctx.app.inject({ method: 'POST', url: '/dashboard/api/devices', headers: { cookie: one.cookie, 'x-csrf-token': two.csrf }, payload: { name: 'x' } });
    expectError(response, 403, 'FORBIDDEN');
  });

  it('requests a browser marks as cross-site are refused, log-in included', async () => {
    const tenant = await createTenant(ctx);
    const session = await login(tenant.email);
    const crossSite = await ctx.app.inject({ method: 'POST', url: '/dashboard/api/devices', headers: { ...as(session), 'sec-fetch-site': 'cross-site' }, payload: { name: 'x' } });
    expectError(crossSite, 403, 'FORBIDDEN');
    const foreignOrigin = await ctx.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      headers: { origin: 'https://evil.example' },
      payload: { email: tenant.email, password: 'correct horse battery' },
    });
    expectError(foreignOrigin, 403, 'FORBIDDEN');
    const sameOrigin = await ctx.app.inject({
      method: 'POST',
      url: '/dashboard/api/login',
      headers: { origin: 'http://localhost:80', host: 'localhost:80' },
      payload: { email: tenant.email, password: 'correct horse battery' },
    });
    expect(sameOrigin.statusCode, sameOrigin.body).toBe(200);
  });

  it('log-out ends the session on the server', async () => {
    const session = await login((await createTenant(ctx)).email);
    const out = await ctx.app.inject({ method: 'POST', url: '/dashboard/api/logout', headers: as(session) });
    expect(out.statusCode).toBe(200);
    expect(String(out.headers['set-cookie'])).toMatch(/waygate_session=;/);
    expectError(await ctx.app.inject({ method: 'GET', url: '/dashboard/api/devices', headers: as(session) }), 401, 'UNAUTHORIZED');
  });
});

describe("another account's ids", () => {
  it('are not reachable through the dashboard routes (404, as in the public API)', async () => {
    const owner = await createTenant(ctx);
    const contact = (await ctx.app.inject({ method: 'POST', url: '/contacts', headers: owner.headers, payload: { name: 'Private', phoneNumber: randomPhone() } })).json().data;
    const group = (await ctx.app.inject({ method: 'POST', url: '/groups', headers: owner.headers, payload: { name: 'Private group' } })).json().data;
    const device = (await ctx.app.inject({ method: 'POST', url: '/devices', headers: owner.headers, payload: { name: 'Private phone' } })).json().data;
    const webhook = (
      await ctx.app.inject({ method: 'POST', url: '/webhooks', headers: owner.headers, payload: { url: 'http://127.0.0.1:9/hook' } })
    ).json().data;
    const token = (await ctx.app.inject({ method: 'GET', url: '/tokens', headers: owner.headers })).json().data[0];

    const intruder = await login((await createTenant(ctx)).email);
    const attempts: Array<{ method: 'GET' | 'PATCH' | 'DELETE' | 'POST'; url: string; payload?: object }> = [
      { method: 'GET', url: `/dashboard/api/contacts/${contact.id}` },
      { method: 'PATCH', url: `/dashboard/api/contacts/${contact.id}`, payload: { name: 'Mine now' } },
      { method: 'DELETE', url: `/dashboard/api/contacts/${contact.id}` },
      { method: 'GET', url: `/dashboard/api/groups/${group.id}` },
      { method: 'GET', url: `/dashboard/api/groups/${group.id}/contacts` },
      { method: 'POST', url: `/dashboard/api/groups/${group.id}/contacts`, payload: { contactIds: [contact.id] } },
      { method: 'GET', url: `/dashboard/api/devices/${device.id}` },
      { method: 'GET', url: `/dashboard/api/devices/${device.id}/qr` },
      { method: 'DELETE', url: `/dashboard/api/devices/${device.id}` },
      { method: 'GET', url: `/dashboard/api/webhooks/${webhook.id}/secret` },
      { method: 'POST', url: `/dashboard/api/webhooks/${webhook.id}/test` },
      { method: 'GET', url: `/dashboard/api/webhooks/${webhook.id}/deliveries` },
      { method: 'DELETE', url: `/dashboard/api/tokens/${token.id}` },
    ];
    for (const attempt of attempts) {
      const response = await ctx.app.inject({ ...attempt, headers: as(intruder) });
      expectError(response, 404, 'NOT_FOUND');
    }
    // Listings show only the session's own account.
    const contacts = (await ctx.app.inject({ method: 'GET', url: '/dashboard/api/contacts', headers: as(intruder) })).json();
    expect(contacts.data.map((c: { id: string }) => c.id)).not.toContain(contact.id);
    // And nothing was changed: the owner still has the contact and the token works.
    expect((await ctx.app.inject({ method: 'GET', url: `/contacts/${contact.id}`, headers: owner.headers })).json().data.name).toBe('Private');
  });
});

describe('the live stream', () => {
  it("carries the session account's device changes, never another account's", async () => {
    const address = await ctx.app.listen({ port: 0, host: '127.0.0.1' });
    const mine = await createTenant(ctx);
    const other = await createTenant(ctx);
    const session = await login(mine.email);
    const device = async (accountId: string, name: string): Promise<string> => {
      const id = `dev_${randomPhone()}`;
      await ctx.database.query('INSERT INTO devices (id, account_id, name) VALUES ($1, $2, $3)', [id, accountId, name]);
      return id;
    };
    const myDevice = await device(mine.accountId, 'Mine');
    const theirDevice = await device(other.accountId, 'Theirs');

    const abort = new AbortController();
    const response = await fetch(`${address}/dashboard/api/stream`, { headers: { cookie: session.cookie }, signal: abort.signal });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const readUntil = async (pattern: RegExp): Promise<void> => {
      const deadline = Date.now() + 10_000;
      while (!pattern.test(text)) {
        if (Date.now() > deadline) throw new Error(`no ${pattern} in the stream: ${text}`);
        const { value, done } = await reader.read();
        if (done) throw new Error(`the stream ended: ${text}`);
        text += value;
      }
    };
    try {
      await readUntil(/event: ready/);
      // The other account's change first: if it were sent, it would come before ours.
      await ctx.services.bus.publish('waygate_devices', `status:${theirDevice}`);
      await ctx.services.bus.publish('waygate_devices', `status:${myDevice}`);
      await readUntil(new RegExp(`event: device\\ndata: .*"${myDevice}"`));
      expect(text).not.toContain(theirDevice);
      expect(text).not.toContain('Theirs');
      const event = JSON.parse(/event: device\ndata: (.*)\n/.exec(text)![1]!) as { kind: string; device: { id: string; name: string; status: string } };
      expect(event).toMatchObject({ kind: 'status', device: { id: myDevice, name: 'Mine', status: 'PENDING' } });
    } finally {
      abort.abort();
      await reader.cancel().catch(() => undefined);
    }
  });
});

describe('log-in', () => {
  it('says the same for an unknown email and a wrong password', async () => {
    const tenant = await createTenant(ctx);
    const unknown = expectError(await ctx.app.inject({ method: 'POST', url: '/dashboard/api/login', payload: { email: 'nobody@example.test', password: 'whatever1' } }), 401, 'UNAUTHORIZED');
    const wrong = expectError(await ctx.app.inject({ method: 'POST', url: '/dashboard/api/login', payload: { email: tenant.email, password: 'whatever1' } }), 401, 'UNAUTHORIZED');
    expect(unknown.error.message).toBe(wrong.error.message);
  });

  it('is rate limited after 5 failures for one email, even with the right password, with Retry-After', async () => {
    const tenant = await createTenant(ctx);
    for (let attempt = 0; attempt < 5; attempt++) {
      expectError(await ctx.app.inject({ method: 'POST', url: '/dashboard/api/login', payload: { email: tenant.email, password: `wrong-${attempt}` } }), 401, 'UNAUTHORIZED');
    }
    const limited = await ctx.app.inject({ method: 'POST', url: '/dashboard/api/login', payload: { email: tenant.email, password: 'correct horse battery' } });
    expectError(limited, 429, 'RATE_LIMITED');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Another user is not locked out by it.
    await login((await createTenant(ctx)).email);
  });

  it('validates its body in the error envelope', async () => {
    const response = await ctx.app.inject({ method: 'POST', url: '/dashboard/api/login', payload: { email: 'a@example.test' } });
    const body = expectError(response, 400, 'VALIDATION_ERROR');
    expect(body.error.details).toEqual([{ field: 'password', message: 'is required' }]);
  });
});

describe('the built app', () => {
  it('serves index.html without caching and assets as immutable', async () => {
    // Built here if no build is there yet, so this never passes by having nothing to check.
    await ensureDashboardBuilt();
    const session = await login((await createTenant(ctx)).email);
    const page = await ctx.app.inject({ method: 'GET', url: '/dashboard/devices', headers: { cookie: session.cookie } });
    expect(page.statusCode).toBe(200);
    expect(page.headers['cache-control']).toBe('no-cache');
    expect(page.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
    const asset = /src="\/dashboard\/(assets\/[^"]+\.js)"/.exec(page.body)?.[1];
    expect(asset).toBeDefined();
    const file = await ctx.app.inject({ method: 'GET', url: `/dashboard/${asset}` });
    expect(file.statusCode).toBe(200);
    expect(file.headers['cache-control']).toMatch(/immutable/);
    expect((await ctx.app.inject({ method: 'GET', url: '/dashboard/assets/nope-123.js' })).statusCode).toBe(404);
    expectError(await ctx.app.inject({ method: 'GET', url: '/dashboard/api/nope' }), 404, 'NOT_FOUND');
  }, 180_000);
});
