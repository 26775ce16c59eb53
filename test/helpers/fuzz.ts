/** Seeded randomness for the fuzz tests: the same seed gives the same cases on every machine. */

export interface Rng {
  /** A float in [0, 1). */
  (): number;
}

/** mulberry32: small, fast and good enough to pick cases; a seed names a run that can be replayed. */
export function seeded(seed: number): Rng {
  let s = seed | 0;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const int = (rng: Rng, n: number): number => Math.floor(rng() * n);
export const pick = <T>(rng: Rng, items: readonly T[]): T => items[int(rng, items.length)]!;
export const chance = (rng: Rng, p: number): boolean => rng() < p;

/** The seed of a fuzz run: NEREID_FUZZ_SEED when set (to replay or explore), else the test's own fixed one. */
export function fuzzSeed(fixed: number): number {
  const env = process.env.NEREID_FUZZ_SEED;
  return env === undefined || env === '' ? fixed : Number(env);
}

/** How many cases a fuzz run makes: NEREID_FUZZ_CASES when set (longer runs by hand), else `fixed`. */
export function fuzzCases(fixed: number): number {
  const env = process.env.NEREID_FUZZ_CASES;
  return env === undefined || env === '' ? fixed : Number(env);
}
