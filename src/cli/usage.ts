/**
 * Formats `--help` text from the flag table. Kept apart from the parser so the table in flags.ts stays the one
 * place that says what a flag is, and this file only how it looks.
 */

export interface UsageEntry {
  readonly name: string;
  readonly group: string;
  /** Value syntax such as `<integer>`; null for a flag that takes no value. */
  readonly arg: string | null;
  /** Default shown to the user; '' prints no default line. */
  readonly def: string;
  readonly help: string;
}

const WIDTH = 78;
const INDENT = '        ';

/** Groups appear in the order their first flag appears, as tritonserver prints them. */
export function formatUsage(title: string, entries: readonly UsageEntry[]): string {
  const groups = new Map<string, UsageEntry[]>();
  for (const e of entries) {
    const list = groups.get(e.group);
    if (list) list.push(e);
    else groups.set(e.group, [e]);
  }
  const out: string[] = [title, ''];
  for (const [group, list] of groups) {
    if (group !== '') out.push(`${group}:`);
    for (const e of list) out.push(...formatEntry(e));
    out.push('');
  }
  return out.join('\n');
}

function formatEntry(e: UsageEntry): string[] {
  const lines = [`  --${e.name}${e.arg === null ? '' : ` ${e.arg}`}`];
  lines.push(...wrap(e.help));
  if (e.def !== '') lines.push(`${INDENT}Default: ${e.def}`);
  return lines;
}

function wrap(text: string): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (word === '') continue;
    if (line !== '' && INDENT.length + line.length + 1 + word.length > WIDTH) {
      lines.push(INDENT + line);
      line = word;
    } else {
      line = line === '' ? word : `${line} ${word}`;
    }
  }
  if (line !== '') lines.push(INDENT + line);
  return lines;
}
