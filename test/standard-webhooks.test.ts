/**
 * Webhook signing against the reference Standard Webhooks library: what Waygate signs, the
 * `standardwebhooks` package verifies, with one secret and with a rotated pair (either secret
 * alone verifies); a wrong secret, a changed body or a changed id does not.
 */
import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { newWebhookSecret, signPayload, verifyWebhook, WebhookVerificationError, webhookHeaders } from '../src/outbound/standard-webhooks.js';

const now = (): number => Math.floor(Date.now() / 1000);
const body = JSON.stringify({ type: 'message.status', timestamp: '2025-01-01T00:00:00.000Z', seq: 7, data: { id: 'msg_1', status: 'DELIVERED' } });

function verifies(secret: string, payload: string, headers: Record<string, string>): boolean {
  try {
    new Webhook(secret).verify(payload, headers);
    return true;
  } catch {
    return false;
  }
}

describe('secrets', () => {
  it('are whsec_ + base64 of 32 random bytes, different every time', () => {
    const secrets = new Set(Array.from({ length: 50 }, () => newWebhookSecret()));
    expect(secrets.size).toBe(50);
    for (const secret of secrets) {
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(secret.slice('whsec_'.length), 'base64')).toHaveLength(32);
    }
  });
});

describe('signPayload', () => {
  it('is v1, + base64 HMAC-SHA256 of "id.timestamp.body" keyed by the decoded secret', () => {
    const secret = newWebhookSecret();
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    const expected = createHmac('sha256', key).update(`whd_1.1700000000.${body}`).digest('base64');
    expect(signPayload(secret, 'whd_1', 1_700_000_000, body)).toBe(`v1,${expected}`);
  });

  it('matches the reference library for the specification example', () => {
    // The example of the Standard Webhooks reference implementations.
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const id = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
    const payload = '{"test": 2432232314}';
    const signature = signPayload(secret, id, 1614265330, payload);
    expect(signature).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
    expect(new Webhook(secret).sign(id, new Date(1614265330 * 1000), payload)).toBe(signature);
  });
});

describe('webhookHeaders', () => {
  it('gives the Standard Webhooks headers, which the reference library verifies', () => {
    const secret = newWebhookSecret();
    const timestamp = now();
    const headers = webhookHeaders({ id: 'whd_abc', timestamp, body, secrets: [secret] });
    expect(headers).toEqual({
      'webhook-id': 'whd_abc',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signPayload(secret, 'whd_abc', timestamp, body),
      'content-type': 'application/json',
    });
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  });

  it('accepts a Date as the timestamp (whole seconds)', () => {
    const secret = newWebhookSecret();
    const date = new Date();
    const headers = webhookHeaders({ id: 'whd_date', timestamp: date, body, secrets: [secret] });
    expect(headers['webhook-timestamp']).toBe(String(Math.floor(date.getTime() / 1000)));
    expect(verifies(secret, body, headers)).toBe(true);
  });

  it('signs with both secrets during a rotation: each one alone verifies', () => {
    const current = newWebhookSecret();
    const previous = newWebhookSecret();
    const headers = webhookHeaders({ id: 'whd_rot', timestamp: now(), body, secrets: [current, previous] });
    const signatures = headers['webhook-signature'].split(' ');
    expect(signatures).toHaveLength(2);
    for (const signature of signatures) expect(signature).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(verifies(current, body, headers)).toBe(true);
    expect(verifies(previous, body, headers)).toBe(true);
    expect(verifies(newWebhookSecret(), body, headers)).toBe(false);
    // Once the previous secret is dropped, only the current one verifies.
    const after = webhookHeaders({ id: 'whd_rot', timestamp: now(), body, secrets: [current] });
    expect(verifies(current, body, after)).toBe(true);
    expect(verifies(previous, body, after)).toBe(false);
  });

  it('signs a repeated secret once', () => {
    const secret = newWebhookSecret();
    const headers = webhookHeaders({ id: 'whd_dup', timestamp: now(), body, secrets: [secret, secret] });
    expect(headers['webhook-signature'].split(' ')).toHaveLength(1);
  });

  it('does not verify a changed body, id or timestamp', () => {
    const secret = newWebhookSecret();
    const headers = webhookHeaders({ id: 'whd_x', timestamp: now(), body, secrets: [secret] });
    expect(verifies(secret, body.replace('DELIVERED', 'READ'), headers)).toBe(false);
    expect(verifies(secret, body, { ...headers, 'webhook-id': 'whd_y' })).toBe(false);
    expect(verifies(secret, body, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) })).toBe(false);
  });

  it('is refused by the reference library when the timestamp is too old (replay protection lives in the receiver)', () => {
    const secret = newWebhookSecret();
    const headers = webhookHeaders({ id: 'whd_old', timestamp: now() - 3600, body, secrets: [secret] });
    expect(verifies(secret, body, headers)).toBe(false);
  });

  it('refuses to sign without a secret or with a fractional timestamp', () => {
    expect(() => webhookHeaders({ id: 'whd_none', timestamp: now(), body, secrets: [] })).toThrow(/secret/);
    expect(() => signPayload(newWebhookSecret(), 'whd_f', 1.5, body)).toThrow(/integer/);
  });
});

describe('verifyWebhook', () => {
  it('accepts what the reference library signs, under either secret of a rotation, and refuses the rest', () => {
    const secret = newWebhookSecret();
    const previous = newWebhookSecret();
    const at = new Date();
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign('evt_1', at, body) };
    expect(() => verifyWebhook({ secret, headers, body })).not.toThrow();
    expect(() => verifyWebhook({ secret: [previous, secret], headers: new Headers(headers), body })).not.toThrow();
    const rotated = webhookHeaders({ id: 'evt_2', timestamp: at, body, secrets: [secret, previous] });
    expect(() => verifyWebhook({ secret: previous, headers: rotated, body })).not.toThrow();
    expect(() => verifyWebhook({ secret: previous, headers, body })).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook({ secret, headers, body: `${body} ` })).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook({ secret, headers: { ...headers, 'webhook-id': 'evt_9' }, body })).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook({ secret, headers, body, now: new Date(at.getTime() + 6 * 60_000) })).toThrow(/too far/);
    expect(() => verifyWebhook({ secret, headers: { ...headers, 'webhook-timestamp': '1e9' }, body })).toThrow(/Invalid/);
  });
});
