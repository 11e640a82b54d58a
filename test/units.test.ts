import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, parseDuration } from '../src/config.js';
import { isPossiblePhoneNumber } from 'libphonenumber-js';
import { lengthDecidedCallingCodes, normalizePhone, phoneSearchDigits } from '../src/platform/phone.js';
import { numberProblem } from '../dashboard/src/recipients.js';
import { hashPassword, verifyPassword } from '../src/directory/passwords.js';
import { AppError, ERROR_STATUS, codeToStatus } from '../src/platform/errors.js';
import { deleteDecision, editContentProblem, editRefusal } from '../src/messaging/message-actions.js';
import { MESSAGE_WINDOWS } from '../src/network/network.js';
import { newId } from '../src/platform/ids.js';
import { redactUrl } from '../src/http/redact.js';
import { alongSchedule, CONNECT_BACKOFF_MS, doubling, jittered } from '../src/platform/backoff.js';
import { retryDelayMs } from '../src/messaging/message-queue.js';

describe('config', () => {
  it('has the documented defaults', () => {
    const config = loadConfig({});
    expect(config.port).toBe(3000);
    expect(config.network).toBe('sandbox');
    expect(config.databaseUrl).toBeUndefined();
    expect(config.dataDir).toMatch(/data$/);
    expect(config.sendWaitMs).toBe(10_000);
    expect(config.bulkDelayMs).toEqual({ min: 0, max: 0 });
    expect(config.leaseMs).toBe(15_000);
    expect(config.sandboxReceiptMs).toBe(1000);
    expect(config.webhookRetryScheduleMs).toEqual([0, 5000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(config.webhookTimeoutMs).toBe(15_000);
    expect(config.allowPrivateUrls).toBe(false);
    expect(config.bodyLimitBytes).toBe(5 * 1024 * 1024);
  });

  it('defaults bulk pacing to 1500-4000 ms on whatsapp', () => {
    expect(loadConfig({ NETWORK: 'whatsapp' }).bulkDelayMs).toEqual({ min: 1500, max: 4000 });
  });

  it('parses every documented form', () => {
    const config = loadConfig({
      PORT: '8080',
      BULK_DELAY_MS: '100-200',
      WEBHOOK_RETRY_SCHEDULE: '0,500ms,5s,5m,2h',
      WEBHOOK_TIMEOUT_MS: '2000',
      ALLOW_PRIVATE_URLS: 'true',
      DATABASE_URL: 'postgres://u@h:5432/db',
      PUBLIC_URL: 'https://gw.example.com/',
    });
    expect(config.port).toBe(8080);
    expect(config.bulkDelayMs).toEqual({ min: 100, max: 200 });
    expect(config.webhookRetryScheduleMs).toEqual([0, 500, 5000, 300_000, 7_200_000]);
    expect(config.webhookTimeoutMs).toBe(2000);
    expect(config.allowPrivateUrls).toBe(true);
    expect(config.publicUrl).toBe('https://gw.example.com');
  });

  it('names every bad variable at once', () => {
    try {
      loadConfig({ PORT: 'eighty', NETWORK: 'telegram', BULK_DELAY_MS: '9-1', WEBHOOK_RETRY_SCHEDULE: '5x', ALLOW_PRIVATE_URLS: 'maybe', DATABASE_URL: 'mysql://x' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const message = (error as Error).message;
      for (const name of ['PORT', 'NETWORK', 'BULK_DELAY_MS', 'WEBHOOK_RETRY_SCHEDULE', 'ALLOW_PRIVATE_URLS', 'DATABASE_URL']) {
        expect(message).toContain(name);
      }
    }
  });

  it('parses durations', () => {
    expect(parseDuration('0')).toBe(0);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('10h')).toBe(36_000_000);
    expect(parseDuration('soon')).toBeUndefined();
  });
});

describe('errors', () => {
  it('maps every code to its documented status', () => {
    expect(codeToStatus('VALIDATION_ERROR')).toBe(400);
    expect(codeToStatus('UNAUTHORIZED')).toBe(401);
    expect(codeToStatus('QUOTA_EXCEEDED')).toBe(402);
    expect(codeToStatus('FORBIDDEN')).toBe(403);
    expect(codeToStatus('PLAN_LIMIT')).toBe(403);
    expect(codeToStatus('NOT_FOUND')).toBe(404);
    for (const code of ['CONFLICT', 'CONTACT_EXISTS', 'NO_CONNECTED_DEVICE', 'IDEMPOTENCY_KEY_REUSED', 'NOT_EDITABLE', 'NOT_DELETABLE'] as const) {
      expect(codeToStatus(code)).toBe(409);
    }
    expect(codeToStatus('PAYLOAD_TOO_LARGE')).toBe(413);
    expect(codeToStatus('RATE_LIMITED')).toBe(429);
    expect(codeToStatus('INTERNAL')).toBe(500);
    for (const status of Object.values(ERROR_STATUS)) expect(status).toBeGreaterThanOrEqual(400);
    expect(new AppError('CONTACT_EXISTS', 'x').statusCode).toBe(409);
  });
});

describe('edit and delete windows (message-actions.ts)', () => {
  const sentAt = new Date('2026-01-01T10:00:00.000Z');
  const sent = { direction: 'out' as const, type: 'TEXT' as const, status: 'DELIVERED' as const, sent_at: sentAt, received_at: null };
  const at = (ms: number): Date => new Date(sentAt.getTime() + ms);

  it('an edit is allowed up to exactly 15 minutes after sentAt, a delete up to 48 hours, for the sender only', () => {
    expect(editRefusal(sent, 'account', at(MESSAGE_WINDOWS.editMs))).toBeUndefined();
    expect(editRefusal(sent, 'account', at(MESSAGE_WINDOWS.editMs + 1))).toMatch(/15 minutes/);
    expect(deleteDecision(sent, 'account', at(MESSAGE_WINDOWS.deleteMs))).toEqual({ kind: 'revoke' });
    expect(deleteDecision(sent, 'account', at(MESSAGE_WINDOWS.deleteMs + 1))).toMatchObject({ kind: 'refuse', reason: expect.stringMatching(/48 hours/) });
    const theirs = { ...sent, direction: 'in' as const, status: 'RECEIVED' as const, sent_at: null, received_at: sentAt };
    expect(editRefusal(theirs, 'other side', at(1000))).toBeUndefined();
    expect(editRefusal(theirs, 'account', at(1000))).toMatch(/account sent/);
    expect(editRefusal(sent, 'other side', at(1000))).toMatch(/other side/);
  });

  it('types, states and deletes decide before the window', () => {
    expect(editRefusal({ ...sent, type: 'POLL' }, 'account', at(0))).toMatch(/POLL/);
    expect(editRefusal({ ...sent, type: 'IMAGE' }, 'account', at(0))).toBeUndefined();
    expect(editRefusal({ ...sent, deleted_at: at(1) }, 'account', at(2))).toMatch(/deleted/);
    expect(editRefusal({ ...sent, status: 'QUEUED', sent_at: null }, 'account', at(0))).toMatch(/cancel it/);
    expect(deleteDecision({ ...sent, status: 'SCHEDULED', sent_at: null }, 'account', at(0))).toEqual({ kind: 'cancel' });
    expect(deleteDecision({ ...sent, status: 'SENDING', sent_at: null }, 'account', at(0))).toMatchObject({ kind: 'refuse', reason: expect.stringMatching(/try again/) });
    expect(deleteDecision({ ...sent, deleted_at: at(1) }, 'account', at(2))).toEqual({ kind: 'already' });
    expect(editContentProblem('TEXT', ' ')).toBe('must not be empty');
    expect(editContentProblem('IMAGE', 'x'.repeat(1025))).toMatch(/1024/);
    expect(editContentProblem('TEXT', 'x'.repeat(1025))).toBeUndefined();
  });
});

describe('backoff (platform/backoff.ts)', () => {
  it('walks a schedule by failures in a row, repeating its last wait', () => {
    expect([0, 1, 2, 6, 7, 100].map((n) => alongSchedule(CONNECT_BACKOFF_MS, n))).toEqual([1_000, 1_000, 2_000, 60_000, 60_000, 60_000]);
    expect(alongSchedule([5, 15], 3)).toBe(15);
  });

  it('doubles from the first wait up to the cap', () => {
    expect([1, 2, 3, 4].map((attempt) => doubling(attempt, 1_000, 300_000))).toEqual([1_000, 2_000, 4_000, 8_000]);
    expect(doubling(10, 1_000, 300_000)).toBe(300_000);
    expect(doubling(0, 1_000, 300_000)).toBe(1_000);
  });

  it('spreads a wait over ±20% by default, and a message retry is 1 s doubling, capped at 5 min, spread so', () => {
    const spread = Array.from({ length: 2_000 }, () => jittered(10_000));
    expect(Math.min(...spread)).toBeGreaterThanOrEqual(8_000);
    expect(Math.max(...spread)).toBeLessThanOrEqual(12_000);
    // Not one value: 2,000 draws all equal would mean no spread at all.
    expect(new Set(spread).size).toBeGreaterThan(100);
    for (let i = 0; i < 200; i++) {
      expect(retryDelayMs(3)).toBeGreaterThanOrEqual(3_200);
      expect(retryDelayMs(3)).toBeLessThanOrEqual(4_800);
      expect(retryDelayMs(20)).toBeLessThanOrEqual(360_000);
      expect(jittered(1_000, 0)).toBe(1_000);
    }
  });
});

describe('phone numbers', () => {
  it('strips punctuation to E.164 digits', () => {
    expect(normalizePhone('+62 (812) 3456-7890')).toEqual({ ok: true, digits: '6281234567890' });
    expect(normalizePhone('1.415.555.0123')).toEqual({ ok: true, digits: '14155550123' });
  });

  it('refuses what cannot be a number', () => {
    for (const bad of ['', 'abc', '+1 415 CALL NOW', '123456', '1234567890123456', '0812345678', '+999 1234 5678']) {
      expect(normalizePhone(bad).ok, bad).toBe(false);
    }
    expect(normalizePhone('abc')).toMatchObject({ problem: 'CHARACTERS', message: 'may contain only digits, spaces, +, -, . and parentheses' });
  });

  it('refuses a WhatsApp user id, naming the number in it', () => {
    for (const id of ['6281234567890@s.whatsapp.net', '6281234567890@c.us', '+6281234567890@c.us', ' 6281234567890:12@s.whatsapp.net']) {
      expect(normalizePhone(id), id).toMatchObject({ ok: false, problem: 'WHATSAPP_ID', digits: '6281234567890', message: 'is a WhatsApp id, not a phone number: give the number alone (6281234567890)' });
    }
  });

  it("accepts exactly the numbers libphonenumber's isPossiblePhoneNumber does", () => {
    // A national prefix after the country code (+40 0…), countries sharing a code (+599, +290), and
    // 20,000 digit strings of every length from a fixed seed.
    const samples = ['400088978293', '59933533086', '29080671', '6281234567890', '14155550123', '447911123456', '8613800138000'];
    let seed = 42;
    const next = (n: number): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) % n;
    for (let i = 0; i < 20_000; i++) {
      let digits = String(1 + next(9));
      for (let length = 7 + next(9); digits.length < length; ) digits += String(next(10));
      samples.push(digits);
    }
    const differing = samples.filter((digits) => normalizePhone(digits).ok !== isPossiblePhoneNumber(`+${digits}`));
    expect(differing).toEqual([]);
  });

  it('answers by length only where the length decides, over every calling code and length', () => {
    // normalizePhone asks the library once per (calling code, national length) where the code has
    // one country and its national prefix pattern does not match: these samples put national
    // prefixes and their look-alikes right after every known code, at every length. Two numbers of
    // one key that the library answers differently would leave one of them differing here.
    expect(lengthDecidedCallingCodes()).toBeGreaterThan(150);
    let seed = 7;
    const next = (n: number): number => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) >>> 8) % n;
    const starts = ['0', '1', '8', '9', '00', '01', '07', '80', '', '', '', ''];
    const samples: string[] = [];
    for (let code = 1; code <= 999; code++) {
      for (let length = 7; length <= 15; length++) {
        for (const start of starts) {
          let digits = `${code}${start}`;
          while (digits.length < length) digits += String(next(10));
          if (digits.length === length) samples.push(digits);
        }
      }
    }
    expect(samples.length).toBeGreaterThan(100_000);
    const differing = samples.filter((digits) => normalizePhone(digits).ok !== isPossiblePhoneNumber(`+${digits}`));
    expect(differing).toEqual([]);
  });

  it("words the server's refusals on the dashboard's Send page, and refuses nothing else", () => {
    const words: Record<string, string | null> = {
      '+62 812-3456-7890': null,
      '+': 'has letters or symbols: use digits, spaces, + and -',
      '+62 812 CALL': 'has letters or symbols: use digits, spaces, + and -',
      '12345': 'is too short',
      '1234567890123456': 'is too long',
      '0812 3456 7890': 'starts with 0: write it with the country code, e.g. +62 812…',
      '+999 1234 5678': 'does not start with a known country code',
      '+1 234 567': 'is too short for its country',
      '6281234567890@c.us': 'is a WhatsApp id: write the number alone, +6281234567890',
    };
    for (const [raw, expected] of Object.entries(words)) expect(numberProblem(raw), raw).toBe(expected);
    for (const raw of ['+44 7911 123456', '+1 415 555 0123', '+40 0088 978 293', '+7 123', '+290 8067 1']) {
      expect(numberProblem(raw) === null, raw).toBe(normalizePhone(raw).ok);
    }
  });

  it('reads phone-like searches as digits', () => {
    expect(phoneSearchDigits('+62 812')).toBe('62812');
    expect(phoneSearchDigits('ann')).toBeUndefined();
  });
});

describe('small parts', () => {
  it('hashes passwords with scrypt and verifies them', async () => {
    const hash = await hashPassword('correct horse');
    expect(hash).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(await verifyPassword('correct horse', hash)).toBe(true);
    expect(await verifyPassword('wrong horse', hash)).toBe(false);
  });

  it('makes prefixed, time-sortable ids', () => {
    const a = newId('ct');
    const b = newId('ct');
    expect(a).toMatch(/^ct_[0-9a-z]{26}$/);
    expect(a < b).toBe(true);
  });

  it('redacts tokens from URLs', () => {
    expect(redactUrl('/contacts?token=wg_secret&page=2')).toBe('/contacts?token=[REDACTED]&page=2');
    expect(redactUrl('/contacts?page=2&TOKEN=wg_secret')).toBe('/contacts?page=2&TOKEN=[REDACTED]');
  });
});
