/**
 * HPACK's static Huffman code (RFC 7541 Appendix B), decoding only: the server never needs to compress a
 * header. The code is canonical, so the bit length of each of the 257 symbols (the 256 octets, then EOS)
 * determines every code; the table below is those lengths, and the decoding tree is built from them once.
 */
const CODE_LENGTHS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, // 0-15
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, // 16-31
  6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, // ' ' - '/'
  5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, // '0' - '?'
  13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, // '@' - 'O'
  7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, // 'P' - '_'
  15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, // '`' - 'o'
  6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, // 'p' - 127
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 128-143
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 144-159
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 160-175
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 176-191
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 192-207
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 208-223
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 224-239
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 240-255
  30, // EOS
];

const EOS = 256;

/**
 * The decoding tree: node n's children are at [2n] (bit 0) and [2n+1] (bit 1); a child is another node's
 * index, or, negative, -(symbol + 1) for a leaf.
 */
const TREE = buildTree();

function buildTree(): Int32Array {
  const order = CODE_LENGTHS.map((length, symbol) => ({ length, symbol })).sort((a, b) => a.length - b.length || a.symbol - b.symbol);
  const tree = new Int32Array(2 * 512);
  let nodes = 1;
  let code = 0;
  let previous = order[0]!.length;
  for (const { length, symbol } of order) {
    code <<= length - previous;
    previous = length;
    let node = 0;
    for (let bit = length - 1; bit > 0; bit--) {
      const slot = 2 * node + ((code >>> bit) & 1);
      if (tree[slot] === 0) tree[slot] = nodes++;
      node = tree[slot]!;
    }
    tree[2 * node + (code & 1)] = -(symbol + 1);
    code++;
  }
  return tree;
}

/** The decoded octets of a Huffman-coded string, as a Latin-1 string; null when the coding is invalid. */
export function huffmanDecode(src: Buffer, start: number, end: number): string | null {
  let out = '';
  let node = 0;
  // Bits read since the last whole symbol, and whether they were all ones: only a prefix of EOS may pad.
  let pending = 0;
  let allOnes = true;
  for (let i = start; i < end; i++) {
    const byte = src[i]!;
    for (let bit = 7; bit >= 0; bit--) {
      const b = (byte >>> bit) & 1;
      const next = TREE[2 * node + b]!;
      pending++;
      allOnes &&= b === 1;
      if (next < 0) {
        const symbol = -next - 1;
        if (symbol === EOS) return null;
        out += String.fromCharCode(symbol);
        node = 0;
        pending = 0;
        allOnes = true;
      } else {
        node = next;
      }
    }
  }
  // RFC 7541 5.2: padding longer than 7 bits, or not the most significant bits of EOS, is an error.
  return pending > 7 || !allOnes ? null : out;
}
