/**
 * Opaque ids: a type prefix and a ULID body (48-bit millisecond time + 80 random bits, Crockford
 * base32), so ids sort by creation time and never collide across processes.
 */
import { randomFillSync } from 'node:crypto';
import { encodeTime, monotonicFactory } from 'ulid';

/**
 * ULID's random characters from a pool of crypto-random bytes, refilled 4 KiB at a time: one
 * system call per 4,096 characters instead of one per character. A byte's top 5 bits pick one of
 * the 32 characters (byte / 256 * 32), each equally likely.
 */
const pool = Buffer.alloc(4096);
let next = pool.length;
function pooledRandom(): number {
  if (next === pool.length) {
    randomFillSync(pool);
    next = 0;
  }
  return pool[next++]! / 256;
}

const ulid = monotonicFactory(pooledRandom);

export type IdPrefix = 'acc' | 'usr' | 'tok' | 'dev' | 'ct' | 'grp' | 'msg' | 'job' | 'wh' | 'evt' | 'whd' | 'req' | 'upl';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}

/** The smallest id of this type that newId could make at or after `at` (its random part all zeros). */
export function firstIdAt(prefix: IdPrefix, at: Date): string {
  return `${prefix}_${encodeTime(at.getTime(), 10).toLowerCase()}${'0'.repeat(16)}`;
}
