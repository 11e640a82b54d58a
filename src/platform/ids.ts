/**
 * Opaque ids: a type prefix and a ULID body (48-bit millisecond time + 80 random bits, Crockford
 * base32), so ids sort by creation time and never collide across processes.
 */
import { monotonicFactory } from 'ulid';

const ulid = monotonicFactory();

export type IdPrefix = 'acc' | 'usr' | 'tok' | 'dev' | 'ct' | 'grp' | 'msg' | 'job' | 'wh' | 'evt' | 'whd' | 'req';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}
