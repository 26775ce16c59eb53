/**
 * The first key of a JSON object body that repeats, among the keys a caller cares about: those of the top-level
 * object and of its `parameters` object. JSON.parse keeps the last of repeated keys without a word, while
 * Triton's generate extension adds each key as it reads it and refuses the second of a name it already holds.
 *
 * The body is valid JSON (it has been parsed); the scan is one pass over its bytes, skipping strings with a
 * native search, and decodes only the keys at the two levels it looks at.
 */

const QUOTE = 34, BACKSLASH = 92, COMMA = 44;
const OPEN_OBJECT = 123, CLOSE_OBJECT = 125, OPEN_ARRAY = 91, CLOSE_ARRAY = 93;

export function firstRepeatedKey(body: Buffer, counts: (key: string, inParameters: boolean) => boolean): string | undefined {
  const seen = new Set<string>();
  // Only the two outer levels matter: their container kinds are kept, deeper ones are only counted, so a body
  // nested millions deep costs no memory here.
  const kind = [0, 0, 0];
  let depth = 0;
  let expectKey = false;
  let topKey = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === QUOTE) {
      const start = i;
      i = stringEnd(body, i);
      if (!expectKey) continue;
      expectKey = false;
      const inParameters = depth === 2 && topKey === 'parameters' && kind[2] === OPEN_OBJECT;
      if (depth !== 1 && !inParameters) continue;
      const key = JSON.parse(body.toString('utf8', start, i + 1)) as string;
      if (depth === 1) topKey = key;
      if (!counts(key, inParameters)) continue;
      if (seen.has(key)) return key;
      seen.add(key);
    } else if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      depth++;
      if (depth <= 2) kind[depth] = c;
      expectKey = c === OPEN_OBJECT && depth <= 2;
    } else if (c === CLOSE_OBJECT || c === CLOSE_ARRAY) {
      depth--;
    } else if (c === COMMA) {
      expectKey = depth >= 1 && depth <= 2 && kind[depth] === OPEN_OBJECT;
    }
  }
  return undefined;
}

/** The index of the quote that closes the string opening at `open`. */
function stringEnd(body: Buffer, open: number): number {
  let end = body.indexOf(QUOTE, open + 1);
  for (;;) {
    if (end === -1) return body.length;
    // A quote after an odd run of backslashes is inside the string.
    let k = end - 1;
    while (body[k] === BACKSLASH) k--;
    if ((end - 1 - k) % 2 === 0) return end;
    end = body.indexOf(QUOTE, end + 1);
  }
}
