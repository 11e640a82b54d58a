/**
 * The Send page's numbers, checked as they are typed by the server's own rule
 * (src/platform/phone.ts: punctuation stripped, 7–15 digits, a country code, a possible length for
 * that country, by libphonenumber-js), but said in plain words and by line: "line 2: 12345 is too
 * short".
 */
import { validatePhoneNumberLength } from 'libphonenumber-js';
import { normalizePhone, type PhoneResult } from '../../src/platform/phone.js';

export interface NumberLine {
  /** 1-based line (or position, for numbers separated by commas on one line). */
  line: number;
  raw: string;
  digits: string;
  problem: string | null;
}

/** Why the server would refuse a number, in plain words; null when it takes it. */
export function numberProblem(raw: string): string | null {
  return problemInWords(normalizePhone(raw));
}

function problemInWords(result: PhoneResult): string | null {
  if (result.ok) return null;
  switch (result.problem) {
    case 'NO_DIGITS':
    case 'CHARACTERS':
      return 'has letters or symbols: use digits, spaces, + and -';
    case 'WHATSAPP_ID':
      return `is a WhatsApp id: write the number alone, +${result.digits}`;
    case 'TRUNK_PREFIX':
      return 'starts with 0: write it with the country code, e.g. +62 812…';
    case 'TOO_FEW_DIGITS':
      return 'is too short';
    case 'TOO_MANY_DIGITS':
      return 'is too long';
    case 'NOT_POSSIBLE':
      switch (validatePhoneNumberLength(`+${result.digits}`)) {
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
      const result = normalizePhone(raw);
      const { digits } = result;
      const problem = problemInWords(result);
      lines.push({ line: index + 1, raw, digits, problem });
      if (!problem && !seen.has(digits)) {
        seen.add(digits);
        unique.push(digits);
      }
    }
  });
  return { lines, unique };
}

/** The numbers typed that the server would refuse, said by line ("line 2: 12345 is too short; …"); undefined when none. */
export function lineProblems(lines: NumberLine[]): string | undefined {
  const bad = lines.filter((line) => line.problem);
  return bad.length > 0 ? bad.map((line) => `line ${line.line}: ${line.raw} ${line.problem}`).join('; ') : undefined;
}

/** "recipients[3]" in a server error → the line that number came from. */
export function lineOfRecipient(field: string, unique: string[], lines: NumberLine[]): number | undefined {
  const match = /^recipients\[(\d+)\]/.exec(field);
  if (!match) return undefined;
  const digits = unique[Number(match[1])];
  return lines.find((line) => line.digits === digits)?.line;
}
