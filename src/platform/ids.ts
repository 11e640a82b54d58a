/**
 * Opaque ids: a type prefix and a ULID body (48-bit millisecond time + 80 random bits, Crockford
 * base32), so ids sort by creation time and never collide across processes.
 */
import { encodeTime, monotonicFactory } from 'ulid';

const ulid = monotonicFactory();

export type IdPrefix = 'acc' | 'usr' | 'tok' | 'dev' | 'ct' | 'grp' | 'msg' | 'job' | 'wh' | 'evt' | 'whd' | 'req';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

/** The smallest id of this type that newId could make at or after `at` (its random part all zeros). */
export function firstIdAt(prefix: IdPrefix, at: Date): string {
  return `${prefix}_${encodeTime(at.getTime(), 10).toLowerCase()}${'0'.repeat(16)}`;
}
