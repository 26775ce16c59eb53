import type { GbnfJsonSchema } from 'node-llama-cpp';
import { invalidArg } from '../../errors.js';

/**
 * The `response_format` request parameter: the JSON text of OpenAI's object (parameters are scalars, so it
 * travels as text, as logit_bias does). `{"type": "text"}` asks for nothing; `{"type": "json_object"}` for a
 * JSON object; `{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}` for JSON that the schema
 * accepts. Both are honoured by constrained decoding: a grammar that admits only such text.
 *
 * The grammar comes from node-llama-cpp's JSON-schema converter, which knows part of JSON Schema. A schema is
 * checked here against what it honours and refused with the first keyword it does not, by name and place,
 * rather than giving text the schema would reject. Two of its rules are kept as they are because their output
 * still validates: every declared property is written (as OpenAI's strict mode requires them all), and an
 * object has no properties beyond the declared ones unless additionalProperties says so. anyOf is taken as
 * oneOf: the converter's oneOf is a union, which is what anyOf means.
 */
export type ResponseFormat =
  | { readonly type: 'text' }
  | { readonly type: 'json_object' }
  | { readonly type: 'json_schema'; readonly schema: GbnfJsonSchema };

export const RESPONSE_FORMAT_PARAMETER = 'response_format';

/** Nesting a schema may have: the check and the converter both recurse. */
const MAX_DEPTH = 32;
/** The largest count a schema may set (minItems, maxLength, …): llama.cpp's grammar spells each repetition out. */
const MAX_COUNT = 1000;
/** String formats the converter has a grammar for. */
const FORMATS: ReadonlySet<string> = new Set(['date-time', 'date', 'time']);
const PRIMITIVE_TYPES: ReadonlySet<string> = new Set(['string', 'number', 'integer', 'boolean', 'null']);
/** Keywords that only describe: accepted anywhere and left out of the grammar (description is kept). */
const ANNOTATIONS: ReadonlySet<string> = new Set(['title', 'description', '$comment', 'examples', 'default', '$schema', '$id', 'deprecated', 'readOnly', 'writeOnly']);
/** What each kind of schema may hold besides annotations and $defs. */
const KEYWORDS: Readonly<Record<string, ReadonlySet<string>>> = {
  object: new Set(['type', 'properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties']),
  array: new Set(['type', 'items', 'prefixItems', 'minItems', 'maxItems']),
  string: new Set(['type', 'minLength', 'maxLength', 'format']),
  primitive: new Set(['type']),
  const: new Set(['const', 'type']),
  enum: new Set(['enum', 'type']),
  union: new Set(['anyOf', 'oneOf']),
  ref: new Set(['$ref']),
};

/** Every keyword the check knows: any other is refused by name before the schema's kind is looked at. */
const KNOWN: ReadonlySet<string> = new Set([...ANNOTATIONS, '$defs', ...Object.values(KEYWORDS).flatMap((k) => [...k])]);

type Json = Record<string, unknown>;

/** The parameter's value as a format; throws INVALID_ARG naming what is wrong. */
export function readResponseFormat(text: unknown): ResponseFormat {
  if (typeof text !== 'string') throw wrong('must be the JSON text of an object');
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw wrong('is not valid JSON');
  }
  if (!isObject(v)) throw wrong('must be an object');
  const type = v['type'];
  if (type === 'text' || type === 'json_object') return { type };
  if (type !== 'json_schema') throw wrong(`'type' must be text, json_object or json_schema, got ${JSON.stringify(type ?? null)}`);
  const js = v['json_schema'];
  if (!isObject(js) || !isObject(js['schema'])) throw wrong("'json_schema.schema' must be an object");
  return { type, schema: checkSchema(js['schema'], '#', new Set(), 0) as GbnfJsonSchema };
}

/**
 * A JSON Schema checked as response_format's is, for another field (`label`, such as a tool's parameters):
 * a copy in the converter's terms, or INVALID_ARG naming the keyword, its place and the field.
 */
export function checkJsonSchema(schema: unknown, label: string): Json {
  try {
    return checkSchema(schema, '#', new Set(), 0);
  } catch (e) {
    const message = (e as Error).message;
    const prefix = `${RESPONSE_FORMAT_PARAMETER}:`;
    throw message.startsWith(prefix) ? invalidArg(`${label}:${message.slice(prefix.length)}`) : e;
  }
}

const wrong = (why: string): Error => invalidArg(`parameter '${RESPONSE_FORMAT_PARAMETER}' ${why}`);

function unsupported(keyword: string, at: string, why = 'is not supported for constrained decoding'): Error {
  return invalidArg(`${RESPONSE_FORMAT_PARAMETER}: the JSON Schema keyword '${keyword}' at ${at} ${why}`);
}

/** A copy of `s` in the converter's terms (anyOf as oneOf, annotations but description dropped), checked. */
function checkSchema(s: unknown, at: string, defs: ReadonlySet<string>, depth: number): Json {
  if (!isObject(s)) throw invalidArg(`${RESPONSE_FORMAT_PARAMETER}: the schema at ${at} must be an object`);
  if (depth > MAX_DEPTH) throw invalidArg(`${RESPONSE_FORMAT_PARAMETER}: the schema nests deeper than ${MAX_DEPTH} levels at ${at}`);
  for (const k of Object.keys(s)) if (!KNOWN.has(k)) throw unsupported(k, at);
  const out: Json = {};
  const inScope = s['$defs'] === undefined ? defs : new Set([...defs, ...Object.keys(object(s['$defs'], '$defs', at))]);
  if (s['$defs'] !== undefined) out['$defs'] = mapValues(s['$defs'] as Json, `${at}/$defs`, inScope, depth);
  const kind = kindOf(s, at);
  const allowed = KEYWORDS[kind]!;
  for (const [k, v] of Object.entries(s)) {
    if (k === '$defs') continue;
    if (ANNOTATIONS.has(k)) {
      if (k === 'description' && typeof v === 'string') out[k] = v;
      continue;
    }
    if (!allowed.has(k)) throw unsupported(k, at, kind === 'union' || kind === 'ref' ? `cannot stand beside '${kind === 'ref' ? '$ref' : 'anyOf/oneOf'}' for constrained decoding` : undefined);
    out[k === 'anyOf' ? 'oneOf' : k] = keyword(k, v, at, inScope, depth);
  }
  if (kind === 'ref') checkRef(s['$ref'], at, inScope);
  if (kind === 'object') checkRequired(s, at);
  if (s['anyOf'] !== undefined && s['oneOf'] !== undefined) throw unsupported('anyOf', at, "cannot stand beside 'oneOf'");
  return out;
}

/** Which of the converter's kinds a schema is, by its defining keyword. */
function kindOf(s: Json, at: string): string {
  if (s['$ref'] !== undefined) return 'ref';
  if (s['anyOf'] !== undefined || s['oneOf'] !== undefined) return 'union';
  if (s['const'] !== undefined) return 'const';
  if (s['enum'] !== undefined) return 'enum';
  const t = s['type'];
  if (t === 'object' || t === 'array' || t === 'string') return t;
  const types = Array.isArray(t) ? t : [t];
  if (t === undefined || types.length === 0) throw unsupported('type', at, "is missing: each schema needs 'type', 'const', 'enum', 'anyOf', 'oneOf' or '$ref'");
  for (const x of types) {
    if (typeof x !== 'string' || !PRIMITIVE_TYPES.has(x)) {
      throw unsupported('type', at, `cannot be ${JSON.stringify(x)}${Array.isArray(t) ? ' in a list of types (anyOf can say it)' : ''}`);
    }
  }
  return 'primitive';
}

/** Keyword `k` of the schema at `at`, checked; a subschema's place is `at/k`. */
function keyword(k: string, v: unknown, at: string, defs: ReadonlySet<string>, depth: number): unknown {
  const inner = `${at}/${k}`;
  switch (k) {
    case 'properties': return mapValues(object(v, k, at), inner, defs, depth);
    case 'items': return checkSchema(v, inner, defs, depth + 1);
    case 'additionalProperties': return typeof v === 'boolean' ? v : checkSchema(v, inner, defs, depth + 1);
    case 'prefixItems': case 'anyOf': case 'oneOf': return list(v, k, at).map((x, i) => checkSchema(x, `${inner}/${i}`, defs, depth + 1));
    case 'minItems': case 'maxItems': case 'minLength': case 'maxLength': case 'minProperties': case 'maxProperties': return count(v, k, at);
    case 'format':
      if (typeof v !== 'string' || !FORMATS.has(v)) throw unsupported('format', at, `${JSON.stringify(v)} is not supported (date-time, date and time are)`);
      return v;
    case 'const': return literal(v, k, at);
    case 'enum': return list(v, k, at).map((x) => literal(x, k, at));
    case 'required':
      if (!Array.isArray(v) || !v.every((x) => typeof x === 'string')) throw invalidArg(`${RESPONSE_FORMAT_PARAMETER}: 'required' at ${at} must be an array of strings`);
      return v;
    default: return v; // type and $ref, checked by kindOf and checkRef
  }
}

function mapValues(o: Json, at: string, defs: ReadonlySet<string>, depth: number): Json {
  const out: Json = {};
  for (const [name, sub] of Object.entries(o)) out[name] = checkSchema(sub, `${at}/${name}`, defs, depth + 1);
  return out;
}

/** Only references to the schema's own $defs: the converter resolves nothing else. */
function checkRef(ref: unknown, at: string, defs: ReadonlySet<string>): void {
  const prefix = '#/$defs/';
  if (typeof ref !== 'string' || !ref.startsWith(prefix) || !defs.has(ref.slice(prefix.length))) {
    throw unsupported('$ref', at, `${JSON.stringify(ref)} is not supported: only '#/$defs/<name>' naming a definition of the schema is`);
  }
}

/** Every declared property is written, so a required name must be declared or the output would lack it. */
function checkRequired(s: Json, at: string): void {
  const declared = isObject(s['properties']) ? s['properties'] : {};
  for (const name of (s['required'] as string[] | undefined) ?? []) {
    if (!Object.hasOwn(declared, name)) throw unsupported('required', at, `names ${JSON.stringify(name)}, which is not in 'properties'`);
  }
}

function literal(v: unknown, k: string, at: string): unknown {
  if (v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))) return v;
  throw unsupported(k, at, 'with an object or array value is not supported');
}

function count(v: unknown, k: string, at: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_COUNT) throw unsupported(k, at, `must be an integer from 0 to ${MAX_COUNT}, got ${JSON.stringify(v)}`);
  return v;
}

function list(v: unknown, k: string, at: string): unknown[] {
  if (!Array.isArray(v) || v.length === 0) throw invalidArg(`${RESPONSE_FORMAT_PARAMETER}: '${k}' at ${at} must be a non-empty array`);
  return v;
}

function object(v: unknown, k: string, at: string): Json {
  if (!isObject(v)) throw invalidArg(`${RESPONSE_FORMAT_PARAMETER}: '${k}' at ${at} must be an object`);
  return v;
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
