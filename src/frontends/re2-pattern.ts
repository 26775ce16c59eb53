/**
 * The header-forward patterns are RE2 expressions in tritonserver, matched case-insensitively (it puts `(?i)`
 * before them) with a partial match. RE2 has inline flag groups, `(?-i)`, `(?i:…)`, `(?s)`, `(?U)`, that
 * Node 20's RegExp lacks, and spells a few things differently (`(?P<name>…)`, `[[:alpha:]]`, `\A`, `\z`,
 * `\Q…\E`). `re2Pattern` rewrites such a pattern into an equivalent JavaScript RegExp once, at start-up:
 * case-insensitive stretches become explicit `[aA]` classes (header names are ASCII), dot-all and multi-line
 * stretches get their own `.`, `^` and `$`, and ungreedy stretches swap `*`/`*?`. Triton's L0_parameters runs
 * `--grpc-header-forward-pattern (?-i)MY_HEADER.*` and expects the lowercase `my_header_*` metadata not to
 * match.
 */

interface Flags {
  i: boolean;
  m: boolean;
  s: boolean;
  U: boolean;
}

const POSIX_CLASSES: Readonly<Record<string, string>> = {
  alnum: '0-9A-Za-z', alpha: 'A-Za-z', ascii: '\\x00-\\x7f', blank: '\\t ', cntrl: '\\x00-\\x1f\\x7f',
  digit: '0-9', graph: '!-~', lower: 'a-z', print: ' -~', punct: '!-\\/:-@\\[-`{-~', space: '\\t\\n\\v\\f\\r ',
  upper: 'A-Z', word: '0-9A-Za-z_', xdigit: '0-9A-Fa-f',
};

/** Thrown for text that is not an RE2 pattern this translation understands; the caller words the refusal. */
export class PatternError extends Error {}

/** `pattern` as RE2 reads it after tritonserver's `(?i)` prefix, as a JavaScript RegExp for `.test()`. */
export function re2Pattern(pattern: string, caseInsensitive = true): RegExp {
  const source = new Translator(pattern).run({ i: caseInsensitive, m: false, s: false, U: false });
  try {
    return new RegExp(source, /\\[pP]/.test(source) ? 'u' : '');
  } catch (e) {
    throw new PatternError((e as Error).message);
  }
}

class Translator {
  private pos = 0;

  constructor(private readonly src: string) {}

  run(flags: Flags): string {
    const out = this.sequence({ ...flags }, false);
    if (this.pos < this.src.length) throw new PatternError(`unmatched ')' at ${this.pos}`);
    return out;
  }

  /** Up to the end of the pattern, or of the enclosing group when `inGroup`; flags set inside stay inside. */
  private sequence(flags: Flags, inGroup: boolean): string {
    let out = '';
    const src = this.src;
    while (this.pos < src.length) {
      const c = src[this.pos]!;
      if (c === ')') {
        if (!inGroup) throw new PatternError(`unmatched ')' at ${this.pos}`);
        return out;
      }
      if (c === '(') out += this.group(flags);
      else if (c === '[') out += this.charClass(flags);
      else if (c === '\\') out += this.escape(flags);
      else if (c === '|') { this.pos++; out += '|'; }
      else if (c === '.') { this.pos++; out += flags.s ? '[^]' : '[^\\n]'; }
      else if (c === '^') { this.pos++; out += flags.m ? '(?<=^|\\n)' : '^'; }
      else if (c === '$') { this.pos++; out += flags.m ? '(?=\\n|$)' : '$'; }
      else if (c === '*' || c === '+' || c === '?' || (c === '{' && /^\{\d+(,\d*)?\}/.test(src.slice(this.pos)))) out += this.quantifier(flags);
      else { this.pos++; out += literal(c, flags.i); }
    }
    if (inGroup) throw new PatternError('missing )');
    return out;
  }

  private quantifier(flags: Flags): string {
    const src = this.src;
    let q = src[this.pos]!;
    if (q === '{') q = /^\{\d+(,\d*)?\}/.exec(src.slice(this.pos))![0];
    this.pos += q.length;
    const lazy = src[this.pos] === '?';
    if (lazy) this.pos++;
    return q + (lazy !== flags.U ? '?' : '');
  }

  private group(flags: Flags): string {
    const src = this.src;
    this.pos++;
    if (src[this.pos] !== '?') return `(${this.closeGroup({ ...flags })})`;
    const rest = src.slice(this.pos + 1);
    const named = /^P?<([A-Za-z_]\w*)>/.exec(rest);
    if (named) {
      this.pos += 1 + named[0].length;
      return `(?<${named[1]}>${this.closeGroup({ ...flags })})`;
    }
    const set = /^([imsU]*)(?:-([imsU]*))?([:)])/.exec(rest);
    if (!set || (set[1] === '' && set[2] === undefined && set[3] === ')')) throw new PatternError(`unsupported group syntax at ${this.pos - 1}`);
    this.pos += 1 + set[0].length;
    const next = { ...flags };
    for (const f of set[1]!) next[f as keyof Flags] = true;
    for (const f of set[2] ?? '') next[f as keyof Flags] = false;
    if (set[3] === ':') return `(?:${this.closeGroup(next)})`;
    // `(?flags)` changes the flags for the rest of the enclosing group.
    Object.assign(flags, next);
    return '';
  }

  private closeGroup(flags: Flags): string {
    const body = this.sequence(flags, true);
    this.pos++;
    return body;
  }

  private escape(flags: Flags): string {
    const src = this.src;
    const c = src[this.pos + 1];
    if (c === undefined) throw new PatternError('trailing \\');
    if (c === 'Q') {
      const end = src.indexOf('\\E', this.pos + 2);
      const text = src.slice(this.pos + 2, end < 0 ? undefined : end);
      this.pos = end < 0 ? src.length : end + 2;
      return [...text].map((ch) => literal(ch, flags.i)).join('');
    }
    this.pos += 2;
    if (c === 'A') return '^';
    if (c === 'z') return '$';
    if (c === 'C') throw new PatternError('\\C is not supported');
    if (c === 'p' || c === 'P') {
      const name = /^\{[^}]*\}|^[A-Za-z]/.exec(src.slice(this.pos));
      if (!name) throw new PatternError(`bad \\${c} at ${this.pos - 2}`);
      this.pos += name[0].length;
      return `\\${c}${name[0].startsWith('{') ? name[0] : `{${name[0]}}`}`;
    }
    if (/[a-zA-Z]/.test(c)) return `\\${c}`;
    return literal(c, flags.i);
  }

  /** A bracket class; in a case-insensitive stretch each ASCII letter or letter range gains its other case. */
  private charClass(flags: Flags): string {
    const src = this.src;
    this.pos++;
    let out = '[';
    if (src[this.pos] === '^') { out += '^'; this.pos++; }
    let first = true;
    let extra = '';
    while (this.pos < src.length && (src[this.pos] !== ']' || first)) {
      first = false;
      const posix = /^\[:(\^?)([a-z]+):\]/.exec(src.slice(this.pos));
      if (posix) {
        const set = flags.i && (posix[2] === 'lower' || posix[2] === 'upper') ? 'A-Za-z' : POSIX_CLASSES[posix[2]!];
        if (set === undefined || posix[1]) throw new PatternError(`unsupported class [:${posix[1]}${posix[2]}:]`);
        out += set;
        this.pos += posix[0].length;
        continue;
      }
      const lo = this.classAtom();
      if (src[this.pos] === '-' && src[this.pos + 1] !== ']' && this.pos + 1 < src.length) {
        this.pos++;
        const hi = this.classAtom();
        out += `${lo.text}-${hi.text}`;
        if (flags.i && lo.char !== undefined && hi.char !== undefined) extra += otherCaseRange(lo.char, hi.char);
      } else {
        out += lo.text;
        if (flags.i && lo.char !== undefined) extra += otherCaseRange(lo.char, lo.char);
      }
    }
    if (this.pos >= src.length) throw new PatternError('missing ]');
    this.pos++;
    return `${out}${extra}]`;
  }

  /** One member of a class: its JavaScript text and, for a plain character, the character itself. */
  private classAtom(): { text: string; char?: string } {
    const src = this.src;
    const c = src[this.pos]!;
    if (c !== '\\') {
      this.pos++;
      return { text: c === '[' || c === '/' ? `\\${c}` : c, char: c };
    }
    const e = src[this.pos + 1];
    if (e === undefined) throw new PatternError('trailing \\');
    this.pos += 2;
    if (/[a-zA-Z0-9]/.test(e)) return { text: `\\${e}` };
    return { text: `\\${e}`, char: e };
  }
}

/** A character outside a class: escaped when special, `[aA]` for a letter in a case-insensitive stretch. */
function literal(c: string, caseInsensitive: boolean): string {
  if (caseInsensitive && /[a-zA-Z]/.test(c)) return `[${c.toLowerCase()}${c.toUpperCase()}]`;
  return /[\\^$.*+?()[\]{}|/]/.test(c) ? `\\${c}` : c;
}

/** The other-case counterparts of the ASCII letters in `lo`..`hi`, as class text. */
function otherCaseRange(lo: string, hi: string): string {
  let out = '';
  for (const [a, z, shift] of [[0x41, 0x5a, 0x20], [0x61, 0x7a, -0x20]] as const) {
    const from = Math.max(a, lo.charCodeAt(0));
    const to = Math.min(z, hi.charCodeAt(0));
    if (from <= to) out += `${String.fromCharCode(from + shift)}-${String.fromCharCode(to + shift)}`;
  }
  return out;
}
