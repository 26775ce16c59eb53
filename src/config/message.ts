/**
 * Schema-driven helpers shared by the text parser, the printer and the JSON codec: building a message object
 * with every default filled, and the synthetic entry type of a map field.
 */
import { type FieldDescriptor, type MessageDescriptor, messageDescriptor, scalarDefault } from './schema.js';

/** A message as a plain object keyed by proto field name. */
export type ProtoObject = Record<string, unknown>;

/** Whether a field is stored as a key that exists only when set (sub-messages and oneof members). */
export function hasPresence(f: FieldDescriptor): boolean {
  return f.label.kind === 'singular' && (f.type.kind === 'message' || f.oneof !== undefined);
}

/**
 * A new message of the given type with all scalar, repeated and map fields at their defaults, keys in
 * declaration order. Sub-messages and oneof members are left out: they exist only once set.
 */
export function newMessage(typeName: string): ProtoObject {
  const out: ProtoObject = {};
  for (const f of messageDescriptor(typeName).fields) {
    if (hasPresence(f)) continue;
    if (f.label.kind === 'repeated') out[f.name] = [];
    else if (f.label.kind === 'map') out[f.name] = {};
    else out[f.name] = scalarDefault(f.type);
  }
  return out;
}

/** Typed wrapper for callers that know which interface a message type maps to. */
export function blank<T>(typeName: string): T {
  return newMessage(typeName) as T;
}

const ENTRY_CACHE = new Map<FieldDescriptor, MessageDescriptor>();

/**
 * The `XxxEntry { key = 1; value = 2; }` message protobuf synthesizes for a map field. The text format writes
 * map entries as such messages, so the parser handles them like any other message.
 */
export function mapEntryDescriptor(owner: string, f: FieldDescriptor): MessageDescriptor {
  let d = ENTRY_CACHE.get(f);
  if (d) return d;
  if (f.label.kind !== 'map') throw new Error(`${owner}.${f.name} is not a map`);
  d = {
    name: `${owner}.${camel(f.name)}Entry`,
    oneofs: [],
    fields: [
      { name: 'key', number: 1, type: { kind: 'scalar', scalar: f.label.key }, label: { kind: 'singular' } },
      { name: 'value', number: 2, type: f.type, label: { kind: 'singular' } },
    ],
  };
  ENTRY_CACHE.set(f, d);
  return d;
}

function camel(s: string): string {
  return s.replace(/(^|_)([a-z])/g, (_m, _u: string, c: string) => c.toUpperCase());
}

/** lowerCamelCase JSON name protobuf derives from a field name (accepted on JSON input like protobuf does). */
export function jsonName(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}
