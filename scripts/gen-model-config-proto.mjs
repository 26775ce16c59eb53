// Writes proto/model_config.proto from the model-config schema (src/config/schema.ts, compiled), so the .proto
// that gRPC clients compile and the schema the config parser, printer and JSON codec use cannot drift apart.
// Run after a build: node scripts/gen-model-config-proto.mjs. A test checks the committed file is current.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MESSAGES, ENUMS, PACKAGE } from '../dist/src/config/schema.js';

export function modelConfigProto() {
  const children = new Map(); // parent name ('' = file) → [{ kind, name }] in declaration order
  const add = (kind, full) => {
    const dot = full.lastIndexOf('.');
    const parent = dot < 0 ? '' : full.slice(0, dot);
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push({ kind, full, name: full.slice(dot + 1) });
  };
  for (const e of ENUMS.values()) add('enum', e.name);
  for (const m of MESSAGES.values()) add('message', m.name);

  const lines = [
    '// Triton\'s model configuration (package inference), wire-compatible with its model_config.proto:',
    '// the same message names, field names, numbers and types. Generated from src/config/schema.ts by',
    '// scripts/gen-model-config-proto.mjs; edit the schema, not this file.',
    '',
    'syntax = "proto3";',
    '',
    `package ${PACKAGE};`,
    '',
  ];
  const emit = (parent, indent) => {
    const items = children.get(parent) ?? [];
    // Enums first, then messages, as Triton's file declares nested enums ahead of the fields that use them.
    const ordered = [...items.filter((i) => i.kind === 'enum'), ...items.filter((i) => i.kind === 'message')];
    ordered.forEach((item, n) => {
      if (n > 0) lines.push('');
      if (item.kind === 'enum') emitEnum(ENUMS.get(item.full), item.name, indent);
      else emitMessage(MESSAGES.get(item.full), item.name, indent);
    });
  };
  const emitEnum = (e, name, indent) => {
    lines.push(`${indent}enum ${name} {`);
    for (const [v, num] of e.values) lines.push(`${indent}  ${v} = ${num};`);
    lines.push(`${indent}}`);
  };
  const typeName = (t) => (t.kind === 'scalar' ? t.scalar : t.name);
  const fieldLine = (f) => {
    if (f.label.kind === 'map') return `map<${f.label.key}, ${typeName(f.type)}> ${f.name} = ${f.number};`;
    return `${f.label.kind === 'repeated' ? 'repeated ' : ''}${typeName(f.type)} ${f.name} = ${f.number};`;
  };
  const emitMessage = (m, name, indent) => {
    lines.push(`${indent}message ${name} {`);
    const nested = children.get(m.name) ?? [];
    if (nested.length > 0) {
      emit(m.name, indent + '  ');
      if (m.fields.length > 0) lines.push('');
    }
    const done = new Set();
    for (const f of m.fields) {
      if (!f.oneof) {
        lines.push(`${indent}  ${fieldLine(f)}`);
        continue;
      }
      if (done.has(f.oneof)) continue;
      done.add(f.oneof);
      lines.push(`${indent}  oneof ${f.oneof} {`);
      for (const g of m.fields.filter((x) => x.oneof === f.oneof)) lines.push(`${indent}    ${fieldLine(g)}`);
      lines.push(`${indent}  }`);
    }
    lines.push(`${indent}}`);
  };
  emit('', '');
  return lines.join('\n') + '\n';
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(new URL('../proto/model_config.proto', import.meta.url), modelConfigProto());
}
