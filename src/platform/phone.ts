/**
 * Phone numbers are stored as E.164 digits without '+' ("6281234567890"). Input may carry '+',
 * spaces, dashes, dots and parentheses, which are stripped; the rest must be 7–15 digits that
 * libphonenumber-js accepts as a possible number (a known country code, a plausible length).
 */
import { parsePhoneNumberWithError } from 'libphonenumber-js';

export type PhoneResult = { ok: true; digits: string } | { ok: false; message: string };

const PUNCTUATION = /[\s\-.()+]/g;

export function normalizePhone(input: string): PhoneResult {
  const digits = input.replace(PUNCTUATION, '');
  if (digits.length === 0) return { ok: false, message: 'must contain digits' };
  if (!/^\d+$/.test(digits)) {
    return { ok: false, message: 'may contain only digits, spaces, +, -, . and parentheses' };
  }
  if (digits.length < 7 || digits.length > 15) {
    return { ok: false, message: `must have 7 to 15 digits in E.164 form (got ${digits.length})` };
  }
  if (digits.startsWith('0')) {
    return { ok: false, message: 'must start with the country code (E.164), not a 0 trunk prefix' };
  }
  if (!isPossible(`+${digits}`)) {
    return { ok: false, message: 'is not a possible phone number for its country code' };
  }
  return { ok: true, digits };
}

/**
 * libphonenumber's isPossiblePhoneNumber without its wrapper, which copies its options twice a
 * call through the slow object-spread helper of the library's build: the same parse and
 * isPossible(). test/units.test.ts keeps the two equal.
 */
function isPossible(e164: string): boolean {
  try {
    return parsePhoneNumberWithError(e164, { extract: false }).isPossible();
  } catch {
    return false;
  }
}

/** The digits of a search string, when it reads like a phone number fragment ("+62 812"). */
export function phoneSearchDigits(search: string): string | undefined {
  if (!/^[\d\s\-.()+]+$/.test(search)) return undefined;
  const digits = search.replace(PUNCTUATION, '');
  return digits.length > 0 ? digits : undefined;
}
