/**
 * What text the service stores: the one definition of the characters it refuses. PostgreSQL
 * cannot store NUL in text, and its jsonb refuses unpaired surrogates; the other control
 * characters have no place in anything a user types, except tab and line breaks in free text.
 */

export const CONTROL_CHARACTERS_MESSAGE = 'must not contain control characters';
export const UNPAIRED_SURROGATE_MESSAGE = 'must not contain unpaired UTF-16 surrogates';

/** C0 control characters and DEL: none may appear in a one-line value (a name, a search). */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

/** C0 controls except tab, line feed and carriage return, DEL, and C1 controls: refused in any text. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;

const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export function hasControlCharacters(text: string): boolean {
  return CONTROL_CHARACTERS.test(text);
}

/** The text with its control characters (as hasControlCharacters finds them) removed. */
export function withoutControlCharacters(text: string): string {
  return text.replace(new RegExp(CONTROL_CHARACTERS.source, 'g'), '');
}

/** Why no text anywhere may hold this string, or undefined when it may. */
export function unsafeTextProblem(text: string): string | undefined {
  if (CONTROL_IN_TEXT.test(text)) return CONTROL_CHARACTERS_MESSAGE;
  if (UNPAIRED_SURROGATE.test(text)) return UNPAIRED_SURROGATE_MESSAGE;
  return undefined;
}
