import { FLAG_EFFECTS, type FlagEffect } from './flags.js';

/**
 * The table of every flag and what it does in Nereid (docs/flags.md), made from the flag definitions so that the
 * two cannot drift apart (scripts/flag-table.mjs writes it into the page; a test compares the two).
 */
export const FLAG_TABLE_BEGIN = '<!-- flags:begin -->';
export const FLAG_TABLE_END = '<!-- flags:end -->';

const STATUS: Record<FlagEffect['kind'], string> = { implemented: 'implemented', warns: 'warns, no effect', refused: 'refused (exit 2)' };

export function flagTable(): string {
  const rows = FLAG_EFFECTS.map((f) => {
    const arg = f.arg === null ? '' : ` ${f.arg}`;
    const e = f.effect;
    const note = e.kind === 'implemented' ? e.note ?? '' : e.when ? `${e.when.label}: ${e.why}` : e.why;
    return `| ${cell(`\`--${f.name}${arg}\``)} | ${f.group || '—'} | ${STATUS[e.kind]} | ${cell(note)} |`;
  });
  return ['| flag | group | in Nereid | why / note |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

/** GitHub's tables split cells at every unescaped '|', in code spans too. */
function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}
