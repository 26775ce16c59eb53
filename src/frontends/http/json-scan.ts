import { invalidArg } from '../../errors.js';
import type { RequestBounds } from '../../inference/index.js';
import { MAX_REQUEST_PARAMETERS, tooManyInputs, tooManyOutputs } from './infer-request.js';

/**
 * A look at a large JSON header before JSON.parse builds it: one pass over the bytes, no allocation, that
 * counts the members of the top-level `inputs` and `outputs` arrays and `parameters` object and stops as soon
 * as one passes what the model allows. A body of millions of tiny objects is then refused after its first
 * bytes, instead of after a parse that takes seconds and gigabytes. It is only a shortcut: it gives up on what
 * it does not follow (an escaped key, malformed JSON), and decodeHeader checks the same bounds on the parsed
 * value whatever the scan saw.
 */

const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const COLON = 58;
const OPEN_OBJECT = 123;
const CLOSE_OBJECT = 125;
const OPEN_ARRAY = 91;
const CLOSE_ARRAY = 93;

/** 1 for the bytes the scan acts on; everything else (digits, letters, white space) is skipped by one load. */
const STRUCTURAL = new Uint8Array(256);
for (const c of [QUOTE, COMMA, COLON, OPEN_OBJECT, CLOSE_OBJECT, OPEN_ARRAY, CLOSE_ARRAY]) STRUCTURAL[c] = 1;

const enum Counted { None, Inputs, Outputs, Parameters }

export function scanHeader(text: Uint8Array, bounds: RequestBounds): void {
  const n = text.length;
  let i = 0;
  while (i < n && text[i]! <= 32) i++;
  if (text[i] !== OPEN_OBJECT) return;
  let depth = 0;
  // The last string seen at depth 1 (a key when a colon follows), and the key whose value comes next.
  let keyStart = 0;
  let keyEnd = 0;
  let key = Counted.None;
  let counting = Counted.None;
  let members = 0;
  for (; i < n; i++) {
    const c = text[i]!;
    if (STRUCTURAL[c] === 0) continue;
    if (c === QUOTE) {
      const start = i + 1;
      let end = text.indexOf(QUOTE, start);
      // A quote preceded by an odd number of backslashes is inside the string.
      for (;;) {
        if (end === -1) return;
        let k = end - 1;
        while (k >= start && text[k] === BACKSLASH) k--;
        if ((end - 1 - k) % 2 === 0) break;
        end = text.indexOf(QUOTE, end + 1);
      }
      if (depth === 1) {
        keyStart = start;
        keyEnd = end;
      } else if (depth === 2 && counting !== Counted.None && members === 0) members = 1;
      i = end;
      continue;
    }
    if (c === COLON) {
      if (depth === 1) key = keyOf(text, keyStart, keyEnd);
      continue;
    }
    if (c === COMMA) {
      if (depth === 1) key = Counted.None;
      else if (depth === 2 && counting !== Counted.None) check(++members, counting, bounds);
      continue;
    }
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      if (depth === 1 && key !== Counted.None && (c === OPEN_OBJECT) === (key === Counted.Parameters)) {
        counting = key;
        members = 0;
      } else if (depth === 2 && counting !== Counted.None && members === 0) members = 1;
      depth++;
      continue;
    }
    // A closing bracket.
    depth--;
    if (depth === 1) counting = Counted.None;
    if (depth === 0) return;
  }
}

function keyOf(text: Uint8Array, start: number, end: number): Counted {
  const len = end - start;
  if (len === 6 && matches(text, start, 'inputs')) return Counted.Inputs;
  if (len === 7 && matches(text, start, 'outputs')) return Counted.Outputs;
  if (len === 10 && matches(text, start, 'parameters')) return Counted.Parameters;
  return Counted.None;
}

function matches(text: Uint8Array, at: number, word: string): boolean {
  for (let j = 0; j < word.length; j++) if (text[at + j] !== word.charCodeAt(j)) return false;
  return true;
}

/** `atLeast` members are known to be there: the comma just seen promises one more. */
function check(atLeast: number, counting: Counted, b: RequestBounds): void {
  if (counting === Counted.Inputs && atLeast > b.inputs) throw tooManyInputs(b, `at least ${atLeast}`);
  if (counting === Counted.Outputs && atLeast > b.outputs) throw tooManyOutputs(b, `at least ${atLeast}`);
  if (counting === Counted.Parameters && atLeast > MAX_REQUEST_PARAMETERS) throw invalidArg(`a request may have at most ${MAX_REQUEST_PARAMETERS} parameters`);
}

/**
 * Whether a JSON text holds more than `max` values, counting every object, array and comma outside strings
 * (a lower bound on its values), in one pass that stops at `max`. A parsed body that crosses from the worker
 * to the event loop costs the loop for each value, so bodies that cross are bounded by this count.
 */
export function moreValuesThan(text: Uint8Array, max: number): boolean {
  const n = text.length;
  let values = 0;
  for (let i = 0; i < n; i++) {
    const c = text[i]!;
    if (STRUCTURAL[c] === 0) continue;
    if (c === QUOTE) {
      let end = text.indexOf(QUOTE, i + 1);
      for (;;) {
        if (end === -1) return false;
        let k = end - 1;
        while (k > i && text[k] === BACKSLASH) k--;
        if ((end - 1 - k) % 2 === 0) break;
        end = text.indexOf(QUOTE, end + 1);
      }
      i = end;
      continue;
    }
    if ((c === COMMA || c === OPEN_OBJECT || c === OPEN_ARRAY) && ++values > max) return true;
  }
  return false;
}
