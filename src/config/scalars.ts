/** Integer ranges and float spellings shared by the text-format parser and the JSON reader. */
import type { ScalarKind } from './schema.js';

const RANGES: Partial<Record<ScalarKind, readonly [bigint, bigint]>> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};

/**
 * Checks an integer against its proto type and converts it to a JS number. Returns an error text instead when
 * it does not fit the type. 64-bit values beyond 2^53 are kept, rounded to the nearest double: configs use the
 * type's maximum as "unbounded" (`priority_levels: 18446744073709551615` in Triton's own tests), and
 * `formatInt` clamps such a value back into range when it is printed, so text and JSON round-trip.
 */
export function toIntValue(kind: ScalarKind, v: bigint, text: string): number | { error: string } {
  const range = RANGES[kind];
  if (!range) return { error: `Expected ${kind}, got: ${text}` };
  if (v < range[0] || v > range[1]) return { error: `Integer out of range (${text})` };
  return Number(v);
}

/** Decimal text of an integer field value; rounded 64-bit extremes are clamped into the type's range. */
export function formatInt(kind: ScalarKind, n: number): string {
  if (Number.isSafeInteger(n)) return String(n);
  const range = RANGES[kind];
  let v = BigInt(Math.trunc(n));
  if (range && v > range[1]) v = range[1];
  if (range && v < range[0]) v = range[0];
  return v.toString();
}

export function isIntegerKind(kind: ScalarKind): boolean {
  return kind in RANGES;
}

/** `inf`, `infinity`, `nan` in any case, as protobuf's text parser accepts them for float fields. */
export function namedFloat(ident: string): number | undefined {
  const l = ident.toLowerCase();
  if (l === 'inf' || l === 'infinity') return Infinity;
  if (l === 'nan') return NaN;
  return undefined;
}

/** Parses an integer literal of the text format (decimal, 0x hex, leading-0 octal) without its sign. */
export function parseIntLiteral(text: string): bigint {
  if (/^0[xX]/.test(text)) return BigInt(text);
  if (/^0[0-7]+$/.test(text)) return BigInt(`0o${text.slice(1)}`);
  return BigInt(text);
}
