/**
 * JSON.parse that keeps integers exact: an integer literal (no fraction, no exponent) outside ±(2^53 - 1)
 * becomes a bigint instead of the nearest double; everything else is what JSON.parse gives. JSON.parse rounds
 * such numbers and offers no hook to see their text (Node 20's reviver gets no source), and Triton reads
 * INT64 and UINT64 data and sequence ids as 64-bit integers from the text.
 *
 * It is the slow path, taken only for a body that JSON.parse has already read and that holds a number it
 * rounded where an exact one is needed: it is linear in the text, iterative (a deep nesting that JSON.parse
 * took cannot overflow the stack), and strict, though the text is known to be valid by then.
 */

const SPACE = 32, TAB = 9, LF = 10, CR = 13;
const QUOTE = 34, BACKSLASH = 92, COMMA = 44, COLON = 58;
const OPEN_OBJECT = 123, CLOSE_OBJECT = 125, OPEN_ARRAY = 91, CLOSE_ARRAY = 93;

const NUMBER = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?/y;

type Container = unknown[] | Record<string, unknown>;

interface Frame {
  readonly container: Container;
  /** The key whose value comes next (objects only). */
  key: string;
}

export function parseExactJson(text: string): unknown {
  const n = text.length;
  let i = 0;
  const stack: Frame[] = [];

  const space = (): void => {
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c !== SPACE && c !== TAB && c !== LF && c !== CR) return;
    }
  };
  const fail = (): never => {
    throw new SyntaxError(`Unexpected token in JSON at position ${i}`);
  };
  const expect = (c: number): void => {
    space();
    if (text.charCodeAt(i) !== c) fail();
    i++;
  };
  const string = (): string => {
    const start = i;
    let end = text.indexOf('"', start + 1);
    // A quote preceded by an odd number of backslashes is inside the string.
    for (;;) {
      if (end === -1) fail();
      let k = end - 1;
      while (text.charCodeAt(k) === BACKSLASH) k--;
      if ((end - 1 - k) % 2 === 0) break;
      end = text.indexOf('"', end + 1);
    }
    i = end + 1;
    // Escapes and the characters a string may not hold are JSON.parse's business.
    return JSON.parse(text.slice(start, i)) as string;
  };
  const key = (): string => {
    space();
    if (text.charCodeAt(i) !== QUOTE) fail();
    const k = string();
    expect(COLON);
    return k;
  };
  const literal = (word: string, value: unknown): unknown => {
    if (!text.startsWith(word, i)) fail();
    i += word.length;
    return value;
  };
  const number = (): number | bigint => {
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m === null) return fail();
    i = NUMBER.lastIndex;
    const v = Number(m[0]);
    return m[1] === undefined && m[2] === undefined && !Number.isSafeInteger(v) ? BigInt(m[0]) : v;
  };

  for (;;) {
    space();
    let value: unknown;
    const c = text.charCodeAt(i);
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
      i++;
      space();
      if (text.charCodeAt(i) === (c === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        i++;
        value = c === OPEN_OBJECT ? {} : [];
      } else {
        stack.push(c === OPEN_OBJECT ? { container: {}, key: key() } : { container: [], key: '' });
        continue;
      }
    } else if (c === QUOTE) value = string();
    else if (c === 116) value = literal('true', true);
    else if (c === 102) value = literal('false', false);
    else if (c === 110) value = literal('null', null);
    else value = number();
    // The value goes into its container; each container that ends with it is in turn the value of the one around it.
    for (;;) {
      const top = stack[stack.length - 1];
      if (top === undefined) {
        space();
        if (i !== n) fail();
        return value;
      }
      const { container } = top;
      if (Array.isArray(container)) container.push(value);
      else if (top.key === '__proto__') Object.defineProperty(container, top.key, { value, writable: true, enumerable: true, configurable: true });
      else container[top.key] = value;
      space();
      const d = text.charCodeAt(i++);
      if (d === COMMA) {
        if (!Array.isArray(container)) top.key = key();
        break;
      }
      if (d !== (Array.isArray(container) ? CLOSE_ARRAY : CLOSE_OBJECT)) fail();
      stack.pop();
      value = container;
    }
  }
}
