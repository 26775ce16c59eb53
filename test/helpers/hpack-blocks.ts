import { encodeBlock } from '../../src/frontends/grpc/http2/hpack.js';
import { chance, int, pick, type Rng } from './fuzz.js';

/** Header blocks for fuzzing HPACK decoders: random representations, mostly of a gRPC request's fields. */

export const FIELDS: Array<[string, string]> = [
  [':method', 'POST'], [':scheme', 'http'], [':path', '/inference.GRPCInferenceService/ServerLive'], [':authority', 'localhost'],
  ['content-type', 'application/grpc'], ['te', 'trailers'], ['grpc-timeout', '1S'], ['user-agent', 'grpc-node/1.0'], ['x-custom', 'v'.repeat(40)],
];

/** An HPACK integer with an n-bit prefix under `high` (RFC 7541 5.1). */
function integer(value: number, n: number, high: number): number[] {
  const max = (1 << n) - 1;
  if (value < max) return [high | value];
  const out = [high | max];
  value -= max;
  while (value >= 128) {
    out.push((value % 128) + 128);
    value = Math.floor(value / 128);
  }
  out.push(value);
  return out;
}

function literal(rng: Rng, text: string): number[] {
  // Raw strings mostly; sometimes a "Huffman" flag over bytes that may or may not be a valid code.
  if (chance(rng, 0.85)) return [...integer(text.length, 7, 0), ...Buffer.from(text, 'latin1')];
  const n = int(rng, 6);
  return [...integer(n, 7, 0x80), ...Array.from({ length: n }, () => int(rng, 256))];
}

/** A header block of random representations: indices in and past the table, literals, size updates anywhere. */
export function randomBlock(rng: Rng): Buffer {
  const out: number[] = [];
  for (let i = int(rng, 8); i >= 0; i--) {
    const [name, value] = chance(rng, 0.7) ? pick(rng, FIELDS) : [`x-${int(rng, 50)}`, 'w'.repeat(int(rng, 300))];
    switch (int(rng, 6)) {
      case 0: out.push(...integer(int(rng, 90), 7, 0x80)); break;
      case 1: out.push(...integer(0, 6, 0x40), ...literal(rng, name), ...literal(rng, value)); break;
      case 2: out.push(...integer(1 + int(rng, 80), 6, 0x40), ...literal(rng, value)); break;
      case 3: out.push(...integer(0, 4, chance(rng, 0.5) ? 0x00 : 0x10), ...literal(rng, name), ...literal(rng, value)); break;
      case 4: out.push(...integer(chance(rng, 0.8) ? int(rng, 4097) : int(rng, 1 << 20), 5, 0x20)); break;
      default: out.push(...encodeBlock([[name, value]])); break;
    }
  }
  return Buffer.from(out);
}

