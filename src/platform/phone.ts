/**
 * Phone numbers are stored as E.164 digits without '+' ("6281234567890"). Input may carry '+',
 * spaces, dashes, dots and parentheses, which are stripped; the rest must be 7–15 digits that
 * libphonenumber-js accepts as a possible number (a known country code, a plausible length).
 * The API and the dashboard's Send page both judge numbers here; the page words the reason.
 */
import { Metadata, parsePhoneNumberWithError } from 'libphonenumber-js';

/** Why a number is refused, in the order the checks run. */
export type PhoneProblem = 'NO_DIGITS' | 'CHARACTERS' | 'WHATSAPP_ID' | 'TOO_FEW_DIGITS' | 'TOO_MANY_DIGITS' | 'TRUNK_PREFIX' | 'NOT_POSSIBLE';

export type PhoneResult = { ok: true; digits: string } | { ok: false; problem: PhoneProblem; digits: string; message: string };

const PUNCTUATION = /[\s\-.()+]/g;
/** A WhatsApp user id (Baileys' `<digits>@s.whatsapp.net`, WAHA's `<digits>@c.us`), perhaps of one device (`:<n>`). */
const WHATSAPP_USER_ID = /^\+?(\d+)(?::\d+)?@(?:s\.whatsapp\.net|c\.us)$/;

export function normalizePhone(input: string): PhoneResult {
  const digits = input.replace(PUNCTUATION, '');
  if (digits.length === 0) return { ok: false, problem: 'NO_DIGITS', digits, message: 'must contain digits' };
  if (!/^\d+$/.test(digits)) {
    const user = WHATSAPP_USER_ID.exec(input.trim());
    if (user) return { ok: false, problem: 'WHATSAPP_ID', digits: user[1]!, message: `is a WhatsApp id, not a phone number: give the number alone (${user[1]})` };
    return { ok: false, problem: 'CHARACTERS', digits, message: 'may contain only digits, spaces, +, -, . and parentheses' };
  }
  if (digits.length < 7 || digits.length > 15) {
    const problem = digits.length < 7 ? 'TOO_FEW_DIGITS' : 'TOO_MANY_DIGITS';
    return { ok: false, problem, digits, message: `must have 7 to 15 digits in E.164 form (got ${digits.length})` };
  }
  if (digits.startsWith('0')) {
    return { ok: false, problem: 'TRUNK_PREFIX', digits, message: 'must start with the country code (E.164), not a 0 trunk prefix' };
  }
  if (!isPossible(digits)) {
    return { ok: false, problem: 'NOT_POSSIBLE', digits, message: 'is not a possible phone number for its country code' };
  }
  return { ok: true, digits };
}

/**
 * libphonenumber's isPossiblePhoneNumber of `+<digits>`, asked of the library once per calling code
 * and national number length where that pair decides the answer (a parse costs microseconds, and
 * a bulk job checks up to 100,000 numbers while its request waits). For `+` followed by digits,
 * the library's parse and isPossible() read the digits in three places only: the calling code
 * (the shortest known prefix of 1–3 digits), the national prefix for parsing (a pattern of the
 * code's numbering plan, stripped when it matches the national number's start), and, where
 * several countries share the code, the country its national number belongs to. When the code has
 * one country and its prefix pattern does not match, what is left is checkNumberLength against
 * that plan's possible lengths, a function of the length alone. Every other number goes to the
 * library. test/units.test.ts holds the two equal over every calling code and length.
 */
function isPossible(digits: string): boolean {
  const plans = lengthPlans();
  for (let size = 1; size <= 3; size++) {
    const code = digits.slice(0, size);
    const plan = plans.get(code);
    if (plan === undefined) continue;
    if (plan === null) break;
    const national = digits.slice(size);
    if (plan.prefix?.test(national)) break;
    let verdict = plan.byLength[national.length];
    if (verdict === undefined) verdict = plan.byLength[national.length] = libraryIsPossible(digits);
    return verdict;
  }
  return libraryIsPossible(digits);
}

function libraryIsPossible(digits: string): boolean {
  try {
    return parsePhoneNumberWithError(`+${digits}`, { extract: false }).isPossible();
  } catch {
    return false;
  }
}

/** A calling code's memo: null where the code's answer needs the library each time. */
type LengthPlan = { prefix: RegExp | undefined; byLength: (boolean | undefined)[] } | null;

/** What isPossible reads of libphonenumber's Metadata: methods its build has and its types leave out. */
interface PlanMetadata {
  hasCallingCode(code: string): boolean;
  getCountryCodesForCallingCode(code: string): string[] | undefined;
  selectNumberingPlan(country: string): void;
  numberingPlan?: { nationalPrefixForParsing(): string | undefined };
}

let plans: Map<string, LengthPlan> | undefined;

/** Every calling code the library knows, keyed by its digits; built on first use. */
function lengthPlans(): Map<string, LengthPlan> {
  if (plans) return plans;
  plans = new Map();
  const metadata = new Metadata() as unknown as Partial<PlanMetadata>;
  if (typeof metadata.hasCallingCode !== 'function' || typeof metadata.getCountryCodesForCallingCode !== 'function') return plans;
  const known = metadata as PlanMetadata;
  for (let code = 1; code <= 999; code++) {
    const digits = String(code);
    if (!known.hasCallingCode(digits)) continue;
    const countries = known.getCountryCodesForCallingCode(digits);
    const country = countries?.length === 1 ? countries[0] : undefined;
    if (country === undefined || country === '001') {
      plans.set(digits, null);
      continue;
    }
    known.selectNumberingPlan(country);
    const reader = known.numberingPlan?.nationalPrefixForParsing;
    if (typeof reader !== 'function') {
      plans.set(digits, null);
      continue;
    }
    const pattern = reader.call(known.numberingPlan);
    plans.set(digits, { prefix: pattern ? new RegExp(`^(?:${pattern})`) : undefined, byLength: [] });
  }
  return plans;
}

/** How many calling codes isPossible answers by length (the others always ask the library). */
export function lengthDecidedCallingCodes(): number {
  return [...lengthPlans().values()].filter((plan) => plan !== null).length;
}

/** The digits of a search string, when it reads like a phone number fragment ("+62 812"). */
export function phoneSearchDigits(search: string): string | undefined {
  if (!/^[\d\s\-.()+]+$/.test(search)) return undefined;
  const digits = search.replace(PUNCTUATION, '');
  return digits.length > 0 ? digits : undefined;
}
