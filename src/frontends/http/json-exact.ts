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

/** close(): a container awaits its next value. */
const CONTINUE = 0;

interface Frame {
  readonly container: Container;
  /** The key whose value comes next (objects only). */
  key: string;
}

export function parseExactJson(text: string): unknown {
  return new ExactJsonReader(text).read();
}

/** One pass over the text: a cursor, and the containers open at it. */
class ExactJsonReader {
  private i = 0;
  private readonly n: number;
  private readonly stack: Frame[] = [];

  constructor(private readonly text: string) {
    this.n = text.length;
  }

  read(): unknown {
    const text = this.text;
    for (;;) {
      this.space();
      let value: unknown;
      const c = text.charCodeAt(this.i);
      if (c === OPEN_OBJECT || c === OPEN_ARRAY) {
        this.i++;
        this.space();
        if (text.charCodeAt(this.i) === (c === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY)) {
          this.i++;
          value = c === OPEN_OBJECT ? {} : [];
        } else {
          this.stack.push(c === OPEN_OBJECT ? { container: {}, key: this.key() } : { container: [], key: '' });
          continue;
        }
      } else value = this.scalar(c);
      const closed = this.close(value);
      if (closed !== CONTINUE) return closed.value;
    }
  }

  /** A string, true, false, null or a number, starting with the character `c`. */
  private scalar(c: number): unknown {
    if (c === QUOTE) return this.string();
    if (c === 116) return this.literal('true', true);
    if (c === 102) return this.literal('false', false);
    if (c === 110) return this.literal('null', null);
    return this.number();
  }

  /**
   * The value goes into its container; each container that ends with it is in turn the value of the one around
   * it. CONTINUE when a container awaits its next value; the whole document's value once the outermost ended.
   */
  private close(value: unknown): typeof CONTINUE | { value: unknown } {
    const text = this.text;
    const stack = this.stack;
    for (;;) {
      const top = stack[stack.length - 1];
      if (top === undefined) {
        this.space();
        if (this.i !== this.n) this.fail();
        return { value };
      }
      const { container } = top;
      if (Array.isArray(container)) container.push(value);
      else if (top.key === '__proto__') Object.defineProperty(container, top.key, { value, writable: true, enumerable: true, configurable: true });
      else container[top.key] = value;
      this.space();
      const d = text.charCodeAt(this.i++);
      if (d === COMMA) {
        if (!Array.isArray(container)) top.key = this.key();
        return CONTINUE;
      }
      if (d !== (Array.isArray(container) ? CLOSE_ARRAY : CLOSE_OBJECT)) this.fail();
      stack.pop();
      value = container;
    }
  }

  private space(): void {
    const text = this.text;
    const n = this.n;
    let i = this.i;
    for (; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c !== SPACE && c !== TAB && c !== LF && c !== CR) break;
    }
    this.i = i;
  }

  private fail(): never {
    throw new SyntaxError(`Unexpected token in JSON at position ${this.i}`);
  }

  private expect(c: number): void {
    this.space();
    if (this.text.charCodeAt(this.i) !== c) this.fail();
    this.i++;
  }

  private string(): string {
    const text = this.text;
    const start = this.i;
    let end = text.indexOf('"', start + 1);
    // A quote preceded by an odd number of backslashes is inside the string.
    for (;;) {
      if (end === -1) this.fail();
      let k = end - 1;
      while (text.charCodeAt(k) === BACKSLASH) k--;
      if ((end - 1 - k) % 2 === 0) break;
      end = text.indexOf('"', end + 1);
    }
    this.i = end + 1;
    // Escapes and the characters a string may not hold are JSON.parse's business.
    return JSON.parse(text.slice(start, this.i)) as string;
  }

  private key(): string {
    this.space();
    if (this.text.charCodeAt(this.i) !== QUOTE) this.fail();
    const k = this.string();
    this.expect(COLON);
    return k;
  }

  private literal(word: string, value: unknown): unknown {
    if (!this.text.startsWith(word, this.i)) this.fail();
    this.i += word.length;
    return value;
  }

  private number(): number | bigint {
    NUMBER.lastIndex = this.i;
    const m = NUMBER.exec(this.text);
    if (m === null) return this.fail();
    this.i = NUMBER.lastIndex;
    const v = Number(m[0]);
    return m[1] === undefined && m[2] === undefined && !Number.isSafeInteger(v) ? BigInt(m[0]) : v;
  }
}
