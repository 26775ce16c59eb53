import type { Int64 } from './messages.js';

/**
 * protobufjs reads 64-bit integers as Long (two signed 32-bit halves). These turn them into JavaScript
 * numbers, or bigints where a number would lose digits.
 */

const TWO_32 = 4294967296;

/** A signed int64 as a number, or undefined when it is beyond ±2^53. */
export function int64ToNumber(v: Int64): number | undefined {
  if (typeof v === 'number') return v;
  const n = v.high * TWO_32 + (v.low >>> 0);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** The 64 bits read as unsigned (how Triton reads a sequence id or a uint64): a number when exact, else a bigint. */
export function uint64Value(v: Int64): number | bigint {
  if (typeof v === 'number') return v >= 0 ? v : BigInt.asUintN(64, BigInt(v));
  const n = (v.high >>> 0) * TWO_32 + (v.low >>> 0);
  if (Number.isSafeInteger(n)) return n;
  return (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0);
}

/** A signed int64 as a number when exact, else a bigint. */
export function int64Value(v: Int64): number | bigint {
  const n = int64ToNumber(v);
  if (n !== undefined) return n;
  const l = v as Exclude<Int64, number>;
  return BigInt.asIntN(64, (BigInt(l.high >>> 0) << 32n) | BigInt(l.low >>> 0));
}
