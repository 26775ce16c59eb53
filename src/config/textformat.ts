/**
 * The protobuf text format, as Triton reads config.pbtxt (C++ `TextFormat::ParseFromString`) and prints it,
 * driven by the descriptors in schema.ts. Every error is an INVALID_ARG NereidError whose message starts with
 * `<file>:<line>:<column>: `.
 *
 * Duplicate detection follows protobuf's own rule on purpose: a non-repeated field may not be given twice once
 * it is *present*. A proto3 scalar counts as present only when non-zero, so `max_batch_size: 0 max_batch_size: 8`
 * is accepted exactly as Triton accepts it, while giving a non-default value twice, a sub-message twice or two
 * members of one oneof are errors.
 */
import type { ModelConfig } from './types.js';
import { type FieldDescriptor, type MessageDescriptor, type ScalarKind, PACKAGE, enumDescriptor, findField, messageDescriptor, scalarDefault } from './schema.js';
import { type ProtoObject, hasPresence, mapEntryDescriptor, newMessage } from './message.js';
import { type Token, Tokenizer } from './tokenizer.js';
import { formatInt, isIntegerKind, namedFloat, parseIntLiteral, toIntValue } from './scalars.js';

// ============================== parsing ==============================

export function parseModelConfig(text: string, file: string): ModelConfig {
  return parseMessage(text, file, 'ModelConfig') as unknown as ModelConfig;
}

/** Parses `text` as a whole message of type `messageName` (a schema name such as `ModelInstanceGroup`). */
export function parseMessage(text: string, file: string, messageName: string): ProtoObject {
  const p = new TextParser(new Tokenizer(text, file, `${PACKAGE}.${messageName}`));
  const desc = messageDescriptor(messageName);
  const obj = newMessage(messageName);
  p.parseFields(desc, obj, undefined);
  return obj;
}

/** Protobuf quotes a token's source text after "found" and gives it bare after "got:"; the end of input is ''. */
const found = (t: Token): string => `"${t.raw}"`;

class TextParser {
  constructor(private readonly tok: Tokenizer) {}

  private fail(t: Token, what: string): never {
    throw this.tok.error(t.line, t.col, what);
  }

  private tryConsume(symbol: string): boolean {
    const t = this.tok.peek();
    if (t.kind === 'symbol' && t.text === symbol) { this.tok.next(); return true; }
    return false;
  }

  private expect(symbol: string): void {
    const t = this.tok.next();
    if (t.kind !== 'symbol' || t.text !== symbol) this.fail(t, `Expected "${symbol}", found ${found(t)}.`);
  }

  /** Fields up to the closing delimiter (or the end of input for the top level). */
  parseFields(desc: MessageDescriptor, obj: ProtoObject, close: string | undefined): void {
    for (;;) {
      const t = this.tok.peek();
      if (close === undefined ? t.kind === 'eof' : t.kind === 'symbol' && t.text === close) {
        this.tok.next();
        return;
      }
      if (t.kind === 'eof') this.fail(t, `Expected "${close}", found "".`);
      this.parseField(desc, obj);
    }
  }

  private parseField(desc: MessageDescriptor, obj: ProtoObject): void {
    const nameTok = this.tok.next();
    if (nameTok.kind !== 'ident') this.fail(nameTok, `Expected identifier, got: ${nameTok.raw}`);
    // Protobuf reports a field it cannot take at the token after its name, where its parser stands by then.
    const after = this.tok.peek();
    const f = findField(desc, nameTok.text);
    if (!f) this.fail(after, `Message type "${PACKAGE}.${desc.name}" has no field named "${nameTok.text}".`);
    this.checkNotSet(desc, f, obj, after);
    if (f.type.kind === 'message' || f.label.kind === 'map') {
      this.tryConsume(':');
      if (f.label.kind !== 'singular' && this.tryConsume('[')) this.parseList(() => this.parseMessageValue(desc, f, obj));
      else this.parseMessageValue(desc, f, obj);
    } else {
      this.expect(':');
      const open = this.tok.peek();
      // A list for a singular field fails as its value would: protobuf looks for `[` only on repeated fields.
      if (open.kind === 'symbol' && open.text === '[' && f.label.kind !== 'singular') {
        this.tok.next();
        this.parseList(() => this.parseScalarInto(desc, f, obj));
      } else {
        this.parseScalarInto(desc, f, obj);
      }
    }
    if (!this.tryConsume(';')) this.tryConsume(',');
  }

  /** `[ a, b, ... ]` after the `[`; an empty list is allowed, a trailing comma is not. */
  private parseList(element: () => void): void {
    if (this.tryConsume(']')) return;
    for (;;) {
      element();
      if (this.tryConsume(']')) return;
      this.expect(',');
    }
  }

  /** Protobuf's rule: a non-repeated field that is already present, or a second member of a oneof, is an error. */
  private checkNotSet(desc: MessageDescriptor, f: FieldDescriptor, obj: ProtoObject, at: Token): void {
    if (f.label.kind !== 'singular') return;
    const present = hasPresence(f) ? obj[f.name] !== undefined : !isDefault(f, obj[f.name]);
    if (present) this.fail(at, `Non-repeated field "${f.name}" is specified multiple times.`);
    if (!f.oneof) return;
    const other = desc.fields.find((o) => o.oneof === f.oneof && o !== f && obj[o.name] !== undefined);
    if (other) {
      this.fail(at, `Field "${f.name}" is specified along with field "${other.name}", another member of oneof "${f.oneof}".`);
    }
  }

  private parseMessageValue(owner: MessageDescriptor, f: FieldDescriptor, obj: ProtoObject): void {
    const open = this.tok.next();
    let close: string;
    if (open.kind === 'symbol' && open.text === '{') close = '}';
    else if (open.kind === 'symbol' && open.text === '<') close = '>';
    else this.fail(open, `Expected "{", found ${found(open)}.`);
    if (f.label.kind === 'map') {
      this.parseMapEntry(owner, f, obj[f.name] as ProtoObject, close);
      return;
    }
    const typeName = (f.type as { name: string }).name;
    const child = newMessage(typeName);
    this.parseFields(messageDescriptor(typeName), child, close);
    if (f.label.kind === 'repeated') (obj[f.name] as unknown[]).push(child);
    else obj[f.name] = child;
  }

  /** A map entry is written as a message `{ key: .. value: .. }`; a later duplicate key wins, as in protobuf. */
  private parseMapEntry(owner: MessageDescriptor, f: FieldDescriptor, map: ProtoObject, close: string): void {
    const entryDesc = mapEntryDescriptor(owner.name, f);
    const entry: ProtoObject = { key: scalarDefault(entryDesc.fields[0]!.type) };
    if (f.type.kind !== 'message') entry['value'] = scalarDefault(f.type);
    this.parseFields(entryDesc, entry, close);
    const value = entry['value'] ?? newMessage((f.type as { name: string }).name);
    map[String(entry['key'])] = value;
  }

  private parseScalarInto(desc: MessageDescriptor, f: FieldDescriptor, obj: ProtoObject): void {
    const v = this.parseScalar(desc, f);
    if (f.label.kind === 'repeated') (obj[f.name] as unknown[]).push(v);
    else obj[f.name] = v;
  }

  private parseScalar(desc: MessageDescriptor, f: FieldDescriptor): string | number | boolean {
    if (f.type.kind === 'enum') return this.parseEnum(f, f.type.name);
    if (f.type.kind === 'message') throw new Error(`${desc.name}.${f.name} is a message`);
    const kind = f.type.scalar;
    if (kind === 'string') return this.parseString();
    if (kind === 'bool') return this.parseBool(f);
    if (kind === 'float' || kind === 'double') return this.parseFloat(kind);
    return this.parseInteger(kind);
  }

  /** One or more adjacent string literals, concatenated. */
  private parseString(): string {
    const first = this.tok.next();
    if (first.kind !== 'string') this.fail(first, `Expected string, got: ${first.raw}`);
    let s = first.text;
    while (this.tok.peek().kind === 'string') s += this.tok.next().text;
    return s;
  }

  /** An integer token with an optional leading `-`, as a bigint, plus the text for messages. */
  private signedInteger(what: string): { value: bigint; text: string; at: Token } {
    const minus = this.tryConsume('-');
    const t = this.tok.next();
    if (t.kind !== 'int') this.fail(t, `Expected ${what}, got: ${t.raw}`);
    const v = parseIntLiteral(t.text);
    return { value: minus ? -v : v, text: (minus ? '-' : '') + t.text, at: t };
  }

  private parseInteger(kind: ScalarKind): number {
    const peek = this.tok.peek();
    if (kind.startsWith('u') && peek.kind === 'symbol' && peek.text === '-') this.fail(peek, 'Expected integer, got: -');
    const { value, text, at } = this.signedInteger('integer');
    const r = toIntValue(kind, value, text);
    if (typeof r !== 'number') this.fail(at, r.error);
    return r;
  }

  private parseFloat(kind: 'float' | 'double'): number {
    const minus = this.tryConsume('-');
    const t = this.tok.next();
    let v: number | undefined;
    if (t.kind === 'float') v = Number(t.text.replace(/[fF]$/, ''));
    else if (t.kind === 'int') {
      // protobuf takes an integer token as a double only when it is written in decimal.
      if (/^0[xX0-7]/.test(t.text)) this.fail(t, `Expect a decimal number, got: ${t.text}`);
      v = Number(parseIntLiteral(t.text));
    }
    else if (t.kind === 'ident') v = namedFloat(t.text);
    // Protobuf lower-cases an identifier it cannot read as a double.
    const shown = t.kind === 'ident' ? t.raw.toLowerCase() : t.raw;
    if (v === undefined) this.fail(t, `Expected double, got: ${shown}`);
    return minus ? -v : v;
  }

  /**
   * Protobuf reads an integer as 0 or 1 (anything else is out of range) and otherwise an identifier, and reports
   * an identifier it does not know at the token after it, where its parser stands by then.
   */
  private parseBool(f: FieldDescriptor): boolean {
    const t = this.tok.peek();
    if (t.kind === 'int') {
      this.tok.next();
      const v = parseIntLiteral(t.text);
      if (v === 0n || v === 1n) return v === 1n;
      return this.fail(t, `Integer out of range (${t.text})`);
    }
    if (t.kind !== 'ident') return this.fail(t, `Expected identifier, got: ${t.raw}`);
    this.tok.next();
    if (t.text === 'true' || t.text === 'True' || t.text === 't') return true;
    if (t.text === 'false' || t.text === 'False' || t.text === 'f') return false;
    return this.fail(this.tok.peek(), `Invalid value for boolean field "${f.name}". Value: "${t.text}".`);
  }

  /** By name, or by number (then it must be a defined value: names are what we store). */
  private parseEnum(f: FieldDescriptor, enumName: string): string {
    const values = enumDescriptor(enumName).values;
    const t = this.tok.peek();
    if (t.kind === 'ident') {
      this.tok.next();
      if (values.some(([n]) => n === t.text)) return t.text;
      return this.fail(this.tok.peek(), `Unknown enumeration value of "${t.text}" for field "${f.name}".`);
    }
    if (t.kind === 'int' || (t.kind === 'symbol' && t.text === '-')) {
      const { value, text } = this.signedInteger('integer');
      const hit = values.find(([, n]) => BigInt(n) === value);
      if (hit) return hit[0];
      return this.fail(this.tok.peek(), `Unknown enumeration value of "${text}" for field "${f.name}".`);
    }
    return this.fail(t, `Expected integer or identifier, got: ${t.raw}`);
  }
}

function isDefault(f: FieldDescriptor, v: unknown): boolean {
  const d = scalarDefault(f.type);
  return v === d && !Object.is(v, -0);
}

// ============================== printing ==============================

/** The config in text format, fields in number order, defaults left out, as protobuf's printer writes it. */
export function printModelConfig(cfg: ModelConfig): string {
  return printMessage(cfg as unknown as ProtoObject, 'ModelConfig');
}

export function printMessage(obj: ProtoObject, messageName: string): string {
  const lines: string[] = [];
  printFields(lines, messageDescriptor(messageName), obj, '');
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

function printFields(out: string[], desc: MessageDescriptor, obj: ProtoObject, indent: string): void {
  const fields = [...desc.fields].sort((a, b) => a.number - b.number);
  for (const f of fields) {
    const v = obj[f.name];
    if (v === undefined) continue;
    if (f.label.kind === 'repeated') for (const e of v as unknown[]) printValue(out, desc, f, e, indent);
    else if (f.label.kind === 'map') printMap(out, desc, f, v as ProtoObject, indent);
    else if (hasPresence(f) || !isDefault(f, v)) printValue(out, desc, f, v, indent);
  }
}

function printValue(out: string[], desc: MessageDescriptor, f: FieldDescriptor, v: unknown, indent: string): void {
  if (f.type.kind !== 'message') {
    out.push(`${indent}${f.name}: ${formatScalar(f, v)}`);
    return;
  }
  out.push(`${indent}${f.name} {`);
  const typeDesc = f.label.kind === 'map' ? mapEntryDescriptor(desc.name, f) : messageDescriptor(f.type.name);
  printFields(out, typeDesc, v as ProtoObject, `${indent}  `);
  out.push(`${indent}}`);
}

/** Entries sorted by key, numerically for integer keys, as protobuf's printer does for stable output. */
function printMap(out: string[], desc: MessageDescriptor, f: FieldDescriptor, map: ProtoObject, indent: string): void {
  if (f.label.kind !== 'map') return;
  const numeric = f.label.key !== 'string' && f.label.key !== 'bool';
  const keys = Object.keys(map).sort((a, b) => (numeric ? Number(a) - Number(b) : a < b ? -1 : a > b ? 1 : 0));
  const entryDesc = mapEntryDescriptor(desc.name, f);
  const keyField = entryDesc.fields[0]!;
  const valueField = entryDesc.fields[1]!;
  for (const k of keys) {
    out.push(`${indent}${f.name} {`);
    const key = numeric ? Number(k) : f.label.key === 'bool' ? k === 'true' : k;
    out.push(`${indent}  key: ${formatScalar(keyField, key)}`);
    printValue(out, entryDesc, valueField, map[k], `${indent}  `);
    out.push(`${indent}}`);
  }
}

function formatScalar(f: FieldDescriptor, v: unknown): string {
  if (f.type.kind === 'enum') return String(v);
  if (typeof v === 'string') return `"${escapeString(v)}"`;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  const n = v as number;
  if (f.type.kind === 'scalar' && isIntegerKind(f.type.scalar)) return formatInt(f.type.scalar, n);
  if (Number.isNaN(n)) return 'nan';
  if (n === Infinity) return 'inf';
  if (n === -Infinity) return '-inf';
  if (Object.is(n, -0)) return '-0';
  return String(n);
}

/** C-style escaping; printable text (including non-ASCII) stays as is, control bytes become octal. */
function escapeString(s: string): string {
  let out = '';
  for (const c of s) {
    const code = c.codePointAt(0)!;
    if (c === '"') out += '\\"';
    else if (c === "'") out += "\\'";
    else if (c === '\\') out += '\\\\';
    else if (c === '\n') out += '\\n';
    else if (c === '\r') out += '\\r';
    else if (c === '\t') out += '\\t';
    else if (code < 0x20 || code === 0x7f) out += `\\${code.toString(8).padStart(3, '0')}`;
    else out += c;
  }
  return out;
}
