import { invalidArg } from '../errors.js';

/** One weighted target of a route list: a model name or a version number, as text. */
export interface Route {
  readonly target: string;
  readonly weight: number;
}

/**
 * A route list as Nereid's routing parameters write it: "target:weight,target:weight" (e.g. "1:90,2:10" for
 * nereid_version_weights, "llama_local:50,llama_vllm:50" for nereid_routes). Weights are non-negative numbers
 * and at least one is positive; a target appears once.
 */
export function parseRoutes(spec: string, parameter: string): Route[] {
  const routes: Route[] = [];
  for (const part of spec.split(',')) {
    const item = part.trim();
    if (item === '') continue;
    const colon = item.lastIndexOf(':');
    const target = colon > 0 ? item.slice(0, colon).trim() : '';
    const weight = colon > 0 ? Number(item.slice(colon + 1)) : NaN;
    if (target === '' || !Number.isFinite(weight) || weight < 0) {
      throw invalidArg(`parameter ${parameter}: '${item}' is not target:weight (a name or version, a colon, a non-negative number)`);
    }
    if (routes.some((r) => r.target === target)) throw invalidArg(`parameter ${parameter}: target '${target}' appears twice`);
    routes.push({ target, weight });
  }
  if (!routes.some((r) => r.weight > 0)) throw invalidArg(`parameter ${parameter}: '${spec}' gives no target a positive weight`);
  return routes;
}

/**
 * Picks a target for each request in proportion to the weights. Without a routing key the pick is random;
 * with one it is weighted rendezvous hashing: every key always lands on the same target while the targets
 * stay the same, and when a target is removed or reweighted only the keys that have to move do. Targets that
 * cannot take the request (`usable` false) are skipped and the others keep their proportions.
 */
export class WeightedRoutes {
  /** Requests sent to each target, for the routing metrics. */
  readonly counts: Map<string, number>;

  constructor(readonly routes: readonly Route[]) {
    this.counts = new Map(routes.map((r) => [r.target, 0]));
  }

  pick(key: string | undefined, usable: (target: string) => boolean): string | undefined {
    const chosen = key === undefined ? this.random(usable) : this.hashed(key, usable);
    if (chosen !== undefined) this.counts.set(chosen, (this.counts.get(chosen) ?? 0) + 1);
    return chosen;
  }

  private random(usable: (target: string) => boolean): string | undefined {
    let total = 0;
    for (const r of this.routes) if (r.weight > 0 && usable(r.target)) total += r.weight;
    let x = Math.random() * total;
    let last: string | undefined;
    for (const r of this.routes) {
      if (r.weight <= 0 || !usable(r.target)) continue;
      last = r.target;
      x -= r.weight;
      if (x < 0) return r.target;
    }
    return last;
  }

  private hashed(key: string, usable: (target: string) => boolean): string | undefined {
    let best: string | undefined;
    let bestScore = Infinity;
    for (const r of this.routes) {
      if (r.weight <= 0 || !usable(r.target)) continue;
      // A uniform draw in (0, 1) from the key and target; -ln(u)/w is an exponential draw with rate w, and the
      // smallest of them falls on each target with probability w / Σw.
      const u = (fnv1a(`${key}\u0000${r.target}`) + 0.5) / 4294967296;
      const score = -Math.log(u) / r.weight;
      if (score < bestScore) {
        bestScore = score;
        best = r.target;
      }
    }
    return best;
  }
}

/** 32-bit FNV-1a with a final avalanche, so that keys differing in one character spread over the whole range. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
