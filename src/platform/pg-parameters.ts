/**
 * Query parameters for node-postgres, in the text it would send itself, built with less garbage
 * for the two kinds that batch statements pass by the thousand: arrays of scalars (ids, network
 * ids, counts) and Dates. node-postgres (lib/utils.js) builds an array's literal with a string
 * concatenation, two regular-expression replaces and a quoted copy per element, and each Date
 * from twelve padded parts in local time. Anything else, and a Date outside the years 1–9999
 * (which toISOString writes in a form PostgreSQL does not read), is left to node-postgres.
 *
 * A Date is written in UTC ("2026-12-06T17:09:20.006Z"): the same instant node-postgres writes
 * with the local offset. Every timestamp parameter of Waygate is a timestamptz, for which the
 * two are equal.
 */

const YEAR_1 = new Date(0).setUTCFullYear(1, 0, 1);
const YEAR_10000 = new Date(0).setUTCFullYear(10000, 0, 1);

/** The second whose "YYYY-MM-DDTHH:MM:SS." was written last: dates of one batch mostly share it. */
let lastSecond = Number.NaN;
let lastSecondText = '';

/** `date` as toISOString writes it, for a date within the years 1–9999; undefined otherwise. */
export function isoTimestamp(date: Date): string | undefined {
  const time = date.getTime();
  if (!(time >= YEAR_1 && time < YEAR_10000)) return undefined;
  const millis = ((time % 1000) + 1000) % 1000;
  const second = time - millis;
  if (second !== lastSecond) {
    lastSecondText = new Date(second).toISOString().slice(0, 20);
    lastSecond = second;
  }
  return `${lastSecondText}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}

/** An array parameter's literal (`{"a","b\"c",NULL}`), or undefined when an element is not a string, number, boolean, null or such a Date. */
export function arrayLiteral(values: readonly unknown[]): string | undefined {
  const elements = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) {
    const value = values[i];
    if (value === null || value === undefined) elements[i] = 'NULL';
    else if (typeof value === 'string') elements[i] = value.includes('"') || value.includes('\\') ? `"${value.replace(/["\\]/g, '\\$&')}"` : `"${value}"`;
    else if (typeof value === 'number' || typeof value === 'boolean') elements[i] = `"${value}"`;
    else if (value instanceof Date) {
      const text = isoTimestamp(value);
      if (text === undefined) return undefined;
      elements[i] = `"${text}"`;
    } else return undefined;
  }
  return `{${elements.join(',')}}`;
}

/** `params` with each array of scalars and each Date in its text form; other values as they are. */
export function encodeParameters(params: readonly unknown[]): unknown[] {
  const encoded = new Array<unknown>(params.length);
  for (let i = 0; i < params.length; i++) {
    const value = params[i];
    encoded[i] = Array.isArray(value) ? (arrayLiteral(value) ?? value) : value instanceof Date ? (isoTimestamp(value) ?? value) : value;
  }
  return encoded;
}
