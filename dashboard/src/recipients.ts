/**
 * The Send page's numbers, checked as they are typed with libphonenumber-js, by the rule the
 * server applies (src/platform/phone.ts: punctuation stripped, 7–15 digits, a country code, a
 * possible length for that country), but said in plain words and by line: "line 2: 12345 is too
 * short".
 */
import { isPossiblePhoneNumber, validatePhoneNumberLength } from 'libphonenumber-js';

export interface NumberLine {
  /** 1-based line (or position, for numbers separated by commas on one line). */
  line: number;
  raw: string;
  digits: string;
  problem: string | null;
}

const PUNCTUATION = /[\s\-.()+]/g;

/** Why a number would be refused, in plain words; null when it is fine. */
export function numberProblem(raw: string): string | null {
  const digits = raw.replace(PUNCTUATION, '');
  if (!/^\d+$/.test(digits)) return 'has letters or symbols: use digits, spaces, + and -';
  if (digits.startsWith('0')) return 'starts with 0: write it with the country code, e.g. +62 812…';
  if (digits.length < 7) return 'is too short';
  if (digits.length > 15) return 'is too long';
  if (isPossiblePhoneNumber(`+${digits}`)) return null;
  switch (validatePhoneNumberLength(`+${digits}`)) {
    case 'INVALID_COUNTRY':
      return 'does not start with a known country code';
    case 'TOO_SHORT':
      return 'is too short for its country';
    case 'TOO_LONG':
      return 'is too long for its country';
    default:
      return 'is not a possible number for its country';
  }
}

/**
 * The numbers typed, one per line (commas and semicolons also separate): each with its line and
 * its problem, if any. A number given twice counts once (the server removes repeats too).
 */
export function readNumbers(text: string): { lines: NumberLine[]; unique: string[] } {
  const lines: NumberLine[] = [];
  const seen = new Set<string>();
  const unique: string[] = [];
  text.split('\n').forEach((row, index) => {
    for (const part of row.split(/[,;]+/)) {
      const raw = part.trim();
      if (!raw) continue;
      const problem = numberProblem(raw);
      const digits = raw.replace(PUNCTUATION, '');
      lines.push({ line: index + 1, raw, digits, problem });
      if (!problem && !seen.has(digits)) {
        seen.add(digits);
        unique.push(digits);
      }
    }
  });
  return { lines, unique };
}

/** "recipients[3]" in a server error → the line that number came from. */
export function lineOfRecipient(field: string, unique: string[], lines: NumberLine[]): number | undefined {
  const match = /^recipients\[(\d+)\]/.exec(field);
  if (!match) return undefined;
  const digits = unique[Number(match[1])];
  return lines.find((line) => line.digits === digits)?.line;
}
