/**
 * Tokenizer for the protobuf text format, following the rules of protobuf's C++ `io::Tokenizer` as configured
 * by `TextFormat` (what Triton uses to read config.pbtxt): `#` comments, identifiers, decimal/hex/octal
 * integers, floats with an optional `f` suffix, single- or double-quoted strings with C escapes, and
 * one-character symbols. Lines and columns are 1-based; a tab counts as one column.
 */
import { NereidError } from '../errors.js';

export type TokenKind = 'ident' | 'int' | 'float' | 'string' | 'symbol' | 'eof';

export interface Token {
  readonly kind: TokenKind;
  /** Source text; for strings the decoded value. */
  readonly text: string;
  /** Source text as written, quotes and escapes included ('' at the end of input): what protobuf's messages quote. */
  readonly raw: string;
  readonly line: number;
  readonly col: number;
}

const isDigit = (c: string): boolean => c >= '0' && c <= '9';
const isHex = (c: string): boolean => /^[0-9a-fA-F]$/.test(c);
const isLetter = (c: string): boolean => (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
const isWhitespace = (c: string): boolean => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f';

const SIMPLE_ESCAPES: Record<string, number> = {
  a: 7, b: 8, f: 12, n: 10, r: 13, t: 9, v: 11, '\\': 92, '?': 63, "'": 39, '"': 34,
};

export class Tokenizer {
  private pos = 0;
  private line = 1;
  private col = 1;
  private peeked: Token | undefined;

  /** `messageType` is the full name of the message being read, such as `inference.ModelConfig`. */
  constructor(private readonly src: string, private readonly file: string, private readonly messageType: string) {}

  /**
   * An INVALID_ARG error pointing at a position of this file. Triton's client sees core's "failed to read text
   * proto from <file>" and its log protobuf's "Error parsing text-format <type>: <line>:<col>: <what>"; this
   * message carries both.
   */
  error(line: number, col: number, what: string): NereidError {
    return new NereidError('INVALID_ARG', `failed to read text proto from ${this.file}: Error parsing text-format ${this.messageType}: ${line}:${col}: ${what}`);
  }

  peek(): Token {
    this.peeked ??= this.scan();
    return this.peeked;
  }

  next(): Token {
    const t = this.peek();
    this.peeked = undefined;
    return t;
  }

  private ch(offset = 0): string {
    return this.src[this.pos + offset] ?? '';
  }

  private advance(): string {
    const c = this.src[this.pos++]!;
    if (c === '\n') { this.line++; this.col = 1; } else this.col++;
    return c;
  }

  private skipBlanks(): void {
    for (;;) {
      const c = this.ch();
      if (c === '') return;
      if (isWhitespace(c)) this.advance();
      else if (c === '#') while (this.ch() !== '' && this.ch() !== '\n') this.advance();
      else return;
    }
  }

  private scan(): Token {
    this.skipBlanks();
    const start = this.pos;
    const t = this.scanToken();
    return { ...t, raw: this.src.slice(start, this.pos) };
  }

  private scanToken(): Omit<Token, 'raw'> {
    const line = this.line;
    const col = this.col;
    const c = this.ch();
    if (c === '') return { kind: 'eof', text: '', line, col };
    if (isLetter(c)) {
      const start = this.pos;
      while (isLetter(this.ch()) || isDigit(this.ch())) this.advance();
      return { kind: 'ident', text: this.src.slice(start, this.pos), line, col };
    }
    if (isDigit(c) || (c === '.' && isDigit(this.ch(1)))) return this.scanNumber(line, col);
    if (c === '"' || c === "'") return { kind: 'string', text: this.scanString(line, col), line, col };
    if (c < ' ' || c === '\x7f') throw this.error(line, col, 'Invalid control characters encountered in text.');
    this.advance();
    return { kind: 'symbol', text: c, line, col };
  }

  private digits(test: (c: string) => boolean): number {
    let n = 0;
    while (test(this.ch())) { this.advance(); n++; }
    return n;
  }

  private scanNumber(line: number, col: number): Omit<Token, 'raw'> {
    const start = this.pos;
    let kind: TokenKind = 'int';
    if (this.ch() === '0' && (this.ch(1) === 'x' || this.ch(1) === 'X')) {
      this.advance(); this.advance();
      if (this.digits(isHex) === 0) throw this.error(line, col, '"0x" must be followed by hex digits.');
    } else if (this.ch() === '0' && isDigit(this.ch(1))) {
      this.digits(isDigit);
      if (/[89]/.test(this.src.slice(start, this.pos))) {
        throw this.error(line, col, 'Numbers starting with leading zero must be in octal.');
      }
    } else {
      kind = this.scanDecimal(line, col);
    }
    if (isLetter(this.ch()) || (this.ch() === '.' && kind === 'float')) {
      throw this.error(this.line, this.col, 'Need space between number and identifier.');
    }
    return { kind, text: this.src.slice(start, this.pos), line, col };
  }

  /** Decimal integer or float: digits, optional fraction and exponent, optional `f` suffix. */
  private scanDecimal(line: number, col: number): TokenKind {
    let kind: TokenKind = 'int';
    this.digits(isDigit);
    if (this.ch() === '.') { this.advance(); this.digits(isDigit); kind = 'float'; }
    if (this.ch() === 'e' || this.ch() === 'E') {
      this.advance();
      if (this.ch() === '+' || this.ch() === '-') this.advance();
      if (this.digits(isDigit) === 0) throw this.error(line, col, '"e" must be followed by exponent.');
      kind = 'float';
    }
    if (this.ch() === 'f' || this.ch() === 'F') { this.advance(); kind = 'float'; }
    return kind;
  }

  /** Reads a quoted string and decodes its escapes. Bytes are collected, then read as UTF-8 like protobuf. */
  private scanString(line: number, col: number): string {
    const quote = this.advance();
    const bytes: number[] = [];
    for (;;) {
      const c = this.ch();
      if (c === '') throw this.error(line, col, 'Unexpected end of string.');
      if (c === '\n') throw this.error(line, col, 'String literals cannot cross line boundaries.');
      if (c === quote) { this.advance(); break; }
      if (c === '\\') { this.advance(); this.scanEscape(bytes); continue; }
      const cp = this.src.codePointAt(this.pos)!;
      this.advance();
      if (cp > 0xffff) this.pos++; // the second UTF-16 unit of a surrogate pair: same column
      pushUtf8(bytes, cp);
    }
    return Buffer.from(bytes).toString('utf8');
  }

  private scanEscape(bytes: number[]): void {
    const line = this.line;
    const col = this.col - 1;
    const e = this.ch();
    if (e in SIMPLE_ESCAPES) { this.advance(); bytes.push(SIMPLE_ESCAPES[e]!); return; }
    if (e >= '0' && e <= '7') {
      let v = 0;
      for (let i = 0; i < 3 && this.ch() >= '0' && this.ch() <= '7'; i++) v = v * 8 + Number(this.advance());
      bytes.push(v & 0xff);
      return;
    }
    // Lower-case only: protobuf's tokenizer has no `\X` escape.
    if (e === 'x') {
      this.advance();
      let hex = '';
      while (hex.length < 2 && isHex(this.ch())) hex += this.advance();
      if (hex === '') throw this.error(line, col, 'Expected hex digits for escape sequence.');
      bytes.push(parseInt(hex, 16));
      return;
    }
    if (e === 'u' || e === 'U') {
      this.advance();
      const n = e === 'u' ? 4 : 8;
      let hex = '';
      while (hex.length < n && isHex(this.ch())) hex += this.advance();
      const cp = parseInt(hex, 16);
      if (hex.length !== n || cp > 0x10ffff) throw this.error(line, col, 'Expected eight hex digits up to 10ffff for \\U escape sequence');
      pushUtf8(bytes, this.joinTrailSurrogate(cp));
      return;
    }
    throw this.error(line, col, 'Invalid escape sequence in string literal.');
  }

  /** A lead surrogate escape directly followed by a `\u` trail surrogate is one character, as in protobuf. */
  private joinTrailSurrogate(lead: number): number {
    if (lead < 0xd800 || lead > 0xdbff) return lead;
    const m = /^\\u([dD][c-fC-F][0-9a-fA-F]{2})/.exec(this.src.slice(this.pos, this.pos + 6));
    if (!m) return lead;
    for (let i = 0; i < 6; i++) this.advance();
    return 0x10000 + ((lead - 0xd800) << 10) + (parseInt(m[1]!, 16) - 0xdc00);
  }
}

function pushUtf8(bytes: number[], cp: number): void {
  if (cp < 0x80) { bytes.push(cp); return; }
  for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8')) bytes.push(b);
}
