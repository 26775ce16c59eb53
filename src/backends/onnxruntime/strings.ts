/**
 * BYTES elements ⇄ the JavaScript strings onnxruntime-node's string tensors hold.
 *
 * onnxruntime-node hands ONNX Runtime the UTF-8 encoding of each string, cut at its first NUL (a C string),
 * and gives output strings back decoded from UTF-8. So:
 *
 * - an element that is UTF-8 text (the usual case) becomes the string it encodes: the model sees its exact
 *   bytes (a leading byte-order mark included);
 * - bytes that are not UTF-8 cannot reach the model as they are. Each such byte b (0x80..0xFF) becomes the
 *   private-use character U+10FF00 + b, which ONNX Runtime carries as four bytes of valid UTF-8, and turns
 *   back into b on the way out: a model that passes strings through (identity, concatenation, gather…)
 *   returns the client's bytes exactly. The same escape is applied to those private-use characters when a
 *   client sends them, so every element round-trips;
 * - an element holding a NUL byte cannot be carried at all: it would end there (Triton's onnxruntime backend
 *   has the same limit). Requests with one are refused before they are queued (see nulFreeCheck).
 */

/** Escapes: U+10FF80..U+10FFFF stand for the bytes 0x80..0xFF. As UTF-16: U+DBFF, then U+DF80..U+DFFF. */
const ESCAPE_BASE = 0x10ff00;
const ESCAPE_HIGH = 0xdbff;
const ESCAPE_LOW_MIN = 0xdf80;

const strict = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/** An element as the string whose UTF-8 encoding ONNX Runtime will see (see above). */
export function bytesToOrtString(b: Uint8Array): string {
  let s: string;
  try {
    s = strict.decode(b);
  } catch {
    return escapeBytes(b);
  }
  return s.includes(String.fromCharCode(ESCAPE_HIGH)) && hasEscapeChar(s) ? escapeBytes(b) : s;
}

/** An output string from ONNX Runtime as bytes, escapes turned back into the bytes they stand for. */
export function ortStringToBytes(s: string): Uint8Array {
  if (!s.includes(String.fromCharCode(ESCAPE_HIGH)) || !hasEscapeChar(s)) return encoder.encode(s);
  const parts: Uint8Array[] = [];
  let total = 0;
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    if (!isEscapeAt(s, i)) continue;
    const text = encoder.encode(s.slice(from, i));
    parts.push(text, Uint8Array.of(s.codePointAt(i)! - ESCAPE_BASE));
    total += text.byteLength + 1;
    from = i + 2;
    i++;
  }
  const tail = encoder.encode(s.slice(from));
  parts.push(tail);
  total += tail.byteLength;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** The index of the first element with a NUL byte, or -1. */
export function firstNul(elements: readonly Uint8Array[]): number {
  for (let i = 0; i < elements.length; i++) if (elements[i]!.indexOf(0) !== -1) return i;
  return -1;
}

function isEscapeAt(s: string, i: number): boolean {
  return s.charCodeAt(i) === ESCAPE_HIGH && s.charCodeAt(i + 1) >= ESCAPE_LOW_MIN && s.charCodeAt(i + 1) <= 0xdfff;
}

function hasEscapeChar(s: string): boolean {
  for (let i = s.indexOf(String.fromCharCode(ESCAPE_HIGH)); i !== -1; i = s.indexOf(String.fromCharCode(ESCAPE_HIGH), i + 1)) {
    if (isEscapeAt(s, i)) return true;
  }
  return false;
}

/**
 * Decodes what is UTF-8 and escapes every other byte, and every byte of an escape character the client sent
 * itself. A sequence is taken as UTF-8 only when the strict decoder accepts it whole.
 */
function escapeBytes(b: Uint8Array): string {
  let out = '';
  let from = 0; // start of the run of bytes not yet emitted that are all valid UTF-8
  let i = 0;
  while (i < b.length) {
    const len = sequenceLength(b, i);
    if (len > 0 && !isEscapeSequence(b, i, len)) {
      i += len;
      continue;
    }
    if (from < i) out += strict.decode(b.subarray(from, i));
    const bad = len > 0 ? len : 1;
    for (let k = 0; k < bad; k++) out += String.fromCodePoint(ESCAPE_BASE + b[i + k]!);
    i += bad;
    from = i;
  }
  if (from < b.length) out += strict.decode(b.subarray(from));
  return out;
}

/** The length of the valid UTF-8 sequence starting at i, or 0 when none starts there. */
function sequenceLength(b: Uint8Array, i: number): number {
  const c = b[i]!;
  if (c < 0x80) return 1;
  let len: number;
  let min: number;
  let max = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) { len = 2; min = 0x80; }
  else if (c >= 0xe0 && c <= 0xef) { len = 3; min = c === 0xe0 ? 0xa0 : 0x80; if (c === 0xed) max = 0x9f; }
  else if (c >= 0xf0 && c <= 0xf4) { len = 4; min = c === 0xf0 ? 0x90 : 0x80; if (c === 0xf4) max = 0x8f; }
  else return 0;
  if (i + len > b.length) return 0;
  const second = b[i + 1]!;
  if (second < min || second > max) return 0;
  for (let k = 2; k < len; k++) if ((b[i + k]! & 0xc0) !== 0x80) return 0;
  return len;
}

/** U+10FF80..U+10FFFF in UTF-8: F4 8F BE 80 .. F4 8F BF BF. */
function isEscapeSequence(b: Uint8Array, i: number, len: number): boolean {
  return len === 4 && b[i] === 0xf4 && b[i + 1] === 0x8f && (b[i + 2] === 0xbe || b[i + 2] === 0xbf);
}
